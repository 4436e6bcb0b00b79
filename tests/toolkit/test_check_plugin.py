"""check_plugin: one line in a plugin's test; each broken rule fails naming hook, rule and value."""

from __future__ import annotations

import json

import pytest
from agent_core import errors
from agent_core.testing import PluginContractError, check_plugin
from agent_core_plugins.anthropic_thinking import AnthropicThinkingExtension
from agent_core_plugins.anthropic_tools import AnthropicToolsExtension
from agent_core_plugins.openai_reasoning import OpenAIReasoningExtension
from agent_core_plugins.openai_tools import OpenAIToolsExtension
from agent_core_providers.anthropic import AnthropicProvider
from agent_core_providers.echo import EchoProvider
from agent_core_providers.openai import OpenAIProvider
from seed_plugins import DummyCalc, PrefixExt, TagFeature
from seed_plugins import EchoProvider as SeedEcho

from .conftest import RECORDINGS


def chunks(name: str) -> list:
    return [json.loads(line) for line in (RECORDINGS / name).read_text().splitlines() if line.strip()]


OPENAI_CHUNKS = chunks("deepseek-tool-call.chunks.txt")
ANTHROPIC_CHUNKS = chunks("anthropic-tool-use.chunks.txt")


def test_it_is_an_assertion_error_and_a_typed_error():
    assert issubclass(PluginContractError, AssertionError)
    assert errors.PluginContractError is PluginContractError


@pytest.mark.parametrize("plugin", [SeedEcho, PrefixExt, TagFeature, DummyCalc], ids=lambda p: p.__name__)
def test_the_seeds_four_plugins_pass(plugin):
    check_plugin(plugin)


@pytest.mark.parametrize(
    ("plugin", "provider", "sample_chunks"),
    [
        (EchoProvider, None, [{"delta": "Hi"}, {"delta": " there"}]),
        (OpenAIProvider, None, OPENAI_CHUNKS),
        (OpenAIToolsExtension, OpenAIProvider, OPENAI_CHUNKS),
        (OpenAIReasoningExtension, OpenAIProvider, OPENAI_CHUNKS),
        (AnthropicProvider, None, ANTHROPIC_CHUNKS),
        (AnthropicToolsExtension, AnthropicProvider, ANTHROPIC_CHUNKS),
        (AnthropicThinkingExtension, AnthropicProvider, ANTHROPIC_CHUNKS),
    ],
    ids=lambda p: getattr(p, "name", None) or "-",
)
def test_every_bundled_provider_and_extension_passes_with_its_apis_chunks(plugin, provider, sample_chunks):
    check_plugin(plugin, config={"model": "m"}, samples={"chunks": sample_chunks}, provider=provider)


class Base:
    name = "broken"

    def process_chunk(self, native_chunk, partial_messages, final_messages, native_messages, state):
        return partial_messages, final_messages, native_messages, state


def fails(plugin, *, samples=None) -> PluginContractError:
    with pytest.raises(PluginContractError) as err:
        check_plugin(plugin, samples=samples)
    return err.value


def test_appending_to_the_input_list_names_process_chunk_and_the_argument():
    class Appends(Base):
        def process_chunk(self, native_chunk, partial_messages, final_messages, native_messages, state):
            final_messages.append({"role": "assistant", "content": "more"})
            return partial_messages, final_messages, native_messages, state

    err = fails(Appends)
    assert err.hook == "process_chunk"
    assert "mutates its input 'final_messages'" in str(err)
    assert "'content': 'more'" in str(err)  # the offending value: the list after the hook changed it


def test_mutating_nested_state_is_found():
    class Counts(Base):
        def init(self, config, state):
            return {**state, "seen": {"n": 0}}

        def process_chunk(self, native_chunk, partial_messages, final_messages, native_messages, state):
            state["seen"]["n"] += 1
            return partial_messages, final_messages, native_messages, state

    assert "mutates its input 'state' (return a new value instead, e.g. {**state, key: value})" in str(fails(Counts))


def test_a_wrong_tuple_length_is_named():
    class Three(Base):
        def process_chunk(self, native_chunk, partial_messages, final_messages, native_messages, state):
            return partial_messages, final_messages, native_messages

    err = fails(Three)
    assert err.hook == "process_chunk" and "must return a 4-tuple" in err.rule and "3-item tuple" in err.rule


def test_non_mapping_messages_are_named():
    class Strings(Base):
        def process_chunk(self, native_chunk, partial_messages, final_messages, native_messages, state):
            return partial_messages, [m["content"] for m in final_messages], native_messages, state

    err = fails(Strings)
    assert err.hook == "process_chunk" and "each final is a message mapping" in err.rule and "1 + 2 = 3" in str(err)


def test_a_final_json_cannot_carry_gets_the_engines_sentence():
    import datetime

    from agent_core import AgentCore, Message
    from agent_core.errors import PluginError
    from agent_core_providers.echo import EchoProvider

    class Dated(Base):
        def process_chunk(self, native_chunk, partial_messages, final_messages, native_messages, state):
            finals = [{**m, "metadata": {"when": datetime.datetime(2026, 1, 1)}} for m in final_messages]
            return partial_messages, finals, native_messages, state

    err = fails(Dated)
    assert err.hook == "process_chunk"
    said = "final_messages[0]['metadata']['when']: a datetime cannot be carried by JSON"
    assert said in err.rule and "into ISO text" in err.rule
    core = AgentCore(providers=[EchoProvider], extensions=[Dated])
    with pytest.raises(PluginError) as caught:
        core.request(core.add_message(core.create_session(), Message(role="user", content="hi")), {})
    assert said in str(caught.value) and caught.value.plugin == Dated.name


def test_dropping_native_messages_is_named():
    class Drops(Base):
        def process_chunk(self, native_chunk, partial_messages, final_messages, native_messages, state):
            return partial_messages, final_messages, native_messages[-1:], state

    err = fails(Drops)
    assert err.hook == "process_chunk" and "drops native messages: given 2, returned 1" in err.rule


def test_random_tags_are_not_deterministic():
    import itertools

    counter = itertools.count()

    class Flaky(Base):
        def get_tags(self, config, models):
            return [f"tag{next(counter)}"]

    err = fails(Flaky)
    assert err.hook == "get_tags" and "not deterministic" in err.rule


def test_tags_must_be_strings():
    class Numbers(Base):
        def get_tags(self, config, models):
            return [1]

    assert "list of strings" in fails(Numbers).rule


def test_breaking_on_a_single_message_is_named():
    class NeedsTwo(Base):
        def to_native_messages(self, messages, native_messages, state=None):
            return [*native_messages, {"role": "system", "content": messages[-2]["content"]}]

    err = fails(NeedsTwo)
    assert err.hook == "to_native_messages" and "IndexError" in err.rule


def test_breaking_on_the_closing_none_chunk_is_named():
    class NeedsChunk(Base):
        def process_chunk(self, native_chunk, partial_messages, final_messages, native_messages, state):
            native_chunk.get("choices")
            return partial_messages, final_messages, native_messages, state

    err = fails(NeedsChunk)
    assert err.hook == "process_chunk" and "AttributeError" in err.rule and "None" in str(err)


def test_raising_on_the_sample_conversation_is_named():
    class HatesTools(Base):
        def from_native_messages(self, native_messages, messages, state=None):
            if any(m.get("role") == "tool" for m in messages):
                raise RuntimeError("no tools here")
            return messages

    err = fails(HatesTools, samples={"finals": [{"role": "tool", "content": "3"}]})
    assert err.hook == "from_native_messages" and "RuntimeError: no tools here" in err.rule


@pytest.mark.parametrize("kind", ["provider", "feature", "tool"])
def test_each_kind_is_checked(kind):
    if kind == "provider":
        class Bad:
            name = "p"

            def call_api(self, native, state):
                return [], [], native, state

            def finalize(self, native, state):
                return [], native  # two items

        hook, rule = "finalize", "3-tuple"
    elif kind == "feature":
        class Bad:
            name = "f"

            def finalize(self, finals, native, state):
                finals[0]["content"] = "changed"
                return finals, native, state

        hook, rule = "finalize", "mutates its input 'final_messages'"
    else:
        class Bad:
            name = "t"

            def get_tool_schemas(self, state):
                return ["add"]

        hook, rule = "get_tool_schemas", "mappings"
    err = fails(Bad)
    assert err.hook == hook and rule in err.rule


def test_init_failing_is_a_contract_error():
    class BadInit(Base):
        def init(self, config, state):
            raise KeyError("x")

    assert fails(BadInit).hook == "init"


def test_the_error_pickles_with_its_fields():
    import pickle

    err = pickle.loads(pickle.dumps(PluginContractError("p", "process_chunk", "drops native messages", "[1]")))
    assert (err.plugin, err.hook, err.rule, err.value) == ("p", "process_chunk", "drops native messages", "[1]")
    assert str(err) == "plugin 'p', hook 'process_chunk': drops native messages\n  offending value: [1]"
