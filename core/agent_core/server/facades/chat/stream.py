"""A Chat Completions stream's frames: a role chunk per choice, the replies' chunks, a finish chunk each, ``[DONE]``.

The shared runner (:func:`~..runner.stream_frames`) hands each event of each choice to a
:class:`ChatStream`, which writes it as OpenAI's chunks do. Each choice's role chunk waits
for its first output, so it can say what OpenAI's does: content ``""`` ahead of text,
null ahead of tool calls (a client that appends content to ``""`` never meets a null).
The chunks and errors name the client's request id.
"""

from __future__ import annotations

import time
from typing import Any

from ...http.failures import Failure, sse_error_frame
from ...http.wire import sse_frame
from ..usage_details import chat_notes
from .dialect import TextFrames, choice_finish, chunk, logprobs_of, usage_body, wire_calls

__all__ = ["DONE", "ChatStream"]

DONE = b"data: [DONE]\n\n"


class ChatStream:
    """The frames of one streamed chat completion of ``choices`` choices (a :class:`~..protocol.Frames`)."""

    __slots__ = ("created", "ended", "include_usage", "legacy", "model", "opened", "replies", "rid", "streamed",
                 "texts", "usages")

    def __init__(self, rid: str, model: str, choices: int, include_usage: bool, legacy: bool) -> None:
        self.rid, self.model, self.created = rid, model, int(time.time())
        self.include_usage, self.legacy = include_usage, legacy
        self.texts = TextFrames(rid, model, self.created, choices)
        self.opened = [False] * choices
        self.streamed = [False] * choices
        self.replies: list[Any] = [None] * choices
        self.usages: list[Any] = [None] * choices
        self.ended = False

    def _role(self, i: int, content: str | None) -> bytes:
        self.opened[i] = True
        return sse_frame(chunk(self.rid, self.model, self.created,
                               {"role": "assistant", "content": content, "refusal": None}, index=i))

    def opening(self) -> None:
        return None

    def partial(self, i: int, message: Any) -> bytes | None:
        text = message.content
        if not (isinstance(text, str) and text):
            return None
        frame = self.texts.frame(text, i)
        self.streamed[i] = True
        return frame if self.opened[i] else self._role(i, "") + frame

    def final(self, i: int, reply: Any) -> bytes:
        self.replies[i] = reply
        head = b""
        if not self.opened[i]:
            content = reply.content
            head = self._role(i, None if wire_calls(reply) and not (isinstance(content, str) and content) else "")
        return head + b"".join(_reply_frames(self.rid, self.model, self.created, reply, self.streamed[i], i,
                                             self.legacy))

    def shown(self, i: int) -> bool:
        return self.streamed[i]

    def done(self, i: int, usage: Any) -> bytes:
        head = b"" if self.opened[i] else self._role(i, "")  # no reply at all: the role chunk still opens the choice
        self.usages[i] = usage
        reply = self.replies[i]
        # the reply's log-probabilities, when asked for, ride on its last chunk (they come whole)
        return head + sse_frame(chunk(self.rid, self.model, self.created, {}, choice_finish(reply, self.legacy),
                                      index=i, logprobs=logprobs_of(reply), notes=chat_notes(reply)))

    def failed(self, failure: Failure) -> bytes:
        self.ended = True
        return sse_error_frame(failure, "openai") + DONE

    def closing(self) -> bytes:
        self.ended = True
        if not self.include_usage:
            return DONE
        usage = usage_body(*self.usages, replies=self.replies)
        return sse_frame(chunk(self.rid, self.model, self.created, None, usage=usage,
                               notes=chat_notes(self.replies[0]))) + DONE

    def is_last(self, frame: bytes) -> bool:
        return self.ended


def _reply_frames(rid: str, model: str, created: int, reply: Any, streamed: bool, index: int,
                  legacy: bool) -> list[bytes]:
    """A final reply's frames: its text when no partial carried it, then its tool calls (or legacy function call)."""
    frames = []
    if not streamed and isinstance(reply.content, str) and reply.content:
        frames.append(sse_frame(chunk(rid, model, created, {"content": reply.content}, index=index)))
    calls = wire_calls(reply)
    if calls and legacy:
        frames.append(sse_frame(chunk(rid, model, created, {"function_call": calls[0]["function"]}, index=index)))
    elif calls:
        delta = [{"index": i, **c} for i, c in enumerate(calls)]
        frames.append(sse_frame(chunk(rid, model, created, {"tool_calls": delta}, index=index)))
    return frames
