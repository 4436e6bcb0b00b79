"""The original platform's names behave as it documented them, one config-schema reader,
session-level plugin lists, and the ``start`` every stream opens with."""

from __future__ import annotations

from typing import Any

import pytest
from agent_core import NATIVE_KEY, ActionInputError, AgentCore, ConfigError, Message, Session, ToolDescriptor
from agent_core.testing import reply, scripted_provider, tool_call

from tests.seed_plugins import EchoProvider, PrefixExt, TagFeature

ADD = {"type": "function", "function": {"name": "add", "parameters": {"type": "object"}}}


class Calc:
    name = "calc"

    def get_tool_schemas(self, state):
        return [ADD]

    def execute_tool(self, tool_name, payload, state):
        return {"success": True, "result": payload["a"] + payload["b"]}


def user(text: str = "hi") -> Session:
    return Session("s", [Message("user", text)])


# -- compatibility names ------------------------------------------------------------


def test_send_request_stream_ends_with_a_final_event_carrying_the_session() -> None:
    core = AgentCore(providers=[EchoProvider], extensions=[PrefixExt], features=[TagFeature])
    session = core.add_message(core.create_session(), "user", "Hello")
    chunks = list(core.send_request_stream(session, {}))
    final = [c for c in chunks if c["type"] == "final"][-1]
    new_session = final["session"]
    assert isinstance(new_session, Session)
    assert [m.content for m in new_session.messages] == ["Hello", "[EXT] Echo: Hello"]
    assert new_session == chunks[-1].session  # the same session done reports
    # stream_request keeps its finals light
    assert all(e.session is None for e in core.stream_request(session, {}) if e.type == "final")


def test_send_request_stream_finals_carry_the_session_so_far_in_a_tool_loop() -> None:
    core = AgentCore(providers=[scripted_provider(reply(tool_calls=[tool_call("add", {"a": 1, "b": 2})]), "3")],
                     tools=[Calc])
    finals = [c for c in core.send_request_stream(user(), {}) if c["type"] == "final"]
    assert [len(f["session"].messages) for f in finals] == [2, 4]
    assert finals[-1]["session"].messages[-1].content == "3"


def test_execute_tool_calls_two_argument_form_returns_message_dicts_for_add_message() -> None:
    core = AgentCore(providers=[EchoProvider], tools=[Calc])
    messages = core.execute_tool_calls([tool_call("add", {"a": 2, "b": 3}, id="c1")], {})
    assert messages == [{"role": "tool", "content": "Result: 5",
                         "metadata": {"tool_call_id": "c1", "tool_name": "add"},
                         "toolResult": {"success": True, "result": 5}}]
    session = core.create_session()
    for m in messages:
        session = core.add_message(session, m["role"], m["content"], m.get("metadata"))
    assert session.messages[-1].metadata["tool_call_id"] == "c1"
    # the three-argument form still returns Message values
    (msg,) = core.execute_tool_calls(session, [tool_call("add", {"a": 1, "b": 1})], {})
    assert isinstance(msg, Message) and msg.content == "Result: 2"


def test_get_tool_schemas_returns_the_schemas_a_request_sends_and_descriptors_are_separate() -> None:
    seen: list[Any] = []

    class Anthropicish(EchoProvider):
        def accepted_tool_schema_formats(self, config, state=None):
            return ["anthropic.messages"]

        def init(self, config):
            seen.append(config["tools"])
            return super().init(config)

    core = AgentCore(providers=[Anthropicish], tools=[Calc])
    schemas = core.get_tool_schemas({})
    assert schemas == [{"name": "add", "input_schema": {"type": "object"}}]
    assert type(schemas[0]) is dict
    core.request(user(), {})
    assert seen == [schemas]
    (descriptor,) = core.get_tool_descriptors({})
    assert isinstance(descriptor, ToolDescriptor) and descriptor.plugin_name == "calc"
    assert descriptor.schema == ADD  # the tool's own format


def test_slice_session_makes_a_temporary_session_without_the_native_history() -> None:
    core = AgentCore(providers=[EchoProvider])
    s = core.request(Session("s", [Message("user", "a")], {"topic": "x"}), {}).session.with_message(
        Message("user", "b"))
    part = core.slice_session(s, 1, 3)
    assert [m.content for m in part.messages] == ["Echo: a", "b"]
    assert part.session_id != "s" and dict(part.metadata) == {"topic": "x"}
    assert NATIVE_KEY in s.metadata and len(s.messages) == 3
    assert core.slice_session(s, -1, session_id="side").session_id == "side"
    assert core.request(part, {}).final_messages[-1].content == "Echo: b"


class Lifecycle:
    """A feature with a session action and an application-driven lifecycle action."""

    name = "lifecycle"
    calls: list[tuple[str, Any]] = []

    def get_actions(self, state):
        return [
            {"id": "stamp", "trigger": "session_created"},
            {"id": "rename", "inputs": {"title": {"type": "string", "required": True}}},
        ]

    def execute_action(self, action_id, session, native_messages, params, context, state):
        Lifecycle.calls.append((action_id, context.get("lifecycle")))
        if action_id == "stamp":
            return {"session_metadata": {"stamped": True}}
        return {"session_metadata": {"title": params["title"]}}


def test_execute_lifecycle_actions_runs_the_actions_bound_to_a_trigger_and_returns_a_session() -> None:
    Lifecycle.calls.clear()
    core = AgentCore(providers=[EchoProvider], features=[Lifecycle])
    s = core.execute_lifecycle_actions(user(), "session_created", {})
    assert isinstance(s, Session) and s.metadata["stamped"] is True
    assert Lifecycle.calls == [("stamp", "session_created")]
    assert core.execute_lifecycle_actions(user(), "session_saved", {}) == user()  # nothing bound
    with pytest.raises(ActionInputError, match="runs inside requests"):
        core.execute_lifecycle_actions(user(), "tool_pre", {})


def test_execute_session_action_is_execute_action() -> None:
    core = AgentCore(providers=[EchoProvider], features=[Lifecycle])
    result = core.execute_session_action(user(), "rename", {"title": "T"}, {})
    assert result.session.metadata["title"] == "T"
    with pytest.raises(ActionInputError):
        core.execute_session_action(user(), "rename", {}, {})


def test_model_cache_keeps_get_models_results_per_config() -> None:
    asked: list[Any] = []

    class Modelled(EchoProvider):
        def get_models(self, config):
            asked.append(config.get("model"))
            return [{"id": config.get("model")}]

    cache: dict[str, Any] = {}
    core = AgentCore(providers=[Modelled], model_cache=cache)
    assert core.get_models({"model": "a"}) == [{"id": "a"}]
    assert core.get_models({"model": "a"}) == [{"id": "a"}]
    core.request(user(), {"model": "a"})
    assert asked == ["a"]
    assert core.get_models({"model": "b"}) == [{"id": "b"}]  # another config, another entry
    assert asked == ["a", "b"] and len(cache) == 2
    cache.clear()
    core.get_models({"model": "a"})
    assert asked == ["a", "b", "a"]
    # without a cache every resolution asks
    plain = AgentCore(providers=[Modelled])
    plain.get_models({"model": "c"})
    plain.get_models({"model": "c"})
    assert asked[-2:] == ["c", "c"]
    with pytest.raises(ConfigError, match="model_cache"):
        AgentCore(providers=[Modelled], model_cache=["not", "a", "mapping"])  # type: ignore[arg-type]


def test_protocols_and_the_cancellation_error_import_from_agent_core_types() -> None:
    import agent_core
    from agent_core import types

    for name in ("BasePlugin", "FeaturePlugin", "ProviderExtensionPlugin", "ProviderPlugin", "ToolPlugin",
                 "ProviderRequestCancelled"):
        assert getattr(types, name) is getattr(agent_core, name)
        assert name in types.__all__


# -- one config-schema reader ---------------------------------------------------------


class PropertiesOnly:
    """A JSON Schema with ``properties`` but no ``type``."""

    name = "props"

    def get_config_schema(self):
        return {"properties": {"depth": {"type": "integer", "default": 3}}}


def test_a_schema_with_properties_but_no_type_is_read_the_same_by_both_calls() -> None:
    core = AgentCore(providers=[EchoProvider], features=[PropertiesOnly])
    entries = [e for e in core.get_config_schema() if e["plugin"] == "props"]
    assert entries == [{"type": "integer", "default": 3, "key": "depth", "plugin": "props"}]
    assert core.resolve({}).config["depth"] == 3
    with pytest.raises(ConfigError) as info:
        core.resolve({"depth": "deep"})
    assert info.value.key == "depth"


# -- session metadata "plugins" -------------------------------------------------------


class Loud:
    name = "loud"

    def from_native_messages(self, native_messages, messages, state):
        return [{**m, "content": str(m["content"]).upper()} for m in messages]


class OptIn:
    name = "optin"
    default_enabled = False

    def from_native_messages(self, native_messages, messages, state):
        return [{**m, "content": f"{m['content']}!"} for m in messages]


def test_session_plugins_restricts_a_request_to_the_listed_plugins() -> None:
    core = AgentCore(providers=[EchoProvider], extensions=[PrefixExt], features=[Loud, OptIn, TagFeature])
    plain = core.request(user("hi"), {})
    assert plain.final_messages[-1].content == "[EXT] ECHO: HI"

    listed = Session("s", [Message("user", "hi")], {"plugins": ["optin", "tag"]})
    events = list(core.stream_request(listed, {}))
    start = events[0]
    assert (start.extensions, start.features) == ([], ["optin", "tag"])
    assert events[-1].final_messages[-1].content == "Echo: hi!"
    res = core.resolve({}, session=listed)
    assert "session's metadata 'plugins'" in res.reasons["loud"]
    # a forced plugin the session does not list stays off; disabled_plugins still applies
    forced = core.resolve({"force_enabled_plugins": ["loud"], "disabled_plugins": ["tag"]}, session=listed)
    assert list(forced.features) == ["optin"]


def test_a_malformed_session_plugins_entry_fails_the_request_with_a_config_error() -> None:
    core = AgentCore(providers=[EchoProvider])
    bad = Session("s", [Message("user", "hi")], {"plugins": "tag"})
    with pytest.raises(ConfigError) as info:
        core.request(bad, {})
    assert info.value.key == "plugins"
    events = list(core.stream_request(bad, {}))
    assert [e.type for e in events] == ["start", "error", "done"]
    assert events[-1].session == bad


# -- every stream opens with start ---------------------------------------------------


def test_a_stream_whose_plugins_cannot_be_resolved_still_opens_with_start() -> None:
    core = AgentCore(providers=[EchoProvider])
    events = list(core.stream_request(user(), {"provider": "nope"}))
    assert [e.type for e in events] == ["start", "error", "done"]
    assert events[0].provider == "nope" and events[0].request_id == events[-1].request_id
    assert events[1].error.type == "ConfigError"
