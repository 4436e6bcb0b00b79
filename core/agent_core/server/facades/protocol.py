"""What a facade is: the parts a dialect brings, and what the shared runner does with them.

A facade request goes one way, whichever API the client speaks
(:func:`~.runner.run_facade`): the facade reads the body and says what it asks for (a
:class:`Plan`); the runner fits that to the tenant's policy and the provider, runs the
turn (or ``n`` of them), and hands the result back to the facade to write, whole
(:meth:`Facade.answer`) or as the frames of a stream (:meth:`Facade.frames`, a
:class:`Frames`). A dialect is then these parts and nothing of the turn's running:
cancelling, hang-ups, ``X-Session-Id`` saves and early failures are the runner's alone.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any, Protocol

from starlette.requests import Request

from ...types import Session
from ..http.failures import Failure
from ..state import ServerState

__all__ = ["Facade", "Frames", "OneAnswer", "Plan"]


class Plan:
    """What a facade request asks for, read from its body before anything runs.

    ``client`` holds the config keys the body sets (before the tenant's policy sees them);
    ``fields`` names the wire field behind a renamed key (for a 400 that names it) and
    ``droppable(key, value)`` says which keys a provider without them may simply go without
    (:func:`~.fields.fit_to_provider`). ``body`` is the facade's own parsed body, handed back
    to it when it writes the answer.
    """

    __slots__ = ("body", "choices", "client", "droppable", "fields", "session", "stream")

    def __init__(self, body: Any, client: dict[str, Any], session: Session, *, stream: bool,
                 fields: Mapping[str, str], droppable: Callable[[str, Any], bool], choices: int = 1) -> None:
        self.body = body
        self.client = client
        self.session = session
        self.stream = stream
        self.fields = fields
        self.droppable = droppable
        self.choices = choices


class Frames(Protocol):
    """A streamed answer in one dialect: each method returns the bytes of its frames (or None for none).

    ``choice`` numbers the turns of a request that asked for several answers (always 0 for
    a dialect that has one). The runner calls :meth:`failed` once, when the stream ends early
    (an error, a cancelled request, a failed save, or a retry after text was shown);
    :meth:`closing` when every turn is done.
    """

    def opening(self) -> bytes | None: ...

    def partial(self, choice: int, message: Any) -> bytes | None: ...

    def final(self, choice: int, message: Any) -> bytes | None: ...

    def shown(self, choice: int) -> bool:
        """Text or reasoning of ``choice``'s answer went out already (a retry cannot take it back)."""
        ...

    def done(self, choice: int, usage: Any) -> bytes | None: ...

    def failed(self, failure: Failure) -> bytes: ...

    def closing(self) -> bytes | None: ...

    def is_last(self, frame: bytes) -> bool:
        """``frame`` ended the stream: the response needs nothing more after it."""
        ...


class Facade(Protocol):
    """One dialect: how its requests are read and its answers written."""

    #: the error shape of the dialect (``openai``, ``anthropic``): a failure before the stream is one of these
    dialect: str

    async def plan(self, state: ServerState, request: Request, raw: bytes, session_id: str) -> Plan:
        """The body parsed into the dialect's Structs, and what it asks for; a 4xx for a body that cannot run.

        ``session_id`` is the id of the session the body's conversation becomes.
        """
        ...

    def headers(self, request_id: str) -> dict[str, str]:
        """The headers every answer carries (the request's id, under the dialect's own name too)."""
        ...

    def answer(self, plan: Plan, request_id: str, results: Sequence[Any]) -> tuple[bytes, Any]:
        """The whole answer's JSON body for the turns' results, and the reply whose rate limits it passes on."""
        ...

    def frames(self, plan: Plan, request_id: str) -> Frames:
        """The writer of a streamed answer."""
        ...


class OneAnswer:
    """The :class:`Frames` of a dialect with one answer per request, over that dialect's stream writer.

    ``out`` writes the dialect's events (``start``, ``partial``, ``final``, ``end``; ``ended``
    once a terminal event went out; ``streamed_text`` / ``streamed_reasoning``); ``error(out, failure)``
    writes a failure as the dialect's closing error event(s).
    """

    __slots__ = ("error", "out", "reply")

    def __init__(self, out: Any, error: Callable[[Any, Failure], bytes]) -> None:
        self.out = out
        self.error = error
        self.reply: Any = None

    def opening(self) -> bytes:
        return self.out.start()  # type: ignore[no-any-return]

    def partial(self, choice: int, message: Any) -> bytes:
        return self.out.partial(message)  # type: ignore[no-any-return]

    def final(self, choice: int, reply: Any) -> bytes:
        self.reply = reply
        return self.out.final(reply)  # type: ignore[no-any-return]

    def shown(self, choice: int) -> bool:
        return bool(self.out.streamed_text or self.out.streamed_reasoning)

    def done(self, choice: int, usage: Any) -> bytes:
        return self.out.end(self.reply, usage)  # type: ignore[no-any-return]

    def failed(self, failure: Failure) -> bytes:
        return self.error(self.out, failure)

    def closing(self) -> None:
        return None

    def is_last(self, frame: bytes) -> bool:
        return bool(self.out.ended)
