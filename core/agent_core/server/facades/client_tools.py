"""``client_tools``: offers the tools an OpenAI client sent, and never runs them.

An OpenAI client that sends ``tools`` runs them itself: the facade must hand
the model's ``tool_calls`` back, not execute them. This tool plugin puts the
client's function schemas in front of the model (``config["client_tools"]``)
and is off when a request sends none. The facade also caps the request at one
provider call (``max_iterations: 1``), so the engine stops with the calls
unanswered and the reply carries them to the client.
"""

from __future__ import annotations

from typing import Any

__all__ = ["ClientTools"]


class ClientTools:
    """The request's client-side function schemas, offered as they came."""

    name = "client_tools"
    version = "1.0.0"

    def get_config_schema(self) -> dict[str, Any]:
        return {
            "client_tools": {
                "type": "array",
                "default": [],
                "description": "OpenAI function tools sent by an HTTP client; their calls go back to it.",
            }
        }

    def is_enabled(self, config: Any, tags: Any, models: Any, context: Any) -> bool:
        return bool(config.get("client_tools"))

    def init(self, config: Any) -> dict[str, Any]:
        return {"config": config}

    def get_tool_schemas(self, state: Any, *, prepared: Any = None) -> list[Any]:
        return list(state["config"].get("client_tools") or [])

    def execute_tool(self, tool_name: Any, payload: Any, state: Any, **kwargs: Any) -> dict[str, Any]:
        # Reached only if a caller lifts the facade's one-call cap: say so to the model.
        return {"success": False, "error": f"{tool_name} runs on the client, not in the server"}
