"""The original platform's method names, kept as documented API (``docs/engine.md``).

Code written for the platform agent-core replaces calls ``send_request``,
``send_request_stream``, ``slice_session`` and ``execute_session_action``;
:class:`PlatformNames` gives ``AgentCore`` those names over its own methods,
so such code runs unchanged while the engine's own names stay the primary API.
The module imports nothing of the kernel when it loads (the engine imports it),
so it sits below every room.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator, Mapping
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .values.events import Event
    from .values.messages import Session

__all__ = ["PlatformNames"]


class PlatformNames:
    """``AgentCore`` methods under the original platform's names."""

    def send_request(self, session: Session, config: Mapping[str, Any] | None = None) -> tuple[Session, list[dict[str, Any]]]:
        """The original platform's name: ``(new_session, final message dicts)``."""
        result = self.request(session, config)  # type: ignore[attr-defined]
        return result.session, [m.to_dict() for m in result.final_messages]

    def send_request_stream(self, session: Session, config: Mapping[str, Any] | None = None) -> Iterator[Event]:
        """The original platform's name for ``stream_request``.

        The same events, except that every ``final`` event carries
        ``session``: the session up to and including its message, so code
        written for the original platform can take ``chunk["session"]`` from
        the last ``final``. (``done`` still comes last, with the outcome.)
        """
        return self._stream(session, config, None, final_sessions=True)  # type: ignore[attr-defined]

    def execute_session_action(self, *args: Any, **kwargs: Any) -> Any:
        """The original platform's name for ``execute_action``: the same arguments, the same ``ActionResult``."""
        return self.execute_action(*args, **kwargs)  # type: ignore[attr-defined]

    def slice_session(
        self, session: Session, start: int | None = None, end: int | None = None, *, session_id: str | None = None
    ) -> Session:
        """A temporary session holding ``session.messages[start:end]`` (the original platform's name).

        For a feature that asks the model something on the side (summarize the
        first half, classify the last message). The slice gets a fresh id (or
        ``session_id``) and the original's metadata without the stored native
        history, which describes the whole conversation and would not match.
        The original session is untouched.
        """
        from .errors import InvalidArgumentError
        from .values.messages import Session
        from .values.native_history import NATIVE_KEY

        if not isinstance(session, Session):  # checked here: this module stands below the engine
            raise InvalidArgumentError(f"slice_session expects a Session, got {type(session).__name__}",
                                       argument="session")
        meta = {k: v for k, v in session.metadata.items() if k != NATIVE_KEY}
        return Session(session_id or uuid.uuid4().hex, list(session.messages)[start:end], meta)
