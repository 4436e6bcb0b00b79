"""The Responses API's server-sent events, built from the engine's events.

Kept apart from :mod:`.responses_compat` (the bodies) because it is the one stateful
piece: the running sequence number, whether the message item is open, and what the
output list holds so far (``response.completed`` repeats it whole).

Order, as the API sends it: ``response.created`` and ``response.in_progress``; the
message item (``output_item.added``, ``content_part.added``, ``output_text.delta``...,
``output_text.done``, ``content_part.done``, ``output_item.done``) opened at the first
text; each tool call as a ``function_call`` item whose arguments come in one delta (the
engine hands calls over complete, with the final message); then ``response.completed``
or ``response.incomplete``. A failure after the first event is an ``error`` event and
then ``response.failed``.
"""

from __future__ import annotations

import json
from typing import Any

from ..types import Message
from .responses_compat import (
    ResponsesBody,
    calls_of,
    finish_of,
    function_call_item,
    message_item,
    response_body,
    usage_of,
)

__all__ = ["ResponseStream"]


class ResponseStream:
    """Engine events in, Responses API events out; ``ended`` once a terminal event is sent."""

    def __init__(self, request_id: str, body: ResponsesBody, created: int) -> None:
        self.request_id = request_id
        self.body = body
        self.created = created
        self.sequence = 0
        self.output: list[dict[str, Any]] = []
        self.text: list[str] = []
        self.open = False  # the message item is added and still taking deltas
        self.streamed_text = False
        self.ended = False

    @property
    def message_id(self) -> str:
        return f"msg_{self.request_id}"

    def _event(self, kind: str, **data: Any) -> bytes:
        payload = {"type": kind, "sequence_number": self.sequence, **data}
        self.sequence += 1
        return b"event: " + kind.encode() + b"\ndata: " + json.dumps(payload).encode() + b"\n\n"

    def _response(self, status: str, **extra: Any) -> dict[str, Any]:
        return response_body(self.request_id, self.body, self.created, status=status, output=list(self.output),
                             **extra)

    def start(self) -> bytes:
        return (self._event("response.created", response=self._response("in_progress"))
                + self._event("response.in_progress", response=self._response("in_progress")))

    def _text(self, text: str) -> bytes:
        out = b""
        if not self.open:
            self.open = True
            out += self._event("response.output_item.added", output_index=len(self.output),
                               item=message_item(self.message_id, "", "in_progress"))
            out += self._event("response.content_part.added", item_id=self.message_id,
                               output_index=len(self.output), content_index=0,
                               part={"type": "output_text", "text": "", "annotations": []})
        self.text.append(text)
        self.streamed_text = True
        return out + self._event("response.output_text.delta", item_id=self.message_id,
                                 output_index=len(self.output), content_index=0, delta=text, logprobs=[])

    def _close_message(self) -> bytes:
        if not self.open:
            return b""
        self.open = False
        text = "".join(self.text)
        index = len(self.output)
        item = message_item(self.message_id, text)
        self.output.append(item)
        return (self._event("response.output_text.done", item_id=self.message_id, output_index=index,
                            content_index=0, text=text, logprobs=[])
                + self._event("response.content_part.done", item_id=self.message_id, output_index=index,
                              content_index=0, part=item["content"][0])
                + self._event("response.output_item.done", output_index=index, item=item))

    def partial(self, message: Message) -> bytes:
        if isinstance(message.content, str) and message.content:
            return self._text(message.content)
        return b""

    def final(self, reply: Message) -> bytes:
        """What the final message adds: its text when none was streamed, then its tool calls."""
        out = b""
        if not self.streamed_text and isinstance(reply.content, str) and reply.content:
            out += self._text(reply.content)
        out += self._close_message()
        for call in calls_of(reply):
            index = len(self.output)
            item = function_call_item(call)
            out += self._event("response.output_item.added", output_index=index,
                               item=function_call_item(call, "in_progress"))
            out += self._event("response.function_call_arguments.delta", item_id=item["id"], output_index=index,
                               delta=item["arguments"])
            out += self._event("response.function_call_arguments.done", item_id=item["id"], output_index=index,
                               name=item["name"], arguments=item["arguments"])
            out += self._event("response.output_item.done", output_index=index, item=item)
            self.output.append(item)
        return out

    def end(self, reply: Message | None, usage: Any) -> bytes:
        out = self._close_message()
        self.ended = True
        status, incomplete = finish_of(reply)
        response = self._response(status, usage=usage_of(usage, reply), incomplete=incomplete)
        kind = "response.completed" if status == "completed" else "response.incomplete"
        return out + self._event(kind, response=response)

    def error(self, error: dict[str, Any]) -> bytes:
        """The failure as an ``error`` event, then ``response.failed`` for clients that wait for a terminal response."""
        self.ended = True
        code = error.get("code") or error.get("type")
        out = self._event("error", code=code, message=error.get("message"), param=error.get("param"))
        failed = self._response("failed", error={"code": code, "message": error.get("message")})
        return out + self._event("response.failed", response=failed)
