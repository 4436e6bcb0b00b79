"""Turning a session into the rows the store writes, and rows back into a session.

A session is stored in three parts (see ``docs/store.md``):

- one **message row** per core message: the message's own JSON
  (``Message.to_json``), so other languages read it against
  ``schemas/message.schema.json``;
- one **native row** per provider-native message, per provider, taken out of
  ``metadata["agent_core.native_history"][provider]["messages"]``;
- the **head**: the rest of the metadata (the native records without their
  messages) plus, per provider, how many native rows it has.

Both kinds of rows only ever grow at the end in a normal turn, which is what
lets a save write the new rows and the head and nothing else.

Decoding is strict: a row that is not JSON, or is JSON that does not make a
valid message, raises :class:`~agent_core.errors.CorruptRecordError` naming
the session, the revision that wrote the row and the row; nothing half-read
is ever returned.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import msgspec

from .. import NATIVE_KEY, FrozenList, Message, Session, freeze, thaw
from ..errors import CorruptRecordError

__all__ = [
    "NativePart", "decode_json", "decode_message", "decode_session", "encode_json", "join_metadata", "split_metadata",
]

_encoder = msgspec.json.Encoder()
_decoder = msgspec.json.Decoder()

# provider -> (native messages, the rest of its record)
NativePart = dict[str, tuple[FrozenList, dict[str, Any]]]


def encode_json(value: Any) -> str:
    return _encoder.encode(value).decode("utf-8")


def decode_json(text: str | bytes, *, session_id: str, revision: int | None, what: str) -> Any:
    try:
        return _decoder.decode(text)
    except (msgspec.DecodeError, RecursionError, UnicodeDecodeError) as exc:
        raise CorruptRecordError(
            f"session {session_id!r}: the stored {what} (revision {revision}) is not valid JSON: {exc}",
            session_id=session_id,
            revision=revision,
            what=what,
        ) from None


def decode_message(text: str | bytes, *, session_id: str, revision: int | None, index: int) -> Message:
    """One message row back into a :class:`Message`, or a ``CorruptRecordError``."""
    what = f"message {index}"
    data = decode_json(text, session_id=session_id, revision=revision, what=what)
    try:
        if not isinstance(data, Mapping):
            raise TypeError(f"expected a JSON object, got {type(data).__name__}")
        return Message.from_dict(data)
    except (TypeError, ValueError, KeyError) as exc:
        raise CorruptRecordError(
            f"session {session_id!r}: the stored {what} (revision {revision}) is not a valid message: {exc}",
            session_id=session_id,
            revision=revision,
            what=what,
        ) from None


def _native_box(metadata: Mapping[str, Any]) -> Mapping[str, Any] | None:
    """The native-history box when it has the engine's shape (else it is stored as plain metadata)."""
    box = metadata.get(NATIVE_KEY)
    if not isinstance(box, Mapping) or not box:
        return None
    for record in box.values():
        if not isinstance(record, Mapping) or not isinstance(record.get("messages"), list):
            return None
    return box


def split_metadata(metadata: Mapping[str, Any]) -> tuple[str, NativePart]:
    """``(head metadata JSON, native parts)``: the native messages leave the head."""
    box = _native_box(metadata)
    if box is None:
        return encode_json(metadata), {}
    head = {k: v for k, v in metadata.items() if k != NATIVE_KEY}
    parts: NativePart = {}
    for provider, record in box.items():
        rest = {k: v for k, v in record.items() if k != "messages"}
        parts[provider] = (record["messages"], rest)
    return encode_json(head), parts


def native_head(parts: NativePart, generations: Mapping[str, str]) -> str:
    """The head's ``native`` column: per provider, its row count, the record without messages, and
    the generation (a token that changes whenever the provider's rows are written from scratch)."""
    return encode_json(
        {p: {"count": len(msgs), "record": rest, "gen": generations[p]} for p, (msgs, rest) in parts.items()}
    )


def join_metadata(head: Mapping[str, Any], native: Mapping[str, Sequence[Any]], records: Mapping[str, Any]) -> dict:
    """The metadata of a loaded session: the head plus each provider's record with its rows."""
    out = thaw(head) if not isinstance(head, dict) else dict(head)
    if records:
        out[NATIVE_KEY] = {p: {"messages": freeze(list(native.get(p, ()))), **records[p]} for p in records}
    return out


def decode_session(
    session_id: str, head: Sequence[Any], rows: Sequence[Sequence[Any]], native_rows: Sequence[Sequence[Any]]
) -> tuple[Session, int, dict[str, str]]:
    """A stored session from its head row, its message rows and its native rows (both in ``seq`` order).

    Returns ``(session, revision, generations)``: the generation of each
    provider's native rows, which the next save compares (see ``native_head``).

    Raises:
        CorruptRecordError: a row is not what it should be, or the rows do not
            match what the head says of them.
    """
    revision, count, meta_text, native_text = head
    revision = int(revision)
    messages = _messages(session_id, revision, count, rows)
    metadata = decode_json(meta_text, session_id=session_id, revision=revision, what="head metadata")
    native_meta = decode_json(native_text, session_id=session_id, revision=revision, what="head native index")
    if not isinstance(metadata, dict) or not isinstance(native_meta, dict):
        raise CorruptRecordError(
            f"session {session_id!r}: the stored head (revision {revision}) is not a JSON object",
            session_id=session_id, revision=revision, what="head",
        )
    native = _native_by_provider(session_id, native_rows)
    records, generations = _native_records(session_id, revision, native_meta, native)
    try:
        session = Session(session_id, messages, join_metadata(metadata, native, records))
    except (TypeError, ValueError) as exc:
        raise CorruptRecordError(
            f"session {session_id!r}: the stored metadata (revision {revision}) is not valid: {exc}",
            session_id=session_id, revision=revision, what="head metadata",
        ) from None
    return session, revision, generations


def _messages(session_id: str, revision: int, count: int, rows: Sequence[Sequence[Any]]) -> list[Message]:
    """The message rows, decoded, after checking they are the ``count`` rows ``0..count-1`` the head lists."""
    if len(rows) != count or (rows and (rows[0][0] != 0 or rows[-1][0] != count - 1)):
        raise CorruptRecordError(
            f"session {session_id!r}: the head (revision {revision}) lists {count} messages, "
            f"but {len(rows)} message rows are stored",
            session_id=session_id, revision=revision, what="messages",
        )
    return [decode_message(body, session_id=session_id, revision=int(rev), index=int(seq)) for seq, rev, body in rows]


def _native_by_provider(session_id: str, native_rows: Sequence[Sequence[Any]]) -> dict[str, list[Any]]:
    native: dict[str, list[Any]] = {}
    for provider, seq, rev, body in native_rows:
        what = f"native history {provider!r} {seq}"
        native.setdefault(provider, []).append(decode_json(body, session_id=session_id, revision=int(rev), what=what))
    return native


def _native_records(
    session_id: str, revision: int, native_meta: Mapping[str, Any], native: Mapping[str, list[Any]]
) -> tuple[dict[str, Any], dict[str, str]]:
    """Per provider in the head's native index: its record and its rows' generation, once its row count matches."""
    records, generations = {}, {}
    for provider, entry in native_meta.items():
        if not isinstance(entry, dict) or len(native.get(provider, ())) != entry.get("count"):
            raise CorruptRecordError(
                f"session {session_id!r}: the native history of {provider!r} (revision {revision}) "
                "does not match its stored rows",
                session_id=session_id, revision=revision, what=f"native history {provider!r}",
            )
        records[provider] = entry.get("record") or {}
        generations[provider] = str(entry.get("gen", ""))
    return records, generations
