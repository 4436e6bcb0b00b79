"""What a streaming request yields: a tagged union of frozen events.

Every event has ``type`` (the JSON tag) and ``request_id``. The sequence for
one request is::

    start  tools?  (partial* (retract partial*)* final+ tools?)*  error?  done
    tools = tool_call+ (user_message* (tool_progress* tool_result))+

A ``retract`` voids the partials of its provider call that came before it (the
stream broke after showing text and the provider is trying again, see
:class:`RetractEvent`); the ``final`` events that follow belong to the attempt that
succeeded.

``tools`` before the first ``final`` answers tool calls an earlier request
left pending (iteration 0). ``start`` is always first, even when the plugins
cannot be resolved (then ``start error done``).

``done`` is always last and carries the new ``session`` and the ``outcome``.
Events are msgspec structs: ``encode_event(ev)`` gives JSON, and the JSON
Schemas in ``schemas/`` are generated from these classes. For code written
against the original platform, events also answer ``event["type"]`` and
``event["message"]["content"]``.

Why one module: the union is closed, and its codec (``encode_event``/``decode_event``)
is written against the same list of classes, so a new event cannot be added here
without meeting its JSON form.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Literal, Union

import msgspec

from ..errors import LLMError, MissingAPIKeyError, PluginError, UpstreamDetail
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
    "RetractEvent",
    "RetryingEvent",
    "StartEvent",
    "StopReason",
    "StreamRetry",
    "ToolCallEvent",
    "ToolProgressEvent",
    "ToolResultEvent",
    "Usage",
    "UserMessageEvent",
    "decode_event",
    "encode_event",
    "error_info",
]

StopReason = Literal["cancelled", "max_turns", "truncated", "tool_failure", "repeated_tool_call", "provider_error",
                     "plugin_error", "invalid_input"]


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

    def __getitem__(self, key: str) -> int:
        """``usage["input_tokens"]``, as the dict ``--json`` and the HTTP API show reads."""
        if key in self.__struct_fields__ or key == "total_tokens":
            return getattr(self, key)  # type: ignore[no-any-return]
        raise KeyError(key)

    def get(self, key: str, default: Any = None) -> Any:
        return self[key] if key in self.__struct_fields__ or key == "total_tokens" else default


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


def error_info(exc: BaseException) -> ErrorInfo:
    """The :class:`ErrorInfo` an ``error`` (or ``retract``) event carries for ``exc``."""
    if isinstance(exc, PluginError):
        return ErrorInfo("PluginError", str(exc), exc.plugin, exc.hook)
    if isinstance(exc, LLMError):
        upstream = getattr(exc, "upstream", None)  # a third party's subclass may not set it
        return ErrorInfo(
            type(exc).__name__, str(exc), exc.provider, None, exc.status_code, getattr(exc, "retry_after", None),
            upstream if isinstance(upstream, UpstreamDetail) else None,
        )
    if isinstance(exc, MissingAPIKeyError) and exc.plugins:  # which provider: a server says whose key is missing
        return ErrorInfo(type(exc).__name__, str(exc), exc.plugins[0])
    return ErrorInfo(type(exc).__name__, str(exc))


class StreamRetry:
    """What a provider's stream yields when it starts over after it had already yielded output.

    Not an event: a marker in the stream of native chunks (``stream_api`` /
    ``astream_api``). It says that every chunk the stream yielded before it is
    void, and that the chunks after it are a new attempt at the same request.
    The engine then drops what the provider call had built from those chunks
    (every plugin's hot-path state, history and finals go back to what they
    were when the call began) and tells its caller with a :class:`RetractEvent`,
    so nobody keeps text the model never finished saying.

    ``attempt`` numbers the attempt that begins (2 for the first retry);
    ``error`` is the failure that ended the one before; ``usage`` is what the
    API reported for that broken attempt (``input_tokens``, ``output_tokens``),
    when it reported anything, because it may still be billed.

    A provider may also yield one for a retry *before* any output, with
    ``voids=False``: nothing is forgotten then, but the caller still learns
    that a retry is coming (a 429's ``retry-after`` can be seconds of silence).
    ``delay_s`` is how long the provider waits before the attempt, and
    ``attempts`` the most attempts its retry budget allows (``None``: unknown).
    Either way the engine yields a :class:`RetryingEvent`.
    """

    __slots__ = ("attempt", "attempts", "delay_s", "error", "usage", "voids")

    def __init__(self, attempt: int, error: BaseException | None = None,
                 usage: Mapping[str, Any] | None = None, *, delay_s: float | None = None,
                 voids: bool = True, attempts: int | None = None) -> None:
        self.attempt = attempt
        self.error = error
        self.usage = usage
        self.delay_s = delay_s
        self.voids = voids
        self.attempts = attempts

    def __repr__(self) -> str:
        return (f"StreamRetry(attempt={self.attempt}, error={self.error!r}, usage={self.usage!r}, "
                f"delay_s={self.delay_s!r}, voids={self.voids!r}, attempts={self.attempts!r})")


class StartEvent(_ItemAccess, msgspec.Struct, frozen=True, tag="start"):
    """First event: the request id (for ``cancel_request``) and the plugins in play.

    ``warnings`` names config keys that no installed plugin declares (likely
    typos) and tools left out of the request because another plugin's tool has
    their name (a plugin's ``tool_names_give_way``), so a server can show them.
    It comes once the request's tools are set up.
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


class RetractEvent(_ItemAccess, msgspec.Struct, frozen=True, tag="retract"):
    """Forget everything the provider call ``iteration`` has streamed so far: it is being tried again.

    The call's stream broke after it had shown output (a dropped connection,
    an ``overloaded_error`` in the middle, a stall past ``chunk_timeout_s``)
    and the provider repeats the request. Every ``partial`` of this
    iteration before this event is void, so a UI clears the text it showed
    for the call; the partials after it are the new attempt's, from its
    first word, and only that attempt's ``final`` events follow.

    ``attempt`` numbers the attempt that begins (2 for the first retry);
    ``error`` is the failure that ended the one before; ``usage`` is what the
    API reported for the broken attempt, when it did (it is added to the
    request's ``done.usage``; ``provider_calls`` stays 0 here: the call is
    counted once).
    """

    request_id: str
    iteration: int = 1
    attempt: int = 2
    error: ErrorInfo | None = None
    usage: Usage | None = None


class RetryingEvent(_ItemAccess, msgspec.Struct, frozen=True, tag="retrying"):
    """The provider call ``iteration`` failed and will be tried again after ``delay_s`` seconds.

    So a CLI or a UI can say why nothing arrives for a while ("rate limited; retrying in
    3 s, attempt 2 of 3") instead of going silent. ``attempt`` numbers the attempt that
    begins (2 for the first retry), ``attempts`` is the most the retry budget allows
    (``None`` when the provider did not say), ``error`` the failure that ended the one
    before. After output it follows the :class:`RetractEvent` that voided that output.
    """

    request_id: str
    iteration: int = 1
    attempt: int = 2
    attempts: int | None = None
    delay_s: float | None = None
    error: ErrorInfo | None = None


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
    StartEvent, AnsweredEvent, PartialEvent, RetractEvent, RetryingEvent, FinalEvent, ToolCallEvent,
    ToolProgressEvent, ToolResultEvent, UserMessageEvent, ErrorEvent, DoneEvent,
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
for _cls in (StartEvent, AnsweredEvent, PartialEvent, RetractEvent, RetryingEvent, FinalEvent, ToolCallEvent,
             ToolProgressEvent, ToolResultEvent, UserMessageEvent, ErrorEvent, DoneEvent):
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
