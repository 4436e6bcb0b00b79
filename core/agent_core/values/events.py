"""What a streaming request yields: a tagged union of frozen events.

Every event has ``type`` (the JSON tag) and ``request_id``. The sequence for
one request is::

    start  tools?  (partial* final+ tools?)*  error?  done
    tools = tool_call+ (user_message* (tool_progress* tool_result))+

``tools`` before the first ``final`` answers tool calls an earlier request
left pending (iteration 0). ``start`` is always first, even when the plugins
cannot be resolved (then ``start error done``).

``done`` is always last and carries the new ``session`` and the ``outcome``.
Events are msgspec structs: ``encode_event(ev)`` gives JSON, and the JSON
Schemas in ``schemas/`` are generated from these classes. For code written
against the original platform, events also answer ``event["type"]`` and
``event["message"]["content"]``.
"""

from __future__ import annotations

from typing import Any, Literal, Union

import msgspec

from ..errors import UpstreamDetail
from .frozen import FrozenVector
from .messages import Message, PartialMessage, Session

__all__ = [
    "AnsweredEvent",
    "DoneEvent",
    "ErrorEvent",
    "ErrorInfo",
    "Event",
    "FinalEvent",
    "Outcome",
    "PartialEvent",
    "StartEvent",
    "StopReason",
    "ToolCallEvent",
    "ToolProgressEvent",
    "ToolResultEvent",
    "Usage",
    "UserMessageEvent",
    "decode_event",
    "encode_event",
]

StopReason = Literal[
    "cancelled", "max_turns", "truncated", "tool_failure", "provider_error", "plugin_error", "invalid_input"
]


class _ItemAccess:
    """``obj["field"]`` reads ``obj.field``: dict-style access for older callers."""

    __slots__ = ()

    @property
    def type(self) -> str:
        """The event's tag (``"partial"``, ``"done"``...)."""
        return type(self).__struct_config__.tag  # type: ignore[attr-defined,no-any-return]

    def __getitem__(self, key: str) -> Any:
        try:
            return getattr(self, key)
        except AttributeError:
            raise KeyError(key) from None

    def get(self, key: str, default: Any = None) -> Any:
        return getattr(self, key, default)


class Outcome(msgspec.Struct, frozen=True):
    """How a request ended: ``finished``, or ``stopped`` with a ``reason``."""

    status: Literal["finished", "stopped"]
    reason: StopReason | None = None
    detail: str | None = None

    @property
    def ok(self) -> bool:
        return self.status == "finished"


FINISHED = Outcome("finished")


class Usage(msgspec.Struct, frozen=True):
    """Token counts summed over the provider calls of one request."""

    input_tokens: int = 0
    output_tokens: int = 0
    provider_calls: int = 0

    @property
    def total_tokens(self) -> int:
        return self.input_tokens + self.output_tokens


class ErrorInfo(msgspec.Struct, frozen=True):
    """A JSON-friendly description of the exception that stopped a request.

    ``upstream`` is the model API's own account of the failure (its status,
    type, code, param, message and rate-limit headers) when an API answered:
    the exception is gone by the time a stream's reader sees this, and a
    gateway must repeat the upstream's words, not ours.
    """

    type: str
    message: str
    plugin: str | None = None
    hook: str | None = None
    status_code: int | None = None
    retry_after: float | None = None
    upstream: UpstreamDetail | None = None


class StartEvent(_ItemAccess, msgspec.Struct, frozen=True, tag="start"):
    """First event: the request id (for ``cancel_request``) and the plugins in play.

    ``warnings`` names config keys that no installed plugin declares (likely
    typos), so a server can show them.
    """

    request_id: str
    provider: str
    extensions: list[str]
    features: list[str]
    tools: list[str]
    warnings: list[str] = []


class AnsweredEvent(_ItemAccess, msgspec.Struct, frozen=True, tag="answered"):
    """The provider's stream sent its first chunk: the upstream API has answered.

    Sent only when the config asks (``announce_answer``): a gateway then knows it can
    send its own status and headers, while a model that thinks before its first token
    has not said anything yet. Once per streamed provider call, before that chunk's events.
    """

    request_id: str
    iteration: int = 1


class PartialEvent(_ItemAccess, msgspec.Struct, frozen=True, tag="partial"):
    """New streamed text (a delta, not the text so far)."""

    request_id: str
    message: PartialMessage
    iteration: int = 1


class FinalEvent(_ItemAccess, msgspec.Struct, frozen=True, tag="final"):
    """A finished message from the model, after every transform.

    ``session`` is None, except from ``send_request_stream`` (the original
    platform's name), where each final carries the session with its message.
    """

    request_id: str
    message: Message
    iteration: int = 1
    session: Session | None = None


class ToolCallEvent(_ItemAccess, msgspec.Struct, frozen=True, tag="tool_call"):
    """The model asked for a tool; ``preview`` is the tool's one-line summary."""

    request_id: str
    call_id: str
    tool_name: str | None
    plugin: str | None
    payload: Any
    preview: str = ""
    iteration: int = 1


class ToolProgressEvent(_ItemAccess, msgspec.Struct, frozen=True, tag="tool_progress"):
    """A part streamed by a running tool (``stream_tool``)."""

    request_id: str
    call_id: str
    tool_name: str | None
    part: Any


class ToolResultEvent(_ItemAccess, msgspec.Struct, frozen=True, tag="tool_result"):
    """A tool finished; ``message`` is the ``tool`` message added to the session.

    ``suppressed`` is True when a ``tool_pre`` action asked to hide the
    tool's output from the user (``suppress_output``): the model still reads
    ``message``, but ``display`` is None and no ``tool_progress`` came before.
    """

    request_id: str
    call_id: str
    tool_name: str | None
    success: bool
    message: Message
    display: Any = None
    suppressed: bool = False


class UserMessageEvent(_ItemAccess, msgspec.Struct, frozen=True, tag="user_message"):
    """A message for the user (not the model) from a ``tool_pre`` action's ``user_message``."""

    request_id: str
    plugin: str
    message: str
    level: Literal["info", "warning", "error"] = "info"
    call_id: str | None = None


class ErrorEvent(_ItemAccess, msgspec.Struct, frozen=True, tag="error"):
    """The request failed; ``done`` follows with a ``stopped`` outcome."""

    request_id: str
    error: ErrorInfo


class DoneEvent(_ItemAccess, msgspec.Struct, frozen=True, tag="done"):
    """Last event. On success ``session`` is the new session; when stopped by
    an error it is the input session, unchanged (nothing half-applied)."""

    request_id: str
    session: Session
    outcome: Outcome
    usage: Usage
    final_messages: list[Message]


Event = Union[
    StartEvent, AnsweredEvent, PartialEvent, FinalEvent, ToolCallEvent, ToolProgressEvent, ToolResultEvent, UserMessageEvent,
    ErrorEvent, DoneEvent,
]


def _enc_hook(obj: Any) -> Any:
    if isinstance(obj, FrozenVector):
        return list(obj)
    if isinstance(obj, str):  # str subclasses such as PluginRef
        return str(obj)
    if isinstance(obj, frozenset):
        return sorted(obj, key=repr)
    raise NotImplementedError(f"cannot encode {type(obj).__name__}")


# ``event.type`` is read for every event a caller handles: a plain class attribute per
# event class answers it without the property's lookup of the struct config.
for _cls in (StartEvent, AnsweredEvent, PartialEvent, FinalEvent, ToolCallEvent, ToolProgressEvent, ToolResultEvent,
             UserMessageEvent, ErrorEvent, DoneEvent):
    _cls.type = _cls.__struct_config__.tag  # type: ignore[misc,assignment]
del _cls

_encoder = msgspec.json.Encoder(enc_hook=_enc_hook)


def encode_event(event: Event) -> bytes:
    """JSON bytes for one event (messages in their serialized shape)."""
    return _encoder.encode(_to_builtins(event))


def _to_builtins(value: Any) -> Any:
    if isinstance(value, (Message, PartialMessage, Session)):
        return value._json_view()
    if isinstance(value, msgspec.Struct):
        out = {}
        tag = type(value).__struct_config__.tag
        if tag is not None:
            out["type"] = tag
        for f in value.__struct_fields__:
            out[f] = _to_builtins(getattr(value, f))
        return out
    if isinstance(value, (list, tuple, FrozenVector)) and not isinstance(value, str):
        return [_to_builtins(v) for v in value]
    return value


_decoder = msgspec.json.Decoder(Event)


def decode_event(data: bytes | str) -> Event:
    """Parse JSON produced by :func:`encode_event` back into an event."""
    return _decoder.decode(data)
