"""Resolving reads the schemas of plugins that will not run only when a key needs them.

The facades send engine keys (``stream``, ``max_iterations``, ``announce_answer``...) with every
request; those are the engine's own and must not make every request instantiate every installed
plugin to look for them. A key nothing running declares still does (for its warning, and for the
secrets another plugin declares).
"""

from __future__ import annotations

import warnings
from typing import Any

from agent_core import AgentCore, UnknownConfigKeyWarning
from agent_core.testing import scripted_provider


def _other(asked: list[int]) -> type:
    class Other:
        name = "other_prov"

        def get_config_schema(self) -> dict[str, Any]:
            asked.append(1)
            return {"other_token": {"type": "string", "secret": True, "default": ""}}

        def init(self, config: Any) -> dict[str, Any]:
            return {}

        def call_api(self, native_messages: Any, state: Any) -> Any:
            return [], [], native_messages, state

    return Other


def test_engine_keys_do_not_read_the_other_plugins_schemas() -> None:
    asked: list[int] = []
    core = AgentCore(providers=[scripted_provider("hi"), _other(asked)])
    config = {"provider": "scripted", "stream": True, "max_iterations": 1, "announce_answer": True,
              "run_pending_tool_calls": False, "strict_config": True}  # strict: an unknown key would raise
    core.resolve(config)
    assert asked == []


def test_a_key_nothing_running_declares_still_reads_them() -> None:
    asked: list[int] = []
    core = AgentCore(providers=[scripted_provider("hi"), _other(asked)])
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        res = core.resolve({"provider": "scripted", "other_token": "s3cret-value", "stream": True})
    assert asked  # read, to know other_token
    assert not any(issubclass(w.category, UnknownConfigKeyWarning) for w in caught)  # declared by other_prov
    assert "s3cret-value" not in repr(res.config)  # another plugin's secret is still redacted
