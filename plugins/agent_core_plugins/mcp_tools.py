"""``mcp``: the tools of Model Context Protocol servers, offered as the request's own tools.

Config ``mcp_servers`` names the servers (:mod:`agent_core_plugins.mcp_servers`).
For each request the plugin, in ``prepare``, takes each server's connection
from the process's pool (opening it the first time: :mod:`agent_core_plugins.mcp_pool`)
and its tool list (listed again when the server says it changed, or once it is
older than ``mcp_tools_max_age_s``), and offers every tool as ``<server>_<tool>``
with the server's input schema, so ``tool_policy``, approval,
``tool_output_budget`` and previews treat it as any other tool. A server that
cannot be reached offers nothing this request (logged, with no credential);
the others still do. A name another plugin's tool already has is left out of
the request by the engine (``tool_names_give_way``), never fatal to it.

A call is hostile on both sides. The model's arguments are checked against
the tool's input schema (JSON Schema, by :mod:`jsonschema`, which the SDK
itself depends on) before anything is sent. The server's answer is read by
:mod:`agent_core_plugins.mcp_results`; an error it reports, a crash, an
answer that is not MCP, an answer over ``mcp_max_result_bytes`` (refused while
it is read), or no answer within ``tool_timeout_s`` is an error result the
model reads, never a failed request; the last two also close the connection,
so the next call starts on a new one. Cancelling the request cancels the call
on the server.

The plugin switches itself on when ``mcp_servers`` is set, as ``tool_policy``
does with its key; without it the plugin is off and never imports the SDK,
so it is harmless where ``mcp`` is not installed. With servers and no SDK,
``init`` raises a :class:`ConfigError` saying what to install.
"""

from __future__ import annotations

import concurrent.futures
import importlib.util
import json
import logging
import sys
from collections.abc import Mapping
from typing import Any, ClassVar

import msgspec
from agent_core.errors import ConfigError, install_hint
from agent_core.plugin_kit import Tool, ToolCall, failure

from agent_core_plugins.file_access import printable
from agent_core_plugins.mcp_servers import (
    DEFAULT_MAX_RESULT_BYTES,
    DEFAULT_TOOLS_MAX_AGE_S,
    KEY,
    Limits,
    ServerSpec,
    exposed_name,
    parse_limits,
    parse_servers,
)

__all__ = ["DEFAULT_CALL_TIMEOUT_S", "MAX_SCHEMA_CHARS", "MCPTool"]

log = logging.getLogger("agent_core_plugins.mcp")

#: the longest a call may wait when tool_timeout_s is not set: a hung server is never waited on for ever
DEFAULT_CALL_TIMEOUT_S = 600.0
#: an input schema longer than this (as JSON) is not offered: it would fill the model's context
MAX_SCHEMA_CHARS = 64 * 1024
#: characters of a tool's description kept
MAX_DESCRIPTION_CHARS = 2000


def _scrub(text: str, spec: ServerSpec) -> str:
    """``text`` without the server's credentials: header and environment values and the URL are masked."""
    for value in [v for _, v in spec.headers] + [v for _, v in spec.env] + ([spec.url] if spec.url else []):
        if len(value) >= 4:
            text = text.replace(value, "<redacted>")
    return text


def _offer(spec: ServerSpec, tool: Any, seen: set[str]) -> dict[str, Any] | None:
    """One listed tool as the plugin keeps it, or None when it cannot be offered (logged)."""
    schema = tool.input_schema if isinstance(tool.input_schema, Mapping) else None
    size = len(json.dumps(schema)) if schema is not None else 0
    if schema is None or schema.get("type", "object") != "object" or size > MAX_SCHEMA_CHARS:
        log.warning("MCP server %r: tool %r is not offered: its input schema is not an object of at most %d "
                    "characters", spec.name, tool.name[:80], MAX_SCHEMA_CHARS)
        return None
    name = exposed_name(spec.name, tool.name)
    if name in seen:
        log.warning("MCP server %r lists a tool named %r twice; the first is offered", spec.name, tool.name[:80])
        return None
    seen.add(name)
    return {"server": spec.name, "name": name, "tool": tool.name,
            "description": (tool.description or tool.title or "")[:MAX_DESCRIPTION_CHARS],
            "input_schema": {"type": "object", **schema}}


async def _listed(spec: ServerSpec, limits: Limits) -> Any:
    """A server's listed tools, or the exception that stopped it.

    A connection that fails to list (its server restarted, say) is dropped
    and opened again once, so a restart costs no request its tools.
    """
    from agent_core_plugins.mcp_pool import pool

    for attempt in (1, 2):
        connection = None
        try:
            connection = await pool().connection(spec, limits)
            return await connection.list_tools(limits.tools_max_age_s)
        except Exception as exc:  # noqa: BLE001 - one server down must not take the others' tools away
            if connection is None or attempt == 2:
                return exc
            connection.drop(exc)
    raise AssertionError("unreachable")


async def _catalog(specs: tuple[ServerSpec, ...], limits: Limits) -> dict[str, Any]:
    """Every server's offered tools (a server that fails offers none: it is named under ``unavailable``).

    The servers are asked together, so a request's first catalog waits for the slowest server
    to start, not for all of them in turn.
    """
    import asyncio

    tools: list[dict[str, Any]] = []
    unavailable: list[str] = []
    for spec, listed in zip(specs, await asyncio.gather(*(_listed(s, limits) for s in specs)), strict=True):
        if isinstance(listed, Exception):
            reason = _scrub(f"{type(listed).__name__}: {listed}", spec)[:400]
            log.warning("MCP server %r offers no tools this request: %s", spec.name, reason)
            unavailable.append(f"{spec.name}: {reason}")
            continue
        seen: set[str] = set()
        tools.extend(t for t in (_offer(spec, tool, seen) for tool in listed) if t is not None)
    return {"tools": tools, "unavailable": unavailable}


def _check_arguments(entry: Mapping[str, Any], arguments: Any) -> str | None:
    """Why ``arguments`` do not fit the tool's input schema (at most three reasons), or None."""
    import jsonschema

    if not isinstance(arguments, Mapping):
        return f"{entry['name']} takes a JSON object of arguments"
    schema = json.loads(json.dumps(entry["input_schema"]))
    try:
        validator = jsonschema.validators.validator_for(schema)(schema)
        errors = list(validator.iter_errors(json.loads(json.dumps(arguments))))[:3]
    except (jsonschema.SchemaError, RecursionError, ValueError) as exc:
        return f"the server's input schema for {entry['name']} cannot be used: {str(exc)[:200]}"
    if not errors:
        return None
    said = "; ".join(f"at {'/'.join(map(str, e.absolute_path)) or 'the top'}: {e.message[:200]}" for e in errors)
    return f"the arguments do not match {entry['name']}'s input schema: {said}"


async def _call(spec: ServerSpec, entry: Mapping[str, Any], arguments: dict[str, Any], timeout: float,
                limits: Limits) -> Any:
    """Call the tool; a timeout drops the connection, so the next call starts on a clean one."""
    import anyio
    from mcp.shared.exceptions import MCPError
    from pydantic import ValidationError

    from agent_core_plugins.mcp_pool import ServerUnavailable, pool
    from agent_core_plugins.mcp_results import result_of

    what = f"the MCP tool {entry['name']!r}"
    gone = f"{what} is no longer offered by MCP server {spec.name!r} (it left the server's tool list)"
    connection = None
    try:
        # just inside the engine's own tool_timeout_s guard, so this answer (and the drop) comes first
        with anyio.fail_after(max(timeout / 2, timeout - min(1.0, max(0.1, timeout / 10)))):
            connection = await pool().connection(spec, limits)
            try:
                answer = await connection.call_tool(entry["tool"], arguments)
            except MCPError as exc:
                if not await connection.still_offers(entry["tool"]):
                    return failure(gone)
                return failure(_scrub(f"{what} failed: the server answered with error {exc.code}: "
                                      f"{str(exc)[:500]}", spec))
            if answer.is_error and not await connection.still_offers(entry["tool"]):
                return failure(f"{gone}: {_scrub(str(result_of(spec.name, entry['tool'], answer)['error']), spec)}")
    except TimeoutError:
        if connection is not None:
            connection.drop(TimeoutError(f"a call ran out of tool_timeout_s ({timeout:g} s)"))
        return failure(f"{what} did not answer within {timeout:g} s (tool_timeout_s); the call was cancelled "
                       "and the connection to its server closed")
    except ServerUnavailable as exc:
        return failure(_scrub(str(exc), spec))
    except ValidationError:
        return failure(f"{what} failed: the server's answer is not an MCP tool result")
    except Exception as exc:  # noqa: BLE001 - whatever a server does is an answer for the model
        return failure(_scrub(f"{what} failed: {type(exc).__name__}: {str(exc)[:500]}", spec))
    return result_of(spec.name, entry["tool"], answer)


class MCPTool(Tool):
    """Offers the tools of the servers in ``mcp_servers``; see the module docstring."""

    name = "mcp"
    version = "1.0.0"
    config_schema: ClassVar[dict[str, Any]] = {
        KEY: {"type": ["array", "object", "null"], "secret": True,
              "description": "MCP servers whose tools are offered: a list of {name, command, args, env, cwd} "
                             "(stdio) or {name, url, headers} (streamable HTTP). The operator's only: it starts "
                             "programs and holds credentials."},
        "mcp_max_result_bytes": {
            "type": "integer", "minimum": 1024, "default": DEFAULT_MAX_RESULT_BYTES,
            "description": "largest message read from an MCP server, in bytes; a result passing it is refused "
                           "while it is read, and the connection to that server is closed and opened again"},
        "mcp_tools_max_age_s": {
            "type": "number", "minimum": 0, "default": DEFAULT_TOOLS_MAX_AGE_S,
            "description": "seconds an MCP server's tool list is used before it is listed again (sooner when "
                           "the server says it changed; 0: every request)"},
    }
    #: MCP tool names come from servers: one that clashes with another plugin's tool is left out (the engine
    #: says so with this advice), not the request failed
    tool_names_give_way = "rename the MCP server in mcp_servers (its tools are offered as <server>_<tool>)"

    def is_enabled(self, config: Mapping[str, Any], tags: Any, models: Any, context: Any) -> bool:
        """On exactly when ``mcp_servers`` is set (the value itself is checked in ``init``)."""
        return config.get(KEY) is not None

    def init(self, config: Mapping[str, Any]) -> dict[str, Any]:
        servers = parse_servers(config.get(KEY))
        if servers and importlib.util.find_spec("mcp") is None:
            raise ConfigError(f"{KEY} is set but the MCP SDK is not installed: {install_hint('mcp')}", key=KEY)
        timeout = config.get("tool_timeout_s")
        usable = isinstance(timeout, (int, float)) and not isinstance(timeout, bool) and 0 < timeout < 1e9
        return {"servers": msgspec.to_builtins(servers), "timeout": float(timeout) if usable else None,
                "limits": msgspec.to_builtins(parse_limits(config))}

    @staticmethod
    def _specs(state: Mapping[str, Any]) -> tuple[ServerSpec, ...]:
        raw = json.loads(json.dumps(state.get("servers") or []))
        return tuple(msgspec.convert(s, ServerSpec) for s in raw)

    @staticmethod
    def _limits(state: Mapping[str, Any]) -> Limits:
        return msgspec.convert(dict(state.get("limits") or {}), Limits)

    def prepare(self, config: Any, state: Mapping[str, Any], *, context: Any = None) -> dict[str, Any]:
        specs = self._specs(state)
        if not specs:
            return {"tools": [], "unavailable": []}
        from agent_core_plugins.mcp_pool import run_sync

        return run_sync(lambda: _catalog(specs, self._limits(state)))

    async def prepare_async(self, config: Any, state: Mapping[str, Any], *, context: Any = None) -> dict[str, Any]:
        specs = self._specs(state)
        if not specs:
            return {"tools": [], "unavailable": []}
        from agent_core_plugins.mcp_pool import run_async

        return await run_async(lambda: _catalog(specs, self._limits(state)))

    def get_tool_schemas(self, state: Any, *, prepared: Any = None) -> list[dict[str, Any]]:
        tools = prepared.get("tools", ()) if isinstance(prepared, Mapping) else ()
        return [{"type": "function", "function": {"name": t["name"], "description": t["description"],
                                                  "parameters": t["input_schema"]}} for t in tools]

    def _plan(self, call: ToolCall) -> tuple[Any, ...] | dict[str, Any]:
        """What to send for ``call``: (spec, entry, arguments, timeout, limits), or a failure to return at once."""
        tools = call.prepared.get("tools", ()) if isinstance(call.prepared, Mapping) else ()
        entry = next((t for t in tools if t["name"] == call.tool_name), None)
        if entry is None:
            return failure(f"Unknown tool: {call.tool_name}")
        refused = _check_arguments(entry, call.payload)
        if refused is not None:
            return failure(refused)
        spec = next(s for s in self._specs(call.state) if s.name == entry["server"])
        timeout = call.state.get("timeout") or DEFAULT_CALL_TIMEOUT_S
        return spec, entry, json.loads(json.dumps(call.payload)), timeout, self._limits(call.state)

    def run(self, call: ToolCall) -> dict[str, Any]:
        plan = self._plan(call)
        if isinstance(plan, dict):
            return plan
        from agent_core_plugins.mcp_pool import run_sync

        try:
            return run_sync(lambda: _call(*plan), call.cancellation)  # type: ignore[no-any-return]
        except concurrent.futures.CancelledError:
            return failure(f"the request was cancelled, and the call of {call.tool_name} with it")

    async def arun(self, call: ToolCall) -> dict[str, Any]:
        plan = self._plan(call)
        if isinstance(plan, dict):
            return plan
        from agent_core_plugins.mcp_pool import run_async

        return await run_async(lambda: _call(*plan))  # type: ignore[no-any-return]

    @staticmethod
    def close_shared() -> None:
        """Close every pooled MCP connection (``AgentCore.close()`` calls this); used again, they reopen."""
        pool_module = sys.modules.get("agent_core_plugins.mcp_pool")
        if pool_module is not None:  # never opened: nothing to close, and the SDK need not be imported
            pool_module.close_all()

    def preview(self, call: ToolCall) -> str:
        """Where the call goes (the server's own tool name and the server), which the call line does not say."""
        tools = call.prepared.get("tools", ()) if isinstance(call.prepared, Mapping) else ()
        entry = next((t for t in tools if t["name"] == call.tool_name), None)
        if entry is None:
            return f"{call.tool_name} on an MCP server"
        return f"{printable(str(entry['tool']))[:80]} on MCP server {entry['server']!r}"

    def format_tool_result(self, result: Mapping[str, Any], state: Any) -> str:
        if result.get("success"):
            return str(result.get("result", ""))
        return f"Error: {result.get('error')}"
