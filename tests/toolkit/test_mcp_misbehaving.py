"""MCP servers that misbehave without crashing: huge results, tool lists that change unannounced, clashing names.

Real servers built with the official SDK (``mcp_stdio_server.py`` over stdio,
``mcp_http_server.py`` over streamable HTTP), reached through the library and
through the HTTP server ``agent-core serve`` runs (``create_app`` under
uvicorn on 127.0.0.1). A scripted provider plays the model.
"""

from __future__ import annotations

import json
import logging
import sys
import time
import tracemalloc
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from agent_core import AgentCore, Message
from agent_core.testing import reply, scripted_provider, tool_call
from agent_core_plugins.files import FilesTool
from agent_core_plugins.mcp_servers import DEFAULT_MAX_RESULT_BYTES, DEFAULT_TOOLS_MAX_AGE_S, parse_limits
from agent_core_plugins.mcp_tools import MCPTool

from .test_mcp import HttpServer

HERE = Path(__file__).resolve().parent
STDIO = {"name": "st", "command": sys.executable, "args": [str(HERE / "mcp_stdio_server.py")]}
AGE = 0.3  # mcp_tools_max_age_s in these tests: a changed list must be seen once this has passed


@pytest.fixture(scope="module")
def web() -> Iterator[HttpServer]:
    server = HttpServer()
    server.start()
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture(params=["stdio", "http"])
def spec(request: pytest.FixtureRequest) -> dict[str, Any]:
    if request.param == "stdio":
        return dict(STDIO)
    return request.getfixturevalue("web").spec("st")  # one name for both: the tools are st_<tool>


def _request(servers: list[Any], *turns: Any, tools: tuple[Any, ...] = (), config: dict[str, Any] | None = None):
    """One request; returns (start event, tool messages, done event)."""
    core = AgentCore(providers=[scripted_provider(*turns)], tools=[MCPTool, *tools])
    session = core.add_message(core.create_session(), Message("user", "go"))
    # tool_timeout_s is generous by default: starting a stdio server on a busy machine takes seconds
    events = list(core.stream_request(session, {"mcp_servers": servers, "tool_timeout_s": 30, **(config or {})}))
    done = events[-1]
    assert done.type == "done" and done.outcome.status == "finished", done.outcome
    return events[0], [m for m in done.session.messages if m.role == "tool"], done


def _call(server: dict[str, Any], name: str, arguments: dict[str, Any], **config: Any) -> Message:
    (message,) = _request([server], reply(tool_calls=[tool_call(name, arguments)]), "ok", config=config)[1]
    return message


def test_the_defaults_are_the_documented_ones() -> None:
    limits = parse_limits({})
    assert limits.max_message_bytes == DEFAULT_MAX_RESULT_BYTES == 16 * 1024 * 1024
    assert limits.tools_max_age_s == DEFAULT_TOOLS_MAX_AGE_S == 5.0
    docs = (HERE.parent.parent / "docs" / "features.md").read_text(encoding="utf-8")
    assert "`mcp_max_result_bytes` (16 MiB)" in docs and "`mcp_tools_max_age_s` (5 s" in docs


def test_a_50_mb_result_is_refused_while_read_and_the_next_call_on_that_server_works(
        spec: dict[str, Any], caplog: pytest.LogCaptureFixture) -> None:
    assert _call(spec, "st_echo", {"text": "warm"}).content == "warm"  # connected (a stdio server has started)
    tracemalloc.start()
    try:
        start = time.monotonic()
        big = _call(spec, "st_big", {"megabytes": 50}, tool_timeout_s=5)
        took = time.monotonic() - start
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert took < 5 + 1  # tool_timeout_s + 1 s: refused at the cap, not read to the end
    assert not big.tool_result["success"] and "mcp_max_result_bytes" in big.content and "'st'" in big.content
    assert peak < 2.5 * DEFAULT_MAX_RESULT_BYTES  # bounded by the cap (16 MiB), below the 50 MB sent
    assert _call(spec, "st_echo", {"text": "clean"}).content == "clean"  # a new connection, starting clean
    # the error result said it all: the SDK's log of the body it could not read is not repeated as an error
    assert not [r for r in caplog.records if r.name.startswith("mcp.") and r.levelno >= logging.ERROR]


def test_a_result_under_the_cap_is_read_whole(spec: dict[str, Any]) -> None:
    assert _call(spec, "st_big", {"megabytes": 1}).content == "x" * 1_000_000  # read in many chunks


def test_a_lower_cap_refuses_what_the_default_takes(web: HttpServer) -> None:
    spec = web.spec("st")  # the stdio transport's cap is the 50 MB test's
    refused = _call(spec, "st_big", {"megabytes": 1}, mcp_max_result_bytes=100_000)
    assert not refused.tool_result["success"] and "100000" in refused.content
    assert _call(spec, "st_echo", {"text": "fine"}, mcp_max_result_bytes=100_000).content == "fine"


def test_a_hung_call_drops_the_connection_and_the_next_call_starts_clean(web: HttpServer) -> None:
    spec = web.spec("hung")
    assert _call(spec, "hung_echo", {"text": "connected"}).content == "connected"  # the time is the call's alone
    hung = _call(spec, "hung_hang", {"seconds": 30}, tool_timeout_s=0.5)
    assert not hung.tool_result["success"] and "tool_timeout_s" in hung.content and "closed" in hung.content
    assert _call(spec, "hung_echo", {"text": "after"}).content == "after"


def test_a_restarted_http_server_is_reached_again_by_the_next_request() -> None:
    server = HttpServer()
    server.start()
    try:
        spec = server.spec("again")
        assert _call(spec, "again_echo", {"text": "before"}).content == "before"
        server.proc.kill()  # gone without a word; the pool still holds its session
        server.proc.wait(5)
        server.start()  # back on the same port, with no memory of the session
        first = _call(spec, "again_echo", {"text": "first"})  # refused or answered, never a failed request
        assert _call(spec, "again_echo", {"text": "second"}).content == "second"
        assert first.content == "first" or not first.tool_result["success"]
    finally:
        server.stop()


def _offered(server: dict[str, Any], **config: Any) -> list[str]:
    core = AgentCore(providers=[scripted_provider("x")], tools=[MCPTool])
    return [d.tool_name for d in core.get_tool_descriptors({"mcp_servers": [server], **config})]


def test_a_tool_added_and_dropped_unannounced_is_seen_within_the_max_age(spec: dict[str, Any]) -> None:
    age = {"mcp_tools_max_age_s": AGE}
    assert "st_extra" not in _offered(spec, **age)
    assert _call(spec, "st_add", {"name": "extra"}, **age).content == "added extra"
    time.sleep(AGE)
    # the next request offers it; dropped mid-request, a call to it is a tool error that names it
    _, (ran, dropped, gone), done = _request(
        [spec], reply(tool_calls=[tool_call("st_extra", {})]), reply(tool_calls=[tool_call("st_drop", {"name": "extra"})]),
        reply(tool_calls=[tool_call("st_extra", {}, id="call_st_extra_again")]), "ok", config=age)
    assert ran.content == "extra ran" and dropped.content == "dropped extra"
    assert not gone.tool_result["success"] and done.outcome.status == "finished"
    assert "'st_extra' is no longer offered by MCP server 'st'" in gone.content
    time.sleep(AGE)
    assert "st_extra" not in _offered(spec, **age) and "st_echo" in _offered(spec, **age)


def test_an_mcp_tool_named_like_a_built_in_is_left_out_and_the_built_in_runs(web: HttpServer, tmp_path: Path,
                                                                            caplog: pytest.LogCaptureFixture) -> None:
    (tmp_path / "notes.txt").write_text("from the disk\n")
    with caplog.at_level(logging.WARNING, logger="agent_core.tools"):
        start, (read,), _ = _request([web.spec("read")], reply(tool_calls=[tool_call("read_file", {"path": "notes.txt"})]),
                                     "ok", tools=(FilesTool,),
                                     config={"files_root": str(tmp_path), "enabled_plugins": ["files"]})
    assert "from the disk" in read.content  # the built-in ran, not the server's tool
    (note,) = [w for w in start.warnings if "read_file" in w]
    assert "'mcp'" in note and "'files'" in note and "rename the MCP server" in note
    assert note in caplog.text


class OtherMCP(MCPTool):
    """A second MCP plugin: configured with the same servers, every tool name it makes is taken."""

    name = "mcp_other"


def test_two_mcp_plugins_making_one_name_keep_the_first_and_say_so(web: HttpServer) -> None:
    start, (echo,), _ = _request([web.spec("st")], reply(tool_calls=[tool_call("st_echo", {"text": "once"})]), "ok",
                                 tools=(OtherMCP,))
    assert echo.content == "once"
    (note,) = [w for w in start.warnings if "'st_echo'" in w]
    assert "'mcp_other'" in note and "'mcp'" in note and "rename the MCP server" in note


def _sse(response: httpx.Response) -> list[dict[str, Any]]:
    return [json.loads(line[5:]) for line in response.text.splitlines() if line.startswith("data:")]


@pytest.mark.filterwarnings("ignore::agent_core.errors.UnknownConfigKeyWarning")  # the scripted model's `script`
def test_through_the_http_server_big_results_changed_lists_and_clashes(web: HttpServer, tmp_path: Path) -> None:
    from agent_core.server import ServeSettings, create_app
    from agent_core.store import open_store

    from server._live import running

    (tmp_path / "notes.txt").write_text("from the disk\n")
    provider = scripted_provider(from_config=True)
    core = AgentCore(providers=[provider], tools=[MCPTool, FilesTool])
    config = {"provider": provider.name, "mcp_servers": [web.spec("st"), web.spec("read")], "tool_timeout_s": 5,
              "mcp_tools_max_age_s": AGE, "files_root": str(tmp_path), "enabled_plugins": ["files"]}
    app = create_app(core, open_store(f"sqlite:///{tmp_path / 's.db'}"), config=config,
                     settings=ServeSettings(allow_config=("script",)))  # each turn brings the model's script
    turn = 0

    def ask(*calls: tuple[str, dict[str, Any]]) -> tuple[dict[str, Any], list[dict[str, Any]]]:
        nonlocal turn
        turn += 1
        script = [{"tool_calls": [{"name": n, "arguments": a} for n, a in calls]}, "ok"]
        answer = client.post(f"/v1/sessions/s{turn}/turns", json={"message": "go", "config": {"script": script}})
        assert answer.status_code == 200, answer.text
        events = _sse(answer)
        done = next(e for e in events if e["type"] == "done")
        assert done["outcome"]["status"] == "finished", done["outcome"]
        return events[0], [m for m in done["final_messages"] if m["role"] == "tool"]

    with running(app) as url, httpx.Client(base_url=url, timeout=30) as client:
        assert ask(("st_echo", {"text": "connected"}))[1][0]["content"] == "connected"
        start = time.monotonic()
        _, (big,) = ask(("st_big", {"megabytes": 50}))
        assert time.monotonic() - start < 5 + 1
        assert "mcp_max_result_bytes" in big["content"]
        assert ask(("st_echo", {"text": "next"}))[1][0]["content"] == "next"
        assert ask(("st_add", {"name": "extra"}))[1][0]["content"] == "added extra"
        time.sleep(AGE)
        assert ask(("st_extra", {}))[1][0]["content"] == "extra ran"
        assert ask(("st_drop", {"name": "extra"}))[1][0]["content"] == "dropped extra"
        time.sleep(AGE)
        assert "Unknown tool: st_extra" in ask(("st_extra", {}))[1][0]["content"]  # no longer offered
        started, (read,) = ask(("read_file", {"path": "notes.txt"}))
        assert "from the disk" in read["content"]
        assert any("'read_file'" in w and "'files'" in w and "rename the MCP server" in w
                   for w in started["warnings"])
