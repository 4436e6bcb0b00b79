"""Plugin authors' six deliberate mistakes each get a message naming the plugin, the hook and the fix.

From the engine (in a request, or at registration) and from ``check_plugin`` alike:

1. a provider that raises a bare ``Exception`` for what its API said (``stream_api`` / ``call_api``:
   raise the typed error, with ``failures.raise_for``);
2. a plugin that reads a config key it never declared (the hook that read it: declare it in
   ``config_schema``);
3. a config key spelt almost like a declared one (the plugin's config schema: did you mean ...);
4. a provider that keeps what one call gathers in ``init``'s state (``initialize_request``: empty
   those keys there), the engine's side in ``test_guide_provider_loop.py``;
5. an extension that reads a provider's native finals as ``{role, content}`` (``process_chunk``:
   use ``rewrite_finals``), the engine's side in ``test_native_view.py``;
6. a UI element an application cannot read (``get_ui_elements``, or ``ui_elements`` at
   registration: the field it probably meant).

And a provider that keeps its secret in the shared state (``init``: keep it on the instance),
whose engine side is ``tests/engine/test_secret_guard.py``.
"""

from __future__ import annotations

import json

import httpx
import pytest
from agent_core import AgentCore, Message, UnknownConfigKeyWarning
from agent_core.errors import PluginError, UndeclaredConfigKeyError
from agent_core.plugin_kit import Feature
from agent_core.testing import PluginContractError, check_plugin
from agent_core_providers.echo import EchoProvider
from guide_snippets import guide_module

Lines = guide_module("lines_provider.py").Lines
LINES_SAMPLES = {
    "streamed": '{"text": "Hel"}\n{"text": "lo!"}\n{"done": true, "tokens": 2}\n',
    "answer": json.dumps({"text": "Hello!", "tokens": 2}),
    "finals": [{"role": "assistant", "content": "Hello!"}],
}


def hello(core: AgentCore, config: dict | None = None):
    return core.request(core.add_message(core.create_session(), Message(role="user", content="hi")), config or {})


class Untyped:
    """A provider that reports its API's failure as a bare Exception."""

    name = "untyped"

    def stream_api(self, native_messages, state):
        raise Exception("the API answered 500")
        yield  # pragma: no cover - makes this a generator

    def call_api(self, native_messages, state):
        raise Exception("the API answered 500")


@pytest.mark.parametrize(("stream", "hook"), [(True, "stream_api"), (False, "call_api")])
def test_a_provider_raising_a_bare_exception_is_told_which_typed_error_to_raise(stream, hook):
    with pytest.raises(PluginError) as got:
        hello(AgentCore(providers=[Untyped]), {"stream": stream})
    assert (got.value.plugin, got.value.hook) == ("untyped", hook)
    message = str(got.value)
    assert "the API answered 500" in message
    for typed in ("RateLimitError", "AuthenticationError", "ProviderUnavailableError", "agent_core.errors"):
        assert typed in message


class Forgot:
    """Reads ``forgot_marker`` without declaring it: a bare KeyError without the engine's help."""

    name = "forgot"

    def get_config_schema(self):
        return {"forgot_mark": {"type": "string", "default": "*"}}

    def process_chunk(self, native_chunk, partial_messages, final_messages, native_messages, state):
        marker = state["config"]["forgot_marker"]
        return partial_messages, [{**m, "content": marker + m["content"]} for m in final_messages], native_messages, state


def test_reading_an_undeclared_config_key_names_the_plugin_the_hook_and_the_fix():
    with pytest.raises(PluginError) as got:
        hello(AgentCore(providers=[EchoProvider], extensions=[Forgot]))
    assert (got.value.plugin, got.value.hook) == ("forgot", "process_chunk")
    assert isinstance(got.value.original, UndeclaredConfigKeyError) and isinstance(got.value.original, KeyError)
    assert "'forgot_marker'" in str(got.value) and "declare it in config_schema" in str(got.value)
    assert "did you mean 'forgot_mark'?" in str(got.value)


def test_check_plugin_finds_the_undeclared_read():
    with pytest.raises(PluginContractError) as got:
        check_plugin(Forgot)
    assert got.value.plugin == "forgot" and got.value.hook == "process_chunk"
    assert "declare it in config_schema" in str(got.value)


def test_a_key_read_with_get_and_a_default_is_no_mistake():
    class Careful(Forgot):
        name = "careful"

        def process_chunk(self, native_chunk, partial_messages, final_messages, native_messages, state):
            assert state["config"].get("nobody_declares", "x") == "x"
            return partial_messages, final_messages, native_messages, state

    check_plugin(Careful)
    assert hello(AgentCore(providers=[EchoProvider], extensions=[Careful])).outcome.status == "finished"


def test_a_misspelt_config_key_names_the_plugin_that_declares_the_right_one():
    core = AgentCore(providers=[EchoProvider], extensions=[Forgot])
    with pytest.warns(UnknownConfigKeyWarning) as got:
        core.resolve({"forgot_mak": "!"})
    [note] = [str(w.message) for w in got if w.category is UnknownConfigKeyWarning]
    assert "`forgot_mak`" in note and "did you mean `forgot_mark`" in note and "plugin 'forgot'" in note


def test_check_plugin_finds_a_misspelt_key_in_the_config_it_is_given():
    with pytest.raises(PluginContractError) as got:
        check_plugin(Forgot, config={"forgot_mak": "!"})
    assert got.value.plugin == "forgot" and got.value.hook == "get_config_schema"
    assert "did you mean 'forgot_mark'?" in str(got.value)


class KeepsItsKey:
    """A provider that keeps its whole config, secret included, in the shared state."""

    name = "keeps_key"

    def get_config_schema(self):
        return {"keeps_key_api_key": {"type": "string", "secret": True, "default": ""}}

    def init(self, config):
        return {"config": dict(config)}

    def call_api(self, native_messages, state):
        return [], [{"role": "assistant", "content": "ok"}], native_messages, state


class KeepsItOnTheInstance(KeepsItsKey):
    name = "keeps_it_here"

    def init(self, config):
        self._key = config["keeps_key_api_key"]
        return {"config": {k: v for k, v in config.items() if k != "keeps_key_api_key"}}


def test_check_plugin_finds_a_provider_that_keeps_its_secret_in_the_state():
    with pytest.raises(PluginContractError) as got:
        check_plugin(KeepsItsKey, kind="provider")
    assert got.value.plugin == "keeps_key" and got.value.hook == "init"
    assert "'keeps_key_api_key'" in str(got.value) and "keep it on the instance" in str(got.value)
    assert "canary" not in str(got.value)
    check_plugin(KeepsItOnTheInstance, kind="provider")


class UntypedLines(Lines):
    """The guide's provider, reporting a failed answer with a bare Exception instead of raise_for."""

    name = "untyped_lines"

    def stream_api(self, native_messages, state):
        with self.client.stream("POST", state["url"], json=self.body(native_messages, state, True)) as response:
            if response.status_code != 200:
                raise Exception(f"the API answered {response.status_code}")
            for line in response.iter_lines():
                if line.strip():
                    yield json.loads(line)

    def call_api(self, native_messages, state):
        response = self.client.post(state["url"], json=self.body(native_messages, state, False))
        if response.status_code != 200:
            raise Exception(f"the API answered {response.status_code}")
        return super().call_api(native_messages, state)


def test_check_plugin_finds_the_bare_exception_and_names_the_typed_way():
    with pytest.raises(PluginContractError) as got:
        check_plugin(UntypedLines, kind="provider", samples=LINES_SAMPLES)
    assert got.value.plugin == "untyped_lines" and got.value.hook == "stream_api / call_api"
    assert "raised Exception" in str(got.value) and "untyped" in str(got.value)
    assert "agent_core_providers.failures.raise_for" in str(got.value)


class Forgetful(Lines):
    """The guide's provider with its per-call keys set once, in init, and never reset."""

    name = "forgetful"

    def init(self, config):
        return {**super().init(config), "text": "", "calls": [], "tokens": None}

    def initialize_request(self, native_messages, state):
        return native_messages, state


def test_check_plugin_finds_a_provider_that_carries_one_calls_answer_into_the_next():
    with pytest.raises(PluginContractError) as got:
        check_plugin(Forgetful, kind="provider", samples=LINES_SAMPLES)
    assert got.value.plugin == "forgetful" and got.value.hook == "initialize_request"
    assert "empty those keys in initialize_request" in str(got.value)
    assert "Hello!Hello!" in str(got.value)  # the second call's final repeats the first's text
    check_plugin(Lines, kind="provider", samples=LINES_SAMPLES)  # the guide's own resets them


def test_check_plugin_finds_it_from_native_chunks_too_without_a_using_seam():
    class Gathers:
        name = "gathers"

        def stream_api(self, native_messages, state):
            yield {"text": "hi"}

        def process_chunk(self, chunk, native_messages, state):
            return [], [], native_messages, {**state, "heard": state.get("heard", "") + chunk["text"]}

        def finalize(self, native_messages, state):
            return [{"role": "assistant", "content": state.get("heard", "")}], native_messages, state

    with pytest.raises(PluginContractError, match="initialize_request"):
        check_plugin(Gathers, kind="provider", samples={"chunks": [{"text": "hi"}]})


class Parrot:
    """Natives of its own shape, {"who", "said"}."""

    name = "parrot"

    def to_native_messages(self, messages, state):
        return [{"who": m["role"], "said": m["content"]} for m in messages]

    def stream_api(self, native_messages, state):
        yield {"text": native_messages[-1]["said"]}

    def process_chunk(self, chunk, native_messages, state):
        return [{"role": "assistant", "content": chunk["text"]}], [], native_messages, {**state, "heard": chunk["text"]}

    def finalize(self, native_messages, state):
        final = {"who": "assistant", "said": state["heard"]}
        return [final], [*native_messages, final], state

    def from_native_messages(self, native_messages, state):
        return [{"role": m["who"], "content": m["said"]} for m in native_messages]


class ByHand:
    """Reads the native finals as core messages itself."""

    name = "by_hand"

    def process_chunk(self, chunk, partials, finals, native_messages, state):
        return partials, [{**m, "content": m["content"].upper()} for m in finals], native_messages, state


def test_an_extension_reading_natives_as_core_messages_gets_the_same_sentence_from_both():
    core = AgentCore(providers=[Parrot], extensions=[ByHand])
    with pytest.raises(PluginError) as engine:
        core.request(core.add_message(core.create_session(), Message(role="user", content="polly")), {})
    with pytest.raises(PluginContractError) as checked:
        check_plugin(ByHand, provider=Parrot, samples={"chunks": [{"text": "polly"}]})
    assert (checked.value.plugin, checked.value.hook) == (engine.value.plugin, engine.value.hook) == (
        "by_hand", "process_chunk")
    for said in (str(engine.value), checked.value.rule):
        assert "provider 'parrot'" in said and "{who, said}" in said and "rewrite_finals" in said


class BadFooter:
    """A feature whose footer misspells its required field."""

    name = "bad_footer"

    def get_ui_elements(self, config, context=None):
        return [{"ui_type": "message_footer", "dta": "metadata.timestamp"}]


def test_a_ui_element_an_application_cannot_read_is_named_by_both():
    core = AgentCore(providers=[EchoProvider], features=[BadFooter])
    with pytest.raises(PluginError) as engine:
        core.get_ui_schema({})
    with pytest.raises(PluginContractError) as checked:
        check_plugin(BadFooter, kind="feature")
    assert (engine.value.plugin, engine.value.hook) == (checked.value.plugin, checked.value.hook) == (
        "bad_footer", "get_ui_elements")
    for said in (str(engine.value), checked.value.rule):
        assert "has no field 'dta'; did you mean 'data'?" in said


def test_a_declared_ui_element_is_refused_at_registration_and_by_check_plugin():
    class Declared(Feature):
        name = "declared_bad"
        ui_elements = [{"ui_type": "status_bar", "templte": "{{data}}", "data": "session.metadata.title"}]

    from agent_core.errors import ConfigError

    with pytest.raises(ConfigError, match=r"plugin 'declared_bad': ui_elements\[0\].*did you mean 'template'"):
        AgentCore(providers=[EchoProvider], features=[Declared])
    with pytest.raises(PluginContractError, match="did you mean 'template'") as checked:
        check_plugin(Declared)
    assert checked.value.plugin == "declared_bad"


def test_a_reading_of_the_ui_in_a_legacy_shape_is_adapted_as_the_engine_adapts_it():
    class Legacy:
        name = "legacy_ui"

        def get_ui_elements(self, config, tags, models):
            return [{"ui_type": "status_bar", "data": "session.metadata.title"}]

    check_plugin(Legacy, kind="feature")
    assert AgentCore(providers=[EchoProvider], features=[Legacy]).get_ui_schema({})


def test_a_misspelt_key_warning_names_the_config_schema_that_declares_the_right_one():
    core = AgentCore(providers=[EchoProvider], extensions=[Forgot])
    with pytest.warns(UnknownConfigKeyWarning, match="plugin 'forgot' declares it in its config schema"):
        core.resolve({"forgot_mak": "!"})
