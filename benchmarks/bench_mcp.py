"""MCP tools: what a request pays for a server that is already connected.

A stateless handler runs every request from scratch, so what matters is the
cost once the pool holds the connection: the catalog (``prepare`` takes the
pooled connection and the cached tool list) and the call. For each server,
the real ``mcp-server-time`` over stdio and a streamable-HTTP server built
with the SDK (``tests/toolkit/mcp_http_server.py``, its ``echo`` tool), this
prints the median of:

* ``sdk call``: the SDK's own ``call_tool`` on the open connection, from the
  pool's loop (the floor: the server's and the transport's time);
* ``catalog``: ``get_tool_descriptors`` with ``mcp_servers``, minus the same
  without (what offering the server's tools adds to a request);
* ``request``: a whole request (scripted provider, one call of the tool, a
  final answer) minus the same request calling an in-process function tool
  (what the MCP tool adds to a request, its call included);
* ``first``: the first request of a process, which starts the server.

and the ratio request / sdk call. Every request's tool message is checked,
so a run whose calls fail cannot print a row.

Run: ``.venv/bin/python benchmarks/bench_mcp.py [--rounds 200]``. The figures
are quoted in ``docs/performance.md`` (section "MCP tools").
"""

from __future__ import annotations

import argparse
import socket
import statistics
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from agent_core import AgentCore, Message
from agent_core.testing import reply, scripted_provider, tool_call
from agent_core.tools.function import function_tool
from agent_core_plugins.mcp_pool import pool, run_sync
from agent_core_plugins.mcp_servers import parse_limits, parse_servers
from agent_core_plugins.mcp_tools import MCPTool

BIN = Path(sys.executable).parent
ROOT = Path(__file__).resolve().parent.parent
TOKEN = "bench-token"


def _median_ms(fn: Callable[[], Any], rounds: int) -> float:
    fn()
    times = []
    for _ in range(rounds):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return statistics.median(times) * 1000


def http_server() -> tuple[subprocess.Popen[bytes], dict[str, Any]]:
    """The tests' streamable-HTTP server as a process on a free port, and its ``mcp_servers`` entry."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    proc = subprocess.Popen([sys.executable, str(ROOT / "tests" / "toolkit" / "mcp_http_server.py"), str(port), TOKEN],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline:
        with socket.socket() as s:
            if s.connect_ex(("127.0.0.1", port)) == 0:
                break
        time.sleep(0.05)
    return proc, {"name": "web", "url": f"http://127.0.0.1:{port}/mcp", "headers": {"Authorization": f"Bearer {TOKEN}"}}


def local_echo(text: str) -> str:
    """The in-process tool the MCP tool is measured against."""
    return text


def _core(name: str, arguments: dict[str, Any]) -> AgentCore:
    provider = scripted_provider(reply(tool_calls=[tool_call(name, arguments)]), "done")
    return AgentCore(providers=[provider], tools=[MCPTool, function_tool(local_echo)])


def _request(core: AgentCore, config: dict[str, Any], expect: str) -> Callable[[], None]:
    session = core.add_message(core.create_session(), Message("user", "go"))

    def run() -> None:
        result = core.request(session, config)
        tool = next(m for m in result.final_messages if m.role == "tool")
        if not tool.tool_result["success"] or expect not in tool.content:
            raise SystemExit(f"a tool call failed: {tool.content[:300]}")

    return run


def measure(server: dict[str, Any], tool: str, arguments: dict[str, Any], expect: str, rounds: int) -> list[str]:
    name = f"{server['name']}_{tool}"
    config = {"mcp_servers": [server]}
    first_start = time.perf_counter()
    _request(_core(name, arguments), config, expect)()
    first = (time.perf_counter() - first_start) * 1000
    spec = parse_servers([server])[0]

    async def sdk_call() -> None:
        client = (await pool().connection(spec, parse_limits(config))).client
        assert client is not None
        await client.call_tool(tool, arguments)  # the SDK's own, without the plugin's watch over it

    sdk = _median_ms(lambda: run_sync(sdk_call), rounds)
    bare = AgentCore(providers=[scripted_provider("x")], tools=[MCPTool])
    catalog = (_median_ms(lambda: bare.get_tool_descriptors(config), rounds)
               - _median_ms(lambda: bare.get_tool_descriptors({}), rounds))
    with_mcp = _median_ms(_request(_core(name, arguments), config, expect), rounds)
    local = _median_ms(_request(_core("local_echo", {"text": "ok"}), {}, "ok"), rounds)
    request = with_mcp - local
    return [server["name"], f"{sdk:.2f}", f"{catalog:.2f}", f"{request:.2f}", f"{first:.0f}", f"{request / sdk:.1f}x"]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--rounds", type=int, default=200)
    args = parser.parse_args()
    proc, web = http_server()
    try:
        rows = [
            measure({"name": "time", "command": str(BIN / "mcp-server-time"), "args": ["--local-timezone", "UTC"]},
                    "get_current_time", {"timezone": "UTC"}, "UTC", args.rounds),
            measure(web, "echo", {"text": "ok"}, "ok", args.rounds),
        ]
    finally:
        MCPTool.close_shared()
        proc.terminate()
        proc.wait(10)
    head = ["server", "sdk call ms", "catalog ms", "request ms", "first ms", "request/sdk"]
    print(f"MCP tools, connected server, median of {args.rounds} (ms; catalog and request are what they add)")
    print("| " + " | ".join(head) + " |")
    print("|" + "---|" * len(head))
    for row in rows:
        print("| " + " | ".join(row) + " |")


if __name__ == "__main__":
    main()
