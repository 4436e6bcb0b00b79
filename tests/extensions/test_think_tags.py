"""think_tags: inline <think> reasoning leaves the answer, in partials and finals, however the stream is cut."""

from __future__ import annotations

from agent_core import AgentCore
from agent_core.testing import PluginHarness, check_plugin
from agent_core.testing.strategies import splits
from agent_core_plugins.think_tags import ThinkTagsExtension, split_reasoning
from agent_core_providers.anthropic import AnthropicProvider
from agent_core_providers.echo import EchoProvider
from agent_core_providers.openai import OpenAIProvider
from hypothesis import given

from ._kit import partials_of, reasoning_of

TEXT = "<think>The user wants 1+2. That is 3.</think>The answer is 3."


def test_keeps_the_hook_contract():
    check_plugin(ThinkTagsExtension)
    check_plugin(ThinkTagsExtension, samples={"chunks": [{"delta": "<thi"}, {"delta": "nk>x</think>y"}]})


def test_a_final_answer_loses_its_tags_and_keeps_its_reasoning():
    record = PluginHarness(ThinkTagsExtension).stream(finals=[TEXT])
    assert record.finals[0]["content"] == "The answer is 3."
    assert record.finals[0]["reasoning_content"] == "The user wants 1+2. That is 3."


def test_reasoning_reaches_metadata_through_from_native():
    harness = PluginHarness(ThinkTagsExtension)
    native = [{"role": "assistant", "content": "3", "reasoning_content": "1+2"}]
    core = harness.from_native(native)
    assert core[0]["metadata"]["reasoning"] == "1+2"


def test_streamed_record(agent_snapshot):
    chunks = ["<th", "ink>pla", "n</thi", "nk>ans", "wer <b>"]
    record = PluginHarness(ThinkTagsExtension).stream([{}] * len(chunks), partials=chunks, finals=["".join(chunks)])
    assert record.text == "answer <b>"
    assert reasoning_of(record) == "plan"
    assert record == agent_snapshot


def test_no_partial_shows_a_piece_of_a_tag():
    chunks = list(TEXT)  # one character per chunk
    record = PluginHarness(ThinkTagsExtension).stream([{}] * len(chunks), partials=chunks)
    for p in partials_of(record):
        shown = p["content"] + (p.get("metadata") or {}).get("reasoning", "")
        assert "<" not in shown and ">" not in shown, p


def test_an_unclosed_tag_is_flushed_as_reasoning():
    chunks = ["Hi <think>still thinking", " when cut <"]
    record = PluginHarness(ThinkTagsExtension).stream([{}] * 2, partials=chunks, finals=["".join(chunks)])
    assert record.text == "Hi "
    assert reasoning_of(record) == "still thinking when cut <"
    assert record.finals[0] == {"role": "assistant", "content": "Hi ",
                                "reasoning_content": "still thinking when cut <"}


def test_configured_tag_names():
    record = PluginHarness(ThinkTagsExtension, {"think_tags": ["reasoning"]}).stream(
        finals=["<think>kept</think><reasoning>moved</reasoning>ok"])
    assert record.finals[0]["content"] == "<think>kept</think>ok"
    assert record.finals[0]["reasoning_content"] == "moved"


def test_text_without_tags_passes_through_untouched():
    partial = {"role": "assistant", "content": "a < b", "metadata": {"x": 1}}
    record = PluginHarness(ThinkTagsExtension).stream([{}], partials=[[partial]], finals=["a < b"])
    assert partials_of(record) == [partial]
    assert record.finals == [{"role": "assistant", "content": "a < b"}]


@given(splits(TEXT + " <think>again</think> done <thin"))
def test_every_split_streams_what_the_final_says(chunks):
    whole = "".join(chunks)
    record = PluginHarness(ThinkTagsExtension).stream([{}] * len(chunks), partials=chunks, finals=[whole])
    answer, reasoning = split_reasoning(whole)
    assert record.text == answer == record.finals[0]["content"]
    assert reasoning_of(record) == reasoning == record.finals[0]["reasoning_content"]


def test_listed_on_with_openai_and_echo_and_off_where_reasoning_is_separate():
    core = AgentCore(providers=[OpenAIProvider, AnthropicProvider, EchoProvider], extensions=[ThinkTagsExtension])
    assert core.resolve({"provider": "openai"}).reasons["think_tags"].startswith("on")
    assert core.resolve({"provider": "echo"}).reasons["think_tags"].startswith("on")
    off = core.resolve({"provider": "anthropic", "model": "claude-sonnet-4-5"}).reasons["think_tags"]
    assert off.startswith("off") and "thinking" in off
