"""The ``mcp`` tool plugin against real MCP servers the tests start.

``mcp-server-time`` and ``mcp-server-git`` (from PyPI, over stdio; git against
a repository made here) and a streamable-HTTP server built with the SDK's own
server API (``mcp_http_server.py``, a process on 127.0.0.1 that wants a bearer
token). A scripted provider plays the model, so every request goes through
the whole engine: catalog, routing, the tool loop, the session.
"""

from __future__ import annotations

import asyncio
import json
import logging
import os
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from agent_core import AgentCore, Message
from agent_core.testing import reply, scripted_provider, tool_call
from agent_core_plugins.mcp_pool import pool
from agent_core_plugins.mcp_tools import MCPTool
from agent_core_plugins.tool_output_budget import ToolOutputBudgetExtension

BIN = Path(sys.executable).parent
HERE = Path(__file__).resolve().parent
TOKEN = "tok-7f3a9c-never-shown"
TIME = {"name": "time", "command": str(BIN / "mcp-server-time"), "args": ["--local-timezone", "UTC"]}


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class HttpServer:
    """``mcp_http_server.py`` as a process; ``start`` again after a crash serves on the same port."""

    def __init__(self) -> None:
        self.port = _free_port()
        self.proc: subprocess.Popen[bytes] | None = None

    def start(self) -> None:
        self.proc = subprocess.Popen([sys.executable, str(HERE / "mcp_http_server.py"), str(self.port), TOKEN],
                                     stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline:
            with socket.socket() as s:
                if s.connect_ex(("127.0.0.1", self.port)) == 0:
                    return
            time.sleep(0.05)
        raise RuntimeError("the test MCP server did not start")

    def stop(self) -> None:
        """Close the pooled connections first: uvicorn waits for open streams before it exits."""
        MCPTool.close_shared()
        if self.proc is not None and self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(5)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(5)

    def spec(self, name: str = "web", token: str = TOKEN) -> dict[str, object]:
        return {"name": name, "url": f"http://127.0.0.1:{self.port}/mcp",
                "headers": {"Authorization": f"Bearer {token}"}}


@pytest.fixture(scope="module")
def web() -> Iterator[HttpServer]:
    server = HttpServer()
    server.start()
    try:
        yield server
    finally:
        server.stop()


def _run(servers: list[object], *turns: object, config: dict[str, object] | None = None, extensions=()):
    core = AgentCore(providers=[scripted_provider(*turns)], tools=[MCPTool], extensions=list(extensions))
    session = core.add_message(core.create_session(), Message("user", "go"))
    return core.request(session, {"mcp_servers": servers, **(config or {})})


def _tools(result) -> list[Message]:
    return [m for m in result.final_messages if m.role == "tool"]


def test_time_server_end_to_end_results_errors_and_schema_checks() -> None:
    calls = [tool_call("time_get_current_time", {"timezone": "UTC"}, id="ok"),
             tool_call("time_get_current_time", {"timezone": 5}, id="bad_args"),
             tool_call("time_get_current_time", {"timezone": "Nowhere/Atlantis"}, id="server_error")]
    result = _run([TIME], reply(tool_calls=calls), "It is late.")
    assert result.outcome.status == "finished" and result.final_messages[-1].content == "It is late."
    ok, bad, refused = _tools(result)
    assert ok.tool_result["success"] and json.loads(ok.content)["timezone"] == "UTC"
    assert ok.tool_result["structured"]["timezone"] == "UTC"
    assert ok.metadata["mcp"] == {"server": "time", "tool": "get_current_time"} and ok.metadata["tool_call_id"] == "ok"
    # the engine checks the arguments against the tool's declared schema before the MCP server sees them
    assert not bad.tool_result["success"] and "'timezone' must be string, got number" in bad.content
    assert not refused.tool_result["success"] and "Nowhere/Atlantis" in refused.content  # the server's isError


@pytest.mark.slow
def test_git_server_over_async_and_the_connection_is_pooled_across_requests(tmp_path: Path) -> None:
    repo = tmp_path / "repo"
    repo.mkdir()
    for args in (["init", "-q", "-b", "trunk"], ["config", "user.email", "t@example.com"],
                 ["config", "user.name", "T"]):
        subprocess.run(["git", *args], cwd=repo, check=True)
    (repo / "notes.txt").write_text("hello\n")
    git = {"name": "git", "command": str(BIN / "mcp-server-git"), "args": ["--repository", str(repo)]}
    core = AgentCore(providers=[scripted_provider(
        reply(tool_calls=[tool_call("git_git_status", {"repo_path": str(repo)})]), "clean enough")],
        tools=[MCPTool])
    session = core.add_message(core.create_session(), Message("user", "status?"))

    async def twice():
        first = await core.arequest(session, {"mcp_servers": [git]})
        connection = next(c for c in pool()._connections.values() if c.spec.name == "git")
        second = await core.arequest(session, {"mcp_servers": [git]})
        return first, second, connection

    first, second, connection = asyncio.run(twice())
    for result in (first, second):
        (status,) = _tools(result)
        assert status.tool_result["success"] and "trunk" in status.content and "notes.txt" in status.content
    assert [c for c in pool()._connections.values() if c.spec.name == "git"] == [connection]  # one, reused
    process_alive = connection.alive
    core.close()
    assert process_alive and not connection.alive and not pool()._connections


def test_http_server_tools_headers_errors_images_and_hostile_names(web: HttpServer, caplog) -> None:
    calls = [tool_call("web_echo", {"text": "hi"}, id="echo"),
             tool_call("web_fail", {"reason": "because"}, id="fail"),
             tool_call("web_picture", {}, id="picture"),
             tool_call(next(n for n in _catalog(web) if n.startswith("web_weird_name")), {}, id="weird")]
    result = _run([web.spec()], reply(tool_calls=calls), "done")
    echo, fail, picture, weird = _tools(result)
    assert echo.content == "hi" and echo.tool_result["success"]
    assert not fail.tool_result["success"] and "refused on purpose: because" in fail.content
    (image,) = picture.metadata["mcp"]["attachments"]
    assert image["type"] == "image" and image["mime_type"] == "image/png" and image["data"].startswith("iVBOR")
    assert "a red dot" in picture.content and "[image image/png" in picture.content
    assert "metadata" not in picture.tool_result  # kept once, in the message's metadata
    assert weird.content == "weird ran"
    # a wrong token: the server answers 401, the request still runs without its tools, and the token is never said
    with caplog.at_level(logging.WARNING, logger="agent_core_plugins.mcp"):
        other = _run([web.spec("web2", token="wrong-" + TOKEN)],
                     reply(tool_calls=[tool_call("web2_echo", {"text": "x"})]), "ok")
    (unknown,) = _tools(other)
    assert other.outcome.status == "finished" and "Unknown tool: web2_echo" in unknown.content
    assert "web2" in caplog.text and TOKEN not in caplog.text
    assert TOKEN not in json.dumps(other.session.to_dict()) + json.dumps(result.session.to_dict())


def _catalog(web: HttpServer) -> list[str]:
    core = AgentCore(providers=[scripted_provider("x")], tools=[MCPTool])
    return [d.tool_name for d in core.get_tool_descriptors({"mcp_servers": [web.spec()]})]


def _cancelled_count(web: HttpServer) -> int:
    """How many calls of ``hang`` the test server saw cancelled."""
    return int(_tools(_run([web.spec()], reply(tool_calls=[tool_call("web_cancelled_calls", {})]), "x"))[0].content)


def _until_more(web: HttpServer, before: int) -> int:
    """The server's count of cancelled calls once it passes ``before`` (it notes a cancel a moment later)."""
    deadline = time.monotonic() + 5
    while (after := _cancelled_count(web)) == before and time.monotonic() < deadline:
        time.sleep(0.05)
    return after


def test_a_hung_call_times_out_as_a_tool_error_and_the_server_sees_it_cancelled(web: HttpServer) -> None:
    before = _cancelled_count(web)
    start = time.monotonic()
    result = _run([web.spec()], reply(tool_calls=[tool_call("web_hang", {"seconds": 30})]), "done",
                  config={"tool_timeout_s": 0.5})
    (hang,) = _tools(result)
    assert time.monotonic() - start < 10 and result.outcome.status == "finished"
    assert not hang.tool_result["success"] and "tool_timeout_s" in hang.content
    assert _until_more(web, before) == before + 1


@pytest.mark.parametrize("driver", ["sync", "async"])
def test_cancelling_the_request_cancels_the_mcp_call(web: HttpServer, driver: str) -> None:
    before = _cancelled_count(web)
    core = AgentCore(providers=[scripted_provider(reply(tool_calls=[tool_call("web_hang", {"seconds": 30})]), "x")],
                     tools=[MCPTool])
    session = core.add_message(core.create_session(), Message("user", "go"))
    config = {"mcp_servers": [web.spec()]}
    threading.Timer(1.5, core.cancel_request, args=(f"hang-{driver}",)).start()
    start = time.monotonic()

    async def go():
        return [ev async for ev in core.astream_request(session, config, request_id="hang-async")]

    events = (asyncio.run(go()) if driver == "async"
              else list(core.stream_request(session, config, request_id="hang-sync")))
    assert time.monotonic() - start < 10
    assert events[-1].outcome.status == "stopped" and events[-1].outcome.reason == "cancelled"
    assert _until_more(web, before) == before + 1  # the server saw its call cancelled


def test_tool_policy_applies_to_mcp_tools_by_their_names() -> None:
    from agent_core_features.tool_policy import ToolPolicyFeature

    core = AgentCore(providers=[scripted_provider(reply(tool_calls=[
        tool_call("time_convert_time", {"source_timezone": "UTC", "time": "12:00", "target_timezone": "Asia/Tokyo"}),
        tool_call("time_get_current_time", {"timezone": "UTC"})]), "ok")], tools=[MCPTool],
        features=[ToolPolicyFeature])
    session = core.add_message(core.create_session(), Message("user", "go"))
    result = core.request(session, {"mcp_servers": [TIME], "tool_policy": {"time_convert_time": "deny", "*": "allow"}})
    denied, allowed = _tools(result)
    assert not denied.tool_result["success"] and denied.metadata["tool_policy"]["decision"] == "denied"
    assert allowed.tool_result["success"] and "UTC" in allowed.content


def test_list_changed_is_honoured_and_a_huge_result_meets_the_output_budget(web: HttpServer) -> None:
    grown = _run([web.spec()], reply(tool_calls=[tool_call("web_grow", {})]), "ok")
    assert _tools(grown)[0].content == "grown"
    deadline = time.monotonic() + 5
    while "web_late" not in _catalog(web) and time.monotonic() < deadline:
        time.sleep(0.05)
    late = _run([web.spec()], reply(tool_calls=[tool_call("web_late", {}), tool_call("web_lots", {"lines": 20000})]),
                "ok", extensions=[ToolOutputBudgetExtension], config={"enabled_plugins": ["tool_output_budget"]})
    ran, lots = _tools(late)
    assert ran.content == "late ran"
    assert lots.content.count("\n") == 19999  # the session keeps it whole ...
    assert lots.metadata["tool_output_budget"]["original_lines"] == 20000  # ... and the model was sent a cut


@pytest.mark.slow
def test_a_crashed_or_garbage_server_is_a_tool_error_and_the_next_request_reconnects() -> None:
    server = HttpServer()
    server.start()
    try:
        crashed = _run([server.spec("crashy")], reply(tool_calls=[tool_call("crashy_crash", {})]), "still here",
                       config={"tool_timeout_s": 5})
        (crash,) = _tools(crashed)
        assert crashed.outcome.status == "finished" and not crash.tool_result["success"]
        server.proc.wait(5)
        server.start()  # back, on the same port: the next request opens a new connection
        again = _run([server.spec("crashy")], reply(tool_calls=[tool_call("crashy_echo", {"text": "back"})]), "ok")
        assert _tools(again)[0].content == "back"
    finally:
        server.stop()
    junk = {"name": "junk", "command": sys.executable, "args": ["-c", "print('this is not MCP'); print('{}')"]}
    garbling = {"name": "garbled", "command": sys.executable,
                "args": [str(HERE / "mcp_garbling_proxy.py"), TIME["command"], *TIME["args"]]}
    result = _run([junk, TIME, garbling], reply(tool_calls=[
        tool_call("time_get_current_time", {"timezone": "UTC"}),
        tool_call("garbled_get_current_time", {"timezone": "UTC"})]), "ok")
    fine, garbled = _tools(result)
    assert result.outcome.status == "finished" and fine.tool_result["success"]
    assert not garbled.tool_result["success"] and "is not an MCP tool result" in garbled.content


@pytest.mark.slow
def test_the_readme_command_runs_a_real_mcp_tool_through_the_cli(tmp_path: Path) -> None:
    readme = (HERE.parent.parent / "README.md").read_text(encoding="utf-8")
    start = readme.index(".venv/bin/agent-core run --provider scripted -c 'mcp_servers=")
    command = readme[start:readme.index("\n```", start)].replace("\\\n", " ")
    env = {**os.environ, "PATH": f"{BIN}:{os.environ['PATH']}"}
    got = subprocess.run(["bash", "-c", command.replace(".venv/bin/", f"{BIN}/")], capture_output=True,
                         text=True, timeout=60, env=env, cwd=tmp_path, check=False)
    assert got.returncode == 0, got.stderr
    assert got.stdout.strip() == "That is the time in UTC."
    assert "[tool] time_get_current_time" in got.stderr and '"timezone": "UTC"' in got.stderr  # the tool lines
    assert "get_current_time on MCP server 'time'" in got.stderr  # the preview says where the call goes


def test_the_http_server_runs_mcp_tools_and_closes_their_connections_when_it_stops(tmp_path: Path) -> None:
    from agent_core.server import create_app
    from agent_core.store import open_store
    from starlette.testclient import TestClient

    provider = scripted_provider(reply(tool_calls=[tool_call("time_get_current_time", {"timezone": "UTC"})]),
                                 "It is now.")
    core = AgentCore(providers=[provider], tools=[MCPTool])
    app = create_app(core, open_store(f"sqlite:///{tmp_path / 's.db'}"),
                     config={"provider": provider.name, "mcp_servers": [TIME]})
    with TestClient(app, base_url="http://127.0.0.1") as client:
        answer = client.post("/v1/sessions/s1/turns", json={"message": "time?"})
        assert answer.status_code == 200, answer.text
        events = [json.loads(line[5:]) for line in answer.text.splitlines() if line.startswith("data:")]
        done = next(e for e in events if e["type"] == "done")
        tool = next(m for m in done["final_messages"] if m["role"] == "tool")
        assert json.loads(tool["content"])["timezone"] == "UTC" and done["final_messages"][-1]["content"] == "It is now."
        connection = next(c for c in pool()._connections.values() if c.spec.name == "time")
        assert connection.alive
    assert not connection.alive and not pool()._connections  # the server's shutdown closed it


def test_no_server_can_shadow_another_servers_tool_or_a_built_in_one(web: HttpServer) -> None:
    from agent_core.tools.function import function_tool

    core = AgentCore(providers=[scripted_provider("x")], tools=[MCPTool])
    names = [d.tool_name for d in core.get_tool_descriptors({"mcp_servers": [web.spec("one"), web.spec("two")]})]
    assert "one_echo" in names and "two_echo" in names and len(names) == len(set(names))

    def web_echo(text: str) -> str:
        return text

    clash = AgentCore(providers=[scripted_provider("x")], tools=[MCPTool, function_tool(web_echo)])
    offered = [(d.plugin_name, d.tool_name) for d in clash.get_tool_descriptors({"mcp_servers": [web.spec()]})]
    assert [p for p, t in offered if t == "web_echo"] == ["web_echo"]  # the built-in is kept, the server's left out
    assert ("mcp", "web_fail") in offered


def test_an_mcp_tools_schema_reaches_each_provider_in_its_own_shape() -> None:
    core = AgentCore.discover()
    config = {"model": "m", "api_key": "sk-x", "mcp_servers": [TIME]}
    openai = core.get_tool_schemas({**config, "provider": "openai"})
    anthropic = core.get_tool_schemas({**config, "provider": "anthropic"})
    (fn,) = [s["function"] for s in openai if s["function"]["name"] == "time_get_current_time"]
    (tool,) = [s for s in anthropic if s["name"] == "time_get_current_time"]
    assert fn["parameters"]["required"] == ["timezone"] == tool["input_schema"]["required"]
    assert tool["input_schema"]["properties"]["timezone"]["type"] == "string"


def test_concurrent_requests_from_threads_and_loops_share_one_connection(web: HttpServer) -> None:
    from concurrent.futures import ThreadPoolExecutor

    spec = web.spec("shared")

    def one(i: int) -> str:
        turns = (reply(tool_calls=[tool_call("shared_echo", {"text": f"n{i}"})]), "ok")
        if i % 2:  # half of them async, each on an event loop of its own
            core = AgentCore(providers=[scripted_provider(*turns)], tools=[MCPTool])
            session = core.add_message(core.create_session(), Message("user", "go"))
            return _tools(asyncio.run(core.arequest(session, {"mcp_servers": [spec]})))[0].content
        return _tools(_run([spec], *turns))[0].content

    with ThreadPoolExecutor(8) as workers:
        answers = list(workers.map(one, range(16)))
    assert answers == [f"n{i}" for i in range(16)]
    assert len([c for c in pool()._connections.values() if c.spec.name == "shared"]) == 1
