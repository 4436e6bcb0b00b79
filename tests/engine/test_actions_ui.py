"""Actions (application-triggered and response_finalize), the UI schema,
completions, models/tags, discovery, registration errors, and plugin
instances made fresh for each request."""

from __future__ import annotations

import warnings
from typing import Any

import agent_core.engine.discovery as engine_module
import pytest
from agent_core import (
    NATIVE_KEY,
    ActionInputError,
    ActionResult,
    AgentCore,
    ConfigError,
    Message,
    PluginError,
    Session,
)
from agent_core.plugins.core import PluginCore
from agent_core.testing import reply, scripted_provider


def session() -> Session:
    return Session("s", [Message("user", "hello there")])


def recording_provider(native_seen: list[Any] | None = None, name: str = "prov") -> type:
    """Answers "ok"; records the native history each call receives."""

    class Prov:
        def get_models(self, config):
            return [{"id": "m1"}]

        def get_tags(self, config, models):
            return ["base"]

        def call_api(self, native_messages, state):
            if native_seen is not None:
                native_seen.append([dict(m) for m in native_messages])
            msg = {"role": "assistant", "content": "ok"}
            return [], [msg], [*native_messages, msg], state

    Prov.name = name
    return Prov


# -- actions --------------------------------------------------------------------------


def notes_feature(calls: list[Any]) -> type:
    class Notes:
        name = "notes"

        def get_actions(self, state):
            return [
                {
                    "id": "add_note",
                    "label": "Add a note",
                    "inputs": {
                        "text": {"type": "string", "required": True},
                        "times": {"type": "integer", "default": 1},
                        "pinned": {"type": "boolean"},
                    },
                },
                {"id": "compact"},
            ]

        def execute_action(self, action_id, session, native_messages, params, context, state):
            calls.append({"action": action_id, "params": dict(params), "context": context,
                          "native": [dict(m) for m in native_messages], "session": session})
            if action_id == "add_note":
                notes = list(session.metadata.get("notes", []))
                return {
                    "native_messages": list(native_messages),
                    "session_metadata": {"notes": [*notes, params["text"] * params["times"]]},
                    "count": len(notes) + 1,
                }
            return {"native_messages": [{"role": "system", "content": "summary of earlier talk"}], "compacted": True}

    return Notes


def test_get_actions_lists_enabled_plugins_actions_with_their_owner() -> None:
    class ExtActions:
        name = "ext_actions"

        def get_actions(self, state):
            return [{"id": "reset"}]

    core = AgentCore(providers=[recording_provider()], extensions=[ExtActions], features=[notes_feature([])])
    actions = core.get_actions({})
    assert [(a["plugin"], a["id"]) for a in actions] == [
        ("ext_actions", "reset"), ("notes", "add_note"), ("notes", "compact"),
    ]
    assert actions[1]["label"] == "Add a note"
    assert [a["id"] for a in core.get_actions({"disabled_plugins": ["notes"]})] == ["reset"]


def test_execute_action_merges_session_metadata_and_surfaces_other_keys_as_payload() -> None:
    calls: list[Any] = []
    core = AgentCore(providers=[recording_provider()], features=[notes_feature(calls)])
    s = session().with_metadata({"notes": ["old"], "keep": 1})
    result = core.execute_action(s, "add_note", {"text": "ab", "times": 2})
    assert isinstance(result, ActionResult)
    assert list(result.session.metadata["notes"]) == ["old", "abab"]
    assert result.session.metadata["keep"] == 1
    assert result.payload == {"count": 2}
    assert result.session.messages == s.messages
    assert list(s.metadata["notes"]) == ["old"]  # the input session is untouched
    (call,) = calls
    assert call["params"] == {"text": "ab", "times": 2}
    assert call["native"] == [{"role": "user", "content": "hello there"}]
    ctx = call["context"]
    # the engine's narrow face for plugins, not the engine; outside a request it is bound to none
    assert isinstance(ctx["core"], PluginCore) and ctx["core"].request_id is None
    assert ctx["core"].create_session("tmp").session_id == "tmp"
    assert ctx["trigger_source"] == "application"
    assert ctx["session"]["session_id"] == "s"
    assert "config" in ctx


def test_declared_input_defaults_are_filled_in() -> None:
    calls: list[Any] = []
    core = AgentCore(providers=[recording_provider()], features=[notes_feature(calls)])
    core.execute_action(session(), "add_note", {"text": "x"})
    assert calls[0]["params"] == {"text": "x", "times": 1}


def test_execute_action_replaces_the_native_history_used_by_the_next_request() -> None:
    native_seen: list[Any] = []
    core = AgentCore(providers=[recording_provider(native_seen)], features=[notes_feature([])])
    result = core.execute_action(session(), "compact")
    assert result.payload == {"compacted": True}
    summary = {"role": "system", "content": "summary of earlier talk"}
    assert [dict(m) for m in result.native_messages] == [summary]
    assert [dict(m) for m in result.session.metadata[NATIVE_KEY]["prov"]["messages"]] == [summary]
    follow_up = result.session.with_message(Message("user", "and now?"))
    core.request(follow_up)
    assert native_seen[-1] == [summary, {"role": "user", "content": "and now?"}]


@pytest.mark.parametrize(
    ("params", "bad_input"),
    [
        ({}, "text"),  # required input missing
        ({"times": 2}, "text"),
        ({"text": 3}, "text"),  # wrong type
        ({"text": "x", "times": "2"}, "times"),
        ({"text": "x", "times": True}, "times"),  # a bool is not an integer
        ({"text": "x", "pinned": "yes"}, "pinned"),
        ({"text": "x", "colour": "red"}, "colour"),  # not a declared input
    ],
)
def test_params_are_checked_against_declared_inputs_before_the_plugin_runs(params: dict[str, Any], bad_input: str) -> None:
    calls: list[Any] = []
    core = AgentCore(providers=[recording_provider()], features=[notes_feature(calls)])
    with pytest.raises(ActionInputError) as info:
        core.execute_action(session(), "add_note", params)
    err = info.value
    assert isinstance(err, ValueError)
    assert (err.action, err.input) == ("add_note", bad_input)
    assert "add_note" in str(err) and bad_input in str(err)
    assert calls == []


def test_an_unknown_action_is_an_action_input_error() -> None:
    core = AgentCore(providers=[recording_provider()], features=[notes_feature([])])
    with pytest.raises(ActionInputError) as info:
        core.execute_action(session(), "fly")
    assert info.value.action == "fly"
    with pytest.raises(ActionInputError):
        core.execute_action(session(), "add_note", {"text": "x"}, {"disabled_plugins": ["notes"]})


def test_an_action_id_two_plugins_share_must_be_qualified() -> None:
    def make(name: str) -> type:
        return type(name, (), {
            "name": name,
            "get_actions": lambda self, state: [{"id": "go"}],
            "execute_action": lambda self, action_id, session, native_messages, params, context, state: {"by": name},
        })

    core = AgentCore(providers=[recording_provider()], features=[make("one"), make("two")])
    with pytest.raises(ActionInputError) as info:
        core.execute_action(session(), "go")
    assert "one:go" in str(info.value) and "two:go" in str(info.value)
    assert core.execute_action(session(), "two:go").payload == {"by": "two"}


def test_caller_context_is_added_and_a_clash_keeps_the_engine_value_with_a_warning() -> None:
    calls: list[Any] = []
    core = AgentCore(providers=[recording_provider()], features=[notes_feature(calls)])
    with pytest.warns(RuntimeWarning, match="trigger_source"):
        core.execute_action(session(), "compact", context={"user_id": "u1", "trigger_source": "forged"})
    ctx = calls[0]["context"]
    assert ctx["user_id"] == "u1"
    assert ctx["trigger_source"] == "application"


@pytest.mark.parametrize("key", ["config", "session", "core"])
def test_every_engine_context_key_is_protected(key: str) -> None:
    calls: list[Any] = []
    core = AgentCore(providers=[recording_provider()], features=[notes_feature(calls)])
    with pytest.warns(RuntimeWarning, match=key):
        core.execute_action(session(), "compact", context={key: "forged"})
    assert calls[0]["context"][key] != "forged"


def test_additive_context_raises_no_warning() -> None:
    calls: list[Any] = []
    core = AgentCore(providers=[recording_provider()], features=[notes_feature(calls)])
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        core.execute_action(session(), "compact", context={"tenant": "acme"})
    assert calls[0]["context"]["tenant"] == "acme"


def test_an_action_that_raises_is_a_plugin_error() -> None:
    class Broken:
        name = "broken"

        def get_actions(self, state):
            return [{"id": "explode"}]

        def execute_action(self, action_id, session, native_messages, params, context, state):
            raise RuntimeError("nope")

    core = AgentCore(providers=[recording_provider()], features=[Broken])
    with pytest.raises(PluginError) as info:
        core.execute_action(session(), "explode")
    assert (info.value.plugin, info.value.hook) == ("broken", "execute_action")


# -- response_finalize -----------------------------------------------------------------

FINALIZE_KEYS = {
    "lifecycle", "trigger_source", "config", "session", "core", "final_messages",
    "native_final_messages", "native_messages", "stream", "turn_native_start_index",
}


def shouting(seen: list[Any]) -> type:
    class Shout:
        name = "shout"

        def get_actions(self, state):
            return [{"id": "shout", "trigger": "response_finalize"}]

        def execute_action(self, action_id, session, native_messages, params, context, state):
            seen.append(context)
            finals = [{**m, "content": m["content"].upper()} for m in context["final_messages"]]
            return {"final_messages": finals, "session_metadata": {"shouted": len(finals)}}

    return Shout


def test_response_finalize_can_replace_final_messages_and_merge_metadata() -> None:
    seen: list[Any] = []
    core = AgentCore(providers=[scripted_provider("quiet words")], features=[shouting(seen)])
    result = core.request(session())
    assert [m.content for m in result.final_messages] == ["QUIET WORDS"]
    assert result.session.messages[-1].content == "QUIET WORDS"
    assert result.session.metadata["shouted"] == 1
    finals = [e for e in core.stream_request(session()) if e.type == "final"]
    assert [e.message.content for e in finals] == ["QUIET WORDS"]


def test_response_finalize_context_carries_the_documented_keys() -> None:
    seen: list[Any] = []
    core = AgentCore(providers=[scripted_provider("hi")], features=[shouting(seen)])
    core.request(session(), {"stream": True}, request_id="r1")
    (ctx,) = seen
    assert FINALIZE_KEYS <= set(ctx)
    assert ctx["lifecycle"] == "response_finalize"
    assert ctx["trigger_source"] == "core"
    assert isinstance(ctx["core"], PluginCore) and ctx["core"].request_id == "r1"  # bound to this request
    assert ctx["stream"] is True
    assert ctx["session"]["messages"] == [{"role": "user", "content": "hello there"}]
    assert [m["content"] for m in ctx["final_messages"]] == ["hi"]
    assert [m["content"] for m in ctx["native_final_messages"]] == ["hi"]
    start = ctx["turn_native_start_index"]
    assert isinstance(start, int)
    assert [m["content"] for m in ctx["native_messages"][start:]] == ["hi"]
    assert [m["content"] for m in ctx["native_messages"][:start]] == ["hello there"]


def test_response_finalize_runs_once_per_provider_call() -> None:
    from agent_core.testing import tool_call

    class Echo:
        name = "echo_tool"

        def get_tool_schemas(self, state):
            return [{"type": "function", "function": {"name": "echo", "parameters": {"type": "object"}}}]

        def execute_tool(self, tool_name, payload, state):
            return {"success": True, "result": "e"}

    seen: list[Any] = []
    provider = scripted_provider(reply(tool_calls=[tool_call("echo", {})]), reply("last"))
    core = AgentCore(providers=[provider], features=[shouting(seen)], tools=[Echo])
    result = core.request(session())
    assert len(seen) == 2
    assert result.final_messages[-1].content == "LAST"


def test_response_finalize_returning_an_invalid_message_is_a_plugin_error() -> None:
    class Bad:
        name = "bad"

        def get_actions(self, state):
            return [{"id": "bad", "trigger": "response_finalize"}]

        def execute_action(self, action_id, session, native_messages, params, context, state):
            return {"final_messages": [{"content": "no role"}]}

    core = AgentCore(providers=[scripted_provider("hi")], features=[Bad])
    with pytest.raises(PluginError) as info:
        core.request(session())
    assert info.value.plugin == "bad"


# -- UI schema --------------------------------------------------------------------------


def ui_plugin(name: str, method: Any, **attrs: Any) -> type:
    return type(f"UI_{name}", (), {"name": name, "get_ui_elements": method, **attrs})


def test_ui_schema_supports_every_legacy_signature_and_the_canonical_one() -> None:
    got: dict[str, tuple[Any, ...]] = {}

    def none(self):
        got["none"] = ()
        return [{"key": "k_none"}]

    def config_only(self, config):
        got["config"] = (config["flavour"],)
        return [{"key": "k_config"}]

    def tags_models(self, config, tags, models):
        got["tags_models"] = (config["flavour"], list(tags), [dict(m) for m in models])
        return [{"key": "k_tm"}]

    def tags_models_context(self, config, tags, models, context):
        got["tags_models_context"] = (list(tags), [dict(m) for m in models], sorted(context))
        return [{"key": "k_tmc"}]

    def canonical(self, config, context=None):
        got["canonical"] = (config["flavour"], list(context["tags"]), [dict(m) for m in context["models"]])
        return [{"key": "k_canon"}]

    class UIProvider(recording_provider()):  # type: ignore[misc, valid-type]
        get_ui_elements = none

    core = AgentCore(
        providers=[UIProvider],
        extensions=[ui_plugin("ext", config_only, get_tags=lambda self, config, models: ["ext-tag"])],
        features=[ui_plugin("f1", tags_models, priority=1), ui_plugin("f2", canonical, priority=2)],
        tools=[ui_plugin("tool", tags_models_context)],
    )
    schema = core.get_ui_schema({"flavour": "mint"})
    assert [e["key"] for e in schema] == ["k_none", "k_config", "k_tm", "k_canon", "k_tmc"]
    assert [e["plugin"] for e in schema] == ["prov", "ext", "f1", "f2", "tool"]
    assert got["none"] == ()
    assert got["config"] == ("mint",)
    assert got["tags_models"] == ("mint", ["base", "ext-tag"], [{"id": "m1"}])
    assert got["canonical"] == ("mint", ["base", "ext-tag"], [{"id": "m1"}])
    tags, models, ctx_keys = got["tags_models_context"]
    assert (tags, models) == (["base", "ext-tag"], [{"id": "m1"}])
    assert {"tags", "models", "available_tools", "tools"} <= set(ctx_keys)


def test_ui_schema_normalizes_and_deduplicates_config_elements() -> None:
    def first(self, config, context=None):
        return [
            {"key": "model", "type": "select", "label": "first"},
            {"ui_type": "message_footer", "data": "metadata.timestamp"},
            {"ui_type": "", "key": "temperature", "type": "number"},
            {"key": "owner", "plugin": "someone_else"},
        ]

    def second(self, config, context=None):
        return [
            {"key": "model", "type": "text", "label": "second"},
            {"ui_type": "message_footer", "data": "metadata.timestamp"},
            {"ui_type": "session_action", "action": "compact"},
        ]

    core = AgentCore(
        providers=[recording_provider()],
        features=[ui_plugin("a_first", first), ui_plugin("b_second", second)],
    )
    schema = core.get_ui_schema({})
    configs = [e for e in schema if e["ui_type"] == "config"]
    assert [e["key"] for e in configs] == ["model", "temperature", "owner"]
    assert configs[0]["label"] == "first"  # the first declaration of a key wins
    assert configs[1]["plugin"] == "a_first"
    assert configs[2]["plugin"] == "someone_else"  # an explicit plugin is kept
    footers = [e for e in schema if e["ui_type"] == "message_footer"]
    assert [e["plugin"] for e in footers] == ["a_first", "b_second"]  # not de-duplicated
    (action,) = [e for e in schema if e["ui_type"] == "session_action"]
    assert action["plugin"] == "b_second" and action["action_owner"] == "b_second"


def test_ui_schema_leaves_out_disabled_plugins() -> None:
    core = AgentCore(
        providers=[recording_provider()],
        features=[ui_plugin("on", lambda self: [{"key": "a"}]), ui_plugin("off", lambda self: [{"key": "b"}])],
    )
    assert [e["key"] for e in core.get_ui_schema({"disabled_plugins": ["off"]})] == ["a"]


def test_a_ui_element_that_is_not_a_mapping_is_a_plugin_error() -> None:
    core = AgentCore(providers=[recording_provider()], features=[ui_plugin("bad", lambda self: ["text"])])
    with pytest.raises(PluginError) as info:
        core.get_ui_schema({})
    assert info.value.plugin == "bad"


# -- completions ------------------------------------------------------------------------


def completer(name: str, prefix: str) -> type:
    class Completer:
        def get_completions(self, config, text):
            if text.startswith(prefix):
                return [{"label": f"{prefix}help", "value": f"{prefix}help "}]
            return []

        def apply_completion(self, config, text, completion):
            return f"[{name}] {completion['value']}"

    Completer.name = name
    return Completer


def test_get_completions_collects_from_enabled_features_and_names_the_plugin() -> None:
    core = AgentCore(providers=[recording_provider()], features=[completer("slash", "/"), completer("at", "@")])
    assert core.get_completions({}, "/he") == [{"label": "/help", "value": "/help ", "plugin": "slash"}]
    assert core.get_completions({}, "@x") == [{"label": "@help", "value": "@help ", "plugin": "at"}]
    assert core.get_completions({}, "plain") == []
    assert core.get_completions({"disabled_plugins": ["slash"]}, "/he") == []


def test_apply_completion_asks_the_feature_that_offered_it() -> None:
    core = AgentCore(providers=[recording_provider()], features=[completer("slash", "/"), completer("at", "@")])
    (completion,) = core.get_completions({}, "@x")
    assert core.apply_completion({}, "@x", completion) == "[at] @help "
    assert core.apply_completion({}, "x", {"value": "v", "plugin": "nobody"}) == ""


# -- models and tags ---------------------------------------------------------------------


def test_get_models_and_get_tags_follow_the_config_and_the_enabled_plugins() -> None:
    class RegionalProvider(recording_provider()):  # type: ignore[misc, valid-type]
        def get_models(self, config):
            return [{"id": f"{config.get('region', 'eu')}-large"}, {"id": "small"}]

    class OnlyLarge:
        name = "only_large"

        def get_models(self, config, models):
            return [m for m in models if m["id"].endswith("large")]

        def get_tags(self, config, models):
            return [f"models:{len(models)}"]

    class AddsModel:
        name = "adds_model"

        def get_models(self, config, models):
            return [*models, {"id": "extra"}]

    core = AgentCore(providers=[RegionalProvider], extensions=[OnlyLarge], features=[AddsModel])
    assert core.get_models({"region": "us"}) == [{"id": "us-large"}, {"id": "extra"}]
    assert core.get_models({"disabled_plugins": ["only_large"]}) == [
        {"id": "eu-large"}, {"id": "small"}, {"id": "extra"},
    ]
    assert core.get_tags({}) == ["base", "models:2"]
    assert core.get_tags({"disabled_plugins": ["only_large"]}) == ["base"]


# -- discovery -----------------------------------------------------------------------------


class FakeEntryPoint:
    def __init__(self, name: str, obj: Any) -> None:
        self.name = name
        self.value = f"fake.module:{name}"
        self._obj = obj

    def load(self) -> Any:
        if isinstance(self._obj, BaseException):
            raise self._obj
        return self._obj


def fake_groups(monkeypatch: pytest.MonkeyPatch, groups: dict[str, list[FakeEntryPoint]]) -> None:
    monkeypatch.setattr(engine_module, "entry_points", lambda group: list(groups.get(group, [])))


def named(kind_name: str, base: type | None = None, **attrs: Any) -> type:
    return type(kind_name, (base,) if base else (), {"name": kind_name, **attrs})


def test_discover_loads_every_entry_point_group_and_adds_given_plugins(monkeypatch: pytest.MonkeyPatch) -> None:
    fake_groups(monkeypatch, {
        "agent_core.providers": [FakeEntryPoint("found_prov", recording_provider(name="found_prov"))],
        "agent_core.provider_extensions": [FakeEntryPoint("found_ext", named("found_ext"))],
        "agent_core.features": [FakeEntryPoint("found_feat", named("found_feat"))],
        "agent_core.tools": [FakeEntryPoint("found_tool", named("found_tool"))],
    })
    core = AgentCore.discover(
        providers=[recording_provider(name="given_prov")],
        features=[named("given_feat")],
        tools=[named("given_tool")],
        extensions=[named("given_ext")],
    )
    assert set(core.plugins("provider")) == {"found_prov", "given_prov"}
    assert set(core.plugins("extension")) == {"found_ext", "given_ext"}
    assert set(core.plugins("feature")) == {"found_feat", "given_feat"}
    assert set(core.plugins("tool")) == {"found_tool", "given_tool"}
    res = core.resolve({"provider": "found_prov"})
    assert [str(n) for n in res.features] == ["found_feat", "given_feat"]
    assert core.request(session(), {"provider": "given_prov"}).final_messages[-1].content == "ok"


def test_a_given_plugin_replaces_a_discovered_one_of_the_same_name(monkeypatch: pytest.MonkeyPatch) -> None:
    fake_groups(monkeypatch, {
        "agent_core.providers": [FakeEntryPoint("prov", recording_provider())],
        "agent_core.features": [FakeEntryPoint("dup", named("dup", marker=lambda self: "discovered"))],
    })
    core = AgentCore.discover(features=[named("dup", marker=lambda self: "given")])
    assert core.plugins("feature") == ("dup",)
    assert core.resolve({}).features[0].cls.marker(None) == "given"


def test_discover_passes_the_approval_callback_on(monkeypatch: pytest.MonkeyPatch) -> None:
    fake_groups(monkeypatch, {})

    def approve(request: Any) -> bool:
        return True

    assert AgentCore.discover(approval=approve).approval is approve


def test_a_broken_entry_point_is_a_config_error_naming_it(monkeypatch: pytest.MonkeyPatch) -> None:
    fake_groups(monkeypatch, {"agent_core.features": [FakeEntryPoint("shaky", ImportError("no module named shaky_dep"))]})
    with pytest.raises(ConfigError) as info:
        AgentCore.discover()
    assert info.value.plugins == ("shaky",)
    assert "shaky" in str(info.value) and "agent_core.features" in str(info.value)


# -- registration --------------------------------------------------------------------------


def test_a_hook_needing_more_positional_arguments_than_the_protocol_fails_at_registration() -> None:
    class Greedy:
        name = "greedy"

        def execute_tool(self, tool_name, payload, state, extra_thing):
            return {}

    with pytest.raises(ConfigError) as info:
        AgentCore(providers=[recording_provider()], tools=[Greedy])
    assert info.value.plugins == ("greedy",)
    assert "execute_tool" in str(info.value)


def test_a_hook_needing_an_unknown_keyword_fails_at_registration() -> None:
    class NeedsKw:
        name = "needs_kw"

        def finalize(self, final_messages, native_messages, state, *, secret):
            return final_messages, native_messages, state

    with pytest.raises(ConfigError) as info:
        AgentCore(providers=[recording_provider()], features=[NeedsKw])
    assert "needs_kw" in info.value.plugins and "secret" in str(info.value) and "finalize" in str(info.value)


@pytest.mark.parametrize("variant", ["extra_positional", "required_keyword"])
def test_a_get_ui_elements_needing_more_than_any_supported_shape_fails_at_registration(variant: str) -> None:
    if variant == "extra_positional":
        def get_ui_elements(self, config, tags, models, context, extra):
            return []
    else:
        def get_ui_elements(self, config, *, needed):
            return []

    with pytest.raises(ConfigError) as info:
        AgentCore(providers=[recording_provider()], features=[ui_plugin("greedy_ui", get_ui_elements)])
    assert "greedy_ui" in info.value.plugins and "get_ui_elements" in str(info.value)


def test_extra_parameters_with_defaults_are_fine() -> None:
    class Optional:
        name = "optional"

        def init(self, config, state, extra=None, *, more=None):
            return state

    AgentCore(providers=[recording_provider()], features=[Optional]).request(session())


def test_register_methods_validate_too() -> None:
    class Greedy:
        name = "greedy"

        def get_tags(self, config, models, a, b):
            return []

    core = AgentCore(providers=[recording_provider()])
    with pytest.raises(ConfigError):
        core.register_feature(Greedy)
    assert core.plugins("feature") == ()


@pytest.mark.parametrize("thing", [42, "plugin_name", object()])
def test_something_that_is_neither_a_class_nor_a_factory_is_refused(thing: Any) -> None:
    with pytest.raises(ConfigError):
        AgentCore(providers=[recording_provider()], features=[thing])


def test_two_plugins_of_one_kind_with_one_name_are_refused() -> None:
    with pytest.raises(ConfigError) as info:
        AgentCore(providers=[recording_provider()], features=[named("twin"), named("twin")])
    assert info.value.plugins == ("twin",)


def test_a_provider_without_any_api_hook_is_refused() -> None:
    with pytest.raises(ConfigError) as info:
        AgentCore(providers=[named("mute")])
    assert "mute" in info.value.plugins


def test_a_factory_that_fails_is_a_config_error() -> None:
    def factory() -> Any:
        raise RuntimeError("cannot build")

    with pytest.raises(ConfigError, match="cannot build"):
        AgentCore(providers=[recording_provider()], features=[factory])


def test_a_non_numeric_priority_is_refused() -> None:
    with pytest.raises(ConfigError) as info:
        AgentCore(providers=[recording_provider()], features=[named("odd", priority="high")])
    assert info.value.plugins == ("odd",)


def test_hooks_with_fewer_parameters_are_called_with_what_they_accept() -> None:
    seen: list[str] = []

    class Narrow:
        name = "narrow"

        def get_models(self):
            return [{"id": "narrow-1"}]

        def call_api(self, native_messages):
            msg = {"role": "assistant", "content": f"{len(native_messages)} in"}
            return [], [msg], [*native_messages, msg], {}

        def to_native_messages(self, messages):
            seen.append("provider.to_native")
            return [{"role": m["role"], "content": m["content"]} for m in messages]

    class NarrowFeature:
        name = "narrow_feature"

        def init(self, config):  # no state
            seen.append("feature.init")
            return {"config": config}

        def from_native_messages(self, native_messages, messages):  # no state, no context
            seen.append("feature.from_native")
            return [{**m, "content": m["content"] + "!"} for m in messages]

    core = AgentCore(providers=[Narrow], features=[NarrowFeature])
    result = core.request(session())
    assert result.final_messages[-1].content == "1 in!"
    assert seen == ["feature.init", "provider.to_native", "feature.from_native"]
    assert core.get_models({}) == [{"id": "narrow-1"}]


# -- fresh instances per request -------------------------------------------------------------


class Stateful:
    """Counts calls on the instance: a shared instance would count past one."""

    name = "stateful"
    instances: list[int] = []

    def __init__(self) -> None:
        self.inits = 0

    def init(self, config, state):
        self.inits += 1
        Stateful.instances.append(id(self))
        return {**state, "stateful_inits": self.inits}

    def from_native_messages(self, native_messages, messages, state):
        return [{**m, "metadata": {**m.get("metadata", {}), "inits": state["stateful_inits"]}} for m in messages]


def test_plugin_classes_are_instantiated_fresh_for_every_request() -> None:
    Stateful.instances = []
    core = AgentCore(providers=[scripted_provider("a", name="p")], features=[Stateful])
    first = core.request(session())
    second = core.request(session())
    assert first.final_messages[-1].metadata["inits"] == 1
    assert second.final_messages[-1].metadata["inits"] == 1
    assert len(Stateful.instances) == 2


def test_zero_argument_factories_are_called_for_every_request() -> None:
    made: list[Any] = []

    def factory() -> Stateful:
        obj = Stateful()
        made.append(obj)
        return obj

    core = AgentCore(providers=[scripted_provider("a", name="p")], features=[factory])
    assert core.plugins("feature") == ("stateful",)
    before = len(made)
    first = core.request(session())
    second = core.request(session())
    assert len(made) - before == 2
    used = made[before:]
    assert used[0] is not used[1]
    assert used[0].inits == 1 and used[1].inits == 1
    assert first.final_messages[-1].metadata["inits"] == second.final_messages[-1].metadata["inits"] == 1


def test_a_factory_can_register_a_provider() -> None:
    Provider = scripted_provider("from factory", name="factory_made")
    core = AgentCore(providers=[lambda: Provider()])
    assert core.plugins("provider") == ("factory_made",)
    assert core.request(session()).final_messages[-1].content == "from factory"


def test_an_extension_action_runs_with_the_shared_state() -> None:
    class Ext:
        name = "ext"

        def init(self, config, state):
            return {**state, "ext_ready": True}

        def get_actions(self, state):
            return [{"id": "status", "inputs": {"verbose": {"type": "boolean", "default": False}}}]

        def execute_action(self, action_id, session, native_messages, params, context, state):
            return {"ready": state["ext_ready"], "verbose": params["verbose"], "seen": len(native_messages)}

    core = AgentCore(providers=[recording_provider()], extensions=[Ext])
    result = core.execute_action(session(), "status", {"verbose": True})
    assert result.payload == {"ready": True, "verbose": True, "seen": 1}
    assert [dict(m) for m in result.native_messages] == [{"role": "user", "content": "hello there"}]
