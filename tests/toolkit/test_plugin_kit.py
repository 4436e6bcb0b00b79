"""agent_core.plugin_kit: what each helper and base promises (its names are locked in test_exported_members.py)."""

from __future__ import annotations

import asyncio
import importlib
import warnings
from typing import Any

import pytest
from agent_core import AgentCore, Message, UnknownHookWarning, freeze
from agent_core.plugin_kit import (
    ANTHROPIC,
    OPENAI_CHAT,
    Extension,
    Feature,
    Tool,
    ToolCall,
    adapt_schema,
    annotate,
    failure,
    reasoning_partial,
    rewrite_finals,
    rewrite_last_assistant,
    success,
)
from agent_core.plugins.hooks import spec_for
from agent_core.testing import (
    PluginHarness,
    check_plugin,
    reply,
    scripted_provider,
    tool_call,
)

def test_no_old_module_path_imports_any_more():
    """The kernel's flat-folder paths and the providers' re-export of the kit's helpers are gone, not aliased."""
    import agent_core

    for old in ("agent_core.streaming", "agent_core.frozen", "agent_core_providers.accumulate"):
        with pytest.raises(ModuleNotFoundError):
            importlib.import_module(old)
    assert not hasattr(agent_core, "streaming")


# -- finals ---------------------------------------------------------------------------------------------------


ANSWER = {"role": "assistant", "content": "hi"}
RESULT = {"role": "tool", "content": "42"}


def test_rewrite_finals_replaces_a_changed_final_in_the_native_history_too():
    finals = [RESULT, ANSWER]
    native = [{"role": "user", "content": "q"}, RESULT, ANSWER]
    new_finals, new_native = rewrite_finals(finals, native, lambda m: {**m, "content": "HI"} if m is ANSWER else m)
    assert new_finals == [RESULT, {"role": "assistant", "content": "HI"}]
    assert new_native == [{"role": "user", "content": "q"}, RESULT, {"role": "assistant", "content": "HI"}]


def test_rewrite_finals_hands_back_the_same_lists_when_nothing_changed():
    finals, native = [ANSWER], [ANSWER]
    assert rewrite_finals(finals, native, lambda m: m) == (finals, native)
    got_finals, got_native = rewrite_finals(finals, native, lambda m: m)
    assert got_finals is finals and got_native is native


def test_rewrite_last_assistant_touches_only_the_last_assistant_final():
    first = {"role": "assistant", "content": "one"}
    finals = [first, RESULT, ANSWER, RESULT]
    new_finals, new_native = rewrite_last_assistant(finals, [*finals], lambda m: {**m, "extra": 1})
    assert new_finals == [first, RESULT, {**ANSWER, "extra": 1}, RESULT]
    assert new_native == new_finals


def test_rewrite_last_assistant_without_an_assistant_or_a_change_returns_its_inputs():
    finals, native = [RESULT], [RESULT]
    assert rewrite_last_assistant(finals, native, lambda m: {**m, "extra": 1}) == (finals, native)
    finals = [ANSWER]
    got = rewrite_last_assistant(finals, native, lambda m: m)
    assert got[0] is finals and got[1] is native


# -- metadata -------------------------------------------------------------------------------------------------


def test_annotate_merges_what_read_finds_and_leaves_the_rest():
    natives = [{"reasoning_content": "because"}, {}]
    cores = [{"role": "assistant", "content": "a", "metadata": {"model": "m"}}, {"role": "assistant", "content": "b"}]
    out = annotate(natives, cores, lambda n: {"reasoning": n["reasoning_content"]} if n.get("reasoning_content") else None)
    assert out == [{"role": "assistant", "content": "a", "metadata": {"model": "m", "reasoning": "because"}}, cores[1]]
    assert out[1] is cores[1]


def test_annotate_refuses_lists_that_do_not_pair():
    with pytest.raises(ValueError):
        annotate([{}], [], lambda n: None)


def test_a_reasoning_partial_has_no_content():
    assert reasoning_partial("hmm") == {"role": "assistant", "content": "", "metadata": {"reasoning": "hmm"}}


# -- tool formats ---------------------------------------------------------------------------------------------


OPENAI_SCHEMA = {"type": "function", "function": {"name": "add", "description": "adds", "parameters": {
    "type": "object", "properties": {"a": {"type": "number"}}}}}


def test_adapt_schema_converts_between_the_built_in_formats():
    adapted = adapt_schema(OPENAI_SCHEMA, ANTHROPIC)
    assert adapted == {"name": "add", "description": "adds",
                       "input_schema": {"type": "object", "properties": {"a": {"type": "number"}}}}
    assert adapt_schema(adapted, OPENAI_CHAT) == OPENAI_SCHEMA


def test_adapt_schema_leaves_a_schema_in_the_target_format_or_an_unknown_one_as_it_is():
    assert adapt_schema(OPENAI_SCHEMA, OPENAI_CHAT) is OPENAI_SCHEMA
    odd = {"name": "x"}
    assert adapt_schema(odd, ANTHROPIC) is odd


# -- Tool and ToolCall ----------------------------------------------------------------------------------------


class Echo(Tool):
    name = "echo_tool"
    config_schema = {"echo_prefix": {"type": "string", "default": ">"}}
    tool_schemas = ({"type": "function", "function": {"name": "echo", "parameters": {"type": "object"}}},)

    def run(self, call: ToolCall) -> dict[str, Any]:
        return success(f"{call.config['echo_prefix']} {call.arguments.get('text', '')}")

    def preview(self, call: ToolCall) -> str:
        return f"echo {call.arguments.get('text')}"


def test_a_tool_gets_one_frozen_call_with_every_argument_the_engine_passes():
    seen: list[ToolCall] = []

    class Spy(Tool):
        def run(self, call: ToolCall) -> dict[str, Any]:
            seen.append(call)
            return success("ok")

    out = Spy().execute_tool("spy", {"a": 1}, {"config": {"k": "v"}}, payload_kind="object", payload_format="json",
                             payload_metadata={}, tool_call={"id": "c1"}, cancellation=None, context={"x": 1},
                             prepared={"p": 2})
    assert out == {"success": True, "result": "ok"}
    call = seen[0]
    assert (call.tool_name, call.payload, call.config, call.tool_call, call.context, call.prepared) == (
        "spy", {"a": 1}, {"k": "v"}, {"id": "c1"}, {"x": 1}, {"p": 2})
    with pytest.raises(AttributeError):
        call.payload = {}  # type: ignore[misc]


def test_arguments_and_config_are_empty_mappings_for_what_is_not_a_mapping():
    call = ToolCall("t", "raw text", None)
    assert (call.arguments, call.config) == ({}, {})


def test_only_the_methods_a_tool_writes_become_hooks():
    spec = spec_for("tool", Echo)
    assert spec.defines("execute_tool") and spec.defines("format_tool_call_preview")
    assert not any(spec.defines(h) for h in ("execute_tool_async", "stream_tool", "stream_tool_async"))
    assert spec.defines("get_config_schema") and not spec.defines("required_tags")


def test_declared_tool_schemas_answer_get_tool_schemas_for_a_tool_only() -> None:
    schemas = Echo().get_tool_schemas({}, prepared=None)
    assert schemas == [{"type": "function", "function": {"name": "echo", "parameters": {"type": "object"}}}]
    assert schemas is not Echo().get_tool_schemas({})
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")

        class Misnamed(Tool):
            name = "misnamed"
            tool_schema = ({"name": "x"},)

    assert [(w.message.name, w.message.suggestion) for w in caught
            if issubclass(w.category, UnknownHookWarning)] == [("tool_schema", "tool_schemas")]
    assert not spec_for("tool", Misnamed).defines("get_tool_schemas")
    assert "get_tool_schemas" not in type("Ext", (Extension,), {"name": "ext", "tool_schemas": ()}).__dict__


def test_a_kit_tool_keeps_the_hook_contract_and_runs_in_a_request():
    check_plugin(Echo)
    harness = PluginHarness(Echo)
    assert harness.call("execute_tool", "echo", {"text": "hi"}, harness.state) == {"success": True, "result": "> hi"}
    Provider = scripted_provider(reply(tool_calls=[tool_call("echo", {"text": "hi"}, id="c1")]), reply("done"))
    core = AgentCore(providers=[Provider], tools=[Echo])
    session = core.add_message(core.create_session(), Message(role="user", content="go"))
    events = list(core.stream_request(session, {"echo_prefix": "~"}))
    call = next(e for e in events if e.type == "tool_call")
    result = next(e for e in events if e.type == "tool_result")
    assert (call.preview, result.message.content) == ("echo hi", "Result: ~ hi")


def _schema_of(name: str) -> list[dict[str, Any]]:
    return [{"type": "function", "function": {"name": name, "parameters": {"type": "object"}}}]


def test_an_async_tool_runs_under_the_async_api_and_a_streaming_tool_reports_its_parts():
    class Waits(Tool):
        name = "waits"

        def get_tool_schemas(self, state: Any) -> list[dict[str, Any]]:
            return _schema_of("wait")

        async def arun(self, call: ToolCall) -> dict[str, Any]:
            await asyncio.sleep(0)
            return success("waited")

    class Counts(Tool):
        name = "counts"

        def get_tool_schemas(self, state: Any) -> list[dict[str, Any]]:
            return _schema_of("count")

        def stream(self, call: ToolCall) -> Any:
            yield {"part": 1}
            yield {"part": 2}
            yield success("counted")

    assert not spec_for("tool", Waits).defines("execute_tool") and spec_for("tool", Counts).defines("stream_tool")
    Provider = scripted_provider(
        reply(tool_calls=[tool_call("wait", {}, id="w")]), reply(tool_calls=[tool_call("count", {}, id="c")]), "done")
    core = AgentCore(providers=[Provider], tools=[Waits, Counts])
    session = core.add_message(core.create_session(), Message(role="user", content="go"))

    async def run() -> list[Any]:
        return [e async for e in core.astream_request(session, {})]

    events = asyncio.run(run())
    results = {e.call_id: e.message.content for e in events if e.type == "tool_result"}
    assert (results["w"], results["c"]) == ("Result: waited", "Result: counted")
    assert [e.part for e in events if e.type == "tool_progress"] == [1, 2]


def test_failure_is_an_error_result():
    assert failure("no") == {"success": False, "error": "no"}


# -- Extension and Feature ------------------------------------------------------------------------------------


class Gated(Extension):
    name = "gated"
    requires = ("tools",)
    forbids = ("thinking",)
    actions = ({"id": "noop", "label": "Nothing"},)


class Shown(Feature):
    name = "shown"
    ui_elements = ({"type": "text", "key": "k"},)


def test_declared_attributes_answer_their_hooks_with_fresh_lists():
    ext = Gated()
    assert (ext.required_tags(), ext.forbidden_tags(), ext.get_actions(freeze({}))) == (
        ["tools"], ["thinking"], [{"id": "noop", "label": "Nothing"}])
    assert ext.required_tags() is not ext.required_tags()
    assert Shown().get_ui_elements({}) == [{"type": "text", "key": "k"}]


def test_an_undeclared_attribute_leaves_its_hook_to_the_default_and_a_written_hook_wins():
    class Written(Extension):
        name = "written"
        requires = ("never",)

        def required_tags(self) -> list[str]:
            return ["tools"]

    spec = spec_for("feature", Shown)
    assert spec.defines("get_ui_elements") and not spec.defines("get_actions") and not spec.defines("required_tags")
    assert Written().required_tags() == ["tools"]


def test_the_engine_gates_a_kit_extension_by_its_declared_tags():
    Provider = scripted_provider("hi")  # tagged streaming and tools

    class Elsewhere(Extension):
        name = "elsewhere"
        requires = ("provider:openai",)  # not this provider

    core = AgentCore(providers=[Provider], extensions=[Gated, Elsewhere])
    reasons = core.resolve({}).reasons
    assert reasons["gated"].startswith("on") and reasons["elsewhere"].startswith("off")


@pytest.mark.parametrize("tags", ["streaming", ["streaming", 3], {"streaming": True}])
@pytest.mark.parametrize("attr", ["requires", "forbids"])
def test_tags_that_are_no_list_of_strings_are_refused_as_the_class_is_made(attr: str, tags: Any) -> None:
    with pytest.raises(TypeError, match=rf"OneString\.{attr} must be a list of tag strings"):
        type("OneString", (Extension,), {"name": "one", attr: tags})
    made = type("Listed", (Feature,), {"name": "listed", attr: ("streaming",)})  # a tuple, as documented
    assert getattr(made(), "required_tags" if attr == "requires" else "forbidden_tags")() == ["streaming"]


def test_an_attribute_named_almost_like_a_declared_one_warns_at_the_class_line() -> None:
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")

        class Typos(Extension):  # the warning points here
            name = "typos"
            config_shema = {"x": {"type": "string"}}
            require = ("x",)
            priority = 5  # an attribute of its own: no word

    said = [w for w in caught if issubclass(w.category, UnknownHookWarning)]
    assert {(w.message.name, w.message.suggestion) for w in said} == {
        ("config_shema", "config_schema"), ("require", "requires")}
    assert all(w.filename == __file__ for w in said)
    assert "get_config_schema" not in Typos.__dict__  # nothing was declared, so nothing answers
