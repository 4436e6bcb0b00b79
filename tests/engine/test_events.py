"""The event stream: a snapshot of a two-iteration tool conversation, schemas, sync/async parity."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import jsonschema
import pytest
from agent_core import AgentCore, Message, Session, decode_event, encode_event
from agent_core.testing import reply, scripted_provider, tool_call

SCHEMA = json.loads((Path(__file__).parents[2] / "schemas" / "event.schema.json").read_text())


class Weather:
    name = "weather"
    version = "1.0.0"

    def get_tool_schemas(self, state):
        return [{
            "name": "forecast",
            "description": "Forecast for a city",
            "input_schema": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]},
        }]

    def format_tool_call_preview(self, tool_name, payload, state):
        return f"forecast for {payload['city']}"

    def stream_tool(self, tool_name, payload, state, **kwargs):
        yield {"part": f"looking up {payload['city']}"}
        yield {"success": True, "result": {"city": payload["city"], "sky": "clear"}}

    def format_tool_result(self, result, state):
        r = result["result"]
        return f"{r['city']}: {r['sky']}"


def conversation() -> tuple[AgentCore, Session]:
    provider = scripted_provider(
        reply("Checking both cities.", tool_calls=[
            tool_call("forecast", {"city": "Oslo"}, id="call_1"),
            tool_call("forecast", {"city": "Lima"}, id="call_2"),
        ], usage={"input_tokens": 20, "output_tokens": 9}),
        reply("Oslo and Lima are both clear.", usage={"input_tokens": 41, "output_tokens": 7}),
    )
    core = AgentCore(providers=[provider], tools=[Weather])
    return core, Session("s-1", [Message("user", "Weather in Oslo and Lima?")])


def sync_lines() -> list[str]:
    core, session = conversation()
    return [encode_event(e).decode() for e in core.stream_request(session, request_id="req-1")]


def async_lines() -> list[str]:
    core, session = conversation()

    async def collect():
        return [encode_event(e).decode() async for e in core.astream_request(session, request_id="req-1")]

    return asyncio.run(collect())


def test_event_stream_snapshot(snapshot):
    lines = sync_lines()
    # the native history inside the session metadata is provider business;
    # keep the snapshot to what an application reads
    rendered = []
    for line in lines:
        data = json.loads(line)
        if data["type"] == "done":
            data["session"]["metadata"] = sorted(data["session"]["metadata"])
        rendered.append(json.dumps(data, sort_keys=True))
    assert "\n".join(rendered) == snapshot


def test_every_event_validates_against_the_schema_and_decodes_back():
    for line in sync_lines():
        jsonschema.validate(json.loads(line), SCHEMA)
        event = decode_event(line)
        assert encode_event(event).decode() == line


def test_sync_and_async_streams_are_identical():
    assert sync_lines() == async_lines()


@pytest.mark.parametrize("stream", [False, True])
def test_request_and_arequest_agree(stream):
    core, session = conversation()
    a = core.request(session, {"stream": stream}, request_id="r")
    b = asyncio.run(core.arequest(session, {"stream": stream}, request_id="r"))
    assert a == b
    assert a.usage.input_tokens == 61 and a.usage.output_tokens == 16 and a.usage.provider_calls == 2
    assert [m.role for m in a.final_messages] == ["assistant", "tool", "tool", "assistant"]


def test_old_style_item_access_on_events():
    core, session = conversation()
    partial = next(e for e in core.send_request_stream(session, {}) if e["type"] == "partial")
    assert partial["message"]["content"] == "Checking"
    new_session, finals = core.send_request(session, {})
    assert finals[-1]["content"] == "Oslo and Lima are both clear."
    assert isinstance(finals[-1], dict) and len(new_session.messages) == 5
