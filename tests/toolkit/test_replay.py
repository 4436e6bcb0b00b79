"""replay_provider runs the real bundled provider over a recorded body; --record writes one."""

from __future__ import annotations

import asyncio

import pytest
from agent_core import AgentCore, ConfigError, InvalidRequestError, Message, RateLimitError
from agent_core.cli import main
from agent_core.testing import replay_provider
from agent_core.testing.replay import recorded_reply
from agent_core_plugins.anthropic_thinking import AnthropicThinkingExtension
from agent_core_plugins.anthropic_tools import AnthropicToolsExtension
from agent_core_plugins.openai_reasoning import OpenAIReasoningExtension
from agent_core_plugins.openai_tools import OpenAIToolsExtension
from agent_core_providers.openai import OpenAIProvider
from providers._server import Reply

from .conftest import RECORDINGS

EXTENSIONS = [OpenAIToolsExtension, OpenAIReasoningExtension, AnthropicToolsExtension, AnthropicThinkingExtension]


def run(path, provider: str, **config):
    core = AgentCore(providers=[replay_provider(path, provider=provider)], extensions=EXTENSIONS)
    session = core.add_message(core.create_session(), Message(role="user", content="hi"))
    return core.request(session, {"model": "m", "stream": True, "max_iterations": 1, **config})


def test_a_raw_sse_body_runs_through_the_real_openai_provider():
    result = run(RECORDINGS / "openai-text.sse", "openai")
    assert result.final_messages[-1].content == '{"city":"San Francisco","temperature":61,"units":"f"}'
    assert result.final_messages[-1].metadata["finish_reason"] == "stop"
    assert result.usage.input_tokens > 0


def test_extensions_run_too_parallel_tool_calls_are_assembled():
    final = run(RECORDINGS / "openai-parallel-tool-calls.sse", "openai").final_messages[-1]
    calls = final.metadata["tool_calls"]
    assert [c["function"]["name"] for c in calls] == ["GetWeatherArgs", "get_stock_price"]
    assert all(c["function"]["arguments"].startswith("{") for c in calls)


def test_json_lines_are_framed_as_the_api_frames_them():
    final = run(RECORDINGS / "anthropic-tool-use.chunks.txt", "anthropic").final_messages[-1]
    assert final.metadata["tool_calls"][0]["type"] == "function"
    assert final.metadata["stop_reason"] == "tool_use"


def test_a_json_answer_replays_for_a_streamed_and_a_plain_call():
    for stream in (True, False):
        final = run(RECORDINGS / "anthropic-text.json", "anthropic", stream=stream).final_messages[-1]
        assert final.content.startswith("Hello! I'm doing well")


def test_the_async_api_replays_the_same_body():
    core = AgentCore(providers=[replay_provider(RECORDINGS / "deepseek-tool-call.chunks.txt")], extensions=EXTENSIONS)
    session = core.add_message(core.create_session(), Message(role="user", content="hi"))
    result = asyncio.run(core.arequest(session, {"model": "m", "stream": True, "max_iterations": 1}))
    assert result.final_messages[-1].metadata["reasoning"]
    assert result.final_messages[-1].metadata["tool_calls"]


def test_a_streamed_body_asked_for_without_streaming_says_how_to_replay_it():
    with pytest.raises(InvalidRequestError, match="holds a streamed body; replay it with a streaming request"):
        run(RECORDINGS / "openai-text.sse", "openai", stream=False)


def test_an_error_body_maps_to_the_providers_typed_error(tmp_path):
    body = tmp_path / "429.json"
    body.write_text('{"error": {"message": "Rate limit reached", "type": "rate_limit_error"}}')
    core = AgentCore(providers=[replay_provider(body, provider="openai", status_code=429)])
    session = core.add_message(core.create_session(), Message(role="user", content="hi"))
    with pytest.raises(RateLimitError, match="Rate limit reached"):
        core.request(session, {"model": "m", "max_retries": 0})


def test_only_the_bundled_http_providers_replay():
    with pytest.raises(ConfigError, match="'echo'"):
        replay_provider(RECORDINGS / "openai-text.sse", provider="echo")


def test_the_replay_class_is_the_real_provider():
    cls = replay_provider(RECORDINGS / "openai-text.sse")
    assert issubclass(cls, OpenAIProvider) and cls.name == "openai"


def test_recorded_reply_tells_the_formats_apart():
    assert recorded_reply(b'{"a": 1}', "openai")[0] == "application/json"
    assert recorded_reply(b"data: {}\n\n", "openai") == ("text/event-stream", b"data: {}\n\n")
    assert recorded_reply(b'{"type":"ping"}\n{"type":"message_stop"}\n', "anthropic")[1] == (
        b'event: ping\ndata: {"type":"ping"}\n\nevent: message_stop\ndata: {"type":"message_stop"}\n\n')
    assert recorded_reply(b'{"id":1}\n{"id":2}\n', "openai")[1].endswith(b"data: [DONE]\n\n")


@pytest.mark.parametrize(("provider", "name", "path"), [
    ("openai", "openai-parallel-tool-calls.sse", "/v1"),
    ("anthropic", "anthropic-thinking.chunks.txt", ""),
])
def test_record_writes_the_raw_body_and_replaying_it_gives_the_same_answer(
        server, tmp_path, capsys, monkeypatch, provider, name, path):
    raw = (RECORDINGS / name).read_bytes()
    if name.endswith(".chunks.txt"):
        raw = recorded_reply(raw, provider)[1]
    server.enqueue(Reply(200, {"content-type": "text/event-stream"}, [raw[:100], raw[100:]]))
    monkeypatch.setenv(f"{provider.upper()}_API_KEY", "sk-record-test")
    out = tmp_path / "answer.sse"
    code = main(["run", "--provider", provider, "--model", "m", "--base-url", server.url + path, "--max-iterations",
                 "1", "--record", str(out), "hello"])
    live = capsys.readouterr().out
    assert code in (0, 1)  # 1: the recorded answer asks for tools nobody offers (stopped at max_turns)
    assert out.read_bytes() == raw
    assert server.requests[0].headers.get("accept-encoding") == "identity"  # the file is what the parser read
    replayed = run(out, provider)
    assert replayed.final_messages[-1].content.strip() in live


def test_record_refuses_a_provider_without_http(tmp_path, capsys):
    assert main(["run", "--record", str(tmp_path / "x.sse"), "hi"]) == 2
    assert "'echo' has none" in capsys.readouterr().err  # echo takes no injected httpx clients
