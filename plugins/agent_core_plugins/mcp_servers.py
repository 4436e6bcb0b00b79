"""Config ``mcp_servers`` read once into :class:`ServerSpec` values, and the names tools get.

``mcp_servers`` is the operator's: it starts programs (a stdio server's
command) and carries credentials (an HTTP server's headers, a stdio server's
environment), so the key is declared secret and is not among the keys a
server lets a client set. It is a list of objects, or one object mapping each
server's name to its settings::

    [{"name": "time", "command": "mcp-server-time", "args": ["--local-timezone", "UTC"]},
     {"name": "docs", "url": "https://mcp.example/mcp", "headers": {"Authorization": "Bearer ..."}}]

A server is reached either by ``command`` (with ``args``, ``env``, ``cwd``) or
by a streamable-HTTP ``url`` (with ``headers``), never both. Every refusal is a
:class:`ConfigError` naming the key and the server, never quoting a header or
an environment value.

Names: a tool is offered as ``<server>_<tool>``. The server name is letters,
digits and ``-`` (no ``_``), so the first ``_`` always ends it and no server
can offer a name that reads as another server's tool. A tool name from a
server is untrusted text: characters outside ``[A-Za-z0-9_-]`` become ``_``
and the whole name is cut to :data:`MAX_NAME_CHARS` (what the OpenAI and
Anthropic APIs accept), with a short digest of the original added whenever
the name had to change, so two tools never end up with one name.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Mapping
from typing import Any

import msgspec
from agent_core.errors import ConfigError

__all__ = ["DEFAULT_MAX_RESULT_BYTES", "DEFAULT_TOOLS_MAX_AGE_S", "KEY", "MAX_NAME_CHARS", "Limits", "ServerSpec",
           "exposed_name", "parse_limits", "parse_servers"]

KEY = "mcp_servers"
#: the longest tool name the OpenAI and Anthropic APIs take
MAX_NAME_CHARS = 64
#: ``mcp_max_result_bytes`` when unset: one message read from a server, at most (the cap is enforced while reading)
DEFAULT_MAX_RESULT_BYTES = 16 * 1024 * 1024
#: ``mcp_tools_max_age_s`` when unset: a tool list older than this is listed again, told of a change or not
DEFAULT_TOOLS_MAX_AGE_S = 5.0
_SERVER_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9-]{0,23}")
_UNSAFE = re.compile(r"[^A-Za-z0-9_-]")
_FIELDS = frozenset({"name", "command", "args", "env", "cwd", "url", "headers"})


class ServerSpec(msgspec.Struct, frozen=True, kw_only=True):
    """One configured MCP server, checked.

    ``identity`` is a digest of every setting (headers and environment
    included), so connections are pooled per exact config while no pool key
    ever holds a credential in plain text.
    """

    name: str
    command: str | None = None
    args: tuple[str, ...] = ()
    env: tuple[tuple[str, str], ...] = ()
    cwd: str | None = None
    url: str | None = None
    headers: tuple[tuple[str, str], ...] = ()

    @property
    def identity(self) -> str:
        raw = json.dumps(msgspec.to_builtins(self), sort_keys=True)
        return hashlib.sha256(raw.encode()).hexdigest()

    @property
    def where(self) -> str:
        """The server for a message: its name and how it is reached, with no credential."""
        return f"{self.name!r} ({'command ' + repr(self.command) if self.command else 'url'})"


class Limits(msgspec.Struct, frozen=True, kw_only=True):
    """How much a request lets a server send, and how old a tool list it accepts."""

    max_message_bytes: int = DEFAULT_MAX_RESULT_BYTES
    tools_max_age_s: float = DEFAULT_TOOLS_MAX_AGE_S


def _number(config: Mapping[str, Any], key: str, default: float, low: float) -> float:
    value = config.get(key)
    if value is None:
        return default
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not low <= value < 1e12:
        raise ConfigError(f"{key} must be a number of at least {low:g}, got {value!r}"[:200], key=key)
    return value


def parse_limits(config: Mapping[str, Any]) -> Limits:
    """``mcp_max_result_bytes`` and ``mcp_tools_max_age_s`` from ``config``, checked (unset: the defaults).

    Raises:
        ConfigError: naming the key whose value is not a usable number.
    """
    return Limits(max_message_bytes=int(_number(config, "mcp_max_result_bytes", DEFAULT_MAX_RESULT_BYTES, 1024)),
                  tools_max_age_s=float(_number(config, "mcp_tools_max_age_s", DEFAULT_TOOLS_MAX_AGE_S, 0)))


def _strings(value: Any, what: str) -> tuple[str, ...]:
    if not isinstance(value, (list, tuple)) or not all(isinstance(v, str) for v in value):
        raise ConfigError(f"{KEY}: {what} must be a list of strings", key=KEY)
    return tuple(value)


def _pairs(value: Any, what: str) -> tuple[tuple[str, str], ...]:
    """A string-to-string table, sorted; the message names the table, never a value (they may be secrets)."""
    if not isinstance(value, Mapping) or not all(isinstance(k, str) and isinstance(v, str) for k, v in value.items()):
        raise ConfigError(f"{KEY}: {what} must be an object of strings to strings", key=KEY)
    return tuple(sorted(value.items()))


def _server(raw: Any, index: int) -> ServerSpec:
    if not isinstance(raw, Mapping):
        raise ConfigError(f"{KEY}: entry #{index} must be an object, got {type(raw).__name__}", key=KEY)
    name = raw.get("name")
    if not isinstance(name, str) or not _SERVER_NAME.fullmatch(name):
        raise ConfigError(f"{KEY}: entry #{index} needs a 'name' of 1-24 letters, digits and '-', starting with a "
                          "letter or digit (no '_': it separates the server from the tool in a tool's name)", key=KEY)
    unknown = sorted(str(k) for k in raw if k not in _FIELDS)
    if unknown:
        raise ConfigError(f"{KEY}: server {name!r} has unknown settings {unknown} "
                          f"(known: {', '.join(sorted(_FIELDS))})", key=KEY)
    command, url = raw.get("command"), raw.get("url")
    if (command is None) == (url is None):
        raise ConfigError(f"{KEY}: server {name!r} needs exactly one of 'command' (stdio) or 'url' "
                          "(streamable HTTP)", key=KEY)
    if command is not None:
        if not isinstance(command, str) or not command.strip():
            raise ConfigError(f"{KEY}: server {name!r}: 'command' must be a non-empty string", key=KEY)
        if "headers" in raw:
            raise ConfigError(f"{KEY}: server {name!r}: 'headers' is for a 'url' server", key=KEY)
        cwd = raw.get("cwd")
        if cwd is not None and not isinstance(cwd, str):
            raise ConfigError(f"{KEY}: server {name!r}: 'cwd' must be a string", key=KEY)
        return ServerSpec(name=name, command=command, args=_strings(raw.get("args", ()), f"server {name!r}: 'args'"),
                          env=_pairs(raw.get("env", {}), f"server {name!r}: 'env'"), cwd=cwd)
    if not isinstance(url, str) or not re.match(r"https?://[^\s/]+", url):
        raise ConfigError(f"{KEY}: server {name!r}: 'url' must be an http:// or https:// URL", key=KEY)
    for k in ("args", "env", "cwd"):
        if k in raw:
            raise ConfigError(f"{KEY}: server {name!r}: {k!r} is for a 'command' server", key=KEY)
    return ServerSpec(name=name, url=url, headers=_pairs(raw.get("headers", {}), f"server {name!r}: 'headers'"))


def parse_servers(raw: Any) -> tuple[ServerSpec, ...]:
    """``mcp_servers`` as checked specs (``()`` when unset).

    Raises:
        ConfigError: with ``key="mcp_servers"``, naming the entry and what is
            wrong with it (never a header or environment value).
    """
    if raw is None:
        return ()
    if isinstance(raw, Mapping):
        entries = [{**v, "name": k} if isinstance(v, Mapping) else v for k, v in raw.items()]
    elif isinstance(raw, (list, tuple)):
        entries = list(raw)
    else:
        raise ConfigError(f"{KEY} must be a list of server objects (or an object of them by name), "
                          f"got {type(raw).__name__}", key=KEY)
    servers = tuple(_server(e, i) for i, e in enumerate(entries))
    names = [s.name for s in servers]
    twice = sorted({n for n in names if names.count(n) > 1})
    if twice:
        raise ConfigError(f"{KEY}: two servers are named {twice[0]!r}", key=KEY)
    return servers


def exposed_name(server: str, tool: str) -> str:
    """The name the model sees for ``tool`` of ``server``: ``<server>_<tool>``, safe and at most 64 characters."""
    safe = _UNSAFE.sub("_", tool) or "_"
    name = f"{server}_{safe}"
    if safe == tool and len(name) <= MAX_NAME_CHARS:
        return name
    digest = hashlib.sha256(tool.encode("utf-8", "surrogatepass")).hexdigest()[:8]
    return f"{name[:MAX_NAME_CHARS - 9]}-{digest}"
