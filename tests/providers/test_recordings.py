"""Bodies recorded from real APIs, replayed byte for byte through each provider and its extensions.

``recordings/README.md`` says where every file came from. Each case below
names what the answer must turn into: text, reasoning, tool calls, server
tools, usage and finish reason. A new recording needs a case and a README
line, or the first two tests fail.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from agent_core import AgentCore, Message, thaw
from agent_core_plugins.anthropic_thinking import AnthropicThinkingExtension
from agent_core_plugins.anthropic_tools import AnthropicToolsExtension
from agent_core_plugins.openai_reasoning import OpenAIReasoningExtension
from agent_core_plugins.openai_tools import OpenAIToolsExtension
from agent_core_providers.anthropic import AnthropicProvider
from agent_core_providers.openai import OpenAIProvider, message_text

from ._driver import arun_turn, run_turn
from ._server import Reply
from ._wire import an_text
from .conftest import run_async
from .test_e2e import Calculator

RECORDINGS = Path(__file__).parent / "recordings"
USER = [{"role": "user", "content": "hi"}]
KEY = "sk-recorded-0123456789"


def lines(name: str) -> list[bytes]:
    return [line for line in (RECORDINGS / name).read_bytes().splitlines() if line.strip()]


def is_anthropic(name: str) -> bool:
    return name.startswith("anthropic")


def reply_for(name: str) -> tuple[Reply, bool]:
    """The recorded body as the API would send it, and whether it is a stream."""
    raw = (RECORDINGS / name).read_bytes()
    if name.endswith(".json"):
        return Reply(200, {"content-type": "application/json"}, [raw], chunked=False), False
    if name.endswith(".sse"):
        return Reply(200, {"content-type": "text/event-stream"}, [raw]), True
    if is_anthropic(name):
        parts = [b"event: %s\ndata: %s\n\n" % (json.loads(line)["type"].encode(), line) for line in lines(name)]
    else:
        parts = [b"data: %s\n\n" % line for line in lines(name)] + [b"data: [DONE]\n\n"]
    return Reply(200, {"content-type": "text/event-stream"}, parts), True


def stack(name: str) -> tuple[Any, list[Any], str]:
    if is_anthropic(name):
        return AnthropicProvider(), [AnthropicThinkingExtension(), AnthropicToolsExtension()], ""
    return OpenAIProvider(), [OpenAIToolsExtension(), OpenAIReasoningExtension()], "/v1"


def config(server: Any, path: str, **extra: Any) -> dict:
    return {"base_url": server.url + path, "api_key": KEY, "model": "m", "max_retries": 0, **extra}


def replay(server: Any, name: str) -> Any:
    reply, stream = reply_for(name)
    server.enqueue(reply)
    provider, exts, path = stack(name)
    return run_turn(provider, exts, USER, config(server, path), stream=stream)


@dataclass
class Expect:
    text: str | None = None  # the whole text, or None: see text_start / text_len
    text_start: str = ""
    text_len: int | None = None
    reasoning: str | None = None
    reasoning_start: str = ""
    tool_calls: list[tuple[str, str, Any]] = field(default_factory=list)  # (id, name, parsed arguments)
    server_tools: list[str] = field(default_factory=list)  # block types, in order
    citations: int = 0
    usage: dict[str, Any] = field(default_factory=dict)  # keys that must be there with these values
    finish: tuple[str, str] | None = None  # ("finish_reason" | "stop_reason", value)
    refusal: str | None = None


WEATHER_SF = {"location": "San Francisco"}
CASES: dict[str, Expect] = {
    "openai-text.sse": Expect(
        text='{"city":"San Francisco","temperature":61,"units":"f"}',
        usage={"input_tokens": 79, "output_tokens": 14, "total_tokens": 93},
        finish=("finish_reason", "stop"),
    ),
    "openai-parallel-tool-calls.sse": Expect(
        text="",
        tool_calls=[
            ("call_JMW1whyEaYG438VE1OIflxA2", "GetWeatherArgs", {"city": "Edinburgh", "country": "GB", "units": "c"}),
            ("call_DNYTawLBoN8fj3KN6qU9N1Ou", "get_stock_price", {"ticker": "AAPL", "exchange": "NASDAQ"}),
        ],
        usage={"input_tokens": 149, "output_tokens": 60},
        finish=("finish_reason", "tool_calls"),
    ),
    "openai-length.sse": Expect(
        text='{"', usage={"input_tokens": 79, "output_tokens": 1}, finish=("finish_reason", "length")
    ),
    "openai-refusal.sse": Expect(
        text="",
        refusal="I'm sorry, I can't assist with that request.",
        usage={"input_tokens": 79, "output_tokens": 11},
        finish=("finish_reason", "stop"),
    ),
    "azure-chat.chunks.txt": Expect(
        text="Capital of Denmark.",
        usage={"input_tokens": 15, "output_tokens": 78, "reasoning_tokens": 64},
        finish=("finish_reason", "stop"),
    ),
    "deepseek-tool-call.chunks.txt": Expect(
        text="",
        reasoning=(
            "The user is asking for the weather in San Francisco. I need to use the weather tool to get this"
            ' information. Let me invoke the weather tool with the location parameter set to "San Francisco".'
        ),
        tool_calls=[("call_00_ioIn7yN9p1ZOMNpDLwd4MgAF", "weather", WEATHER_SF)],
        usage={"input_tokens": 339, "output_tokens": 83, "cache_read_tokens": 320, "reasoning_tokens": 39},
        finish=("finish_reason", "tool_calls"),
    ),
    "deepseek-reasoning.json": Expect(
        text_start='The word "strawberry" contains three instances',
        text_len=107,
        reasoning_start="We are asked: \"How many 'r's are in the word 'strawberry'?\"",
        usage={"input_tokens": 18, "output_tokens": 345, "reasoning_tokens": 315},
        finish=("finish_reason", "stop"),
    ),
    "groq-tool-call.chunks.txt": Expect(
        text="",
        tool_calls=[("tk85n1k4m", "weather", {})],
        usage={"input_tokens": 210, "output_tokens": 15, "queue_time": 0.041520249},
        finish=("finish_reason", "tool_calls"),
    ),
    "groq-tool-call.json": Expect(
        text="",
        tool_calls=[("ax9fskhev", "weather", {})],
        usage={"input_tokens": 218, "output_tokens": 15},
        finish=("finish_reason", "tool_calls"),
    ),
    "mistral-reasoning.chunks.txt": Expect(
        text="2 + 2 = 4",
        reasoning="The user is asking for 2+2. This is basic arithmetic. 2+2=4.",
        usage={"input_tokens": 10, "output_tokens": 46},
        finish=("finish_reason", "stop"),
    ),
    "mistral-reasoning.json": Expect(
        text="2 + 2 = 4",
        reasoning="The user is asking for 2+2. This is basic arithmetic. 2+2=4.",
        usage={"input_tokens": 10, "output_tokens": 46},
        finish=("finish_reason", "stop"),
    ),
    "mistral-incremental-tool-call.chunks.txt": Expect(
        text="",
        tool_calls=[("chatcmpl-tool-9f149c74c42f265b", "webSearchTool", {"query": "current Berlin weather"})],
        usage={"input_tokens": 171, "output_tokens": 14, "cache_read_tokens": 128},
        finish=("finish_reason", "tool_calls"),
    ),
    "xai-tool-call.chunks.txt": Expect(
        text="",
        reasoning="First, the user is",
        tool_calls=[("call_55117580", "weather", WEATHER_SF)],
        usage={"input_tokens": 291, "output_tokens": 26, "cache_read_tokens": 290, "reasoning_tokens": 196},
        finish=("finish_reason", "tool_calls"),
    ),
    "anthropic-web-search.chunks.txt": Expect(
        text_start="Based on my search results, here are the key tech news developments from today",
        text_len=2402,
        server_tools=["server_tool_use", "web_search_tool_result"],
        citations=14,
        usage={
            "input_tokens": 15665,
            "output_tokens": 795,
            "server_tool_use": {"web_search_requests": 1, "web_fetch_requests": 0},
        },
        finish=("stop_reason", "end_turn"),
    ),
    "anthropic-web-search.json": Expect(
        text_start="Let me search for more specific tech news from today (September 26, 2024).",
        text_len=1874,
        server_tools=["server_tool_use", "web_search_tool_result", "server_tool_use", "web_search_tool_result"],
        citations=None,  # type: ignore[arg-type]  (checked: some)
        usage={"input_tokens": 27118, "output_tokens": 600},
        finish=("stop_reason", "end_turn"),
    ),
    "anthropic-web-fetch.chunks.txt": Expect(
        text_start="I'll fetch the content from that Wikipedia page to tell you what it's about.",
        text_len=1664,
        server_tools=["server_tool_use", "web_fetch_tool_result"],
        usage={"input_tokens": 4230, "output_tokens": 446},
        finish=("stop_reason", "end_turn"),
    ),
    "anthropic-code-execution.chunks.txt": Expect(
        text_start="I'll create a Python script to calculate Fibonacci numbers",
        text_len=795,
        server_tools=[
            "server_tool_use",
            "text_editor_code_execution_tool_result",
            "server_tool_use",
            "bash_code_execution_tool_result",
        ],
        usage={"input_tokens": 8050, "output_tokens": 771},
        finish=("stop_reason", "end_turn"),
    ),
    "anthropic-mcp.chunks.txt": Expect(
        text=(
            "The echo tool responded back with: **hello world**\n\n"
            "It simply echoed back the exact message that was sent to it."
        ),
        server_tools=["mcp_tool_use", "mcp_tool_result"],
        usage={"input_tokens": 1250, "output_tokens": 83},
        finish=("stop_reason", "end_turn"),
    ),
    "anthropic-thinking.chunks.txt": Expect(
        text="925 ÷ 5 = 185",
        reasoning="The previous result was 925. Now I need to divide that by 5.\n\n925 ÷ 5 = 185",
        usage={"input_tokens": 69, "output_tokens": 53},
        finish=("stop_reason", "end_turn"),
    ),
    "anthropic-tool-use.chunks.txt": Expect(
        text="",
        tool_calls=[
            (
                "toolu_01KFbKqPYSuAKujiL6mTfzYA",
                "json",
                {"elements": [{"location": "San Francisco", "temperature": 58, "condition": "sunny"}]},
            )
        ],
        usage={"input_tokens": 849, "output_tokens": 47},
        finish=("stop_reason", "tool_use"),
    ),
    "anthropic-text.json": Expect(
        text=(
            "Hello! I'm doing well, thanks for asking. How are you doing today?"
            " Is there anything I can help you with?"
        ),
        usage={"input_tokens": 12, "output_tokens": 29},
        finish=("stop_reason", "end_turn"),
    ),
}


def test_every_recording_has_a_case():
    files = {p.name for p in RECORDINGS.iterdir() if p.name != "README.md"}
    assert files == set(CASES)


def test_every_recording_says_where_it_came_from():
    readme = (RECORDINGS / "README.md").read_text()
    for name in CASES:
        assert f"| `{name}` |" in readme, name


@pytest.mark.parametrize("name", list(CASES))
def test_recording_replays_into_the_expected_message(server, name):
    expect = CASES[name]
    turn = replay(server, name)

    (final,) = thaw(turn.finals)
    metadata = final["metadata"]
    assert final["role"] == "assistant"
    if expect.text is not None:
        assert final["content"] == expect.text
    else:
        assert final["content"].startswith(expect.text_start)
        assert len(final["content"]) == expect.text_len
    if expect.reasoning is not None:
        assert metadata["reasoning"] == expect.reasoning
    elif expect.reasoning_start:
        assert metadata["reasoning"].startswith(expect.reasoning_start)
    else:
        assert "reasoning" not in metadata
    calls = metadata.get("tool_calls", [])
    got = [(c["id"], c["function"]["name"], json.loads(c["function"]["arguments"])) for c in calls]
    assert got == expect.tool_calls
    assert all(c["type"] == "function" and "incomplete" not in c for c in calls)
    assert [b["type"] for b in metadata.get("server_tools", [])] == expect.server_tools
    if expect.citations is None:
        assert metadata["citations"]
    else:
        assert len(metadata.get("citations", [])) == expect.citations
    for key, value in expect.usage.items():
        assert metadata["usage"][key] == value, key
    assert expect.finish is not None
    assert metadata[expect.finish[0]] == expect.finish[1]
    assert metadata.get("refusal") == expect.refusal
    # No partial ever carries anything but text (reasoning goes to metadata).
    assert all(isinstance(p["content"], str) for p in thaw(turn.partials))
    streamed_text = "".join(p["content"] for p in thaw(turn.partials))
    if reply_for(name)[1]:
        assert streamed_text == final["content"]


@pytest.mark.parametrize(
    "name", ["anthropic-web-search.chunks.txt", "anthropic-thinking.chunks.txt", "deepseek-tool-call.chunks.txt"]
)
def test_async_replay_matches_sync(server, name):
    sync_turn = replay(server, name)
    reply, _ = reply_for(name)
    server.enqueue(reply)
    provider, exts, path = stack(name)
    async_turn = run_async(arun_turn, provider, exts, USER, config(server, path))
    assert thaw(async_turn.finals) == thaw(sync_turn.finals)
    assert thaw(async_turn.native) == thaw(sync_turn.native)


def recorded_blocks(name: str) -> list[dict]:
    """The blocks exactly as the stream announced them in ``content_block_start``."""
    events = [json.loads(line) for line in lines(name)]
    return [e["content_block"] for e in events if e["type"] == "content_block_start"]


@pytest.mark.parametrize(
    "name",
    [
        "anthropic-web-search.chunks.txt",
        "anthropic-web-fetch.chunks.txt",
        "anthropic-code-execution.chunks.txt",
        "anthropic-mcp.chunks.txt",
    ],
)
def test_server_tool_blocks_go_back_to_the_api_as_received(server, name):
    """Server tool calls and results are kept in order, untouched, and sent back on the next turn."""
    first = replay(server, name)
    server.enqueue(an_text("ok"))
    provider, exts, path = stack(name)
    run_turn(provider, exts, [{"role": "user", "content": "and then?"}], config(server, path), history=first.native)

    sent = server.requests[1].body["messages"]
    assert [m["role"] for m in sent] == ["user", "assistant", "user"]
    blocks = sent[1]["content"]
    started = recorded_blocks(name)
    # Every result block (and any block of a type we do not know) is byte-for-byte what the API sent.
    results = [b for b in started if b["type"].endswith("_tool_result")]
    assert results and [b for b in blocks if b["type"].endswith("_tool_result")] == results
    # Server-side calls keep their id and name; their streamed input was assembled.
    calls = [b for b in blocks if b["type"] in ("server_tool_use", "mcp_tool_use")]
    assert [(b["id"], b["name"]) for b in calls] == [
        (b["id"], b["name"]) for b in started if b["type"] in ("server_tool_use", "mcp_tool_use")
    ]
    assert all(b["input"] for b in calls)
    assert not any(b["type"] == "tool_use" for b in blocks)
    # And the block order is the stream order (empty text blocks are not sent: the API refuses them).
    assert [b["type"] for b in blocks if b["type"] != "text"] == [b["type"] for b in started if b["type"] != "text"]
    assert all(b["text"] for b in blocks if b["type"] == "text")


def test_web_search_citations_stay_on_their_text_blocks(server):
    turn = replay(server, "anthropic-web-search.chunks.txt")
    blocks = thaw(turn.native[-1])["content"]
    cited = [b for b in blocks if b["type"] == "text" and b.get("citations")]
    assert len(cited) == 9  # the nine blocks that opened with "citations": []
    assert sum(len(b["citations"]) for b in cited) == 14
    first = cited[0]
    assert first["text"].startswith("Apple today announced the grand reopening of Apple Ginza")
    assert first["citations"][0]["url"].startswith("https://www.apple.com/newsroom/2025/09/")


@pytest.mark.parametrize("stream", [True, False])
def test_engine_never_runs_a_server_tool(server, stream):
    """Through AgentCore with a client tool registered: the web search answer ends the request, nothing runs."""
    name = "anthropic-web-search.chunks.txt" if stream else "anthropic-web-search.json"
    reply, _ = reply_for(name)
    server.enqueue(reply)
    core = AgentCore(providers=[AnthropicProvider], extensions=[AnthropicToolsExtension], tools=[Calculator])
    session = core.add_message(core.create_session(), Message(role="user", content="tech news?"))
    events = list(
        core.stream_request(
            session, {"provider": "anthropic", "base_url": server.url, "api_key": KEY, "stream": stream}
        )
    )
    kinds = [type(e).__name__ for e in events]
    assert "ToolCallEvent" not in kinds and "ToolResultEvent" not in kinds
    assert len(server.requests) == 1
    done = events[-1]
    assert done.outcome.status == "finished"
    final = done.session.messages[-1]
    assert final.role == "assistant" and final.content
    assert "tool_calls" not in final.metadata
    assert [b["type"] for b in final.metadata["server_tools"]][:2] == ["server_tool_use", "web_search_tool_result"]


def test_server_tools_come_back_when_the_history_is_rebuilt_from_core_messages(server):
    first = replay(server, "anthropic-mcp.chunks.txt")
    server.enqueue(an_text("ok"))
    provider, exts, path = stack("anthropic-mcp.chunks.txt")
    core = [*USER, thaw(first.finals[0]), {"role": "user", "content": "thanks"}]
    run_turn(provider, exts, core, config(server, path))

    (use, result) = [b for b in recorded_blocks("anthropic-mcp.chunks.txt") if b["type"] != "text"]
    sent = server.requests[1].body["messages"]
    assert sent[1] == {
        "role": "assistant",
        "content": [
            {**use, "input": {"message": "hello world"}},
            result,
            {"type": "text", "text": first.finals[0]["content"]},
        ],
    }


def test_extended_thinking_keeps_its_recorded_signature_for_the_next_turn(server):
    name = "anthropic-thinking.chunks.txt"
    events = [json.loads(line) for line in lines(name)]
    deltas = [e["delta"] for e in events if e["type"] == "content_block_delta"]
    signature = "".join(d["signature"] for d in deltas if d["type"] == "signature_delta")
    first = replay(server, name)
    (block,) = thaw(first.finals[0])["metadata"]["thinking_blocks"]
    assert block == {"type": "thinking", "thinking": CASES[name].reasoning, "signature": signature}
    assert len(signature) > 100

    server.enqueue(an_text("ok"))
    provider, exts, path = stack(name)
    run_turn(provider, exts, [{"role": "user", "content": "next"}], config(server, path), history=first.native)
    assert server.requests[1].body["messages"][1]["content"] == [block, {"type": "text", "text": "925 ÷ 5 = 185"}]


@pytest.mark.parametrize("name", ["mistral-reasoning.json", "deepseek-reasoning.json", "mistral-reasoning.chunks.txt"])
def test_reasoning_is_not_sent_back_next_turn(server, name):
    """Whether it came as ``reasoning_content`` or as thinking parts, streamed or not."""
    first = replay(server, name)
    server.enqueue(reply_for("openai-text.sse")[0])
    provider, exts, path = stack(name)
    run_turn(provider, exts, [{"role": "user", "content": "next"}], config(server, path), history=first.native)
    answer = server.requests[1].body["messages"][1]
    assert answer["role"] == "assistant"
    assert message_text(answer["content"]) == first.finals[0]["content"]
    assert "reasoning_content" not in answer and "thinking" not in json.dumps(answer)
