"""A stdio MCP server that answers tool calls with garbage: a real server behind a proxy that spoils them.

``python mcp_garbling_proxy.py COMMAND [ARGS...]`` runs the server and passes every line both
ways, except that an answer to a ``tools/call`` request gets a ``result`` that is not a tool
result (``content`` a string instead of a list of blocks). The handshake and the tool list stay
the real server's, so a client connects and lists as usual and meets the garbage only when it
calls.
"""

from __future__ import annotations

import json
import subprocess
import sys
import threading

calls: set[object] = set()
server = subprocess.Popen(sys.argv[1:], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, bufsize=1)


def upstream() -> None:
    for line in sys.stdin:
        message = json.loads(line)
        if message.get("method") == "tools/call":
            calls.add(message.get("id"))
        server.stdin.write(line)
        server.stdin.flush()
    server.stdin.close()


threading.Thread(target=upstream, daemon=True).start()
for line in server.stdout:
    message = json.loads(line)
    if message.get("id") in calls and "result" in message:
        message["result"] = {"content": "this is not a list of content blocks", "isError": "maybe"}
        line = json.dumps(message) + "\n"
    sys.stdout.write(line)
    sys.stdout.flush()
