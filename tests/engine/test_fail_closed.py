"""Policies fail closed, and mistakes in a plugin's shape are named where they are made.

A ``tool_pre`` that answers nothing refuses the call; a tool that returns nothing is an
error the model reads, not "Result: None"; a method named almost like a hook, a hook that
leaves out a middle parameter, and a misspelt plugin name in ``enabled_plugins`` each get
a message naming the plugin and what it probably meant.
"""

from __future__ import annotations

import warnings
from typing import Any

import pytest
from agent_core import AgentCore, UnknownHookWarning
from agent_core.errors import ConfigError, PluginContractError, PluginError
from agent_core.testing import check_plugin, reply, scripted_provider, tool_call


class Adder:
    name = "adder"

    def __init__(self) -> None:
        self.ran: list[Any] = []

    def get_tool_schemas(self, state: Any) -> list[dict]:
        return [{"type": "function", "function": {
            "name": "add", "description": "add two numbers",
            "parameters": {"type": "object", "properties": {"a": {"type": "number"}, "b": {"type": "number"}}}}}]

    def execute_tool(self, tool_name: Any, payload: Any, state: Any) -> Any:
        RAN.append(payload)
        return {"success": True, "result": payload["a"] + payload["b"]}


RAN: list[Any] = []


class Forgetful:
    """A tool_pre policy whose action forgot its return."""

    name = "forgetful"

    def get_actions(self, config: Any) -> list[dict]:
        return [{"id": "vet", "label": "Vet a call", "trigger": "tool_pre"}]

    def execute_action(self, action_id: str, session: Any, native: Any, params: Any, context: Any, state: Any) -> Any:
        return None


def _core(*features: Any, tools: Any = (Adder,)) -> AgentCore:
    provider = scripted_provider(reply(tool_calls=[tool_call("add", {"a": 1, "b": 2})]), reply("3"))
    return AgentCore(providers=[provider], features=list(features), tools=list(tools))


def test_a_tool_pre_that_returns_nothing_refuses_the_call() -> None:
    RAN.clear()
    core = _core(Forgetful)
    with pytest.raises(PluginError) as caught:
        core.request(core.add_message(core.create_session(), "user", "1+2?"), {"provider": "scripted"})
    assert RAN == []  # the tool never ran
    assert (caught.value.plugin, caught.value.hook) == ("forgetful", "execute_action")
    assert "returned None" in str(caught.value) and "'continue'" in str(caught.value)


@pytest.mark.parametrize(("answer", "said"), [
    ({"action": "contiue"}, "returned the unknown action 'contiue'"),
    ({"decision": "yes"}, "returned the unknown decision 'yes'"),
    ({"action": None}, "returned the unknown action None"),
    ({"reason": "over the limit"}, "gave a reason but no action"),
    ("continue", "returned a str"),
    (["deny"], "returned a list"),
])
def test_a_tool_pre_answer_outside_the_vocabulary_refuses_the_call_and_check_plugin_says_the_same(
        answer: Any, said: str) -> None:
    class Misspelt(Forgetful):
        name = "misspelt"

        def execute_action(self, action_id: str, session: Any, native: Any, params: Any, context: Any,
                           state: Any) -> Any:
            return answer

    RAN.clear()
    core = _core(Misspelt)
    with pytest.raises(PluginError) as caught:
        core.request(core.add_message(core.create_session(), "user", "1+2?"), {"provider": "scripted"})
    assert RAN == []
    assert (caught.value.plugin, caught.value.hook) == ("misspelt", "execute_action")
    with pytest.raises(PluginContractError) as checked:
        check_plugin(Misspelt)
    assert checked.value.hook == "execute_action"
    said = f"the tool_pre action 'vet' {said}"  # the same sentence from the engine and from check_plugin
    assert said in str(caught.value) and said in str(checked.value)
    assert "'continue'" in str(checked.value) and "the request stops rather than run the tool" in str(checked.value)


def test_a_tool_result_without_success_is_an_error_that_says_the_shape() -> None:
    class Bare(Adder):
        name = "bare"

        def execute_tool(self, tool_name: Any, payload: Any, state: Any) -> Any:
            return {"result": payload["a"] + payload["b"]}  # the envelope without its 'success'

    core = _core(tools=(Bare,))
    events = list(core.stream_request(core.add_message(core.create_session(), "user", "1+2?"),
                                      {"provider": "scripted"}))
    (result,) = [e for e in events if e.type == "tool_result"]
    assert result.success is False and "Error: None" not in result.message.content
    assert "returned a mapping without 'success' (keys ['result'])" in result.message.content
    assert "{'success': True, 'result': ...}" in result.message.content


def test_a_tool_that_returns_nothing_is_an_error_for_the_model() -> None:
    class Silent(Adder):
        name = "silent"

        def execute_tool(self, tool_name: Any, payload: Any, state: Any) -> Any:
            return None

    core = _core(tools=(Silent,))
    events = list(core.stream_request(core.add_message(core.create_session(), "user", "1+2?"),
                                      {"provider": "scripted"}))
    (result,) = [e for e in events if e.type == "tool_result"]
    assert result.success is False and "returned nothing" in result.message.content
    assert "Result: None" not in result.message.content


def test_a_near_miss_hook_name_warns_with_the_hook_it_meant() -> None:
    class Typo:
        name = "typo"

        def proces_chunk(self, chunk: Any, partials: Any, finals: Any, native: Any, state: Any) -> Any:
            return partials, finals, native, state

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        AgentCore(providers=[scripted_provider(reply("x"))], extensions=[Typo])
    (warning,) = [w for w in caught if issubclass(w.category, UnknownHookWarning)]
    assert warning.filename == __file__  # the caller's line, not the engine's
    assert (warning.message.plugin, warning.message.name, warning.message.suggestion) == (
        "typo", "proces_chunk", "process_chunk")


def test_a_hook_of_another_kind_warns_that_it_will_never_be_called() -> None:
    class Prefix:  # an extension's hook, registered as a feature by mistake
        name = "prefix"

        def process_chunk(self, chunk: Any, partials: Any, finals: Any, native: Any, state: Any) -> Any:
            return [{**p, "content": "> " + p["content"]} for p in partials], finals, native, state

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        core = AgentCore(providers=[scripted_provider(reply("x"))], features=[Prefix])
    (warning,) = [w for w in caught if issubclass(w.category, UnknownHookWarning)]
    assert warning.filename == __file__
    assert "'process_chunk', which is no feature hook and will never be called" in str(warning.message)
    assert "registered as the right kind" in str(warning.message) and "did you mean" not in str(warning.message)
    assert core.request(core.add_message(core.create_session(), "user", "hi"),
                        {"provider": "scripted"}).session.messages[-1].content == "x"  # indeed never called
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        AgentCore(providers=[scripted_provider(reply("x"))], extensions=[Prefix])
    assert not [w for w in caught if issubclass(w.category, UnknownHookWarning)]  # the right kind: no word


def test_a_near_miss_warns_at_every_registration_and_names_a_hook_of_another_kind() -> None:
    class Misplaced:  # no hook at all, so it is taken for a feature, which has no process_chunk
        name = "misplaced"

        def proces_chunk(self, chunk: Any, partials: Any, finals: Any, native: Any, state: Any) -> Any:
            return partials, finals, native, state

    for _ in range(2):  # each test registering the plugin sees the warning, not only the first
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            AgentCore(providers=[scripted_provider(reply("x"))], features=[Misplaced])
        (warning,) = [w for w in caught if issubclass(w.category, UnknownHookWarning)]
        assert "did you mean 'process_chunk'?" in str(warning.message)
        assert "another kind of plugin" in str(warning.message)
    with pytest.raises(PluginContractError) as checked:
        check_plugin(Misplaced)
    assert checked.value.hook == "proces_chunk" and "did you mean 'process_chunk'" in str(checked.value)


def test_a_hook_that_leaves_out_a_middle_parameter_is_named_at_registration() -> None:
    class Gap:
        name = "gap"

        def process_chunk(self, native_chunk: Any, partial_messages: Any, final_messages: Any) -> Any:
            return partial_messages, final_messages, [], {}  # native history and state left out: trailing

    class Skips:
        name = "skips"

        def process_chunk(self, native_chunk: Any, state: Any) -> Any:
            return [], [], [], state

    AgentCore(providers=[scripted_provider(reply("x"))], extensions=[Gap])  # trailing ones may go: fine
    with pytest.raises(ConfigError) as caught:
        AgentCore(providers=[scripted_provider(reply("x"))], extensions=[Skips])
    message = str(caught.value)
    assert "'skips'" in message and "'process_chunk'" in message and "'native_messages'" in message
    assert "multiple values" not in message


def test_a_misspelt_plugin_name_in_enabled_plugins_says_which_it_meant() -> None:
    core = AgentCore.discover()
    with warnings.catch_warnings(record=True):
        warnings.simplefilter("always")
        res = core.resolve({"provider": "echo", "enabled_plugins": ["redactt"]})
    assert res.warnings == ("enabled_plugins names `redactt`, which is no installed plugin; did you mean `redact`?",)
    with pytest.raises(ConfigError, match="redactt"):
        core.resolve({"provider": "echo", "enabled_plugins": ["redactt"], "strict_config": True})


def _bad_extension(finals: Any = None, out: Any = None) -> Any:
    class Bad:
        name = "bad"

        def process_chunk(self, chunk: Any, partials: Any, got: Any, native: Any, state: Any) -> Any:
            if out is not None:
                return out
            return partials, (finals if chunk is None else got), native, state

    return Bad


@pytest.mark.parametrize(("label", "extension", "says"), [
    ("a text as a final", _bad_extension(finals=["oops"]), "final_messages[0] = 'oops', a str"),
    ("metadata JSON cannot carry", _bad_extension(finals=[{"role": "assistant", "content": "x",
                                                         "metadata": {"o": object()}}]), "JSON cannot carry"),
    ("a 3-tuple", _bad_extension(out=([], [], [])), "returned a 3-tuple, expected a 4-tuple"),
])
@pytest.mark.parametrize("provider", ["echo", "scripted"])
def test_a_bad_return_is_blamed_on_the_extension_that_made_it(label: str, extension: Any, says: str,
                                                             provider: str) -> None:
    from agent_core_providers.echo import EchoProvider

    model = EchoProvider if provider == "echo" else scripted_provider(reply("hi there"))
    core = AgentCore(providers=[model], extensions=[extension])
    with pytest.raises(PluginError) as caught:
        core.request(core.add_message(core.create_session(), "user", "hi"), {"provider": provider})
    assert (caught.value.plugin, caught.value.hook) == ("bad", "process_chunk"), label
    assert says in str(caught.value)


def _finalizing(name: str, metadata: Any, kind: str) -> Any:
    def finalize(self: Any, finals: Any, native: Any, state: Any, *, context: Any = None) -> Any:
        kept = [*finals]  # the finals it was handed are passed on; only the one it adds is new
        return [*kept, {"role": "assistant", "content": "note", "metadata": metadata}], native, state

    return type(name, (), {"name": name, "finalize": finalize, **({"process_chunk": _pass} if kind == "ext" else {})})


def _pass(self: Any, chunk: Any, partials: Any, finals: Any, native: Any, state: Any) -> Any:
    return partials, finals, native, state


@pytest.mark.parametrize("metadata", [{"when": object()}, {"x": float("nan")}, {1: "non-text key"}])
@pytest.mark.parametrize("kind", ["ext", "feature"])
def test_a_final_finalize_made_that_json_cannot_carry_names_that_plugin_not_the_provider(
        metadata: Any, kind: str) -> None:
    bad = _finalizing("stamper", metadata, kind)
    core = AgentCore(providers=[scripted_provider(reply("hi there"))],
                     **({"extensions": [bad]} if kind == "ext" else {"features": [bad]}))
    session = core.add_message(core.create_session(), "user", "hi")
    before = session.to_json() if hasattr(session, "to_json") else repr(session)
    with pytest.raises(PluginError) as caught:
        core.request(session, {"provider": "scripted"})
    assert (caught.value.plugin, caught.value.hook) == ("stamper", "finalize")
    assert "JSON cannot carry" in str(caught.value) and "final_messages[1]" in str(caught.value)
    assert (session.to_json() if hasattr(session, "to_json") else repr(session)) == before
    # the same plugin handing on only JSON values is fine, and its final reaches the session
    good = _finalizing("stamper", {"when": "2026-11-28T20:30:00Z"}, kind)
    core = AgentCore(providers=[scripted_provider(reply("hi there"))],
                     **({"extensions": [good]} if kind == "ext" else {"features": [good]}))
    done = core.request(session, {"provider": "scripted"})
    assert [m.content for m in done.session.messages[-2:]] == ["hi there", "note"]


def test_check_plugin_finds_a_policy_and_a_tool_that_answer_nothing() -> None:
    from agent_core.errors import PluginContractError
    from agent_core.testing import check_plugin

    with pytest.raises(PluginContractError, match="tool_pre action 'vet' returned None"):
        check_plugin(Forgetful, kind="feature")

    class Silent(Adder):
        name = "silent"

        def execute_tool(self, tool_name: Any, payload: Any, state: Any) -> Any:
            return None

    with pytest.raises(PluginContractError, match="execute_tool.*returned None"):
        check_plugin(Silent, samples={"tool_payload": {"a": 1, "b": 2}})
    check_plugin(Adder, samples={"tool_payload": {"a": 1, "b": 2}})  # a tool that answers passes


def test_check_plugin_reports_what_registration_finds() -> None:
    from agent_core.errors import PluginContractError
    from agent_core.testing import check_plugin

    class Typo:
        name = "typo"

        def proces_chunk(self, chunk: Any, partials: Any, finals: Any, native: Any, state: Any) -> Any:
            return partials, finals, native, state

    class Skips:
        name = "skips"

        def process_chunk(self, native_chunk: Any, state: Any) -> Any:
            return [], [], [], state

    with pytest.raises(PluginContractError, match="did you mean 'process_chunk'"):
        check_plugin(Typo, kind="extension")
    with pytest.raises(PluginContractError, match="lacks 'partial_messages'"):
        check_plugin(Skips, kind="extension")


def test_a_trigger_spelled_almost_like_a_request_point_warns_and_a_point_of_ones_own_does_not() -> None:
    class Stamps:
        name = "stamps"

        def get_actions(self, state: Any) -> Any:
            return [{"id": "stamp", "trigger": "response_finalise"}, {"id": "nightly", "trigger": "nightly_cleanup"}]

        def execute_action(self, action_id: Any, session: Any, native: Any, params: Any, context: Any,
                           state: Any) -> Any:
            return {"session_metadata": {"stamped": action_id}}

    core = AgentCore(providers=[scripted_provider(reply("x"))], features=[Stamps])
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        done = core.request(core.add_message(core.create_session(), "user", "hi"), {"provider": "scripted"})
    said = [str(w.message) for w in caught if "trigger" in str(w.message)]
    assert said == ["plugin 'stamps': action 'stamp' has trigger 'response_finalise', which no request runs (only "
                    "an application calling execute_lifecycle_actions would); did you mean 'response_finalize'?"]
    assert [w.filename for w in caught if "trigger" in str(w.message)] == [__file__]
    assert "stamped" not in done.session.metadata  # indeed it never ran


def test_a_required_tag_spelled_almost_like_one_the_request_has_is_named_in_the_reason() -> None:
    from agent_core.plugin_kit import Extension

    class Typo(Extension):
        name = "typo_tag"
        requires = ("streeming",)

    class Other(Extension):
        name = "other_tag"
        requires = ("nothing_like_any",)

    res = AgentCore(providers=[scripted_provider(reply("x"))], extensions=[Typo, Other]).resolve(
        {"provider": "scripted"})
    assert res.reasons["typo_tag"] == "off: missing required tags ['streeming'] (did you mean 'streaming'?)"
    assert res.reasons["other_tag"] == "off: missing required tags ['nothing_like_any']"


def test_a_tag_hint_is_remembered_only_while_its_tags_are_small():
    """The did-you-mean of a missing tag is cached (resolutions repeat it); tags past a size are worked out, not kept."""
    from agent_core.plugins.selection import _tag_hint, tag_hint

    _tag_hint.cache_clear()
    assert tag_hint({"streamng"}, {"streaming", "tools"}) == " (did you mean 'streaming'?)"
    assert tag_hint(["streamng"], ("tools", "streaming")) == " (did you mean 'streaming'?)"  # same sets, any order
    assert _tag_hint.cache_info().currsize == 1 and _tag_hint.cache_info().hits == 1
    big = {"streaming", "x" * 5000}
    assert tag_hint({"streamng"}, big) == " (did you mean 'streaming'?)"
    assert _tag_hint.cache_info().currsize == 1  # not kept: 256 such entries would hold 256 copies of the text
    assert tag_hint({"nothing_like_it"}, {"streaming"}) == ""
