"""tool_output_budget: the model gets head and tail of a long tool result; the session keeps it whole."""

from __future__ import annotations

import json

import pytest
from agent_core import AgentCore, Message
from agent_core.errors import ConfigError
from agent_core.testing import PluginHarness, check_plugin
from agent_core.tools.function import function_tool
from agent_core_plugins.anthropic_tools import AnthropicToolsExtension
from agent_core_plugins.openai_tools import OpenAIToolsExtension
from agent_core_plugins.tool_output_budget import ToolOutputBudgetExtension, cut_text
from agent_core_providers.anthropic import AnthropicProvider
from agent_core_providers.openai import OpenAIProvider
from hypothesis import given, settings
from hypothesis import strategies as st
from providers._server import sse_reply
from providers._wire import OA_DONE, an_block, an_end, an_start, an_text, oa_chunk, oa_text

LOG = "".join(f"line {i:04d}: {'x' * 40}\n" for i in range(1000))  # 1,000 lines, 52,000 bytes


def test_keeps_the_hook_contract():
    check_plugin(ToolOutputBudgetExtension)


def test_short_results_are_left_alone():
    assert cut_text("small\noutput\n", 16384, 400) is None
    native = [{"role": "tool", "tool_call_id": "c", "content": "small"}]
    assert PluginHarness(ToolOutputBudgetExtension).to_native([{"role": "tool", "content": "small"}], native) == native


def test_the_line_budget_keeps_the_first_and_last_lines_and_counts_the_marker():
    out = cut_text(LOG, 1_000_000, 10)
    lines = out.splitlines()
    assert len(lines) == 10  # 5 + the marker + 4
    assert lines[:5] == [f"line {i:04d}: {'x' * 40}" for i in range(5)]
    assert lines[5] == "[... tool output truncated: 991 lines, 51532 bytes left out ...]"
    assert lines[-4:] == [f"line {i:04d}: {'x' * 40}" for i in range(996, 1000)]


@pytest.mark.parametrize("sep", ["\n", "\r", "\r\n", "\v", "\f", "\x1c", "\x1d", "\x1e", "\x85", "\u2028", "\u2029"])
def test_every_line_separator_counts_as_a_reader_counts_it(sep):
    """A log with ``\\r`` or ``\\u2028`` between its lines is as many lines as with ``\\n``, not one long line."""
    text = sep.join(f"row {i}" for i in range(100))
    out = cut_text(text, 1_000_000, 10)
    lines = out.splitlines()
    assert len(lines) == 10
    assert lines[:5] == [f"row {i}" for i in range(5)] and lines[-4:] == [f"row {i}" for i in range(96, 100)]
    left_out = "".join(f"row {i}{sep}" for i in range(5, 96))
    assert lines[5] == f"[... tool output truncated: 91 lines, {len(left_out.encode())} bytes left out ...]"
    assert cut_text(text, 1_000_000, 100) is None  # exactly 100 lines fit a 100-line budget


def test_a_result_over_the_byte_budget_alone_still_keeps_within_its_lines():
    """Cutting a short result by bytes must not add lines: the marker and a split line count too."""
    text = "a" * 600 + "\n" + "b" * 600  # 2 lines, 1202 bytes
    for max_lines in (2, 3):
        out = cut_text(text, 300, max_lines)
        assert len(out.splitlines()) <= max_lines and len(out.encode()) <= 300
    assert cut_text(text, 300, 2).splitlines()[0].startswith("aaa")  # head only: no line to spare for a tail
    assert cut_text("x" * 1000, 300, 3).splitlines()[-1].startswith("xxx")  # one line: both its ends


def test_the_byte_budget_counts_the_marker_and_never_splits_a_character():
    text = "é" * 10_000 + "\n" + "日本" * 5_000  # two- and three-byte characters
    out = cut_text(text, 1000, 400)
    assert len(out.encode("utf-8")) <= 1000
    head, _, tail = out.partition("\n[... tool output truncated:")
    assert head and set(head) == {"é"}
    assert tail.endswith("日本") or tail.endswith("本")


_BREAKS = ["\n", "\r", "\r\n", "\n\r", "\v", "\f", "\x1c", "\x1d", "\x1e", "\x85", "\u2028", "\u2029"]
_WIDE = ["é", "日本", "\U0001f600"]  # 2, 6 and 4 UTF-8 bytes
_MIXED = st.lists(st.one_of(st.sampled_from(_BREAKS), st.text(max_size=30), st.sampled_from(_WIDE)),
                  max_size=300).map("".join)


@settings(max_examples=200, deadline=None)
@given(st.one_of(st.text(max_size=3000), _MIXED), st.integers(256, 2000), st.integers(2, 50))
def test_any_text_with_any_line_separators_fits_both_limits_once_cut(text, max_bytes, max_lines):
    out = cut_text(text, max_bytes, max_lines)
    if out is None:
        assert len(text.encode("utf-8")) <= max_bytes and len(text.splitlines()) <= max_lines
    else:
        assert len(out.encode("utf-8")) <= max_bytes
        assert len(out.splitlines()) <= max_lines  # the marker line included
        head, marker, tail = out.partition("[... tool output truncated:")
        assert marker
        assert text.startswith(head.removesuffix("\n")) and text.endswith(tail.partition("...]\n")[2])


@settings(max_examples=40, deadline=None)
@given(st.lists(st.sampled_from(_BREAKS), min_size=1, max_size=20), st.integers(2, 12))
def test_the_recorded_size_and_the_cut_agree_on_what_a_line_is(breaks, max_lines):
    """``tool_post`` records a result as over the budget exactly when the model is sent a cut one."""
    text = "".join(f"r{i}{b}" for i, b in enumerate(breaks * 3))
    harness = PluginHarness(ToolOutputBudgetExtension, config={"tool_output_max_lines": max_lines})
    recorded = harness.plugin.execute_action("tool_output_budget_record", None, [], {},
                                             {"tool_message": {"content": text}, "config": harness.config},
                                             harness.state)
    cut = cut_text(text, 16384, max_lines)
    assert (cut is not None) == bool(recorded)
    if recorded:
        assert recorded["tool_message_metadata"]["tool_output_budget"]["original_lines"] == len(text.splitlines())


def test_anthropic_tool_result_blocks_are_cut_too():
    native = [{"role": "user", "content": [
        {"type": "tool_result", "tool_use_id": "t1", "content": LOG},
        {"type": "tool_result", "tool_use_id": "t2", "content": [{"type": "text", "text": LOG}]},
        {"type": "text", "text": LOG},  # the user's own words are never cut
    ]}]
    harness = PluginHarness(ToolOutputBudgetExtension, config={"tool_output_max_bytes": 2000})
    (out,) = harness.to_native([{"role": "tool", "content": LOG}], native)
    first, second, text = out["content"]
    assert len(first["content"].encode()) <= 2000 and "tool output truncated" in first["content"]
    assert len(second["content"][0]["text"].encode()) <= 2000
    assert text["text"] == LOG


def test_cut_record(agent_snapshot):
    """What the model is sent for a 60-line result under a 10-line budget (OpenAI shape)."""
    core = [{"role": "tool", "content": "".join(f"row {i}\n" for i in range(60)), "metadata": {"tool_call_id": "c"}}]
    native = PluginHarness(OpenAIProvider).to_native(core)
    harness = PluginHarness(ToolOutputBudgetExtension, config={"tool_output_max_lines": 10}, provider=OpenAIProvider)
    assert harness.to_native(core, native) == agent_snapshot


def dump_log() -> str:
    """Print the service log."""
    return LOG




def _run(server, provider: str):
    core = AgentCore(providers=[OpenAIProvider, AnthropicProvider],
                     extensions=[OpenAIToolsExtension, AnthropicToolsExtension, ToolOutputBudgetExtension],
                     tools=[function_tool(dump_log)])
    session = core.add_message(core.create_session("s"), Message("user", "what went wrong?"))
    base = server.url + ("/v1" if provider == "openai" else "")
    config = {"provider": provider, "base_url": base, "model": "m", "api_key": "sk-test", "max_retries": 0,
              "tool_output_max_bytes": 4096, "tool_output_max_lines": 40, "stream": True}
    result = core.request(session, config)
    assert result.outcome.ok, result.outcome
    return result, json.loads(server.requests[1].raw)


def _check_session(result) -> None:
    tool = next(m for m in result.session.messages if m.role == "tool")
    assert tool.content == "Result: " + LOG  # the application keeps every byte (the engine adds "Result: ")
    assert tool.metadata["tool_output_budget"] == {
        "truncated": True, "original_bytes": 52008, "original_lines": 1000, "max_bytes": 4096, "max_lines": 40}


def test_openai_the_model_gets_a_cut_result_and_the_session_the_whole(server):
    server.enqueue(
        sse_reply(oa_chunk({"role": "assistant", "tool_calls": [
            {"index": 0, "id": "c1", "type": "function", "function": {"name": "dump_log", "arguments": "{}"}}]}),
            oa_chunk({}, "tool_calls"), OA_DONE),
        oa_text("The disk is full."),
    )
    result, second = _run(server, "openai")
    sent = second["messages"][-1]
    assert sent["role"] == "tool" and sent["tool_call_id"] == "c1"
    assert len(sent["content"].encode()) <= 4096 and len(sent["content"].splitlines()) <= 40
    assert sent["content"].startswith("Result: line 0000: ") and sent["content"].endswith("line 0999: " + "x" * 40 + "\n")
    assert "tool output truncated" in sent["content"]
    _check_session(result)


def test_anthropic_the_model_gets_a_cut_result_and_the_session_the_whole(server):
    server.enqueue(
        sse_reply(an_start(), *an_block(0, {"type": "tool_use", "id": "toolu_1", "name": "dump_log", "input": {}},
                                        [{"type": "input_json_delta", "partial_json": "{}"}]),
                  *an_end("tool_use", 5)),
        an_text("The disk is full."),
    )
    result, second = _run(server, "anthropic")
    (block,) = second["messages"][-1]["content"]
    assert block["type"] == "tool_result" and block["tool_use_id"] == "toolu_1"
    assert len(block["content"].encode()) <= 4096 and "tool output truncated" in block["content"]
    _check_session(result)


def test_a_budget_below_its_floor_is_a_config_error_naming_the_key():
    core = AgentCore(providers=[OpenAIProvider], extensions=[ToolOutputBudgetExtension])
    session = core.add_message(core.create_session(), Message("user", "hi"))
    config = {"provider": "openai", "api_key": "k", "base_url": "http://127.0.0.1:9/v1", "max_retries": 0}
    for key, bad in (("tool_output_max_bytes", 10), ("tool_output_max_lines", "many")):
        with pytest.raises(ConfigError, match=key) as info:
            core.request(session, {**config, key: bad})
        assert info.value.key == key
    assert [m.content for m in session.messages] == ["hi"]


def rows() -> dict:
    """A structured result: the model gets it as JSON text."""
    return {"rows": [{"id": i, "name": f"row {i}"} for i in range(2000)]}


def test_a_structured_result_is_cut_as_the_json_text_the_model_gets(server):
    server.enqueue(
        sse_reply(oa_chunk({"role": "assistant", "tool_calls": [
            {"index": 0, "id": "c1", "type": "function", "function": {"name": "rows", "arguments": "{}"}}]}),
            oa_chunk({}, "tool_calls"), OA_DONE),
        oa_text("ok"),
    )
    core = AgentCore(providers=[OpenAIProvider], extensions=[OpenAIToolsExtension, ToolOutputBudgetExtension],
                     tools=[function_tool(rows)])
    session = core.add_message(core.create_session("s"), Message("user", "rows?"))
    config = {"provider": "openai", "base_url": server.url + "/v1", "model": "m", "api_key": "sk-test",
              "max_retries": 0, "stream": True, "tool_output_max_bytes": 2048}
    result = core.request(session, config)
    sent = json.loads(server.requests[1].raw)["messages"][-1]["content"]
    assert len(sent.encode()) <= 2048 and "tool output truncated" in sent
    tool = next(m for m in result.session.messages if m.role == "tool")
    budget = tool.metadata["tool_output_budget"]
    assert budget["truncated"] and budget["original_bytes"] > 2048
