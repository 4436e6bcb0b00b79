"""UI elements have a schema (msgspec Structs), checked where they enter, with the name a typo meant."""

from __future__ import annotations

import pytest
from agent_core import AgentCore
from agent_core.errors import ConfigError, PluginError
from agent_core.plugin_kit import Feature, MessageFooter, SessionAction, StatusBar
from agent_core_providers.echo import EchoProvider


def feature(name: str, *elements) -> type:
    return type(f"F_{name}", (Feature,), {"name": name, "ui_elements": tuple(elements)})


def test_well_formed_elements_and_structs_reach_the_ui_schema_as_mappings():
    ok = feature("ok", StatusBar(data="session.metadata.title", template="{{data}}", label="Title"),
                 {"ui_type": "message_footer", "data": "metadata.timestamp", "my_extra": 1},
                 SessionAction(action="compact", label="Compact"), {"key": "ok_level", "type": "number"},
                 {"ui_type": "something_else_entirely", "anything": True})
    schema = AgentCore(providers=[EchoProvider], features=[ok]).get_ui_schema({})
    assert schema[0] == {"ui_type": "status_bar", "data": "session.metadata.title", "template": "{{data}}",
                         "label": "Title", "plugin": "ok"}
    assert schema[1]["my_extra"] == 1  # a plugin's own extras pass untouched
    assert schema[2]["action"] == "compact" and schema[2]["action_owner"] == "ok"
    assert schema[3]["ui_type"] == "config"
    assert [e["ui_type"] for e in schema][-1] == "something_else_entirely"
    assert MessageFooter(data="metadata.usage").data == "metadata.usage"


@pytest.mark.parametrize(("element", "said"), [
    ({"ui_type": "status_bar", "data": "session.metadata.x", "templte": "{{data}}"},
     "a status_bar element has no field 'templte'; did you mean 'template'?"),
    ({"ui_type": "status_bra", "data": "session.metadata.x"}, "ui_type 'status_bra' is no kind of element; did you mean 'status_bar'?"),
    ({"ui_type": "message_footer"}, "missing required field `data`"),
    ({"ui_type": "message_footer", "data": ["metadata"]}, "Expected `str`, got `array` - at `$.data`"),
    ({"ui_type": "session_action", "acton": "compact"}, "did you mean 'action'?"),
    ({"type": "select", "kye": "level"}, "a config element has no field 'kye'; did you mean 'key'?"),
], ids=["field", "ui_type", "missing", "wrong-type", "action", "config"])
def test_a_declared_element_is_refused_at_registration_naming_the_plugin_and_the_fix(element, said):
    with pytest.raises(ConfigError) as got:
        AgentCore(providers=[EchoProvider], features=[feature("shown", element)])
    assert "plugin 'shown': ui_elements[0]" in str(got.value) and said in str(got.value)
    assert got.value.plugins == ("shown",)


def test_elements_a_hook_returns_are_checked_when_the_schema_is_asked_for():
    class Dynamic:
        name = "dynamic"

        def get_ui_elements(self, config, context=None):
            return [{"ui_type": "status_bar", "data": "session.metadata.x", "tempalte": "x"}]

    core = AgentCore(providers=[EchoProvider], features=[Dynamic])
    with pytest.raises(PluginError) as got:
        core.get_ui_schema({})
    assert (got.value.plugin, got.value.hook) == ("dynamic", "get_ui_elements")
    assert "did you mean 'template'?" in str(got.value)


def test_the_bundled_features_elements_are_well_formed():
    core = AgentCore.discover()
    assert core.get_ui_schema({"provider": "echo", "enabled_plugins": ["timestamps", "title"]})
