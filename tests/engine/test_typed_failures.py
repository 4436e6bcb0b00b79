"""Nothing escapes untyped: deep and cyclic values, bad hook returns, bad arguments, duplicate ids.

Each failure is a typed error from ``agent_core.errors`` naming its cause; in a stream it
arrives as an ``error`` event and then ``done`` with the caller's session unchanged.
"""

from __future__ import annotations

import asyncio
import gc
import json
from typing import Any

import pytest
from agent_core import AgentCore, Message, PluginError, Session
from agent_core.errors import (
    ActionInputError,
    ConfigError,
    InvalidArgumentError,
    InvalidValueError,
    RequestInFlightError,
)
from agent_core.testing import reply, scripted_provider, tool_call
from agent_core.values.frozen import MAX_DEPTH


def session() -> Session:
    return Session("s", [Message("user", "go")])


def deep_list(depth: int) -> list:
    value: list = []
    for _ in range(depth):
        value = [value]
    return value


def cyclic() -> dict:
    value: dict = {"a": 1}
    value["self"] = value
    return value


def returning(result_factory: Any, name: str = "bad_tool") -> type:
    class Tool:
        def get_tool_schemas(self, state):
            return [{"type": "function", "function": {"name": "run", "parameters": {"type": "object"}}}]

        def execute_tool(self, tool_name, payload, state):
            return {"success": True, "result": result_factory()}

    Tool.name = name
    return Tool


def stream(core: AgentCore, config: dict | None = None) -> list[Any]:
    return list(core.stream_request(session(), config))


def assert_error_then_done(events: list[Any], error_type: str, plugin: str | None, hook: str | None) -> Any:
    assert [e.type for e in events][-2:] == ["error", "done"], [e.type for e in events]
    err = events[-2].error
    assert (err.type, err.plugin, err.hook) == (error_type, plugin, hook), err
    done = events[-1]
    assert done.outcome.status == "stopped"
    assert done.session == session() and done.final_messages == []
    return err


# -- recursion ---------------------------------------------------------------------------


@pytest.mark.parametrize("depth", [MAX_DEPTH + 10, 10_000])
def test_deeply_nested_tool_arguments_become_an_error_result_and_never_recurse(depth: int):
    ran: list[Any] = []

    class Echo:
        name = "echo_tool"

        def get_tool_schemas(self, state):
            return [{"type": "function", "function": {"name": "run", "parameters": {"type": "object"}}}]

        def execute_tool(self, tool_name, payload, state):
            ran.append(payload)
            return "ran"

    args = '{"x": ' + "[" * depth + "]" * depth + "}"
    provider = scripted_provider(reply(tool_calls=[tool_call("run", args, id="deep")]), "ok")
    events = stream(AgentCore(providers=[provider], tools=[Echo]))
    assert events[-1].outcome.ok and ran == []
    [result] = [e for e in events if e.type == "tool_result"]
    assert result.success is False and "nested too deeply" in result.message.tool_result["error"]


@pytest.mark.parametrize("factory", [cyclic, lambda: deep_list(10_000)], ids=["cyclic", "10000-deep"])
def test_a_tool_returning_a_cyclic_or_deep_value_is_a_plugin_error_then_done(factory: Any):
    provider = scripted_provider(reply(tool_calls=[tool_call("run", {})]))
    core = AgentCore(providers=[provider], tools=[returning(factory)])
    err = assert_error_then_done(stream(core), "PluginError", "bad_tool", "execute_tool")
    assert "nested deeper than" in err.message
    with pytest.raises(PluginError) as info:
        core.request(session())
    assert isinstance(info.value.original, InvalidValueError)
    with pytest.raises(PluginError):
        asyncio.run(core.arequest(session()))


def test_a_provider_answer_that_contains_itself_names_the_provider_hook():
    class Loops:
        name = "loops"

        def call_api(self, native_messages, state):
            final = {"role": "assistant", "content": "x"}
            final["metadata"] = {"me": final}
            return [], [final], [*native_messages, final], state

    events = stream(AgentCore(providers=[Loops]))
    err = assert_error_then_done(events, "PluginError", "loops", "call_api")
    assert "contains itself" in err.message


def test_session_from_json_on_deeply_nested_input_is_a_value_error():
    for depth in (MAX_DEPTH + 5, 10_000):
        text = '{"session_id": "s", "messages": [{"role": "user", "content": ' + "[" * depth + "]" * depth + "}]}"
        with pytest.raises(InvalidValueError) as info:
            Session.from_json(text)
        assert isinstance(info.value, ValueError)
    with pytest.raises(InvalidValueError, match="contains itself"):
        Session.from_dict({"session_id": "s", "messages": [{"role": "user", "content": cyclic()}]})
    with pytest.raises(InvalidValueError, match=r"Session.metadata"):
        Session.from_dict({"session_id": "s", "metadata": {"deep": deep_list(10_000)}})


# -- wrong return types from resolution hooks ---------------------------------------------


def hooked(kind_name: str, **hooks: Any) -> type:
    return type(kind_name, (), {"name": kind_name, **hooks})


@pytest.mark.parametrize(
    ("hook", "value"),
    [("get_tags", 5), ("get_tags", "tools"), ("required_tags", 5), ("get_models", 5), ("forbidden_tags", [1])],
)
def test_a_resolution_hook_with_a_wrong_return_type_is_a_plugin_error_naming_it(hook: str, value: Any):
    args = {"get_tags": "config, models", "required_tags": "", "forbidden_tags": "", "get_models": "config, models"}
    ns: dict[str, Any] = {}
    exec(f"def {hook}(self, {args[hook]}): return VALUE", {"VALUE": value}, ns)
    feature = hooked("odd_feature", **{hook: ns[hook]})
    core = AgentCore(providers=[scripted_provider("hi")], features=[feature])
    assert_error_then_done(stream(core), "PluginError", "odd_feature", hook)
    with pytest.raises(PluginError) as info:
        core.request(session())
    assert (info.value.plugin, info.value.hook) == ("odd_feature", hook)
    with pytest.raises(PluginError):
        core.resolve({})


@pytest.mark.parametrize("actions", [5, [{"id": "a", "trigger": 5}], [{"id": 3}], [{"id": "b", "trigger": [1]}]])
def test_get_actions_with_a_bad_shape_or_trigger_is_a_plugin_error(actions: Any):
    feature = hooked("acts", get_actions=lambda self, state: actions)
    core = AgentCore(providers=[scripted_provider("hi")], features=[feature])
    assert_error_then_done(stream(core), "PluginError", "acts", "get_actions")
    with pytest.raises(PluginError) as info:
        core.get_actions()
    assert info.value.hook == "get_actions"
    with pytest.raises(PluginError):
        core.execute_action(session(), "a")


# -- bad arguments to public calls ----------------------------------------------------------


def test_bad_arguments_to_public_calls_raise_the_documented_typed_errors():
    feature = hooked("acts", get_actions=lambda self, state: [{"id": "a"}],
                     execute_action=lambda self, *a: {"done": True})
    core = AgentCore(providers=[scripted_provider("hi")], features=[feature])
    s = session()
    with pytest.raises(ActionInputError, match="action_id"):
        core.execute_action(s, None)  # type: ignore[arg-type]
    with pytest.raises(ActionInputError, match="params"):
        core.execute_action(s, "a", [1])  # type: ignore[arg-type]
    with pytest.raises(InvalidArgumentError, match="context") as info:
        core.execute_action(s, "a", context=[1])  # type: ignore[arg-type]
    assert info.value.argument == "context"
    with pytest.raises(InvalidArgumentError, match="Session"):
        core.execute_action({"session_id": "s"}, "a")  # type: ignore[arg-type]
    for call in (
        lambda: core.execute_action(s, "a", config=["x"]),  # type: ignore[arg-type]
        lambda: core.request(s, "provider=x"),  # type: ignore[arg-type]
        lambda: core.stream_request(s, 5),  # type: ignore[arg-type]
        lambda: core.get_models([]),  # type: ignore[arg-type]
        lambda: core.execute_tool_calls(s, [], config=7),  # type: ignore[arg-type]
    ):
        with pytest.raises(ConfigError, match="mapping"):
            call()
    with pytest.raises(InvalidArgumentError) as info:
        core.request("hello")  # type: ignore[arg-type]
    assert isinstance(info.value, TypeError) and info.value.argument == "session"
    with pytest.raises(InvalidArgumentError, match="request_id"):
        core.request(s, request_id=5)  # type: ignore[arg-type]
    with pytest.raises(InvalidArgumentError, match="tool_calls"):
        core.execute_tool_calls(s, {"id": "x"})  # type: ignore[arg-type]
    with pytest.raises(InvalidArgumentError):
        core.add_message(None, "user", "hi")  # type: ignore[arg-type]
    assert core.execute_action(s, "a").payload == {"done": True}  # the good call still works


# -- request ids --------------------------------------------------------------------------


def test_a_second_request_with_an_id_in_flight_is_refused():
    core = AgentCore(providers=[scripted_provider("one two three")])
    first = core.stream_request(session(), request_id="dup")
    assert next(first).type == "start"
    with pytest.raises(RequestInFlightError) as info:
        core.request(session(), request_id="dup")
    assert info.value.request_id == "dup"
    with pytest.raises(RequestInFlightError):
        core.stream_request(session(), request_id="dup")

    async def second() -> Any:
        return await core.arequest(session(), request_id="dup")

    with pytest.raises(RequestInFlightError):
        asyncio.run(second())
    assert list(first)[-1].outcome.ok
    assert core.request(session(), request_id="dup").outcome.ok  # free again once it ended


def test_a_stream_that_is_never_iterated_frees_its_id_when_dropped():
    core = AgentCore(providers=[scripted_provider("hi")])
    core.stream_request(session(), request_id="lost")
    gc.collect()
    assert core.request(session(), request_id="lost").outcome.ok
    assert core.cancel_request("lost") is False


# -- values JSON cannot carry, in a request ---------------------------------------------------


def test_a_tool_result_set_is_normalised_once_and_the_session_round_trips():
    core = AgentCore(providers=[scripted_provider(reply(tool_calls=[tool_call("run", {})]), "ok")],
                     tools=[returning(lambda: {"tags": {"b", "a", "c"}, "pair": (1, 2)})])
    result = core.request(session())
    tool_msg = result.session.messages[2]
    assert tool_msg.tool_result["result"] == {"tags": ["a", "b", "c"], "pair": [1, 2]}
    assert Session.from_json(result.session.to_json()) == result.session
    assert json.loads(tool_msg.to_json())["toolResult"]["result"]["tags"] == ["a", "b", "c"]


@pytest.mark.parametrize(
    ("value", "why"),
    [(b"raw", "bytes"), (float("nan"), "not a JSON number"), (float("inf"), "not a JSON number"),
     ({1: "x"}, "keys are strings"), ("\ud800", "surrogate")],
)
def test_a_tool_result_json_cannot_carry_is_refused_with_a_plugin_error(value: Any, why: str):
    core = AgentCore(providers=[scripted_provider(reply(tool_calls=[tool_call("run", {})]))],
                     tools=[returning(lambda: {"v": value})])
    err = assert_error_then_done(stream(core), "PluginError", "bad_tool", "execute_tool")
    assert why in err.message and "['result']['v']" in err.message


def test_a_plugin_error_raised_inside_a_tool_is_still_an_answer_for_the_model():
    def execute_tool(self, tool_name, payload, state):
        raise PluginError("inner", "some_hook", ValueError("inner failure"))

    tool = type("Raiser", (), {"name": "raiser", "execute_tool": execute_tool,
                               "get_tool_schemas": returning(lambda: None).get_tool_schemas})
    core = AgentCore(providers=[scripted_provider(reply(tool_calls=[tool_call("run", {})]), "ok")], tools=[tool])
    result = core.request(session())
    assert result.outcome.ok
    assert "inner failure" in result.session.messages[2].tool_result["error"]


def test_the_compat_calls_refuse_bad_arguments_with_typed_errors_too():
    feature = hooked("acts", get_actions=lambda self, state: [{"id": "a", "trigger": "session_saved"}],
                     execute_action=lambda self, *a: {"session_metadata": {"saved": True}})
    core = AgentCore(providers=[scripted_provider("hi")], features=[feature])
    with pytest.raises(InvalidArgumentError):
        core.slice_session("not a session")  # type: ignore[arg-type]
    with pytest.raises(InvalidArgumentError):
        core.execute_lifecycle_actions(None, "session_saved")  # type: ignore[arg-type]
    with pytest.raises(ActionInputError, match="trigger"):
        core.execute_lifecycle_actions(session(), None)  # type: ignore[arg-type]
    with pytest.raises(InvalidArgumentError, match="context"):
        core.execute_lifecycle_actions(session(), "session_saved", context=[1])  # type: ignore[arg-type]
    with pytest.raises(ConfigError, match="mapping"):
        core.execute_lifecycle_actions(session(), "session_saved", config="x")  # type: ignore[arg-type]
    with pytest.raises(InvalidArgumentError):
        core.execute_tool_calls([{"id": "x"}], {}, {"extra": 1})  # fits neither form
    assert core.execute_lifecycle_actions(session(), "session_saved").metadata["saved"] is True
