"""A one-shot call: one JSON answer (a non-streamed completion, the model list).

Its attempt sends the request, reads the whole body, turns an error status
into its typed error and decodes the JSON; the retry rule around it is the
streamed call's (:func:`~._retry.retried`). The answer is the flow's one
event, so both drivers hand it over the same way.
"""

from __future__ import annotations

from collections.abc import Generator
from typing import Any

from ._decoding import check_status, decode_body
from ._exchange import Exchange
from ._retry import Attempt, retried

__all__ = ["AnswerAttempt", "answer_flow"]


def answer_flow(exchange: Exchange) -> Generator[Any, Any, None]:
    """The one-shot call of ``exchange``, with retries; its one event is the decoded JSON answer.

    Raises:
        LLMError: a typed error for an error status or a transport failure.
        MalformedResponseError: the body is not JSON (or not UTF-8).
        LLMTimeoutError: the call's deadline passed.
        ProviderRequestCancelled: the call was cancelled.
    """
    return retried(exchange, lambda: AnswerAttempt(exchange))


class AnswerAttempt(Attempt):
    """One attempt at a one-shot call."""

    __slots__ = ("exchange",)

    def __init__(self, exchange: Exchange) -> None:
        self.exchange = exchange

    def run(self) -> Generator[Any, Any, None]:
        exchange, call = self.exchange, self.exchange.call
        response = yield exchange.send()
        body = yield exchange.read_all()
        exchange.record.raise_if_cancelled()
        check_status(call, response, body)
        exchange.answered = response.headers  # its rate-limit headers go on with the answer
        yield decode_body(call, body, response.status_code)
