"""The effective config: plugin defaults filled in, values type-checked,
conflicting declarations and bad engine keys reported as ConfigError."""

from __future__ import annotations

from typing import Any

import pytest
from agent_core import AgentCore, ConfigError, Message, Session
from agent_core.testing import reply, scripted_provider, tool_call


def session() -> Session:
    return Session("s", [Message("user", "hi")])


def recording_provider(seen: list[Any], schema: dict[str, Any] | None = None, name: str = "prov") -> type:
    """A provider answering "ok" that records the config its ``init`` gets."""

    class Prov:
        def get_config_schema(self):
            return schema or {}

        def init(self, config):
            seen.append(config)
            return {"config": config}

        def call_api(self, native_messages, state):
            msg = {"role": "assistant", "content": "ok"}
            return [], [msg], [*native_messages, msg], state

    Prov.name = name
    return Prov


def feature(name: str, schema: Any, **attrs: Any) -> type:
    return type(f"F_{name}", (), {"name": name, "get_config_schema": lambda self: schema, **attrs})


# -- defaults ------------------------------------------------------------------------


def test_flat_schema_defaults_are_filled_in() -> None:
    core = AgentCore(
        providers=[recording_provider([], {"model": {"type": "string", "default": "m-1"}})],
        features=[feature("f", {"limit": {"type": "integer", "default": 3}, "flag": {"type": "boolean"}})],
    )
    config = core.resolve({}).config
    assert config["model"] == "m-1"
    assert config["limit"] == 3
    assert "flag" not in config  # declared without a default: left out


def test_json_schema_defaults_are_filled_in() -> None:
    schema = {
        "type": "object",
        "properties": {
            "temperature": {"type": "number", "default": 0.5},
            "style": {"type": ["string", "null"], "default": None},
        },
        "required": [],
    }
    core = AgentCore(providers=[recording_provider([])], extensions=[feature("e", schema)])
    config = core.resolve({}).config
    assert config["temperature"] == 0.5
    assert "style" in config and config["style"] is None
    assert "properties" not in config and "type" not in config


def test_json_schema_without_a_type_key_is_read_through_properties() -> None:
    core = AgentCore(providers=[recording_provider([])], tools=[feature("t", {"properties": {"k": {"default": 1}}})])
    assert core.resolve({}).config["k"] == 1


def test_caller_values_win_over_defaults() -> None:
    core = AgentCore(providers=[recording_provider([], {"model": {"type": "string", "default": "m-1"}})])
    assert core.resolve({"model": "mine"}).config["model"] == "mine"


def test_defaults_of_plugins_that_are_not_enabled_are_not_filled_in() -> None:
    core = AgentCore(
        providers=[recording_provider([])],
        features=[
            feature("off", {"off_key": {"type": "string", "default": "x"}}, required_tags=lambda self: ["absent"]),
            feature("disabled", {"disabled_key": {"type": "string", "default": "y"}}),
        ],
    )
    config = core.resolve({"disabled_plugins": ["disabled"]}).config
    assert "off_key" not in config and "disabled_key" not in config


def test_hooks_receive_the_effective_config_frozen_with_the_engine_tools_key() -> None:
    seen: list[Any] = []
    core = AgentCore(providers=[recording_provider(seen, {"model": {"type": "string", "default": "m-1"}})])
    result = core.request(session(), {"custom": {"nested": [1]}})
    assert result.outcome.ok
    (config,) = seen
    assert config["model"] == "m-1"
    assert config["custom"] == {"nested": [1]}
    assert list(config["tools"]) == []  # the engine adds the adapted tool schemas
    with pytest.raises(TypeError):
        config["model"] = "other"  # type: ignore[index]
    with pytest.raises(TypeError):
        config["custom"]["nested"].append(2)


def test_the_caller_config_is_not_modified() -> None:
    core = AgentCore(providers=[recording_provider([], {"model": {"type": "string", "default": "m-1"}})])
    config = {"stream": False}
    core.request(session(), config)
    assert config == {"stream": False}


# -- type checks ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("declared", "value"),
    [
        ("string", 3),
        ("integer", "3"),
        ("integer", 1.5),
        ("integer", True),  # a bool is not a number here
        ("number", False),
        ("number", "1"),
        ("boolean", "true"),
        ("array", "a,b"),
        ("object", ["k"]),
        (["string", "null"], 0),
    ],
)
def test_a_value_of_the_wrong_type_names_key_plugin_and_expected_type(declared: Any, value: Any) -> None:
    core = AgentCore(providers=[recording_provider([])], features=[feature("owner", {"knob": {"type": declared}})])
    with pytest.raises(ConfigError) as info:
        core.resolve({"knob": value})
    err = info.value
    assert err.key == "knob"
    assert err.plugins == ("owner",)
    msg = str(err)
    assert "knob" in msg and "owner" in msg
    for t in [declared] if isinstance(declared, str) else declared:
        assert t in msg


@pytest.mark.parametrize(
    ("declared", "value"),
    [
        ("string", "s"),
        ("integer", 3),
        ("number", 3),
        ("number", 2.5),
        ("boolean", False),
        ("array", ["a"]),
        ("object", {"k": 1}),
        (["string", "null"], None),
        (["string", "null"], "s"),
    ],
)
def test_a_value_of_the_declared_type_is_accepted(declared: Any, value: Any) -> None:
    core = AgentCore(providers=[recording_provider([])], features=[feature("owner", {"knob": {"type": declared}})])
    assert core.resolve({"knob": value}).config["knob"] == value


def test_a_wrong_type_for_a_key_only_a_disabled_plugin_declares_is_not_checked() -> None:
    core = AgentCore(providers=[recording_provider([])], features=[feature("owner", {"knob": {"type": "integer"}})])
    assert core.resolve({"knob": "text", "disabled_plugins": ["owner"]}).config["knob"] == "text"


def test_a_bad_value_fails_the_request_and_leaves_the_session_alone() -> None:
    seen: list[Any] = []
    core = AgentCore(providers=[recording_provider(seen, {"model": {"type": "string"}})])
    s = session()
    with pytest.raises(ConfigError) as info:
        core.request(s, {"model": 42})
    assert info.value.key == "model"
    events = list(core.stream_request(s, {"model": 42}))
    assert [e.type for e in events] == ["start", "error", "done"]  # every stream opens with start
    assert events[1].error.type == "ConfigError"
    assert events[-1].outcome.status == "stopped" and events[-1].outcome.reason == "invalid_input"
    assert events[-1].session == s
    assert seen == []  # the provider never ran


def test_a_config_schema_that_is_not_a_mapping_names_the_plugin() -> None:
    core = AgentCore(providers=[recording_provider([])], features=[feature("broken", ["not", "a", "mapping"])])
    with pytest.raises(ConfigError) as info:
        core.resolve({})
    assert "broken" in info.value.plugins


# -- conflicting declarations ----------------------------------------------------------


def test_two_enabled_plugins_declaring_one_key_with_different_types_conflict() -> None:
    core = AgentCore(
        providers=[recording_provider([])],
        extensions=[feature("ext", {"size": {"type": "integer", "default": 1}})],
        features=[feature("feat", {"size": {"type": "string", "default": "big"}})],
    )
    with pytest.raises(ConfigError) as info:
        core.resolve({})
    err = info.value
    assert err.key == "size"
    assert set(err.plugins) == {"ext", "feat"}
    msg = str(err)
    assert all(word in msg for word in ("size", "ext", "feat", "integer", "string"))


def test_a_conflict_with_a_plugin_that_is_off_is_not_an_error() -> None:
    core = AgentCore(
        providers=[recording_provider([])],
        extensions=[feature("ext", {"size": {"type": "integer", "default": 1}})],
        features=[feature("feat", {"size": {"type": "string", "default": "big"}})],
    )
    assert core.resolve({"disabled_plugins": ["feat"]}).config["size"] == 1
    assert core.resolve({"disabled_plugins": ["ext"]}).config["size"] == "big"


def test_two_plugins_declaring_one_key_with_the_same_type_agree() -> None:
    core = AgentCore(
        providers=[recording_provider([], {"model": {"type": "string", "default": "a"}})],
        features=[feature("feat", {"model": {"type": "string"}})],
    )
    assert core.resolve({"model": "z"}).config["model"] == "z"


# -- providers --------------------------------------------------------------------------


def test_the_provider_key_is_optional_with_exactly_one_provider() -> None:
    core = AgentCore(providers=[recording_provider([], name="only")])
    assert str(core.resolve({}).provider) == "only"


def test_the_provider_key_picks_among_several_providers() -> None:
    seen_a: list[Any] = []
    seen_b: list[Any] = []
    core = AgentCore(providers=[recording_provider(seen_a, name="a"), recording_provider(seen_b, name="b")])
    assert core.request(session(), {"provider": "b"}).outcome.ok
    assert (len(seen_a), len(seen_b)) == (0, 1)


def test_several_providers_and_no_provider_key_is_a_config_error() -> None:
    core = AgentCore(providers=[recording_provider([], name="a"), recording_provider([], name="b")])
    with pytest.raises(ConfigError) as info:
        core.resolve({})
    assert info.value.key == "provider"
    assert "a" in str(info.value) and "b" in str(info.value)


def test_an_unknown_provider_is_a_config_error_listing_the_registered_ones() -> None:
    core = AgentCore(providers=[recording_provider([], name="real")])
    with pytest.raises(ConfigError) as info:
        core.resolve({"provider": "imaginary"})
    assert info.value.key == "provider"
    assert "imaginary" in str(info.value) and "real" in str(info.value)


def test_no_provider_registered_is_a_config_error() -> None:
    with pytest.raises(ConfigError) as info:
        AgentCore().resolve({})
    assert info.value.key == "provider"


# -- engine keys ------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("key", "value"),
    [
        ("provider", 1),
        ("stream", "yes"),
        ("stream", 1),
        ("max_iterations", "3"),
        ("max_iterations", 2.5),
        ("max_iterations", True),
        ("max_iterations", 0),
        ("max_iterations", -1),
        ("enabled_plugins", "a"),
        ("disabled_plugins", {"a": 1}),
        ("force_enabled_plugins", [1]),
        ("enabled_plugins", ["ok", None]),
    ],
)
def test_bad_engine_keys_are_config_errors_naming_the_key(key: str, value: Any) -> None:
    core = AgentCore(providers=[recording_provider([])])
    with pytest.raises(ConfigError) as info:
        core.resolve({key: value})
    assert info.value.key == key
    assert key in str(info.value)


def test_a_config_that_is_not_a_mapping_is_refused() -> None:
    core = AgentCore(providers=[recording_provider([])])
    with pytest.raises(ConfigError):
        core.resolve(["provider", "prov"])  # type: ignore[arg-type]
    with pytest.raises(ConfigError):
        core.request(session(), ["provider", "prov"])  # type: ignore[arg-type]


def _always_tools(turns: int) -> type:
    return scripted_provider(*[reply(tool_calls=[tool_call("ping", {}, id=f"c{i}")]) for i in range(turns)])


class Ping:
    name = "ping"

    def get_tool_schemas(self, state):
        return [{"type": "function", "function": {"name": "ping", "parameters": {"type": "object"}}}]

    def execute_tool(self, tool_name, payload, state):
        return {"success": True, "result": "pong"}


def test_max_iterations_defaults_to_ten_provider_calls() -> None:
    core = AgentCore(providers=[_always_tools(15)], tools=[Ping])
    result = core.request(session())
    assert result.usage.provider_calls == 10
    assert (result.outcome.status, result.outcome.reason) == ("stopped", "max_turns")


@pytest.mark.parametrize("limit", [1, 3])
def test_max_iterations_bounds_provider_calls(limit: int) -> None:
    core = AgentCore(providers=[_always_tools(15)], tools=[Ping])
    result = core.request(session(), {"max_iterations": limit})
    assert result.usage.provider_calls == limit
    assert result.outcome.reason == "max_turns"


def test_stream_key_selects_streaming() -> None:
    core = AgentCore(providers=[scripted_provider("one two three")])
    streamed = [e.type for e in core.stream_request(session(), {"stream": True})]
    assert streamed.count("partial") == 3
    plain = [e.type for e in core.stream_request(session(), {"stream": False})]
    assert plain.count("partial") == 0
    assert core.request(session(), {"stream": True}).final_messages[-1].content == "one two three"


def test_an_empty_json_schema_with_properties_declares_nothing() -> None:
    core = AgentCore(providers=[recording_provider([])], features=[feature("f", {"type": "object", "properties": {}})])
    assert "type" not in core.resolve({}).config


@pytest.mark.parametrize("schema", [{"type": "object"}, {"type": "object", "additionalProperties": False}])
def test_a_json_schema_object_without_properties_declares_nothing(schema: dict[str, Any]) -> None:
    core = AgentCore(providers=[recording_provider([])], features=[feature("f", schema)])
    config = core.resolve({"x": 1}).config
    assert "type" not in config and config["x"] == 1


def test_a_secret_of_the_wrong_type_is_not_echoed_in_the_error():
    from agent_core import AgentCore, ConfigError
    from agent_core.testing import scripted_provider

    class NeedsKey:
        name = "needs_key"

        def get_config_schema(self):
            return {"api_key": {"type": "string"}}

    core = AgentCore(providers=[scripted_provider("hi")], features=[NeedsKey])
    with pytest.raises(ConfigError) as info:
        core.resolve({"api_key": 123456789})
    assert "api_key" in str(info.value) and "123456789" not in str(info.value)


# -- keys nothing declares -------------------------------------------


def typo_core() -> AgentCore:
    return AgentCore(
        providers=[recording_provider([], {"max_tokens": {"type": "integer"}, "model": {"type": "string"}})],
        features=[feature("off", {"thinking_budget": {"type": "integer"}}, default_enabled=False)],
    )


def test_an_undeclared_key_warns_naming_it_and_the_closest_known_key() -> None:
    from agent_core import UnknownConfigKeyWarning

    with pytest.warns(UnknownConfigKeyWarning) as caught:
        res = typo_core().resolve({"max_token": 5})
    (warning,) = caught
    assert str(warning.message) == (
        "config key `max_token` is not declared by any installed plugin; did you mean `max_tokens`? "
        "(plugin 'prov' declares it in its config schema, and runs on its default until the key is spelt so)"
    )
    assert warning.message.key == "max_token" and warning.message.suggestion == "max_tokens"
    assert isinstance(warning.message, UserWarning)
    assert warning.filename == __file__  # points at the caller's line, not at the engine
    assert res.warnings == (str(warning.message),)
    assert res.config["max_token"] == 5  # still passed along: a warning, not a change


def test_keys_of_registered_plugins_that_are_off_and_engine_keys_are_known() -> None:
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("error")
        res = typo_core().resolve({"thinking_budget": 0, "max_iterations": 2, "stream": True, "strict_config": False})
    assert res.warnings == ()


def test_an_undeclared_key_far_from_any_known_one_gets_no_suggestion() -> None:
    from agent_core import UnknownConfigKeyWarning

    with pytest.warns(UnknownConfigKeyWarning, match=r"`zzqqxx` is not declared by any installed plugin$"):
        typo_core().resolve({"zzqqxx": 1})


def test_the_start_event_carries_the_warning_so_a_server_can_show_it() -> None:
    from agent_core import UnknownConfigKeyWarning, decode_event, encode_event

    with pytest.warns(UnknownConfigKeyWarning):
        start = next(iter(typo_core().stream_request(session(), {"max_token": 5})))
    assert start.type == "start"
    assert start.warnings == [
        "config key `max_token` is not declared by any installed plugin; did you mean `max_tokens`? "
        "(plugin 'prov' declares it in its config schema, and runs on its default until the key is spelt so)"
    ]
    assert decode_event(encode_event(start)) == start


def test_strict_config_makes_an_undeclared_key_a_config_error() -> None:
    core = typo_core()
    with pytest.raises(ConfigError, match="did you mean `max_tokens`") as info:
        core.request(session(), {"max_token": 5, "strict_config": True})
    assert info.value.key == "max_token"
    events = list(core.stream_request(session(), {"max_token": 5, "strict_config": True}))
    assert [e.type for e in events] == ["start", "error", "done"] and events[-1].outcome.reason == "invalid_input"
    with pytest.raises(ConfigError, match="strict_config"):
        core.resolve({"strict_config": "yes"})
