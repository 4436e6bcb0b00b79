"""The operator's tool plugins on a facade request: run by the server, never handed to a client.

A facade client runs the tools it declares itself, so a facade request is capped at one
model call and the reply carries the calls back. A tool the operator installed (a tool
plugin: a calculator, MCP servers) is one no client can run. So, for a facade request:

* the client declared no tools, and the operator allows it (``facade_server_tools``, on by
  default): the server's own tool loop runs the installed tools, with the operator's
  ``max_iterations`` (the engine's default when unset), and the client sees the final answer;
* the client declared tools, or the operator turned it off: the installed tools are not
  offered for this request (``disabled_plugins``), so the model cannot call them.

A client that declared no tools is never shown a tool call (:func:`for_client`): what
the server's loop ran, or a call the model made when the loop's iterations ran out. A
client that declared tools gets the calls as the model made them, as from the API itself.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ...types import Message

__all__ = ["client_tool_names", "fit_server_tools", "for_client"]

#: the tool plugin that offers the client's own tools (never the server's)
_CLIENTS = "client_tools"


def installed_tools(core: Any, resolution: Any) -> list[str]:
    """The operator's tool plugins that run for this request."""
    tools = set(core.plugins("tool"))
    return [name for name in resolution.enabled if name in tools and name != _CLIENTS]


def fit_server_tools(core: Any, config: dict[str, Any], resolution: Any, operator: Mapping[str, Any],
                     allowed: bool) -> bool:
    """Let the server's loop run its installed tools, or keep them from the model; True when ``config`` changed."""
    installed = installed_tools(core, resolution)
    if not installed:
        return False
    if allowed and not config.get(_CLIENTS):
        if "max_iterations" in operator:
            config["max_iterations"] = operator["max_iterations"]
        else:
            config.pop("max_iterations", None)
        return True
    config["disabled_plugins"] = [*(config.get("disabled_plugins") or ()), *installed]
    return True


def client_tool_names(config: Mapping[str, Any]) -> frozenset[str]:
    """The names of the tools the client declared (OpenAI's shape, or Anthropic's as written)."""
    names = set()
    for tool in config.get(_CLIENTS) or ():
        if isinstance(tool, Mapping):
            function = tool.get("function")
            name = function.get("name") if isinstance(function, Mapping) else tool.get("name")
            if isinstance(name, str):
                names.add(name)
    return frozenset(names)


def for_client(message: Message | None, declared: frozenset[str]) -> Message | None:
    """``message`` as a client that ``declared`` these tools may see it: with no tool call when it declared none.

    A reply whose calls are taken out loses its tool-call stop reason too: the client sees an
    answer that ended, not one waiting for a tool.
    """
    if declared or message is None or not message.metadata.get("tool_calls"):
        return message
    meta = {k: v for k, v in message.metadata.items() if k != "tool_calls"}
    if meta.get("stop_reason") == "tool_use":
        meta["stop_reason"] = "end_turn"
    if meta.get("finish_reason") == "tool_calls":
        meta["finish_reason"] = "stop"
    return Message(message.role, message.content, meta, multipart_content=message.multipart_content)
