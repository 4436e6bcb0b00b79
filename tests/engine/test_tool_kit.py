"""ToolKit.for_request: a request's tools set up in five steps, the same inside and outside a request."""

from __future__ import annotations

from typing import Any

import pytest
from agent_core import AgentCore, ConfigError, Message, Session
from agent_core.runtime.drivers import complete_sync
from agent_core.testing import reply, scripted_provider
from agent_core.tools.kit import ToolKit


def _plugins(log: list[Any]) -> tuple[type, type, type]:
    base = scripted_provider(reply("done"))

    class Provider(base):  # type: ignore[misc, valid-type]
        def accepted_tool_schema_formats(self, config, state=None):
            log.append("accepted")
            return ["anthropic.messages"]

        def emitted_tool_call_formats(self, config, state=None):
            log.append(("emitted", [t["name"] for t in config["tools"]]))
            return ["openai.chat_completions"]

    class Search:
        name = "search"

        def init(self, config):
            log.append("init")
            return {}

        def prepare(self, config, state, *, context=None):
            log.append(("prepare", context.get("request_id")))
            return {"ready": True}

        def get_tool_schemas(self, state, *, prepared=None):
            log.append(("schemas", prepared))
            return [{"type": "function", "function": {"name": "find", "parameters": {"type": "object"}}},
                    {"type": "function", "function": {"name": "drop", "parameters": {"type": "object"}}}]

    class OnlyFind:
        name = "only_find"

        def prepare_tools(self, config, tools, context):
            log.append(("prepare_tools", [d.tool_name for d in tools]))
            return [d for d in tools if d.tool_name == "find"]

    return Provider, Search, OnlyFind


def test_the_five_steps_run_in_order_and_the_kit_holds_what_they_settled() -> None:
    log: list[Any] = []
    provider, search, only_find = _plugins(log)
    core = AgentCore(providers=[provider], features=[only_find], tools=[search])
    kit = complete_sync(ToolKit.for_request(core.resolve({}), "core", request_id="r9"))
    assert log == [
        "init", ("prepare", "r9"), ("schemas", {"ready": True}),  # 1: catalog
        ("prepare_tools", ["find", "drop"]),  # 2: what is offered
        "accepted",  # 4: formats (3, interop, has no contribution here)
        ("emitted", ["find"]),  # 5: asked with the adapted schemas in config["tools"]
    ]
    assert [d.tool_name for d in kit.available] == ["find", "drop"]
    assert [d.tool_name for d in kit.offered] == ["find"] and kit.names == {("search", "find")}
    assert kit.config["tools"] == [{"name": "find", "input_schema": {"type": "object"}}]  # adapted to anthropic
    assert (kit.accepted, kit.emitted, kit.request_id, kit.lifecycle) == (("anthropic.messages",), ["openai.chat_completions"], "r9", {})


def test_a_request_and_get_tool_schemas_send_the_same_schemas() -> None:
    log: list[Any] = []
    provider, search, only_find = _plugins(log)
    core = AgentCore(providers=[provider], features=[only_find], tools=[search])
    outside = core.get_tool_schemas({})
    sent: list[Any] = []

    class Recording(provider):  # type: ignore[misc, valid-type]
        def init(self, config):
            sent.append(config["tools"])
            return super().init(config)

    AgentCore(providers=[Recording], features=[only_find], tools=[search]).request(Session("s", [Message("user", "hi")]))
    assert sent == [outside] == [[{"name": "find", "input_schema": {"type": "object"}}]]
    assert ("prepare", None) in log and ("prepare", None) == log[1]  # outside a request: no request id


def test_a_bad_tool_timeout_fails_before_any_tool_starts() -> None:
    log: list[Any] = []
    provider, search, only_find = _plugins(log)
    core = AgentCore(providers=[provider], tools=[search])
    with pytest.raises(ConfigError, match="tool_timeout_s"):
        complete_sync(ToolKit.for_request(core.resolve({"tool_timeout_s": -1}), None))
    assert log == []


def test_with_lifecycle_is_the_same_kit_with_only_the_actions_changed() -> None:
    import dataclasses

    log: list[Any] = []
    provider, search, only_find = _plugins(log)
    core = AgentCore(providers=[provider], features=[only_find], tools=[search])
    kit = complete_sync(ToolKit.for_request(core.resolve({}), "core", request_id="r9", stream=True))
    table = {"response_finalize": ("a",)}
    later = kit.with_lifecycle(table)
    assert later is not kit and later.__class__ is ToolKit and later.lifecycle == table
    assert kit.lifecycle == {}  # the kit it came from is a value: untouched
    assert later == dataclasses.replace(kit, lifecycle=table)  # every other field as it was
    with pytest.raises(dataclasses.FrozenInstanceError):
        later.lifecycle = {}  # type: ignore[misc]


def _named(plugin: str, tool: str, gives_way: str | None = None) -> type:
    """A tool plugin offering one tool, ``tool``, that answers with its plugin's name."""

    class Offer:
        name = plugin
        tool_names_give_way = gives_way

        def get_tool_schemas(self, state, *, prepared=None):
            return [{"type": "function", "function": {"name": tool, "parameters": {"type": "object"}}}]

        def execute_tool(self, tool_name, payload, state, **kwargs):
            return {"success": True, "result": f"ran in {plugin}"}

    return Offer


def test_a_clash_leaves_out_the_tool_of_the_plugin_that_gives_way_and_says_so(caplog) -> None:
    from agent_core.testing import tool_call

    fix = "rename the thing that named it"
    core = AgentCore(providers=[scripted_provider(reply(tool_calls=[tool_call("same", {})]), "ok")],
                     tools=[_named("outsider", "same", fix), _named("builtin", "same"), _named("other", "own", fix)])
    with caplog.at_level("WARNING", logger="agent_core.tools"):
        events = list(core.stream_request(core.add_message(core.create_session(), Message("user", "go")), {}))
    start, done = events[0], events[-1]
    assert start.type == "start" and done.outcome.status == "finished"
    (tool,) = [m for m in done.session.messages if m.role == "tool"]
    assert tool.content == "Result: ran in builtin"
    (note,) = start.warnings
    assert "'same'" in note and "'outsider'" in note and "'builtin'" in note and note.endswith(fix)
    assert note in caplog.text
    offered = [(d.plugin_name, d.tool_name) for d in core.get_tool_descriptors({})]
    assert sorted(offered) == [("builtin", "same"), ("other", "own")]


def test_a_clash_between_two_plugins_that_do_not_give_way_still_fails_the_request() -> None:
    core = AgentCore(providers=[scripted_provider("x")], tools=[_named("one", "same"), _named("two", "same")])
    with pytest.raises(ConfigError) as caught:
        core.get_tool_descriptors({})
    assert "'one'" in str(caught.value) and "'two'" in str(caught.value)
