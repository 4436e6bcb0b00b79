"""The tool loop: routing, schema adaptation, error results, max_turns,
streaming tools, tool_pre / tool_post lifecycle actions, sync/async tools,
and the application-facing ``execute_tool_calls`` / ``get_tool_schemas``."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable
from typing import Any

import pytest
from agent_core import (
    AgentCore,
    ApprovalRequest,
    ConfigError,
    Message,
    Session,
    ToolDescriptor,
    ToolInteropContribution,
)
from agent_core.plugins.tool_interop import SchemaAdapter
from agent_core.testing import reply, scripted_provider, tool_call

# -- helpers ----------------------------------------------------------------------------


def session() -> Session:
    return Session("s", [Message("user", "go")])


def openai_fn(name: str, description: str = "", properties: dict[str, Any] | None = None) -> dict[str, Any]:
    fn: dict[str, Any] = {"name": name, "parameters": {"type": "object", "properties": properties or {}}}
    if description:
        fn["description"] = description
    return {"type": "function", "function": fn}


def anthropic_tool(name: str, description: str = "") -> dict[str, Any]:
    out: dict[str, Any] = {"name": name, "input_schema": {"type": "object", "properties": {"q": {"type": "string"}}}}
    if description:
        out["description"] = description
    return out


def json_schema_tool(title: str, description: str = "") -> dict[str, Any]:
    out: dict[str, Any] = {"title": title, "type": "object", "properties": {"n": {"type": "integer"}}}
    if description:
        out["description"] = description
    return out


def tool(name: str, schemas: list[dict[str, Any]], execute: Callable[..., Any] | None = None, **extra: Any) -> type:
    """A duck-typed tool plugin; ``execute(tool_name, payload)`` answers its calls."""
    attrs: dict[str, Any] = {"name": name, "get_tool_schemas": lambda self, state: [dict(s) for s in schemas]}
    if execute is not None:
        attrs["execute_tool"] = lambda self, tool_name, payload, state: execute(tool_name, payload)
    attrs.update(extra)
    return type(f"Tool_{name}", (), attrs)


def calculator(log: list[Any] | None = None) -> type:
    def run(tool_name: str, payload: Any) -> dict[str, Any]:
        if log is not None:
            log.append((tool_name, dict(payload)))
        return {"success": True, "result": payload["a"] + payload["b"]}

    return tool("calc", [openai_fn("add", "Add two numbers")], run)


def capturing(base: type, seen: list[Any], formats: list[str] | None = None) -> type:
    """``base`` provider that records ``config["tools"]`` and may declare accepted formats."""

    class Capturing(base):  # type: ignore[misc, valid-type]
        def init(self, config):
            seen.append(config["tools"])
            return super().init(config)

    if formats is not None:
        Capturing.accepted_tool_schema_formats = lambda self, config, state=None: list(formats)
    return Capturing


def tool_messages(result: Any) -> list[Message]:
    return [m for m in result.final_messages if m.role == "tool"]


def add_then_answer(*calls: dict[str, Any]) -> type:
    return scripted_provider(reply(tool_calls=list(calls) or [tool_call("add", {"a": 1, "b": 2})]), reply("done"))


# -- routing ------------------------------------------------------------------------------


def test_a_call_runs_the_tool_whose_schema_names_it_and_the_model_sees_the_result() -> None:
    upper = tool("text", [openai_fn("upper")], lambda n, p: {"success": True, "result": p["s"].upper()})
    core = AgentCore(
        providers=[add_then_answer(tool_call("add", {"a": 1, "b": 2}, id="c1"), tool_call("upper", {"s": "hi"}, id="c2"))],
        tools=[calculator(), upper],
    )
    result = core.request(session())
    assert result.outcome.ok
    roles = [m.role for m in result.final_messages]
    assert roles == ["assistant", "tool", "tool", "assistant"]
    first, second = tool_messages(result)
    assert first.content == "Result: 3"
    assert dict(first.metadata) == {"tool_call_id": "c1", "tool_name": "add"}
    assert second.content == "Result: HI"
    assert second.metadata["tool_call_id"] == "c2"
    assert result.final_messages[-1].content == "done"
    # the session holds the same messages, after the user's
    assert [m.role for m in result.session.messages] == ["user", *roles]


def test_tool_events_name_the_call_the_plugin_and_the_payload() -> None:
    core = AgentCore(providers=[add_then_answer(tool_call("add", {"a": 1, "b": 2}, id="c1"))], tools=[calculator()])
    events = list(core.stream_request(session()))
    kinds = [e.type for e in events]
    assert kinds.index("tool_call") < kinds.index("tool_result")
    call = next(e for e in events if e.type == "tool_call")
    assert (call.call_id, call.tool_name, call.plugin, call.payload) == ("c1", "add", "calc", {"a": 1, "b": 2})
    res = next(e for e in events if e.type == "tool_result")
    assert res.success is True and res.message.content == "Result: 3"


def test_a_tool_that_claims_a_call_handles_it_even_without_a_matching_schema() -> None:
    def claims(self, tool_name, payload, state, **kw):
        return True if tool_name == "magic" else None

    catchall = tool("catchall", [], lambda n, p: {"success": True, "result": f"caught {n}"}, can_handle_tool_call=claims)
    core = AgentCore(providers=[add_then_answer(tool_call("magic", {}))], tools=[catchall])
    result = core.request(session())
    assert tool_messages(result)[0].content == "Result: caught magic"


def test_a_claim_beats_routing_by_name() -> None:
    claimer = tool(
        "zz_claimer", [], lambda n, p: {"success": True, "result": "claimer"},
        can_handle_tool_call=lambda self, tool_name, payload, state, **kw: tool_name == "add" or None,
    )
    core = AgentCore(providers=[add_then_answer()], tools=[calculator(), claimer])
    assert tool_messages(core.request(session()))[0].content == "Result: claimer"


def test_a_tool_that_refuses_a_call_is_skipped_when_routing_by_name() -> None:
    refuser = tool(
        "a_refuser", [openai_fn("add")], lambda n, p: {"success": True, "result": "wrong tool"},
        can_handle_tool_call=lambda self, tool_name, payload, state, **kw: False,
    )
    core = AgentCore(providers=[add_then_answer()], tools=[refuser])
    assert tool_messages(core.request(session()))[0].content == "Error: Unknown tool: add"


def test_can_handle_tool_call_returning_none_routes_by_name_and_sees_the_schema() -> None:
    seen: list[Any] = []

    def undecided(self, tool_name, payload, state, *, tool_schema=None, **kw):
        seen.append((tool_name, dict(payload), tool_schema["function"]["name"] if tool_schema else None))
        return None

    calc = calculator()
    core = AgentCore(providers=[add_then_answer()], tools=[type("Calc2", (calc,), {"can_handle_tool_call": undecided})])
    assert tool_messages(core.request(session()))[0].content == "Result: 3"
    assert seen == [("add", {"a": 1, "b": 2}, "add")]


def test_a_tool_hook_with_fewer_parameters_gets_what_it_accepts() -> None:
    class Minimal:
        name = "minimal"

        def get_tool_schemas(self):
            return [openai_fn("add")]

        def execute_tool(self, tool_name, payload):
            return {"success": True, "result": payload["a"] * 10}

    core = AgentCore(providers=[add_then_answer()], tools=[Minimal])
    assert tool_messages(core.request(session()))[0].content == "Result: 10"


# -- errors become results ------------------------------------------------------------


def _error_result(core: AgentCore) -> tuple[Any, Message]:
    result = core.request(session())
    assert result.outcome.ok, result.outcome
    assert result.final_messages[-1].content == "done"  # the model got another turn
    (msg,) = tool_messages(result)
    assert msg.tool_result is not None and msg.tool_result["success"] is False
    return result, msg


def test_an_unknown_tool_is_an_error_result() -> None:
    log: list[Any] = []
    core = AgentCore(providers=[add_then_answer(tool_call("nope", {}))], tools=[calculator(log)])
    _, msg = _error_result(core)
    assert msg.content.startswith("Error")
    assert "nope" in msg.content
    assert log == []


def test_a_tool_that_raises_is_an_error_result_naming_the_exception() -> None:
    def boom(name: str, payload: Any) -> Any:
        raise RuntimeError("disk on fire")

    core = AgentCore(providers=[add_then_answer(tool_call("explode", {}))], tools=[tool("bomb", [openai_fn("explode")], boom)])
    _, msg = _error_result(core)
    assert "RuntimeError" in msg.content and "disk on fire" in msg.content


def test_a_tool_reporting_failure_is_an_error_result() -> None:
    failing = tool("f", [openai_fn("fail")], lambda n, p: {"success": False, "error": "quota exceeded"})
    core = AgentCore(providers=[add_then_answer(tool_call("fail", {}))], tools=[failing])
    _, msg = _error_result(core)
    assert msg.content == "Error: quota exceeded"


@pytest.mark.parametrize("raw", ['{"a": 1,', "not json", "[1, 2]", '"text"'])
def test_arguments_that_are_not_a_json_object_are_an_error_result_and_the_tool_does_not_run(raw: str) -> None:
    log: list[Any] = []
    core = AgentCore(providers=[add_then_answer(tool_call("add", raw))], tools=[calculator(log)])
    _, msg = _error_result(core)
    assert "add" in msg.content
    assert log == []


def test_a_non_mapping_tool_result_counts_as_success() -> None:
    core = AgentCore(providers=[add_then_answer(tool_call("seven", {}))], tools=[tool("s", [openai_fn("seven")], lambda n, p: 7)])
    (msg,) = tool_messages(core.request(session()))
    assert msg.content == "Result: 7"
    assert msg.tool_result["success"] is True


def test_one_failing_call_does_not_stop_the_others_in_the_same_turn() -> None:
    log: list[Any] = []
    core = AgentCore(
        providers=[add_then_answer(tool_call("nope", {}, id="x"), tool_call("add", {"a": 2, "b": 2}, id="y"))],
        tools=[calculator(log)],
    )
    result = core.request(session())
    bad, good = tool_messages(result)
    assert bad.tool_result["success"] is False
    assert good.content == "Result: 4"
    assert log == [("add", {"a": 2, "b": 2})]


# -- max_iterations ---------------------------------------------------------------------


def test_when_the_last_allowed_call_asks_for_tools_they_do_not_run() -> None:
    log: list[Any] = []
    provider = scripted_provider(
        reply(tool_calls=[tool_call("add", {"a": 1, "b": 1}, id="first")]),
        reply(tool_calls=[tool_call("add", {"a": 5, "b": 5}, id="second")]),
        reply("never reached"),
    )
    core = AgentCore(providers=[provider], tools=[calculator(log)])
    result = core.request(session(), {"max_iterations": 2})
    assert (result.outcome.status, result.outcome.reason) == ("stopped", "max_turns")
    assert log == [("add", {"a": 1, "b": 1})]
    assert [m.role for m in result.final_messages] == ["assistant", "tool", "assistant"]
    assert result.final_messages[-1].metadata["tool_calls"][0]["id"] == "second"
    assert result.usage.provider_calls == 2
    events = list(core.stream_request(session(), {"max_iterations": 2}))
    assert [e.call_id for e in events if e.type == "tool_call"] == ["first"]
    assert events[-1].outcome.reason == "max_turns"


def test_a_reply_without_tools_on_the_last_allowed_call_finishes() -> None:
    core = AgentCore(providers=[add_then_answer()], tools=[calculator()])
    result = core.request(session(), {"max_iterations": 2})
    assert result.outcome.ok
    assert result.final_messages[-1].content == "done"


# -- streaming tools ----------------------------------------------------------------------


class Counter:
    name = "counter"

    def get_tool_schemas(self, state):
        return [openai_fn("count")]

    def stream_tool(self, tool_name, payload, state):
        for i in range(payload["n"]):
            yield {"part": f"tick {i}"}
        yield {"success": True, "result": "counted"}


def test_stream_tool_parts_become_tool_progress_events() -> None:
    core = AgentCore(providers=[add_then_answer(tool_call("count", {"n": 3}, id="k"))], tools=[Counter])
    events = list(core.stream_request(session()))
    kinds = [e.type for e in events]
    progress = [e for e in events if e.type == "tool_progress"]
    assert [p.part for p in progress] == ["tick 0", "tick 1", "tick 2"]
    assert all(p.call_id == "k" and p.tool_name == "count" for p in progress)
    first, last = kinds.index("tool_progress"), len(kinds) - 1 - kinds[::-1].index("tool_progress")
    assert kinds.index("tool_call") < first and last < kinds.index("tool_result")
    result = next(e for e in events if e.type == "tool_result")
    assert result.message.content == "Result: counted"


def test_a_stream_tool_without_a_final_result_answers_with_its_parts() -> None:
    class Parts:
        name = "parts"

        def get_tool_schemas(self, state):
            return [openai_fn("parts")]

        def stream_tool(self, tool_name, payload, state):
            yield {"part": "a"}
            yield {"part": "b"}

    core = AgentCore(providers=[add_then_answer(tool_call("parts", {}))], tools=[Parts])
    (msg,) = tool_messages(core.request(session()))
    assert msg.tool_result["success"] is True
    assert list(msg.tool_result["result"]) == ["a", "b"]


def test_stream_tool_progress_in_an_async_request() -> None:
    core = AgentCore(providers=[add_then_answer(tool_call("count", {"n": 2}))], tools=[Counter])

    async def collect() -> list[Any]:
        return [e async for e in core.astream_request(session())]

    events = asyncio.run(collect())
    assert [e.part for e in events if e.type == "tool_progress"] == ["tick 0", "tick 1"]
    assert events[-1].outcome.ok


class AsyncCounter:
    name = "acounter"

    def get_tool_schemas(self, state):
        return [openai_fn("count")]

    async def stream_tool_async(self, tool_name, payload, state):
        for i in range(payload["n"]):
            await asyncio.sleep(0)
            yield {"part": i}
        yield {"success": True, "result": "async counted"}


def test_an_async_stream_tool_in_an_async_request() -> None:
    core = AgentCore(providers=[add_then_answer(tool_call("count", {"n": 2}))], tools=[AsyncCounter])

    async def collect() -> list[Any]:
        return [e async for e in core.astream_request(session())]

    events = asyncio.run(collect())
    assert [e.part for e in events if e.type == "tool_progress"] == [0, 1]
    assert next(e for e in events if e.type == "tool_result").message.content == "Result: async counted"


def test_an_async_stream_tool_in_a_sync_request() -> None:
    core = AgentCore(providers=[add_then_answer(tool_call("count", {"n": 2}))], tools=[AsyncCounter])
    events = list(core.stream_request(session()))
    assert [e.part for e in events if e.type == "tool_progress"] == [0, 1]
    assert next(e for e in events if e.type == "tool_result").message.content == "Result: async counted"


# -- sync and async tools --------------------------------------------------------------


class AsyncOnlyCalc:
    name = "acalc"

    def get_tool_schemas(self, state):
        return [openai_fn("add")]

    async def execute_tool_async(self, tool_name, payload, state):
        await asyncio.sleep(0)
        return {"success": True, "result": payload["a"] + payload["b"] + 100}


def test_an_async_tool_runs_in_a_sync_request() -> None:
    core = AgentCore(providers=[add_then_answer()], tools=[AsyncOnlyCalc])
    result = core.request(session())
    assert tool_messages(result)[0].content == "Result: 103"
    assert result.outcome.ok


def test_an_async_tool_runs_in_an_async_request() -> None:
    core = AgentCore(providers=[add_then_answer()], tools=[AsyncOnlyCalc])
    result = asyncio.run(core.arequest(session()))
    assert tool_messages(result)[0].content == "Result: 103"


def test_a_sync_tool_runs_in_an_async_request() -> None:
    log: list[Any] = []
    core = AgentCore(providers=[add_then_answer()], tools=[calculator(log)])
    result = asyncio.run(core.arequest(session()))
    assert tool_messages(result)[0].content == "Result: 3"
    assert log == [("add", {"a": 1, "b": 2})]


def test_an_async_tool_that_raises_is_an_error_result() -> None:
    class Broken:
        name = "broken"

        def get_tool_schemas(self, state):
            return [openai_fn("add")]

        async def execute_tool_async(self, tool_name, payload, state):
            raise ValueError("async trouble")

    core = AgentCore(providers=[add_then_answer()], tools=[Broken])
    for result in (core.request(session()), asyncio.run(core.arequest(session()))):
        (msg,) = tool_messages(result)
        assert "async trouble" in msg.content and msg.tool_result["success"] is False


# -- schema adaptation ------------------------------------------------------------------


def test_anthropic_and_json_schema_tools_are_adapted_to_openai_by_default() -> None:
    seen: list[Any] = []
    core = AgentCore(
        providers=[capturing(scripted_provider("ok"), seen)],
        tools=[
            tool("a", [anthropic_tool("search", "Search the web")]),
            tool("j", [json_schema_tool("square", "Square a number")]),
            tool("o", [openai_fn("add", "Add")]),
        ],
    )
    core.request(session())
    (tools,) = seen
    by_name = {t["function"]["name"]: t for t in tools}
    assert set(by_name) == {"search", "square", "add"}
    assert all(t["type"] == "function" for t in tools)
    assert by_name["search"]["function"]["description"] == "Search the web"
    assert by_name["search"]["function"]["parameters"] == {"type": "object", "properties": {"q": {"type": "string"}}}
    assert by_name["square"]["function"]["description"] == "Square a number"
    assert by_name["square"]["function"]["parameters"]["properties"] == {"n": {"type": "integer"}}
    assert "title" not in by_name["square"]["function"]["parameters"]


def test_a_provider_accepting_only_anthropic_gets_anthropic_tools() -> None:
    seen: list[Any] = []
    core = AgentCore(
        providers=[capturing(scripted_provider("ok"), seen, ["anthropic.messages"])],
        tools=[tool("o", [openai_fn("add", "Add", {"a": {"type": "integer"}})]), tool("j", [json_schema_tool("square")])],
    )
    core.request(session())
    (tools,) = seen
    by_name = {t["name"]: t for t in tools}
    assert set(by_name) == {"add", "square"}
    assert by_name["add"]["description"] == "Add"
    assert by_name["add"]["input_schema"] == {"type": "object", "properties": {"a": {"type": "integer"}}}
    assert by_name["square"]["input_schema"]["properties"] == {"n": {"type": "integer"}}
    assert all("function" not in t for t in tools)


def test_a_schema_already_in_an_accepted_format_is_passed_through() -> None:
    seen: list[Any] = []
    schema = anthropic_tool("search", "Search")
    core = AgentCore(providers=[capturing(scripted_provider("ok"), seen, ["anthropic.messages"])], tools=[tool("a", [schema])])
    core.request(session())
    assert list(seen[0]) == [schema]


def test_an_extension_can_add_an_accepted_format() -> None:
    seen: list[Any] = []

    class AnthropicFormat:
        name = "anthropic_format"

        def accepted_tool_schema_formats(self, config, state=None):
            return ["anthropic.messages"]

    core = AgentCore(
        providers=[capturing(scripted_provider("ok"), seen, ["acme.tools"])],
        extensions=[AnthropicFormat],
        tools=[tool("o", [openai_fn("add")])],
    )
    core.request(session())
    assert [t["name"] for t in seen[0]] == ["add"]


def test_no_adapter_path_is_a_config_error_naming_both_formats() -> None:
    seen: list[Any] = []
    core = AgentCore(
        providers=[capturing(scripted_provider("ok"), seen, ["acme.tools"])], tools=[tool("calc", [openai_fn("add")])]
    )
    with pytest.raises(ConfigError) as info:
        core.request(session())
    msg = str(info.value)
    assert "openai.chat_completions" in msg and "acme.tools" in msg
    assert "calc" in info.value.plugins
    assert seen == []


def test_a_contributed_adapter_opens_a_path_to_a_custom_format() -> None:
    seen: list[Any] = []

    def to_acme(schema):
        return {"acme_name": schema["function"]["name"]}

    base = capturing(scripted_provider("ok"), seen, ["acme.tools"])
    provider = type(
        "AcmeProvider", (base,),
        {"get_tool_interop_contribution": lambda self, config, state=None: ToolInteropContribution(
            schema_adapters=(SchemaAdapter("openai.chat_completions", "acme.tools", to_acme),)
        )},
    )
    core = AgentCore(providers=[provider], tools=[tool("calc", [openai_fn("add")])])
    core.request(session())
    assert list(seen[0]) == [{"acme_name": "add"}]


def test_a_schema_in_no_known_format_is_a_config_error_naming_the_tool() -> None:
    core = AgentCore(providers=[scripted_provider("ok")], tools=[tool("odd", [{"description": "no name, no shape"}])])
    with pytest.raises(ConfigError) as info:
        core.request(session())
    assert "odd" in info.value.plugins


def test_an_adapted_tool_is_still_routed_by_its_name() -> None:
    square = tool("sq", [json_schema_tool("square")], lambda n, p: {"success": True, "result": p["n"] ** 2})
    core = AgentCore(providers=[add_then_answer(tool_call("square", {"n": 9}))], tools=[square])
    assert tool_messages(core.request(session()))[0].content == "Result: 81"


# -- tool_pre lifecycle ---------------------------------------------------------------------


def guard(decide: Callable[[Any], Any], seen: list[Any] | None = None) -> type:
    class Guard:
        name = "guard"

        def get_actions(self, state):
            return [{"id": "check", "trigger": "tool_pre"}]

        def execute_action(self, action_id, session, native_messages, params, context, state):
            if seen is not None:
                seen.append(context)
            return decide(context)

    return Guard


def test_tool_pre_deny_answers_the_model_with_the_reason_and_skips_the_tool() -> None:
    log: list[Any] = []
    core = AgentCore(
        providers=[add_then_answer()], tools=[calculator(log)],
        features=[guard(lambda ctx: {"action": "deny", "reason": "no maths today"})],
    )
    result, msg = _error_result(core)
    assert log == []
    assert "no maths today" in msg.content and "guard" in msg.content


def test_tool_pre_modify_replaces_the_payload() -> None:
    log: list[Any] = []
    core = AgentCore(
        providers=[add_then_answer()], tools=[calculator(log)],
        features=[guard(lambda ctx: {"action": "modify", "data": {"payload": {"a": 40, "b": 2}}})],
    )
    result = core.request(session())
    assert log == [("add", {"a": 40, "b": 2})]
    assert tool_messages(result)[0].content == "Result: 42"


@pytest.mark.parametrize("verdict", [{}, {"action": "continue"}, {"action": "allow"}])  # None: test_fail_closed.py
def test_tool_pre_without_objection_lets_the_call_run(verdict: Any) -> None:
    log: list[Any] = []
    core = AgentCore(providers=[add_then_answer()], tools=[calculator(log)], features=[guard(lambda ctx: verdict)])
    core.request(session())
    assert log == [("add", {"a": 1, "b": 2})]


def test_tool_pre_context_describes_the_call() -> None:
    seen: list[Any] = []
    core = AgentCore(
        providers=[add_then_answer(tool_call("add", {"a": 1, "b": 2}, id="c9"))], tools=[calculator()],
        features=[guard(lambda ctx: {}, seen)],
    )
    core.request(session())
    (ctx,) = seen
    assert ctx["lifecycle"] == "tool_pre"
    assert ctx["tool_call"]["id"] == "c9"
    assert ctx["tool_call"]["name"] == "add"
    assert dict(ctx["tool_call"]["payload"]) == {"a": 1, "b": 2}
    assert ctx["tool_call"]["plugin"] == "calc"


def _asking(default: str | None = None) -> type:
    verdict: dict[str, Any] = {"action": "ask_user", "approval_prompt": "Really add?"}
    if default is not None:
        verdict["approval_default"] = default
    return guard(lambda ctx: verdict)


@pytest.mark.parametrize(("answer", "runs"), [(True, True), ("allow", True), (False, False), ("deny", False)])
def test_tool_pre_ask_user_calls_the_sync_approval_callback(answer: Any, runs: bool) -> None:
    log: list[Any] = []
    asked: list[ApprovalRequest] = []

    def approve(request: ApprovalRequest) -> Any:
        asked.append(request)
        return answer

    core = AgentCore(
        providers=[add_then_answer(tool_call("add", {"a": 1, "b": 2}, id="c1"))], tools=[calculator(log)],
        features=[_asking("allow" if not runs else "deny")], approval=approve,
    )
    result = core.request(session())
    assert (log != []) is runs
    (req,) = asked
    assert (req.prompt, req.tool_name, req.call_id, req.plugin) == ("Really add?", "add", "c1", "guard")
    assert req.payload == {"a": 1, "b": 2}
    assert tool_messages(result)[0].tool_result["success"] is runs


@pytest.mark.parametrize(("answer", "runs"), [(True, True), ("deny", False)])
def test_tool_pre_ask_user_awaits_an_async_callback_in_sync_and_async_requests(answer: Any, runs: bool) -> None:
    log: list[Any] = []
    asked: list[str] = []

    async def approve(request: ApprovalRequest) -> Any:
        await asyncio.sleep(0)
        asked.append(request.prompt)
        return answer

    core = AgentCore(providers=[add_then_answer()], tools=[calculator(log)], features=[_asking()], approval=approve)
    core.request(session())
    asyncio.run(core.arequest(session()))
    assert asked == ["Really add?", "Really add?"]
    assert len(log) == (2 if runs else 0)


def test_tool_pre_ask_user_calls_a_sync_callback_in_an_async_request() -> None:
    log: list[Any] = []
    core = AgentCore(providers=[add_then_answer()], tools=[calculator(log)], features=[_asking()], approval=lambda r: "allow")
    asyncio.run(core.arequest(session()))
    assert len(log) == 1


@pytest.mark.parametrize(("default", "runs"), [("allow", True), ("deny", False), (None, False)])
def test_tool_pre_ask_user_without_a_callback_follows_the_default(default: str | None, runs: bool) -> None:
    log: list[Any] = []
    core = AgentCore(providers=[add_then_answer()], tools=[calculator(log)], features=[_asking(default)])
    result = core.request(session())
    assert (log != []) is runs
    assert result.outcome.ok


def test_tool_pre_ask_user_with_an_unreadable_answer_follows_the_default() -> None:
    log: list[Any] = []
    core = AgentCore(
        providers=[add_then_answer()], tools=[calculator(log)], features=[_asking("allow")], approval=lambda r: "maybe?",
    )
    core.request(session())
    assert len(log) == 1


# -- tool_post lifecycle -------------------------------------------------------------------


def test_tool_post_sees_the_result_and_merges_session_metadata() -> None:
    seen: list[Any] = []

    class Audit:
        name = "audit"

        def get_actions(self, state):
            return [{"id": "record", "trigger": "tool_post"}]

        def execute_action(self, action_id, session, native_messages, params, context, state):
            seen.append(context)
            count = session.metadata.get("tool_runs", 0)
            return {"session_metadata": {"tool_runs": count + 1, "last_tool": context["tool_call"]["name"]}}

    core = AgentCore(
        providers=[add_then_answer(tool_call("add", {"a": 1, "b": 2}, id="p"), tool_call("add", {"a": 2, "b": 2}, id="q"))],
        tools=[calculator()], features=[Audit],
    )
    result = core.request(session())
    assert result.session.metadata["tool_runs"] == 2
    assert result.session.metadata["last_tool"] == "add"
    assert [c["lifecycle"] for c in seen] == ["tool_post", "tool_post"]
    assert [c["tool_call"]["id"] for c in seen] == ["p", "q"]
    assert seen[0]["tool_result"]["result"] == 3
    assert seen[1]["tool_message"]["content"] == "Result: 4"


# -- execute_tool_calls / get_tool_schemas ----------------------------------------------------


class NeverCalled:
    """A provider that fails if the engine ever calls the model."""

    name = "never"

    def call_api(self, native_messages, state):
        raise AssertionError("execute_tool_calls must not call the model")


def test_execute_tool_calls_returns_tool_messages_without_calling_the_model() -> None:
    log: list[Any] = []
    core = AgentCore(providers=[NeverCalled], tools=[calculator(log)])
    calls = [
        tool_call("add", {"a": 2, "b": 3}, id="one"),
        tool_call("missing", {}, id="two"),
        tool_call("add", "{broken", id="three"),
        {"type": "tool_use", "id": "four", "name": "add", "input": {"a": 10, "b": 1}},
    ]
    messages = core.execute_tool_calls(Session("s"), calls, {})
    assert [m.role for m in messages] == ["tool"] * 4
    assert [m.metadata["tool_call_id"] for m in messages] == ["one", "two", "three", "four"]
    assert messages[0].content == "Result: 5"
    assert messages[1].tool_result["success"] is False and "missing" in messages[1].content
    assert messages[2].tool_result["success"] is False
    assert messages[3].content == "Result: 11"
    assert log == [("add", {"a": 2, "b": 3}), ("add", {"a": 10, "b": 1})]
    appended = Session("s").with_messages(messages)
    assert len(appended.messages) == 4


def test_execute_tool_calls_runs_async_tools() -> None:
    core = AgentCore(providers=[NeverCalled], tools=[AsyncOnlyCalc])
    (msg,) = core.execute_tool_calls(Session("s"), [tool_call("add", {"a": 1, "b": 1})])
    assert msg.content == "Result: 102"


def _pruning_feature(seen: list[Any] | None = None) -> type:
    class Prune:
        name = "prune"

        def prepare_tools(self, config, tools, context=None):
            if seen is not None:
                seen.append(context)
            kept = [t for t in tools if t.tool_name != "secret"]
            return [
                t.with_schema(openai_fn(t.tool_name, "rewritten")) if t.tool_name == "add" else t for t in kept
            ]

    return Prune


def test_get_tool_descriptors_returns_descriptors_after_prepare_tools() -> None:
    seen: list[Any] = []
    core = AgentCore(
        providers=[NeverCalled],
        tools=[calculator(), tool("vault", [openai_fn("secret")]), tool("j", [json_schema_tool("square")])],
        features=[_pruning_feature(seen)],
    )
    descriptors = core.get_tool_descriptors({})
    assert all(isinstance(d, ToolDescriptor) for d in descriptors)
    by_name = {d.tool_name: d for d in descriptors}
    assert set(by_name) == {"add", "square"}
    assert by_name["add"].plugin_name == "calc"
    assert by_name["add"].schema["function"]["description"] == "rewritten"
    assert by_name["square"].metadata["format"] == "json_schema"
    (ctx,) = seen
    assert {d.tool_name for d in ctx["available_tools"]} == {"add", "secret", "square"}
    # without the feature every tool is offered
    assert {d.tool_name for d in core.get_tool_descriptors({"disabled_plugins": ["prune"]})} == {"add", "secret", "square"}


def test_prepare_tools_shapes_what_a_request_offers_and_what_can_be_called() -> None:
    seen: list[Any] = []
    vault_log: list[Any] = []

    def open_vault(name: str, payload: Any) -> Any:
        vault_log.append(name)
        return {"success": True, "result": "gold"}

    core = AgentCore(
        providers=[capturing(scripted_provider(reply(tool_calls=[tool_call("secret", {})]), reply("done")), seen)],
        tools=[calculator(), tool("vault", [openai_fn("secret")], open_vault)],
        features=[_pruning_feature()],
    )
    result = core.request(session())
    assert [t["function"]["name"] for t in seen[0]] == ["add"]
    assert seen[0][0]["function"]["description"] == "rewritten"
    (msg,) = tool_messages(result)
    assert msg.tool_result["success"] is False
    assert vault_log == []


def test_tool_prepare_result_reaches_get_tool_schemas_and_execute_tool() -> None:
    class Prepared:
        name = "prepared"

        def prepare(self, config, state, *, context=None):
            return {"names": ["dyn"]}

        def get_tool_schemas(self, state, *, prepared=None):
            return [openai_fn(n) for n in (prepared or {}).get("names", [])]

        def execute_tool(self, tool_name, payload, state, *, prepared=None, **kw):
            return {"success": True, "result": json.dumps(prepared)}

    core = AgentCore(providers=[add_then_answer(tool_call("dyn", {}))], tools=[Prepared])
    assert [d.tool_name for d in core.get_tool_descriptors()] == ["dyn"]
    assert tool_messages(core.request(session()))[0].content == 'Result: {"names": ["dyn"]}'


ENVELOPE = {
    "type": "provider_native_tool_result",
    "format": "openai.chat_completions",
    "content": [{"type": "text", "text": "line one"}, {"type": "text", "text": "line two"}],
}


def _enveloping_tool() -> type:
    return tool(
        "env", [openai_fn("add")], lambda n, p: {"success": True, "result": "x"},
        format_tool_result=lambda self, result, state: ENVELOPE,
    )


def test_a_structured_tool_result_stays_structured_when_the_provider_accepts_its_format() -> None:
    core = AgentCore(providers=[add_then_answer()], tools=[_enveloping_tool()])
    (msg,) = tool_messages(core.request(session()))
    assert msg.content == ENVELOPE


def test_a_structured_tool_result_becomes_text_when_the_provider_does_not_accept_its_format() -> None:
    provider = capturing(add_then_answer(), [], ["anthropic.messages"])
    core = AgentCore(providers=[provider], tools=[_enveloping_tool()])
    (msg,) = tool_messages(core.request(session()))
    assert msg.content == "line one\nline two"


def test_tool_pre_actions_chain_in_feature_order_and_a_denial_stops_the_chain() -> None:
    log: list[Any] = []
    later: list[Any] = []

    def make(name: str, priority: int, decide: Callable[[Any], Any]) -> type:
        return type(name, (), {
            "name": name, "priority": priority,
            "get_actions": lambda self, state: [{"id": "check", "trigger": "tool_pre"}],
            "execute_action": lambda self, action_id, session, native_messages, params, context, state: decide(context),
        })

    doubler = make("doubler", 1, lambda ctx: {"action": "modify", "data": {"payload": {
        k: v * 2 for k, v in ctx["tool_call"]["payload"].items()}}})
    observer = make("observer", 2, lambda ctx: later.append(dict(ctx["tool_call"]["payload"])) or {})
    core = AgentCore(providers=[add_then_answer()], tools=[calculator(log)], features=[observer, doubler])
    assert tool_messages(core.request(session()))[0].content == "Result: 6"
    assert later == [{"a": 2, "b": 4}]  # the second action sees the first one's change
    assert log == [("add", {"a": 2, "b": 4})]

    later.clear()
    denier = make("denier", 0, lambda ctx: {"action": "deny", "reason": "stop"})
    core = AgentCore(providers=[add_then_answer()], tools=[calculator(log)], features=[observer, denier])
    core.request(session())
    assert later == []


@pytest.mark.parametrize("reverse", [False, True])
def test_when_two_tools_offer_one_name_the_request_fails_naming_both(reverse: bool) -> None:
    # the model would get two identical names; the order of registration must not decide
    first = tool("a_tool", [openai_fn("add")], lambda n, p: {"success": True, "result": "a"})
    early = tool("z_tool", [openai_fn("add")], lambda n, p: {"success": True, "result": "z"}, priority=1)
    regs = [first, early]
    core = AgentCore(providers=[add_then_answer()], tools=regs[::-1] if reverse else regs)
    with pytest.raises(ConfigError) as info:
        core.request(session())
    assert set(info.value.plugins) == {"a_tool", "z_tool"} and "'add'" in str(info.value)
