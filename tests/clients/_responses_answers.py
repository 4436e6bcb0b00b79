"""What OpenAI's Responses API answers, on the wire, for the scripted upstream's ``/v1/responses``.

Two kinds of answer, each played as a JSON body or as the API's event stream, whichever the
request asks for (``"stream": true``):

- :class:`Recorded`: a response the live API sent, from ``tests/providers/responses_recordings``
  (its README names the source): played byte for byte, the JSON body as recorded or the
  stream's events as recorded. A recording of a stream also gives its JSON body: the
  ``response`` object of its ``response.completed`` event, which is what the API returns
  for the same request without ``stream``.
- :class:`Response`: a response made here for what a test needs the model to say (a JSON
  answer to a structured-output request), laid out as the recordings are: the response
  object's keys in the API's order, and in a stream ``output_item.added`` with an empty
  item, then its parts and deltas, their ``.done`` events, and ``output_item.done``.

:func:`refusal` answers a body the API refuses (:mod:`providers._responses_api`) with its 400.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from providers._responses_api import responses_error, responses_fault

from ._upstream import API, Played

__all__ = ["RECORDINGS", "Recorded", "Response", "refusal"]

RECORDINGS = Path(__file__).parent.parent / "providers" / "responses_recordings"
_HEADERS = (("content-type", "application/json"), ("openai-processing-ms", "402"),
            ("x-request-id", "req_5d1f0c6a2b7e4e0f9a3c2b1d0e9f8a7b"))
_SSE = (("content-type", "text/event-stream; charset=utf-8"), ("x-request-id", "req_5d1f0c6a2b7e4e0f9a3c2b1d0e9f8a7b"))


def _event(line: bytes) -> bytes:
    return b"event: %s\ndata: %s\n\n" % (json.loads(line)["type"].encode(), line)


def refusal(body: Any) -> Played | None:
    """The API's error answer to a body it refuses; None when it takes it."""
    fault = responses_fault(body)
    if fault is None:
        return None
    status, error = responses_error(fault)
    return Played(status, _HEADERS, (json.dumps(error, indent=2).encode() + b"\n",), streamed=False)


@dataclass(frozen=True)
class Recorded:
    """A recorded response: ``name`` a ``.json`` body, or a ``.chunks.txt`` stream and ``index`` which response of it."""

    name: str
    index: int = 0
    api: API = "responses"

    def lines(self) -> list[bytes]:
        out: list[list[bytes]] = []
        for line in (RECORDINGS / self.name).read_bytes().splitlines():
            if not line.strip():
                continue
            if json.loads(line)["type"] == "response.created":
                out.append([])
            out[-1].append(line)
        return out[self.index]

    def body(self) -> dict[str, Any]:
        """The response object, as the API returns it without ``stream``."""
        if self.name.endswith(".json"):
            return json.loads((RECORDINGS / self.name).read_bytes())  # type: ignore[no-any-return]
        return json.loads(self.lines()[-1])["response"]  # type: ignore[no-any-return]

    def items(self) -> list[dict[str, Any]]:
        return list(self.body()["output"])

    def play(self, request: Mapping[str, Any]) -> Played:
        if request.get("stream") is True and self.name.endswith(".chunks.txt"):
            return Played(200, _SSE, tuple(_event(line) for line in self.lines()), streamed=True)
        if self.name.endswith(".json"):
            return Played(200, _HEADERS, ((RECORDINGS / self.name).read_bytes(),), streamed=False)
        return Played(200, _HEADERS, (json.dumps(self.body(), indent=2).encode(),), streamed=False)


@dataclass(frozen=True)
class Response:
    """A response saying ``text`` (after ``reasoning`` items given as the API writes them)."""

    text: str
    reasoning: Sequence[Mapping[str, Any]] = ()
    usage: Mapping[str, Any] = field(default_factory=lambda: {
        "input_tokens": 120, "input_tokens_details": {"cached_tokens": 64}, "output_tokens": 40,
        "output_tokens_details": {"reasoning_tokens": 16}, "total_tokens": 160})
    id: str = "resp_0b8e2c55a7d1f3e90068f1a2b3c4d5e6f7a8b9c0d1e2f3a4b5"
    api: API = "responses"

    def output(self) -> list[dict[str, Any]]:
        message = {"id": "msg_0b8e2c55a7d1f3e90068f1a2b3c4d5e6f7a8b9c0d1e2f3a4b6", "type": "message",
                   "status": "completed", "content": [{"type": "output_text", "annotations": [], "logprobs": [],
                                                       "text": self.text}], "role": "assistant"}
        return [*(dict(r) for r in self.reasoning), message]

    def body(self, request: Mapping[str, Any], status: str = "completed") -> dict[str, Any]:
        done = status == "completed"
        return {"id": self.id, "object": "response", "created_at": 1765591383, "status": status,
                "background": False, "error": None, "incomplete_details": None,
                "instructions": request.get("instructions"), "max_output_tokens": request.get("max_output_tokens"),
                "model": "gpt-5-mini-2025-08-07", "output": self.output() if done else [],
                "parallel_tool_calls": request.get("parallel_tool_calls", True), "previous_response_id": None,
                "reasoning": {"effort": "medium", "summary": None, **(request.get("reasoning") or {})},
                "service_tier": "default" if done else "auto", "store": request.get("store", True),
                "temperature": 1.0, "text": {"format": {"type": "text"}, "verbosity": "medium",
                                             **(request.get("text") or {})},
                "tool_choice": request.get("tool_choice", "auto"), "tools": request.get("tools", []),
                "top_p": 1.0, "truncation": "disabled", "usage": dict(self.usage) if done else None,
                "user": None, "metadata": {}}

    def play(self, request: Mapping[str, Any]) -> Played:
        if request.get("stream") is not True:
            return Played(200, _HEADERS, (json.dumps(self.body(request), indent=2).encode(),), streamed=False)
        events: list[dict[str, Any]] = [{"type": "response.created", "response": self.body(request, "in_progress")},
                                        {"type": "response.in_progress", "response": self.body(request, "in_progress")}]
        for index, item in enumerate(self.output()):
            events += _item_events(index, item)
        events.append({"type": "response.completed", "response": self.body(request)})
        lines = [json.dumps({"type": e["type"], "sequence_number": n, **e}, separators=(",", ":")).encode()
                 for n, e in enumerate(events)]
        return Played(200, _SSE, tuple(_event(line) for line in lines), streamed=True)


def _item_events(index: int, item: Mapping[str, Any]) -> list[dict[str, Any]]:
    """One output item's events, as the API streams a message or a reasoning item."""
    where = {"item_id": item["id"], "output_index": index}
    if item["type"] == "reasoning":
        events = [{"type": "response.output_item.added", "output_index": index, "item": {**item, "summary": []}}]
        for n, part in enumerate(item.get("summary") or ()):
            events += [{"type": "response.reasoning_summary_part.added", **where, "summary_index": n,
                        "part": {"type": "summary_text", "text": ""}},
                       {"type": "response.reasoning_summary_text.delta", **where, "summary_index": n,
                        "delta": part["text"]},
                       {"type": "response.reasoning_summary_text.done", **where, "summary_index": n,
                        "text": part["text"]},
                       {"type": "response.reasoning_summary_part.done", **where, "summary_index": n, "part": part}]
        return [*events, {"type": "response.output_item.done", "output_index": index, "item": dict(item)}]
    part = item["content"][0]
    opened = {**item, "status": "in_progress", "content": []}
    text = part["text"]
    cut = max(1, len(text) // 2)
    where = {**where, "content_index": 0}
    return [{"type": "response.output_item.added", "output_index": index, "item": opened},
            {"type": "response.content_part.added", **where, "part": {**part, "text": ""}},
            {"type": "response.output_text.delta", **where, "delta": text[:cut], "logprobs": []},
            {"type": "response.output_text.delta", **where, "delta": text[cut:], "logprobs": []},
            {"type": "response.output_text.done", **where, "text": text, "logprobs": []},
            {"type": "response.content_part.done", **where, "part": part},
            {"type": "response.output_item.done", "output_index": index, "item": dict(item)}]
