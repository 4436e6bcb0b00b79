"""The facades' declared-keys lookup is asked of the plugins once, and follows registration."""

from __future__ import annotations

from typing import Any

import pytest

pytest.importorskip("starlette", reason="agent-core serve needs the server extra")

from agent_core import AgentCore
from agent_core.host_kit import ENGINE_KEYS
from agent_core.server.facades.client_tools import ClientTools
from agent_core.server.facades.fields import declared_for, keys_by_plugin

CONFIGS = [
    {"provider": "openai", "model": "m", "api_key": "k", "base_url": "http://127.0.0.1:9/v1"},
    {"provider": "anthropic", "model": "m", "api_key": "k", "base_url": "http://127.0.0.1:9"},
    {"provider": "echo"},
]


def _uncached(core: AgentCore, config: dict[str, Any]) -> set[str]:
    running = {str(ref) for ref in core.resolve(config).enabled}
    return {e["key"] for e in core.get_config_schema() if e["plugin"] in running} | set(ENGINE_KEYS)


def _feature(name: str, key: str, counter: list[int]) -> type:
    def get_config_schema(self: Any) -> dict[str, Any]:
        counter.append(1)
        return {key: {"type": "integer", "default": 1}}

    return type(f"F_{name}", (), {"name": name, "get_config_schema": get_config_schema})


def test_the_same_keys_as_asking_every_plugin() -> None:
    core = AgentCore.discover(tools=[ClientTools])
    for config in CONFIGS:
        assert declared_for(core, config) == _uncached(core, config)


def test_schemas_are_asked_once_until_a_plugin_is_registered() -> None:
    asked: list[int] = []
    core = AgentCore.discover(features=[_feature("first_f", "first_level", asked)])
    assert "first_level" in keys_by_plugin(core)["first_f"]
    assert len(asked) == 1
    for _ in range(3):
        keys_by_plugin(core)
    assert len(asked) == 1
    core.register_feature(_feature("second_f", "second_level", []))
    assert keys_by_plugin(core)["second_f"] == frozenset({"second_level"})
    assert "second_level" in declared_for(core, CONFIGS[2])
