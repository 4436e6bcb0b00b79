"""Lock agent_core.testing's public names: they are the plugin author's test API."""

from __future__ import annotations

import agent_core.testing as testing

PUBLIC = [
    "FinalizeResult", "HookCall", "PluginContractError", "PluginHarness", "SAMPLES", "ScriptedTurn", "StreamRecord",
    "check_plugin", "function_provider", "plugin_kind", "recording_provider", "render", "replay_provider", "reply", "scripted_provider",
    "tool_call",
]


def test_all_lists_exactly_the_public_names():
    assert sorted(testing.__all__) == sorted(PUBLIC)


def test_every_public_name_resolves():
    for name in PUBLIC:
        assert getattr(testing, name) is not None, name


def test_an_unknown_name_is_an_attribute_error():
    try:
        testing.no_such_helper  # noqa: B018
    except AttributeError as exc:
        assert "no_such_helper" in str(exc)
    else:
        raise AssertionError("expected AttributeError")
