"""Extensions that rewrite finals, in front of a provider whose native messages are not {role, content}.

The README's ``Shout`` is run as written (taken from README.md) in front of
``Parrot``, a provider that speaks ``{"who", "said"}``: ``rewrite_finals`` hands
the rewrite the core shape and writes the change back in the native one. An
extension that reads the native final as a core one by hand gets a message
naming it, the provider and the fix.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from agent_core import AgentCore, Message
from agent_core.errors import PluginError
from agent_core.testing import PluginHarness
from agent_core.values.native_history import load_native

README = Path(__file__).resolve().parents[2] / "README.md"


def readme_shout() -> type:
    text = README.read_text(encoding="utf-8")
    [block] = [b for b in re.findall(r"```python\n(.*?)^```", text, re.DOTALL | re.MULTILINE) if "class Shout" in b]
    namespace: dict = {}
    exec(compile(block, str(README), "exec"), namespace)  # noqa: S102 - the README's own code
    return namespace["Shout"]


class Parrot:
    """Answers with the last thing said, in a native shape of its own, with an extra the core does not know."""

    name = "parrot"

    def to_native_messages(self, messages, state):
        return [{"who": m["role"], "said": m["content"]} for m in messages]

    def stream_api(self, native_messages, state):
        yield {"text": native_messages[-1]["said"]}

    def process_chunk(self, chunk, native_messages, state):
        return [{"role": "assistant", "content": chunk["text"]}], [], native_messages, {**state, "heard": chunk["text"]}

    def finalize(self, native_messages, state):
        final = {"who": "assistant", "said": state["heard"], "loudness": 3}
        return [final], [*native_messages, final], state

    def from_native_messages(self, native_messages, state):
        return [{"role": m["who"], "content": m["said"], "metadata": {"loudness": m.get("loudness")}}
                for m in native_messages]


def ask(*extensions: type, stream: bool = True):
    core = AgentCore(providers=[Parrot], extensions=list(extensions))
    session = core.add_message(core.create_session(), Message(role="user", content="polly"))
    return core.request(session, {"stream": stream})


@pytest.mark.parametrize("stream", [True, False])
def test_the_readme_extension_rewrites_a_provider_of_another_shape(stream):
    said = ask(readme_shout(), stream=stream).session
    assert said.messages[-1].content == "POLLY"
    assert said.messages[-1].metadata["loudness"] == 3  # the native extra survived the round trip
    history, _ = load_native(said, "parrot")  # what the next request sends: the rewritten final, natively
    assert history[-1] == {"who": "assistant", "said": "POLLY", "loudness": 3}


def test_the_harness_gives_the_same_core_view_with_a_provider():
    record = PluginHarness(readme_shout(), provider=Parrot).stream([{"text": "hi"}])
    assert record.finals == [{"who": "assistant", "said": "HI", "loudness": 3}]


class ByHand:
    """Reads the finals as core messages itself: fine with the bundled providers, not with Parrot."""

    name = "by_hand"

    def process_chunk(self, chunk, partials, finals, native_messages, state):
        return partials, [{**m, "content": m["content"] + "!"} for m in finals], native_messages, state


def test_reading_a_native_final_as_a_core_one_names_the_extension_the_provider_and_the_fix():
    with pytest.raises(PluginError) as got:
        ask(ByHand)
    assert got.value.plugin == "by_hand" and got.value.hook == "process_chunk"
    message = str(got.value)
    assert "provider 'parrot'" in message and "{who, said, loudness}" in message
    assert "rewrite_finals" in message
