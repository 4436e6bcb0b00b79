"""Plugin authors' mistakes each get a message naming the plugin, the hook and the fix.

From the engine (in a request) and from ``check_plugin`` alike: a provider that
raises an untyped exception, a plugin that reads a config key it never declared,
and a config key spelt almost like a declared one.
"""

from __future__ import annotations

import pytest
from agent_core import AgentCore, Message, UnknownConfigKeyWarning
from agent_core.errors import PluginError, UndeclaredConfigKeyError
from agent_core.testing import PluginContractError, check_plugin
from agent_core_providers.echo import EchoProvider


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
