"""Plugin protocols: duck-typed plugins are recognised, hooks match the contract,
and the ``Base*`` classes supply each hook's documented default."""

from __future__ import annotations

import asyncio
import inspect
from collections.abc import Iterator
from typing import Any

import pytest
from agent_core import (
    BaseFeature,
    BasePlugin,
    BaseProvider,
    BaseProviderExtension,
    BaseTool,
    FeaturePlugin,
    FrozenDict,
    FrozenList,
    ProviderExtensionPlugin,
    ProviderPlugin,
    ToolInteropContribution,
    ToolPlugin,
    freeze,
)
from agent_core.plugins.contract import ASYNC_HOOKS
from agent_core.plugins.protocols import HOOKS
from seed_plugins import DummyCalc, EchoProvider, PrefixExt, TagFeature  # noqa: E402

KINDS = [ProviderPlugin, ProviderExtensionPlugin, FeaturePlugin, ToolPlugin]


@pytest.mark.parametrize(
    ("plugin", "protocol"),
    [
        (EchoProvider, ProviderPlugin),
        (PrefixExt, ProviderExtensionPlugin),
        (TagFeature, FeaturePlugin),
        (DummyCalc, ToolPlugin),
    ],
)
def test_seed_style_plugins_are_recognised(plugin: type, protocol: type) -> None:
    assert isinstance(plugin(), protocol)
    assert issubclass(plugin, protocol)
    assert isinstance(plugin(), BasePlugin)


def test_a_provider_needs_a_way_to_call_its_api() -> None:
    assert not isinstance(PrefixExt(), ProviderPlugin)
    assert not isinstance(TagFeature(), ProviderPlugin)
    assert not isinstance(DummyCalc(), ProviderPlugin)

    class AsyncOnly:
        name = "async-only"

        async def acall_api(self, native_messages, state):
            return [], [], native_messages, state

    assert isinstance(AsyncOnly(), ProviderPlugin)


def test_a_tool_needs_a_way_to_offer_or_run_tools() -> None:
    assert not isinstance(EchoProvider(), ToolPlugin)
    assert not isinstance(TagFeature(), ToolPlugin)


@pytest.mark.parametrize("protocol", KINDS)
def test_objects_without_a_name_are_not_plugins(protocol: type) -> None:
    class Nameless:
        def call_api(self, native_messages, state): ...

        def execute_tool(self, tool_name, payload, state): ...

    assert not isinstance(Nameless(), protocol)
    assert not isinstance(object(), protocol)
    assert not issubclass(int, protocol)


@pytest.mark.parametrize(
    ("base", "protocol"),
    [
        (BaseProvider, ProviderPlugin),
        (BaseProviderExtension, ProviderExtensionPlugin),
        (BaseFeature, FeaturePlugin),
        (BaseTool, ToolPlugin),
    ],
)
def test_base_classes_satisfy_their_own_protocol(base: type, protocol: type) -> None:
    plugin = base()
    assert isinstance(plugin, protocol)
    assert isinstance(plugin, BasePlugin)
    assert plugin.priority == 100
    assert plugin.default_enabled is True
    assert isinstance(plugin.name, str) and isinstance(plugin.version, str)


def test_base_classes_are_not_mistaken_for_other_kinds() -> None:
    assert not isinstance(BaseTool(), ProviderPlugin)
    assert not isinstance(BaseFeature(), ToolPlugin)
    # Nominal checks still work for subclasses of a Base* class.
    assert not issubclass(BaseFeature, BaseProvider)


# -- seed-style plugins work with the frozen values the engine hands them -------------


def test_seed_plugins_work_on_frozen_inputs() -> None:
    native = freeze([{"role": "user", "content": "hi"}])
    state = freeze({"config": {"prefix": ">>"}})

    _, finals, history, _ = EchoProvider().call_api(native, state)
    assert finals == [{"role": "assistant", "content": "Echo: hi"}]
    assert history == [*native, finals[0]] and len(native) == 1

    _, prefixed, _, _ = PrefixExt().process_chunk(None, freeze([]), freeze(finals), history, state)
    assert prefixed == [{"role": "assistant", "content": ">> Echo: hi"}]

    frozen_final = freeze([{"role": "assistant", "content": "x", "metadata": {"usage": {"input_tokens": 1}}}])
    tagged, _, _ = TagFeature().finalize(frozen_final, native, state)
    assert tagged[0]["metadata"] == {"usage": {"input_tokens": 1}, "tag": True}
    assert frozen_final[0]["metadata"] == {"usage": {"input_tokens": 1}}

    calc = DummyCalc()
    result = calc.execute_tool("add", freeze({"a": 2, "b": 3}), calc.init({}))
    assert calc.format_tool_result(result, {}) == "Result: 5"
    assert calc.format_tool_result(calc.execute_tool("mul", {}, {}), {}) == "Error: unknown"


# -- hook signatures, from the contract ----------------------------------------------
#
# The contract is the protocols' signatures joined with the stages and defaults of the table in
# agent_core.plugins.contract (agent_core.plugins.protocols.HOOKS): one entry per hook, its
# parameters after ``self``. ``name=`` has a default; names after
# ``*`` are keyword-only. These tests hold the protocols to it.

PROVIDER_HOOKS = {name: spec.signature for name, spec in HOOKS["provider"].items()}
EXTENSION_HOOKS = {name: spec.signature for name, spec in HOOKS["extension"].items()}
FEATURE_HOOKS = {name: spec.signature for name, spec in HOOKS["feature"].items()}
TOOL_HOOKS = {name: spec.signature for name, spec in HOOKS["tool"].items()}


def test_the_contract_table_is_the_seed_s_hook_list() -> None:
    # a few entries spelled out, so a wrong edit of the table itself shows here
    assert PROVIDER_HOOKS["process_chunk"] == "native_chunk, native_messages, state"
    assert EXTENSION_HOOKS["process_chunk"] == "native_chunk, partial_messages, final_messages, native_messages, state"
    assert PROVIDER_HOOKS["initialize_request"] == "native_messages, state, *, request_id=, context="
    assert FEATURE_HOOKS["prepare_tools"] == "config, tools, context="
    assert "process_chunk" not in FEATURE_HOOKS  # features never see the hot path
    assert TOOL_HOOKS["get_tool_schemas"] == "state, *, prepared="
    assert {s.stage for hooks in HOOKS.values() for s in hooks.values()} <= {
        "resolution", "setup", "convert", "call", "hot", "finalize", "tools", "lifecycle", "app"}
    assert HOOKS["provider"]["process_chunk"].stage == "hot" and HOOKS["extension"]["process_chunk"].stage == "hot"


def _spec(func: Any) -> str:
    """Render a function's parameters after ``self`` in the table's notation."""
    params = list(inspect.signature(func).parameters.values())[1:]
    parts: list[str] = []
    star_done = False
    for p in params:
        assert p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY), f"unexpected {p.kind} parameter {p.name}"
        if p.kind is p.KEYWORD_ONLY and not star_done:
            parts.append("*")
            star_done = True
        parts.append(p.name + ("=" if p.default is not p.empty else ""))
    return ", ".join(parts)


def test_spec_notation_reads_back() -> None:
    def sample(self, a, b=1, *, c, d=None): ...

    assert _spec(sample) == "a, b=, *, c, d="


HOOK_TABLE = [
    (ProviderPlugin, PROVIDER_HOOKS),
    (ProviderExtensionPlugin, EXTENSION_HOOKS),
    (FeaturePlugin, FEATURE_HOOKS),
    (ToolPlugin, TOOL_HOOKS),
]


@pytest.mark.parametrize(
    ("protocol", "hook", "expected"),
    [(proto, hook, spec) for proto, hooks in HOOK_TABLE for hook, spec in hooks.items()],
    ids=lambda v: v.__name__ if isinstance(v, type) else str(v),
)
def test_protocol_declares_hook_with_contract_signature(protocol: type, hook: str, expected: str) -> None:
    func = getattr(protocol, hook, None)
    assert callable(func), f"{protocol.__name__} does not declare {hook}"
    assert _spec(func) == expected


@pytest.mark.parametrize(
    ("protocols", "hooks"),
    [
        ((ProviderExtensionPlugin, FeaturePlugin), EXTENSION_HOOKS.keys() & FEATURE_HOOKS.keys()),
        ((ProviderExtensionPlugin, FeaturePlugin, ToolPlugin), {"required_tags", "forbidden_tags", "is_enabled", "get_tags"}),
        ((ProviderPlugin, ProviderExtensionPlugin),
         {"accepted_tool_schema_formats", "emitted_tool_call_formats", "get_tool_interop_contribution"}),
    ],
    ids=["chain", "tag-gate", "tool-formats"],
)
def test_a_hook_kinds_share_is_declared_once(protocols: tuple[type, ...], hooks: set[str]) -> None:
    # one body per shared hook: the kinds' protocols inherit it from the group's protocol
    assert len(hooks) >= 3
    for hook in hooks:
        assert len({inspect.getattr_static(p, hook) for p in protocols}) == 1, hook


@pytest.mark.parametrize(("hook", "kind"), ASYNC_HOOKS.items())
def test_async_tool_hooks_are_async(hook: str, kind: str) -> None:
    func = getattr(ToolPlugin, hook)
    if kind == "coroutine":
        assert inspect.iscoroutinefunction(func)
    else:
        assert inspect.isasyncgenfunction(func)


def test_sync_hooks_are_not_async() -> None:
    for protocol, hooks in HOOK_TABLE:
        for hook in hooks:
            if hook in ASYNC_HOOKS:
                continue
            func = getattr(protocol, hook)
            assert not inspect.iscoroutinefunction(func), f"{protocol.__name__}.{hook}"
            assert not inspect.isasyncgenfunction(func), f"{protocol.__name__}.{hook}"


# -- defaults supplied by the Base* classes ------------------------------------------

MSGS = [{"role": "user", "content": "x"}]
NATIVE = [{"role": "user", "content": "native"}]
STATE = {"config": {"k": 1}}


def test_shared_defaults() -> None:
    for base in (BaseProvider, BaseProviderExtension, BaseFeature, BaseTool):
        plugin = base()
        assert plugin.get_config_schema() == {}
        assert plugin.get_ui_elements({}) == []
        assert plugin.get_ui_elements({}, {"tags": []}) == []


def test_provider_defaults() -> None:
    p = BaseProvider()
    assert p.init({"a": 1}) == {"config": {"a": 1}}
    assert p.get_models({}) == []
    assert p.get_tags({}, []) == []
    assert p.to_native_messages(MSGS, {}) == [{"role": "user", "content": "x"}]
    assert p.to_native_messages([{"content": "no role"}], {}) == [{"role": "user", "content": "no role"}]
    assert p.from_native_messages([{"role": "assistant", "content": "y"}, {"other": 1}], {}) == [
        {"role": "assistant", "content": "y", "metadata": {}}
    ]
    assert p.initialize_request(NATIVE, STATE) == (NATIVE, STATE)
    assert list(p.stream_api(NATIVE, STATE)) == []
    assert p.call_api(NATIVE, STATE) == ([], [], NATIVE, STATE)
    assert p.process_chunk({"delta": "a"}, NATIVE, STATE) == ([], [], NATIVE, STATE)
    assert p.finalize(NATIVE, STATE) == ([], NATIVE, STATE)
    assert p.cancel_request("req-1") is False
    assert p.accepted_tool_schema_formats({}) == []
    assert p.emitted_tool_call_formats({}, {}) == []
    assert p.get_tool_interop_contribution({}) == ToolInteropContribution()
    assert p.to_display_format(MSGS[0], STATE) is MSGS[0]


def test_provider_default_conversion_accepts_frozen_messages() -> None:
    frozen = freeze(MSGS)
    assert isinstance(frozen[0], FrozenDict)
    assert BaseProvider().to_native_messages(frozen, {}) == MSGS


@pytest.mark.parametrize("base", [BaseProviderExtension, BaseFeature])
def test_extension_and_feature_defaults_pass_values_through(base: type) -> None:
    plugin = base()
    assert plugin.required_tags() == [] and plugin.forbidden_tags() == []
    assert plugin.is_enabled({}, [], [], {}) is None
    assert plugin.get_models({}, [{"id": "m"}]) == [{"id": "m"}]
    assert plugin.get_tags({}, []) == []
    assert plugin.init({}, STATE) is STATE
    assert plugin.to_native_messages(MSGS, NATIVE) == NATIVE
    assert plugin.from_native_messages(NATIVE, MSGS) == MSGS
    assert plugin.initialize_request(NATIVE, STATE) == (NATIVE, STATE)
    assert plugin.finalize(MSGS, NATIVE, STATE) == (MSGS, NATIVE, STATE)
    assert plugin.get_actions(STATE) == []
    assert plugin.execute_action("a", None, NATIVE, {}, None, STATE) == {"native_messages": NATIVE}


def test_extension_defaults_return_new_lists_from_frozen_input() -> None:
    frozen = freeze(NATIVE)
    out = BaseProviderExtension().to_native_messages(freeze(MSGS), frozen)
    assert out == NATIVE and type(out) is list and not isinstance(out, FrozenList)


def test_extension_chunk_default_is_identity() -> None:
    partials, finals = [{"role": "assistant", "content": "d"}], [{"role": "assistant", "content": "f"}]
    assert BaseProviderExtension().process_chunk(None, partials, finals, NATIVE, STATE) == (partials, finals, NATIVE, STATE)
    assert BaseProviderExtension().get_tool_interop_contribution({}) == ToolInteropContribution()


def test_feature_only_defaults() -> None:
    f = BaseFeature()
    tools = ["t1", "t2"]
    assert f.prepare_tools({}, tools) == tools
    assert f.get_completions({}, "@fi") == []
    assert f.apply_completion({}, "text", {"value": "x"}) == ""
    assert f.get_template({}) == ""


def test_tool_defaults() -> None:
    t = BaseTool()
    assert t.init({"a": 1}) == {"config": {"a": 1}}
    assert t.required_tags() == [] and t.forbidden_tags() == []
    assert t.is_enabled({}, [], [], {}) is None
    assert t.get_tags({}, []) == []
    assert t.prepare({}, {}) == {}
    assert asyncio.run(t.prepare_async({}, {})) == {}
    assert t.get_tool_schemas({}) == []
    assert t.get_tool_interop_contribution({}) == ToolInteropContribution()
    assert t.can_handle_tool_call("add", {}, {}) is None
    assert t.format_tool_call_preview("add", {}, {}) == ""
    assert list(t.stream_tool("add", {}, {})) == []
    assert t.to_display_format("shown", {}, {}) == {"type": "text", "content": "shown"}


def test_tool_result_formatting_defaults() -> None:
    t = BaseTool()
    assert t.format_tool_result({"success": True, "result": 3}, {}) == "Result: 3"
    assert t.format_tool_result({"success": False, "error": "boom"}, {}) == "Error: boom"


def test_default_execute_tool_reports_the_unknown_tool() -> None:
    result = BaseTool().execute_tool("mystery", {}, {})
    assert result["success"] is False
    assert "mystery" in result["error"]


class _RecordingTool(BaseTool):
    """Overrides only the sync hooks, so the async ones must delegate to them."""

    def __init__(self) -> None:
        self.calls: list[tuple[str, Any, dict[str, Any]]] = []

    def execute_tool(self, tool_name, payload, state, **kwargs):
        self.calls.append((tool_name, payload, kwargs))
        return {"success": True, "result": payload["a"] + payload["b"]}

    def stream_tool(self, tool_name, payload, state, **kwargs) -> Iterator[dict[str, Any]]:
        self.calls.append((tool_name, payload, kwargs))
        yield {"part": "working"}
        yield {"part": "almost"}
        yield {"success": True, "result": "done"}

    def prepare(self, config, state, *, context=None):
        return {"prepared_with": context}


def test_default_execute_tool_async_delegates_with_all_arguments() -> None:
    tool = _RecordingTool()
    result = asyncio.run(
        tool.execute_tool_async(
            "add", {"a": 1, "b": 2}, {}, payload_kind="object", tool_call={"id": "c1"}, context={"k": "v"}, prepared={"p": 1}
        )
    )
    assert result == {"success": True, "result": 3}
    ((name, payload, kwargs),) = tool.calls
    assert (name, payload) == ("add", {"a": 1, "b": 2})
    assert kwargs["payload_kind"] == "object"
    assert kwargs["tool_call"] == {"id": "c1"}
    assert kwargs["context"] == {"k": "v"}
    assert kwargs["prepared"] == {"p": 1}


def test_default_stream_tool_async_yields_what_stream_tool_yields() -> None:
    tool = _RecordingTool()

    async def collect() -> list[dict[str, Any]]:
        return [chunk async for chunk in tool.stream_tool_async("slow", {"n": 1}, {}, cancellation="token")]

    chunks = asyncio.run(collect())
    assert chunks == list(_RecordingTool().stream_tool("slow", {"n": 1}, {}))
    assert chunks[-1] == {"success": True, "result": "done"}
    assert tool.calls[0][2]["cancellation"] == "token"


def test_default_async_twins_pass_on_only_the_keywords_they_were_given() -> None:
    class SeedStyleTool(BaseTool):  # the seed's narrow signatures, no keywords at all
        def execute_tool(self, tool_name, payload, state):
            return {"success": True, "result": payload["a"] * 2}

        def stream_tool(self, tool_name, payload, state):
            yield {"success": True, "result": tool_name}

    async def run() -> tuple[Any, list[Any]]:
        tool = SeedStyleTool()
        return (await tool.execute_tool_async("double", {"a": 4}, {}),
                [c async for c in tool.stream_tool_async("echo", {}, {})])

    assert asyncio.run(run()) == ({"success": True, "result": 8}, [{"success": True, "result": "echo"}])


def test_default_prepare_async_delegates_to_prepare() -> None:
    assert asyncio.run(_RecordingTool().prepare_async({}, {}, context={"c": 1})) == {"prepared_with": {"c": 1}}
