"""The Responses API's server-sent events, built from the engine's events.

Kept apart from :mod:`.responses_compat` (the bodies) because it is the one stateful
piece: the running sequence number, which item is open, and what the output list
holds so far (``response.completed`` repeats it whole).

Order, as the API sends it: ``response.created`` and ``response.in_progress``; a
``reasoning`` item when the provider gives reasoning: an ``openai_responses`` upstream's
own item, its id kept, its summary streamed part by part
(``reasoning_summary_part.added``, ``reasoning_summary_text.delta``... ``.done``) and closed
as the upstream closed it (``encrypted_content`` when ``include`` asked for it); any other
provider's reasoning as ``reasoning_text`` deltas; the
message item (``output_item.added``, ``content_part.added``, ``output_text.delta``...,
``output_text.done``, ``content_part.done``, ``output_item.done``) opened at the first
text; each tool call as a ``function_call`` item whose arguments come in one delta (the
engine hands calls over complete, with the final message); then ``response.completed``
or ``response.incomplete``. A failure after the first event is an ``error`` event and
then ``response.failed``.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from ....types import Message
from .dialect import (
    ResponsesBody,
    calls_of,
    finish_of,
    function_call_item,
    message_item,
    response_body,
    usage_of,
)
from .items import kept_reasoning, reasoning_item, shown

__all__ = ["ResponseStream"]


class ResponseStream:
    """Engine events in, Responses API events out; ``ended`` once a terminal event is sent.

    Text and reasoning each stream into an item of their own (``message``, ``reasoning``),
    opened when the first piece arrives and closed when the other kind starts or the reply
    is complete.
    """

    def __init__(self, request_id: str, body: ResponsesBody, created: int) -> None:
        self.request_id = request_id
        self.body = body
        self.created = created
        self.sequence = 0
        self.output: list[dict[str, Any]] = []
        self.open: str | None = None  # the kind of the item taking deltas: "message", "reasoning" or None
        self.item_id = ""
        self.pieces: list[str] = []
        self.streamed_text = False
        self.streamed_reasoning = False
        self.ended = False
        self.include = tuple(body.include or ())
        self.summary: list[dict[str, Any]] = []  # the closed parts of the open upstream reasoning item
        self.part: int | None = None  # the summary part taking deltas
        self.shown_ids: set[str] = set()  # the upstream reasoning items already closed in the stream

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

    def _piece(self, kind: str, text: str) -> bytes:
        """One delta of text or reasoning, opening its item first when another kind (or none) is open."""
        out = b""
        index = len(self.output)
        if self.open != kind:
            out += self._close()
            index = len(self.output)
            self.open, self.pieces = kind, []
            if kind == "message":
                self.item_id = item_id(self.request_id, "msg", index, self.streamed_text)
                item, part = message_item(self.item_id, "", "in_progress"), empty_part("output_text")
            else:
                self.item_id = item_id(self.request_id, "rs", index, self.streamed_reasoning)
                item, part = reasoning_item(self.item_id, "", "in_progress"), empty_part("reasoning_text")
            out += self._event("response.output_item.added", output_index=index, item=item)
            out += self._event("response.content_part.added", item_id=self.item_id, output_index=index,
                               content_index=0, part=part)
        self.pieces.append(text)
        if kind == "message":
            self.streamed_text = True
            return out + self._event("response.output_text.delta", item_id=self.item_id, output_index=index,
                                     content_index=0, delta=text, logprobs=[])
        self.streamed_reasoning = True
        return out + self._event("response.reasoning_text.delta", item_id=self.item_id, output_index=index,
                                 content_index=0, delta=text)

    def _close(self) -> bytes:
        if self.open is None:
            return b""
        if self.open == "summary":  # the upstream never closed it (a cut answer): what streamed
            return self._reasoning_done({"id": self.item_id, "type": "reasoning", "summary": []})
        kind, self.open = self.open, None
        text = "".join(self.pieces)
        index = len(self.output)
        if kind == "message":
            item = message_item(self.item_id, text)
            done = self._event("response.output_text.done", item_id=self.item_id, output_index=index,
                               content_index=0, text=text, logprobs=[])
        else:
            item = reasoning_item(self.item_id, text)
            done = self._event("response.reasoning_text.done", item_id=self.item_id, output_index=index,
                               content_index=0, text=text)
        self.output.append(item)
        return (done + self._event("response.content_part.done", item_id=self.item_id, output_index=index,
                                   content_index=0, part=item["content"][0])
                + self._event("response.output_item.done", output_index=index, item=item))

    def _summary(self, where: Mapping[str, Any], text: str) -> bytes:
        """A summary delta of the upstream's reasoning item ``where["id"]``, part ``where["summary_index"]``."""
        out = b""
        if self.open != "summary" or self.item_id != where.get("id"):
            out += self._close()
            self.open, self.item_id, self.summary, self.part = "summary", str(where.get("id")), [], None
            out += self._event("response.output_item.added", output_index=len(self.output),
                               item={"id": self.item_id, "type": "reasoning", "summary": []})
        index, part = len(self.output), where.get("summary_index") or 0
        if self.part != part:
            out += self._part_done()
            self.part, self.pieces = part, []
            out += self._event("response.reasoning_summary_part.added", item_id=self.item_id, output_index=index,
                               summary_index=part, part={"type": "summary_text", "text": ""})
        self.pieces.append(text)
        self.streamed_reasoning = True
        return out + self._event("response.reasoning_summary_text.delta", item_id=self.item_id,
                                 output_index=index, summary_index=part, delta=text)

    def _part_done(self) -> bytes:
        if self.part is None:
            return b""
        part, text, self.part = self.part, "".join(self.pieces), None
        self.summary.append({"type": "summary_text", "text": text})
        index = len(self.output)
        return (self._event("response.reasoning_summary_text.done", item_id=self.item_id, output_index=index,
                            summary_index=part, text=text)
                + self._event("response.reasoning_summary_part.done", item_id=self.item_id, output_index=index,
                              summary_index=part, part=self.summary[-1]))

    def _reasoning_done(self, item: Mapping[str, Any]) -> bytes:
        """The upstream's reasoning item closed: as it came (the streamed summary if it came without one)."""
        out = b""
        if self.open == "summary" and self.item_id == item.get("id"):
            out += self._part_done()
            self.open = None
            if not item.get("summary") and self.summary:
                item = {**item, "summary": list(self.summary)}
        else:
            out += self._close()
            out += self._event("response.output_item.added", output_index=len(self.output),
                               item={"id": item.get("id"), "type": "reasoning", "summary": []})
        self.shown_ids.add(str(item.get("id")))
        closed = shown(item, self.include)
        index = len(self.output)
        self.output.append(closed)
        return out + self._event("response.output_item.done", output_index=index, item=closed)

    def partial(self, message: Message) -> bytes:
        out = b""
        meta = message.metadata
        reasoning = meta.get("reasoning") if meta else None
        if isinstance(reasoning, str) and reasoning:
            where = meta.get("reasoning_part")
            if isinstance(where, Mapping):
                out += self._summary(where, reasoning)
            else:
                out += self._piece("reasoning", reasoning)
        item = meta.get("reasoning_item") if meta else None
        if isinstance(item, Mapping):
            out += self._reasoning_done(item)
        if isinstance(message.content, str) and message.content:
            out += self._piece("message", message.content)
        return out

    def final(self, reply: Message) -> bytes:
        """What the final message adds: reasoning and text not streamed before, then its tool calls."""
        out = b""
        kept = kept_reasoning(reply)
        for item in kept:  # items the stream did not close (an upstream that answered in one piece)
            if str(item.get("id")) not in self.shown_ids:
                out += self._reasoning_done(item)
        reasoning = reply.metadata.get("reasoning")
        if not kept and not self.streamed_reasoning and isinstance(reasoning, str) and reasoning:
            out += self._piece("reasoning", reasoning)
        if not self.streamed_text and isinstance(reply.content, str) and reply.content:
            out += self._piece("message", reply.content)
        out += self._close()
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
        out = self._close()
        self.ended = True
        status, incomplete = finish_of(reply)
        response = self._response(status, usage=usage_of(usage, reply), incomplete=incomplete, reply=reply)
        kind = "response.completed" if status == "completed" else "response.incomplete"
        return out + self._event(kind, response=response)

    def error(self, error: dict[str, Any]) -> bytes:
        """The failure as an ``error`` event, then ``response.failed`` for clients that wait for a terminal response."""
        self.ended = True
        code = error.get("code") or error.get("type")
        out = self._event("error", code=code, message=error.get("message"), param=error.get("param"))
        failed = self._response("failed", error={"code": code, "message": error.get("message")})
        return out + self._event("response.failed", response=failed)


def item_id(request_id: str, prefix: str, index: int, again: bool) -> str:
    """``msg_<request id>`` (``rs_...``); a second item of the same kind gets its output index too."""
    return f"{prefix}_{request_id}_{index}" if again else f"{prefix}_{request_id}"


def empty_part(kind: str) -> dict[str, Any]:
    return {"type": kind, "text": "", "annotations": []} if kind == "output_text" else {"type": kind, "text": ""}
