"""A plugin's config schema is parsed once while it stays the same, and again as soon as it changes."""

from __future__ import annotations

from typing import Any

import pytest
from agent_core import AgentCore, ConfigError
from agent_core.plugins import config as config_module
from agent_core.plugins.config import parse_schema
from agent_core.testing import scripted_provider


def test_an_equal_schema_is_not_parsed_again(monkeypatch: pytest.MonkeyPatch) -> None:
    parsed: list[str] = []
    real = config_module._parse_schema

    def counted(plugin: str, raw: Any) -> Any:
        parsed.append(plugin)
        return real(plugin, raw)

    monkeypatch.setattr(config_module, "_parse_schema", counted)
    first = parse_schema("cache_p1", {"depth": {"type": "integer", "default": 3}, "api_key": {"type": "string"}})
    again = parse_schema("cache_p1", {"depth": {"type": "integer", "default": 3}, "api_key": {"type": "string"}})
    assert again == first and parsed == ["cache_p1"]
    assert [f.secret for f in again] == [False, True]
    changed = parse_schema("cache_p1", {"depth": {"type": "integer", "default": 4}})
    assert parsed == ["cache_p1", "cache_p1"]
    assert [(f.key, f.default) for f in changed] == [("depth", 4)]


def test_a_schema_dict_changed_in_place_is_parsed_again() -> None:
    schema: dict[str, Any] = {"depth": {"type": "integer", "default": 3}}
    assert [f.default for f in parse_schema("cache_p2", schema)] == [3]
    schema["depth"]["default"] = 5  # the plugin edits the dict it returned
    schema["level"] = {"type": "string", "default": "x"}
    assert [(f.key, f.default) for f in parse_schema("cache_p2", schema)] == [("depth", 5), ("level", "x")]


def test_defaults_are_the_caches_own() -> None:
    schema: dict[str, Any] = {"names": {"type": "array", "default": ["a"]}}
    fields = parse_schema("cache_p3", schema)
    schema["names"]["default"].append("b")  # the plugin's list, not the cached default
    assert fields[0].default == ["a"]
    assert parse_schema("cache_p3", schema)[0].default == ["a", "b"]  # and the change is seen


def test_a_bad_schema_still_fails_every_time() -> None:
    for _ in range(2):
        with pytest.raises(ConfigError, match="must be a mapping"):
            parse_schema("cache_p4", {"depth": 3})


def test_two_cores_with_a_plugin_of_the_same_name_each_get_their_own_fields() -> None:
    def feature(default: int) -> type:
        return type("F", (), {"name": "same_name_f",
                              "get_config_schema": lambda self: {"depth": {"type": "integer", "default": default}}})

    one = AgentCore(providers=[scripted_provider("hi")], features=[feature(1)])
    two = AgentCore(providers=[scripted_provider("hi")], features=[feature(2)])
    for _ in range(2):
        assert one.resolve({"provider": "scripted"}).config["depth"] == 1
        assert two.resolve({"provider": "scripted"}).config["depth"] == 2
