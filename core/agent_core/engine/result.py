"""What a request returns when it runs to completion, and how it is read off the run's ``done``."""

from __future__ import annotations

from typing import Any

import msgspec

from ..values.events import DoneEvent, Outcome, Usage
from ..values.messages import Message, Session

__all__ = ["RequestResult", "result_of"]


class RequestResult(msgspec.Struct, frozen=True):
    """What ``request`` returns.

    ``final_messages`` are the messages this request added to the session, in
    order (assistant replies and tool results); ``final_messages[-1]`` is the
    reply when the outcome is ``finished``.
    """

    session: Session
    final_messages: list[Message]
    outcome: Outcome
    request_id: str
    usage: Usage


def result_of(run: Any, done: DoneEvent | None) -> RequestResult:
    """The result of a finished run; the error it stopped with is raised instead (request and arequest share this)."""
    if run.error is not None:
        raise run.error
    assert done is not None
    return RequestResult(done.session, done.final_messages, done.outcome, done.request_id, done.usage)
