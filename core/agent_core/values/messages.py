"""The values that flow through the pipeline: messages, sessions, tool descriptors.

Every type here is a frozen ``msgspec.Struct`` whose container fields are
deeply frozen (see :mod:`agent_core.values.frozen`), so a value handed to one plugin
can never change under another. Changing a value means deriving a new one
(``session.with_message(msg)``); the old value stays valid, which is what lets
a request handler keep no state of its own.

Serialized forms follow the original platform: ``Message`` uses the keys
``role``, ``content``, ``metadata`` (left out when empty), ``multipartContent``
and ``toolResult``; ``Session`` uses ``session_id``, ``messages``, ``metadata``.
``to_dict`` returns plain, independent dicts and lists; ``to_json`` encodes the
same shape with msgspec without thawing first.

Why one module: the values here share one serialised form (``_JsonForm``) and one set
of field checks, which stay private to the values that use them.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any, ClassVar, Literal, Self, get_args

import msgspec
from msgspec.structs import force_setattr

from ..errors import InvalidValueError, MissingFieldError
from .frozen import FrozenDict, FrozenList, FrozenVector, thaw
from .json_values import freeze_json

__all__ = ["ROLES", "Message", "PartialMessage", "Role", "Session", "ToolDescriptor"]

Role = Literal["system", "user", "assistant", "tool"]
ROLES: tuple[str, ...] = get_args(Role)

_EMPTY = freeze_json(FrozenDict())
#: the empty metadata every value shares (a partial built with it skips the check of its metadata)
EMPTY_METADATA = _EMPTY
_json_encoder = msgspec.json.Encoder()
_json_decoder = msgspec.json.Decoder()


_KEY_TO_FIELD = {"multipartContent": "multipart_content", "toolResult": "tool_result"}


class _ReadsLikeDict:
    """``msg["content"]`` / ``msg.get("metadata")`` read the serialized keys.

    Code written for the original platform indexes messages as dicts; this
    keeps it working without making messages mutable mappings.
    """

    __slots__ = ()

    def __getitem__(self, key: str) -> Any:
        field = _KEY_TO_FIELD.get(key, key)
        if field not in self.__struct_fields__:  # type: ignore[attr-defined]
            raise KeyError(key)
        return getattr(self, field)

    def get(self, key: str, default: Any = None) -> Any:
        try:
            value = self[key]
        except KeyError:
            return default
        return default if value is None else value


class _JsonForm:
    """``to_dict``, ``to_json`` and ``from_json`` of a value, from its ``_json_view`` and ``from_dict``.

    Each value type says once what its serialized shape is (``_json_view``, a
    mapping of frozen parts) and how to read it back (``from_dict``); the rest
    follows here, the same for all of them.
    """

    __slots__ = ()

    def to_dict(self) -> dict[str, Any]:
        """Plain, mutable, independent dict in the serialized shape."""
        return thaw(self._json_view())  # type: ignore[attr-defined,no-any-return]

    def to_json(self) -> bytes:
        """JSON bytes of :meth:`to_dict`'s shape, encoded by msgspec without thawing first."""
        return _json_encoder.encode(self._json_view())  # type: ignore[attr-defined]

    @classmethod
    def from_json(cls, data: bytes | str) -> Self:
        """Inverse of :meth:`to_json`; the errors of ``from_dict``, and ``ValueError`` on invalid JSON."""
        return cls.from_dict(_decode(data, cls.__name__))  # type: ignore[attr-defined,no-any-return]


def _check_role(role: Any, type_name: str) -> None:
    if not isinstance(role, str):
        raise TypeError(f"{type_name}.role must be a string, got {type(role).__name__}")
    if role not in ROLES:
        raise ValueError(f"{type_name}.role must be one of {', '.join(ROLES)}; got {role!r}")


def _frozen_mapping(value: Any, field: str, type_name: str) -> FrozenDict:
    if value is None:
        return _EMPTY
    if not isinstance(value, (dict, Mapping)):
        raise TypeError(f"{type_name}.{field} must be a mapping, got {type(value).__name__}")
    return freeze_json(value, f"{type_name}.{field}")  # type: ignore[no-any-return]


def _require(data: Any, key: str, type_name: str) -> Any:
    if not isinstance(data, (dict, Mapping)):
        raise TypeError(f"{type_name}.from_dict expects a mapping, got {type(data).__name__}")
    try:
        return data[key]
    except KeyError:
        raise MissingFieldError(key, type_name) from None


def _decode(data: bytes | str, type_name: str) -> Any:
    try:
        return _json_decoder.decode(data)
    except msgspec.DecodeError as exc:
        raise ValueError(f"{type_name}.from_json: invalid JSON: {exc}") from exc
    except RecursionError:
        raise InvalidValueError(f"{type_name}.from_json: the JSON is nested too deeply", path=type_name) from None


def _check_text(value: str, where: str) -> None:
    if not value.isascii():
        try:
            value.encode("utf-8")
        except UnicodeEncodeError:
            raise InvalidValueError(f"{where}: text with a lone surrogate is not valid Unicode", path=where) from None


class Message(_ReadsLikeDict, _JsonForm, msgspec.Struct, frozen=True):
    """One conversation message.

    ``metadata`` carries everything that is not text: tool calls
    (``metadata["tool_calls"]``, OpenAI Chat Completions shape), the id a tool
    result answers (``metadata["tool_call_id"]``), usage, reasoning, citations.
    It is always a mapping (empty when not given).

    Raises:
        TypeError / ValueError: on a role outside :data:`ROLES` or a field of
            the wrong type; the message names the field.
    """

    role: Role
    content: Any
    metadata: dict[str, Any] = msgspec.field(default_factory=dict)
    multipart_content: list[Any] | None = msgspec.field(default=None, name="multipartContent")
    tool_result: dict[str, Any] | None = msgspec.field(default=None, name="toolResult")

    _type_name: ClassVar[str] = "Message"

    def __post_init__(self) -> None:
        _check_role(self.role, self._type_name)
        force_setattr(self, "content", freeze_json(self.content, "Message.content"))
        force_setattr(self, "metadata", _frozen_mapping(self.metadata, "metadata", self._type_name))
        # Empty parts are left out of the serialized form, so they are None
        # from the start: what from_json gives back is what was built.
        mc = self.multipart_content
        if mc is not None:
            if not isinstance(mc, (list, tuple)):
                raise TypeError(f"Message.multipart_content must be a list or None, got {type(mc).__name__}")
            force_setattr(self, "multipart_content", freeze_json(mc, "Message.multipart_content") if mc else None)
        tr = self.tool_result
        if tr is not None:
            if not isinstance(tr, Mapping):
                raise TypeError(f"Message.tool_result must be a mapping or None, got {type(tr).__name__}")
            force_setattr(self, "tool_result", freeze_json(tr, "Message.tool_result") if tr else None)

    # -- serialization -------------------------------------------------------

    def _json_view(self) -> dict[str, Any]:
        out: dict[str, Any] = {"role": self.role, "content": self.content}
        if self.metadata:
            out["metadata"] = self.metadata
        if self.multipart_content:
            out["multipartContent"] = self.multipart_content
        if self.tool_result:
            out["toolResult"] = self.tool_result
        return out

    def as_mapping(self) -> FrozenDict:
        """This message as a frozen dict in the serialized shape (no copy of contents).

        This is what plugin hooks receive as a "core message dict".
        """
        return FrozenDict.from_frozen(self._json_view())

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Message:
        """Build a message from its serialized shape.

        Raises:
            MissingFieldError: ``role`` or ``content`` is absent.
            TypeError: ``multipartContent`` is not a list/null, ``toolResult``
                not an object/null, or ``metadata`` not an object.
        """
        role = _require(data, "role", "Message")
        content = _require(data, "content", "Message")
        multipart = data.get("multipartContent")
        if multipart is not None and not isinstance(multipart, (list, tuple)):
            raise TypeError("multipartContent must be a list or null")
        tool_result = data.get("toolResult")
        if tool_result is not None and not isinstance(tool_result, Mapping):
            raise TypeError("toolResult must be an object or null")
        return cls(
            role=role,
            content=content,
            metadata=data.get("metadata"),  # type: ignore[arg-type]
            multipart_content=multipart,
            tool_result=tool_result,  # type: ignore[arg-type]
        )

    # -- functional updates --------------------------------------------------

    def with_metadata(self, mapping: Mapping[str, Any] | None = None, **kwargs: Any) -> Message:
        """Return a copy whose metadata is merged with ``mapping`` and ``kwargs``."""
        return msgspec.structs.replace(self, metadata=self.metadata.merged(mapping, **kwargs))

    def with_content(self, content: Any) -> Message:
        """Return a copy with new ``content``."""
        return Message(self.role, content, self.metadata, self.multipart_content, self.tool_result)

    @property
    def tool_calls(self) -> FrozenList:
        """The tool calls this (assistant) message asks for; empty when none."""
        return self.metadata.get("tool_calls") or FrozenList()


class PartialMessage(_ReadsLikeDict, _JsonForm, msgspec.Struct, frozen=True):
    """A piece of a message still being streamed (content is the new text only)."""

    role: Role
    content: Any
    metadata: dict[str, Any] = msgspec.field(default_factory=dict)

    def __post_init__(self) -> None:
        # One per streamed piece: the common case (a known role, ASCII text,
        # no metadata) is checked inline; anything else takes the full checks.
        role, content, metadata = self.role, self.content, self.metadata
        if role.__class__ is not str or role not in ROLES:
            _check_role(role, "PartialMessage")
        if content.__class__ is not str or not content.isascii():
            force_setattr(self, "content", freeze_json(content, "PartialMessage.content"))
        if metadata is _EMPTY:
            pass
        elif metadata is None or not metadata:
            force_setattr(self, "metadata", _EMPTY)
        elif metadata.__class__ is not FrozenDict or not metadata._json:
            force_setattr(self, "metadata", _frozen_mapping(metadata, "metadata", "PartialMessage"))

    def _json_view(self) -> dict[str, Any]:
        out: dict[str, Any] = {"role": self.role, "content": self.content}
        if self.metadata:
            out["metadata"] = self.metadata
        return out

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> PartialMessage:
        return cls(
            role=_require(data, "role", "PartialMessage"),
            content=_require(data, "content", "PartialMessage"),
            metadata=data.get("metadata"),  # type: ignore[arg-type]
        )


def _as_message(item: Any, index: int) -> Message:
    if isinstance(item, Message):
        return item
    if isinstance(item, Mapping):
        return Message.from_dict(item)
    raise TypeError(f"Session.messages[{index}] must be a Message or a message dict, got {type(item).__name__}")


_NATIVE_KEY = "agent_core.native_history"  # values.native_history.NATIVE_KEY (which imports this module)


def _native_count(record: Any) -> str:
    """How many native messages a provider's record holds (``{"messages": [...], ...}``), for a repr."""
    messages = record.get("messages") if hasattr(record, "get") else None
    return str(len(messages)) if hasattr(messages, "__len__") else "?"


class Session(_JsonForm, msgspec.Struct, frozen=True):
    """A conversation: an id, its messages, and session-level metadata.

    ``messages`` is a persistent vector: ``with_message`` shares structure with
    this session and costs O(log n). ``metadata`` may hold the key
    ``"agent_core.native_history"``, where the engine keeps each provider's
    native message history between requests.
    """

    session_id: str
    messages: list[Message] = msgspec.field(default_factory=list)
    metadata: dict[str, Any] = msgspec.field(default_factory=dict)

    def __post_init__(self) -> None:
        if not isinstance(self.session_id, str):
            raise TypeError(f"Session.session_id must be a string, got {type(self.session_id).__name__}")
        _check_text(self.session_id, "Session.session_id")
        msgs = self.messages
        if not isinstance(msgs, FrozenVector):
            if isinstance(msgs, (str, bytes, Mapping)) or not isinstance(msgs, Iterable):
                raise TypeError(f"Session.messages must be a list of messages, got {type(msgs).__name__}")
            force_setattr(self, "messages", FrozenVector([_as_message(m, i) for i, m in enumerate(msgs)]))
        force_setattr(self, "metadata", _frozen_mapping(self.metadata, "metadata", "Session"))

    def __repr__(self) -> str:
        # The engine's record of each provider's native messages can dwarf the conversation and is
        # nothing a person wrote: a repr names its providers and sizes, not its content.
        meta = self.metadata
        native = meta.get(_NATIVE_KEY)
        if native is None:
            shown = repr(meta)
        else:
            sizes = ", ".join(f"{name} {_native_count(record)} messages"
                              for name, record in (native.items() if hasattr(native, "items") else ()))
            items = [f"{k!r}: {v!r}" for k, v in meta.items() if k != _NATIVE_KEY]
            items.append(f"{_NATIVE_KEY!r}: <native history: {sizes or 'empty'}>")
            shown = "FrozenDict({" + ", ".join(items) + "})"
        return f"Session(session_id={self.session_id!r}, messages={self.messages!r}, metadata={shown})"

    def _json_view(self) -> dict[str, Any]:
        return {
            "session_id": self.session_id,
            "messages": [m._json_view() for m in self.messages],
            "metadata": self.metadata,
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Session:
        """Build a session from its serialized shape.

        Raises:
            MissingFieldError: ``session_id`` (or a message's ``role``/``content``) is absent.
            TypeError: ``messages`` is not a list or ``metadata`` not an object.
        """
        session_id = _require(data, "session_id", "Session")
        raw = data.get("messages") or []
        if not isinstance(raw, (list, tuple)):
            raise TypeError(f"Session messages must be a list, got {type(raw).__name__}")
        messages = [Message.from_dict(m) for m in raw]
        return cls(session_id=session_id, messages=messages, metadata=data.get("metadata"))  # type: ignore[arg-type]

    # -- functional updates --------------------------------------------------

    def with_message(self, message: Message | Mapping[str, Any]) -> Session:
        """Return a new session with ``message`` appended (O(log n))."""
        msg = _as_message(message, len(self.messages))
        return msgspec.structs.replace(self, messages=self.messages.appended(msg))

    def with_messages(self, messages: Iterable[Message | Mapping[str, Any]]) -> Session:
        """Return a new session with ``messages`` appended."""
        start = len(self.messages)
        new = [_as_message(m, start + i) for i, m in enumerate(messages)]
        return msgspec.structs.replace(self, messages=self.messages.extended(new))

    def with_metadata(self, mapping: Mapping[str, Any] | None = None, **kwargs: Any) -> Session:
        """Return a new session whose metadata is merged (shallowly) with ``mapping``."""
        return msgspec.structs.replace(self, metadata=self.metadata.merged(mapping, **kwargs))

    def replace_messages(self, messages: Iterable[Message | Mapping[str, Any]]) -> Session:
        """Return a new session holding exactly ``messages``."""
        return Session(self.session_id, list(messages), self.metadata)


class ToolDescriptor(_JsonForm, msgspec.Struct, frozen=True):
    """A tool schema as offered for one request, with the plugin that owns it.

    ``schema`` is kept in the format the tool gave (``metadata["format"]``
    names it: ``openai.chat_completions``, ``anthropic.messages`` or
    ``json_schema``); the engine adapts it to what the provider accepts.
    """

    plugin_name: str
    tool_name: str
    schema: dict[str, Any]
    metadata: dict[str, Any] = msgspec.field(default_factory=dict)

    def __post_init__(self) -> None:
        for field in ("plugin_name", "tool_name"):
            if not isinstance(getattr(self, field), str):
                raise TypeError(f"ToolDescriptor.{field} must be a string")
        force_setattr(self, "schema", _frozen_mapping(self.schema, "schema", "ToolDescriptor"))
        force_setattr(self, "metadata", _frozen_mapping(self.metadata, "metadata", "ToolDescriptor"))

    def _json_view(self) -> dict[str, Any]:
        return {
            "plugin_name": self.plugin_name,
            "tool_name": self.tool_name,
            "schema": self.schema,
            "metadata": self.metadata,
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> ToolDescriptor:
        return cls(
            plugin_name=_require(data, "plugin_name", "ToolDescriptor"),
            tool_name=_require(data, "tool_name", "ToolDescriptor"),
            schema=_require(data, "schema", "ToolDescriptor"),
            metadata=data.get("metadata"),  # type: ignore[arg-type]
        )

    def with_schema(self, schema: Mapping[str, Any]) -> ToolDescriptor:
        return ToolDescriptor(self.plugin_name, self.tool_name, schema, self.metadata)
