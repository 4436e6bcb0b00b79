"""Tool-loop fidelity: pending calls, tool_pre's HookResult vocabulary,
freeform payloads, duplicate tool names, ``stop_on_tool_error``."""

from __future__ import annotations

import asyncio
import threading
from typing import Any

import pytest
from agent_core import AgentCore, ApprovalRequest, ConfigError, Message, Session
from agent_core.testing import reply, scripted_provider, tool_call

ADD = {"type": "function", "function": {"name": "add", "parameters": {"type": "object"}}}


def calc(log: list[Any] | None = None, name: str = "calc") -> type:
    class Calc:
        def get_tool_schemas(self, state):
            return [ADD]

        def execute_tool(self, tool_name, payload, state):
            if log is not None:
                log.append(dict(payload))
            if payload.get("fail"):
                return {"success": False, "error": "cannot add that"}
            return {"success": True, "result": payload["a"] + payload["b"]}

    Calc.name = name  # type: ignore[attr-defined]
    return Calc


def recording(base: type, sent: list[list[dict[str, Any]]]) -> type:
    class Recording(base):  # type: ignore[misc, valid-type]
        def call_api(self, native_messages, state, *, request_id=None):
            sent.append([dict(m) for m in native_messages])
            return super().call_api(native_messages, state, request_id=request_id)

    return Recording


def policy(result: dict[str, Any] | None = None, *, results: list[dict[str, Any]] | None = None) -> type:
    """A feature whose tool_pre action answers ``result`` (or each of ``results`` in turn)."""
    queue = list(results or [])

    class Policy:
        name = "policy"
        seen: list[Any] = []

        def get_actions(self, state):
            return [{"id": "vet", "trigger": "tool_pre"}]

        def execute_action(self, action_id, session, native_messages, params, context, state):
            Policy.seen.append(context["tool_call"]["payload"])
            return queue.pop(0) if queue else dict(result or {"action": "continue"})

    return Policy


def user(text: str = "go") -> Session:
    return Session("s", [Message("user", text)])


# -- pending tool calls left by max_turns -----------------------------------------


def a_max_turns_session(log: list[Any], sent: list[Any], **config: Any) -> tuple[AgentCore, Session]:
    provider = recording(scripted_provider(
        reply(tool_calls=[tool_call("add", {"a": 1, "b": 2}, id="c1")]),
        reply(tool_calls=[tool_call("add", {"a": 5, "b": 5}, id="c2"), tool_call("add", {"a": 1, "b": 1}, id="c3")]),
        reply("all done"),
    ), sent)
    core = AgentCore(providers=[provider], tools=[calc(log)])
    first = core.request(user(), {"max_iterations": 2, **config})
    assert first.outcome.reason == "max_turns"
    assert first.session.messages[-1].tool_calls  # the last reply asks for tools nobody ran
    return core, first.session


def assert_every_call_answered_before_the_next_message(native: list[dict[str, Any]]) -> None:
    for i, m in enumerate(native):
        for call in m.get("tool_calls") or ():
            following = native[i + 1: i + 1 + len(m["tool_calls"])]
            assert call["id"] in [f.get("tool_call_id") for f in following if f["role"] == "tool"], native


def test_the_next_request_first_runs_the_pending_calls_then_asks_the_model() -> None:
    log: list[Any] = []
    sent: list[Any] = []
    core, stopped = a_max_turns_session(log, sent)
    assert log == [{"a": 1, "b": 2}]
    events = list(core.stream_request(stopped.with_message(Message("user", "carry on")), {"stream": False}))
    kinds = [e.type for e in events]
    assert kinds[:5] == ["start", "tool_call", "tool_call", "tool_result", "tool_result"]
    assert log == [{"a": 1, "b": 2}, {"a": 5, "b": 5}, {"a": 1, "b": 1}]
    done = events[-1]
    assert done.outcome.ok and done.session.messages[-1].content == "all done"
    roles = [m.role for m in done.session.messages]
    # the results sit right after the call, before the user's later message
    assert roles == ["user", "assistant", "tool", "assistant", "tool", "tool", "user", "assistant"]
    assert [m.content for m in done.final_messages[:2]] == ["Result: 10", "Result: 2"]
    assert_every_call_answered_before_the_next_message(sent[-1])


def test_pending_calls_go_through_tool_pre_policy() -> None:
    log: list[Any] = []
    sent: list[Any] = []
    core, stopped = a_max_turns_session(log, sent)
    Policy = policy({"action": "deny", "reason": "not now"})
    core.register_feature(Policy)
    result = core.request(stopped, {})
    denied = [m for m in result.final_messages if m.role == "tool"][:2]
    assert all("denied by policy: not now" in m.content for m in denied)
    assert log == [{"a": 1, "b": 2}]  # nothing more ran
    assert_every_call_answered_before_the_next_message(sent[-1])


def test_when_configured_not_to_run_them_each_pending_call_gets_a_not_executed_result() -> None:
    log: list[Any] = []
    sent: list[Any] = []
    core, stopped = a_max_turns_session(log, sent)
    result = core.request(stopped.with_message(Message("user", "forget it")), {"run_pending_tool_calls": False})
    skipped = [m for m in result.final_messages if m.role == "tool"]
    assert [m.metadata["tool_call_id"] for m in skipped] == ["c2", "c3"]
    assert all("not executed" in m.content and m.tool_result["success"] is False for m in skipped)
    assert log == [{"a": 1, "b": 2}]
    assert_every_call_answered_before_the_next_message(sent[-1])


def test_a_call_marked_incomplete_is_never_run_as_a_pending_call() -> None:
    log: list[Any] = []
    cut = {**tool_call("add", '{"a": 1, "b"', id="cut"), "incomplete": True}
    s = Session("s", [Message("user", "go"), Message("assistant", "", {"tool_calls": [cut], "finish_reason": "length"})])
    core = AgentCore(providers=[scripted_provider("fine")], tools=[calc(log)])
    result = core.request(s.with_message(Message("user", "again")), {})
    assert log == [] and [m.role for m in result.final_messages] == ["assistant"]


# -- stop_on_tool_error produces tool_failure --------------------------------------


def test_stop_on_tool_error_stops_after_the_turn_with_tool_failure() -> None:
    provider = scripted_provider(
        reply(tool_calls=[tool_call("add", {"fail": True}, id="bad"), tool_call("add", {"a": 1, "b": 1}, id="ok")]),
        reply("never asked"),
    )
    core = AgentCore(providers=[provider], tools=[calc()])
    result = core.request(user(), {"stop_on_tool_error": True})
    assert result.outcome.status == "stopped" and result.outcome.reason == "tool_failure"
    assert "'add' (call bad): cannot add that" in result.outcome.detail
    # both calls of the turn were answered; the model was not asked again
    assert [m.role for m in result.session.messages] == ["user", "assistant", "tool", "tool"]
    # without the switch a failing tool is just an answer the model reads
    assert core.request(user(), {}).outcome.ok


# -- the HookResult vocabulary for tool_pre -------------------------------------------


def test_inject_context_adds_a_message_for_the_model_after_the_tool_results() -> None:
    sent: list[Any] = []
    provider = recording(scripted_provider(reply(tool_calls=[tool_call("add", {"a": 1, "b": 2})]), reply("ok")), sent)
    Policy = policy({"action": "inject_context", "context_injection": "the user is on a phone",
                     "context_injection_role": "user"})
    core = AgentCore(providers=[provider], tools=[calc()], features=[Policy])
    result = core.request(user(), {})
    assert [m.role for m in result.session.messages] == ["user", "assistant", "tool", "user", "assistant"]
    injected = result.session.messages[3]
    assert injected.content == "the user is on a phone" and injected.metadata["injected_by"] == "policy"
    assert sent[1][-1] == {"role": "user", "content": "the user is on a phone"}
    assert result.final_messages[1].content == "Result: 3"  # the tool still ran


def test_an_ephemeral_injection_reaches_the_next_call_only_and_is_not_kept() -> None:
    sent: list[Any] = []
    provider = recording(scripted_provider(
        reply(tool_calls=[tool_call("add", {"a": 1, "b": 2}, id="c1")]),
        reply(tool_calls=[tool_call("add", {"a": 2, "b": 2}, id="c2")]),
        reply("ok"),
    ), sent)
    Policy = policy(results=[{"action": "inject_context", "context_injection": "note once", "ephemeral": True}])
    core = AgentCore(providers=[provider], tools=[calc()], features=[Policy])
    result = core.request(user(), {})
    assert result.outcome.ok
    assert [m["content"] for m in sent[1]].count("note once") == 1
    assert "note once" not in [m["content"] for m in sent[2]]
    assert "note once" not in str(result.session.to_dict())


def test_user_message_becomes_an_event_for_the_user_and_suppress_output_hides_the_tool_output() -> None:
    class Streaming:
        name = "streamer"

        def get_tool_schemas(self, state):
            return [ADD]

        def stream_tool(self, tool_name, payload, state, **kw):
            yield {"part": "working"}
            yield {"success": True, "result": 3}

        def to_display_format(self, text, result, state):
            return {"type": "text", "content": text}

    Policy = policy({"action": "continue", "user_message": "running add for you", "user_message_level": "warning",
                     "suppress_output": True})
    core = AgentCore(providers=[scripted_provider(reply(tool_calls=[tool_call("add", {}, id="c1")]), reply("ok"))],
                     tools=[Streaming], features=[Policy])
    events = list(core.stream_request(user()))
    notice = next(e for e in events if e.type == "user_message")
    assert (notice.plugin, notice.message, notice.level, notice.call_id) == ("policy", "running add for you",
                                                                              "warning", "c1")
    assert not [e for e in events if e.type == "tool_progress"]
    result = next(e for e in events if e.type == "tool_result")
    assert result.suppressed is True and result.display is None
    assert result.message.content == "Result: 3"  # the model still reads it
    # without suppress_output the same tool shows its output
    core2 = AgentCore(providers=[scripted_provider(reply(tool_calls=[tool_call("add", {}, id="c1")]), reply("ok"))],
                      tools=[Streaming])
    events2 = list(core2.stream_request(user()))
    assert [e.type for e in events2].count("tool_progress") == 1
    shown = next(e for e in events2 if e.type == "tool_result")
    assert shown.suppressed is False and shown.display == {"type": "text", "content": "Result: 3"}


@pytest.mark.parametrize("default, ran", [("deny", False), ("allow", True)])
def test_an_approval_that_times_out_falls_back_to_its_default(default: str, ran: bool) -> None:
    release = threading.Event()
    asked: list[ApprovalRequest] = []

    def slow_human(request: ApprovalRequest) -> str:
        asked.append(request)
        release.wait(30)
        return "allow" if default == "deny" else "deny"  # the opposite, had it come in time

    log: list[Any] = []
    Policy = policy({"action": "ask_user", "approval_timeout": 0.05, "approval_default": default})
    core = AgentCore(providers=[scripted_provider(reply(tool_calls=[tool_call("add", {"a": 1, "b": 1})]), "ok")],
                     tools=[calc(log)], features=[Policy], approval=slow_human)
    try:
        result = core.request(user(), {})
    finally:
        release.set()
    assert asked and asked[0].timeout == 0.05
    assert (log == [{"a": 1, "b": 1}]) is ran
    if not ran:
        assert "no answer within 0.05 s" in result.final_messages[1].content


def test_an_async_approval_that_times_out_falls_back_to_its_default() -> None:
    async def slow_human(request: ApprovalRequest) -> str:
        await asyncio.sleep(30)
        return "allow"

    log: list[Any] = []
    Policy = policy({"action": "ask_user", "approval_timeout": 0.05})
    core = AgentCore(providers=[scripted_provider(reply(tool_calls=[tool_call("add", {"a": 1, "b": 1})]), "ok")],
                     tools=[calc(log)], features=[Policy], approval=slow_human)
    result = asyncio.run(core.arequest(user(), {}))
    assert log == [] and "not approved" in result.final_messages[1].content


def test_the_approval_timeout_defaults_to_300_seconds() -> None:
    asked: list[ApprovalRequest] = []
    Policy = policy({"action": "ask_user"})
    core = AgentCore(providers=[scripted_provider(reply(tool_calls=[tool_call("add", {"a": 1, "b": 1})]), "ok")],
                     tools=[calc()], features=[Policy], approval=lambda r: asked.append(r) or "allow")
    assert core.request(user(), {}).final_messages[1].content == "Result: 2"
    assert asked[0].timeout == 300.0 and asked[0].default == "deny"


@pytest.mark.parametrize("bad", [
    {"action": "inject_context"},
    {"action": "continue", "context_injection": "x", "context_injection_role": "tool"},
    {"action": "continue", "user_message": "x", "user_message_level": "loud"},
    {"action": "ask_user", "approval_timeout": -1},
])
def test_a_malformed_hook_result_is_a_plugin_error_naming_the_plugin(bad: dict[str, Any]) -> None:
    core = AgentCore(providers=[scripted_provider(reply(tool_calls=[tool_call("add", {"a": 1, "b": 1})]), "ok")],
                     tools=[calc()], features=[policy(bad)], approval=lambda r: "allow")
    events = list(core.stream_request(user()))
    error = next(e for e in events if e.type == "error").error
    assert error.type == "PluginError" and error.plugin == "policy"
    assert events[-1].session == user()


# -- duplicate tool names -------------------------------------------------------------


def test_two_tool_plugins_offering_one_name_fail_with_a_config_error_naming_both() -> None:
    core = AgentCore(providers=[scripted_provider("hi")], tools=[calc(name="calc_one"), calc(name="calc_two")])
    with pytest.raises(ConfigError) as info:
        core.request(user(), {})
    assert list(info.value.plugins) == ["calc_one", "calc_two"]
    assert "'add'" in str(info.value) and "disabled_plugins" in str(info.value)
    events = list(core.stream_request(user(), {}))
    assert [e.type for e in events] == ["start", "error", "done"]
    with pytest.raises(ConfigError):
        core.get_tool_schemas({})
    # disabling one of them settles it
    assert core.request(user(), {"disabled_plugins": ["calc_two"]}).outcome.ok


def test_one_tool_plugin_offering_a_name_twice_is_a_config_error() -> None:
    class Twice:
        name = "twice"

        def get_tool_schemas(self, state):
            return [ADD, ADD]

    with pytest.raises(ConfigError, match="'twice' offers two tools named 'add'"):
        AgentCore(providers=[scripted_provider("hi")], tools=[Twice]).request(user(), {})


# -- freeform payloads -------------------------------------------------------------------


class Patcher:
    """Claims ``apply_patch`` calls and takes their raw text (payload-first API)."""

    name = "patcher"
    got: list[tuple[Any, str]] = []

    def get_tool_schemas(self, state):
        return [{"type": "function", "function": {"name": "apply_patch", "parameters": {"type": "object"}}}]

    def can_handle_tool_call(self, tool_name, payload, state, **kw):
        return tool_name == "apply_patch" or None

    def execute_tool(self, tool_name, payload, state, *, payload_kind=None, **kw):
        Patcher.got.append((payload, payload_kind))
        return {"success": True, "result": "patched"}


PATCH = "*** Begin Patch\n*** Update File: a.py\n-x\n+y\n*** End Patch"


def test_a_tool_that_claims_a_call_receives_its_raw_text_when_it_is_not_json() -> None:
    Patcher.got.clear()
    core = AgentCore(providers=[scripted_provider(reply(tool_calls=[tool_call("apply_patch", PATCH)]), "ok")],
                     tools=[Patcher])
    result = core.request(user(), {})
    assert Patcher.got == [(PATCH, "text")]
    assert result.final_messages[1].content == "Result: patched"


def test_raw_text_for_a_tool_that_does_not_claim_calls_is_still_an_error_result() -> None:
    log: list[Any] = []
    core = AgentCore(providers=[scripted_provider(reply(tool_calls=[tool_call("add", "a plus b")]), "ok")],
                     tools=[calc(log)])
    result = core.request(user(), {})
    assert log == [] and "not valid JSON" in result.final_messages[1].content


def test_a_claimed_call_whose_arguments_were_cut_off_is_not_run() -> None:
    Patcher.got.clear()
    cut = {**tool_call("apply_patch", PATCH[:20]), "incomplete": True}
    core = AgentCore(providers=[scripted_provider(reply(tool_calls=[cut]), "ok")], tools=[Patcher])
    core.request(user(), {})
    assert Patcher.got == []


# -- the async API walks the same flow ---------------------------------------------------------


def test_pending_calls_and_injections_behave_the_same_under_the_async_api() -> None:
    log: list[Any] = []
    sent: list[Any] = []
    core, stopped = a_max_turns_session(log, sent)
    core.register_feature(policy({"action": "inject_context", "context_injection": "checked", "ephemeral": True}))
    nxt = stopped.with_message(Message("user", "carry on"))

    async def run() -> list[Any]:
        return [e async for e in core.astream_request(nxt, {"stream": False})]

    events = asyncio.run(run())
    assert [e.type for e in events][:5] == ["start", "tool_call", "tool_call", "tool_result", "tool_result"]
    assert log == [{"a": 1, "b": 2}, {"a": 5, "b": 5}, {"a": 1, "b": 1}]
    assert [m["content"] for m in sent[-1]].count("checked") == 2  # one per vetted call, next call only
    assert events[-1].outcome.ok and "checked" not in str(events[-1].session.to_dict())
    assert_every_call_answered_before_the_next_message(sent[-1])
