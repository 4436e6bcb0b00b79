"""A streamable-HTTP MCP server built with the SDK's own server API, run by the MCP tests as a process.

``python mcp_http_server.py PORT TOKEN`` serves on 127.0.0.1:PORT at ``/mcp``
and answers only requests carrying ``Authorization: Bearer TOKEN`` (so a test
can see the configured headers reach the server and never leak). Its tools
are the cases a client must survive: one that errors, one that hangs (and
counts the calls that were cancelled), one that returns an image, one that
returns a lot (``lots``, in lines; ``big``, in megabytes), one with a name
no API accepts, one that crashes the server, one that adds a tool and says the
list changed, and two that add and drop a tool without saying so.
"""

from __future__ import annotations

import os
import sys

import anyio
import uvicorn
from mcp.server.mcpserver import Context, Image, MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from starlette.responses import PlainTextResponse

server = MCPServer("agent-core-test")
cancelled = {"hang": 0}

# a 1x1 PNG
PNG = bytes.fromhex(
    "89504e470d0a1a0a0000000d4948445200000001000000010806000000"
    "1f15c4890000000d49444154789c6360000002000154a24f5d0000000049454e44ae426082"
)


@server.tool()
def echo(text: str) -> str:
    """Say the text back."""
    return text


@server.tool()
def fail(reason: str) -> str:
    """Always fail, with the reason given."""
    raise ToolError(f"refused on purpose: {reason}")


@server.tool()
async def hang(seconds: float = 60.0) -> str:
    """Wait (and count the waits that were cancelled)."""
    try:
        await anyio.sleep(seconds)
    except anyio.get_cancelled_exc_class():
        cancelled["hang"] += 1
        raise
    return "woke up"


@server.tool()
def cancelled_calls() -> int:
    """How many hang calls were cancelled so far."""
    return cancelled["hang"]


@server.tool(structured_output=False)
def picture() -> list[object]:
    """A caption and a tiny image."""
    return ["a red dot", Image(data=PNG, format="png")]


@server.tool()
def lots(lines: int) -> str:
    """Many lines of text."""
    return "\n".join(f"line {i} of a long answer" for i in range(lines))


@server.tool()
def file() -> str:
    """A tool whose name, under a server named 'read', is the files tool's read_file."""
    return "the MCP server's file tool ran"


@server.tool(structured_output=False)
def big(megabytes: float) -> str:
    """A text of about ``megabytes`` MB, one line (as text only, so the message is about that size)."""
    return "x" * int(megabytes * 1_000_000)


def _extra() -> str:
    return "extra ran"


@server.tool()
def add(name: str) -> str:
    """Add a tool called ``name``, saying nothing to the client."""
    server.add_tool(_extra, name=name, description="Added while running.")
    return f"added {name}"


@server.tool()
def drop(name: str) -> str:
    """Remove the tool called ``name``, saying nothing to the client."""
    server.remove_tool(name)
    return f"dropped {name}"


@server.tool(name="weird name!/../x")
def weird() -> str:
    """A tool whose name is no API's."""
    return "weird ran"


@server.tool()
def crash() -> str:
    """End the server's process at once."""
    os._exit(3)


@server.tool()
async def grow(ctx: Context) -> str:
    """Add the tool 'late' and say that the list changed."""
    server.add_tool(lambda: "late ran", name="late", description="Added while running.")
    await ctx.notify_tools_changed()
    return "grown"


def main() -> None:
    port, token = int(sys.argv[1]), sys.argv[2]
    app = server.streamable_http_app()

    async def guarded(scope, receive, send):  # type: ignore[no-untyped-def]
        if scope["type"] == "http":
            headers = dict(scope["headers"])
            if headers.get(b"authorization") != f"Bearer {token}".encode():
                await PlainTextResponse("no", status_code=401)(scope, receive, send)
                return
        await app(scope, receive, send)

    uvicorn.run(guarded, host="127.0.0.1", port=port, log_level="warning", lifespan="on")


if __name__ == "__main__":
    main()
