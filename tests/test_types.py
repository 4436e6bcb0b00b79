"""Message, PartialMessage, Session and ToolDescriptor: frozen values with stable serialized forms."""

from __future__ import annotations

import copy
import json
import pickle
import tracemalloc
from collections.abc import Callable
from typing import Any

import pytest
from agent_core import (
    ROLES,
    FrozenDict,
    FrozenList,
    FrozenVector,
    Message,
    MissingFieldError,
    PartialMessage,
    Session,
    ToolDescriptor,
)
from hypothesis import given, settings
from hypothesis import strategies as st

# -- strategies ------------------------------------------------------------------------

json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False, allow_infinity=False) | st.text(),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(), inner, max_size=4),
    max_leaves=15,
)
json_objects = st.dictionaries(st.text(), json_values, max_size=5)
roles = st.sampled_from(ROLES)

# Empty multipartContent / toolResult are left out of the serialized form (as
# empty metadata is), so they come back as None: generate None or non-empty.
messages = st.builds(
    Message,
    role=roles,
    content=json_values,
    metadata=json_objects,
    multipart_content=st.none() | st.lists(json_values, min_size=1, max_size=3),
    tool_result=st.none() | st.dictionaries(st.text(), json_values, min_size=1, max_size=3),
)
partials = st.builds(PartialMessage, role=roles, content=json_values, metadata=json_objects)
sessions = st.builds(Session, session_id=st.text(), messages=st.lists(messages, max_size=4), metadata=json_objects)
tool_descriptors = st.builds(
    ToolDescriptor, plugin_name=st.text(), tool_name=st.text(), schema=json_objects, metadata=json_objects
)


def _assert_round_trips(cls: Any, value: Any) -> None:
    as_dict = value.to_dict()
    assert cls.from_dict(as_dict) == value
    assert cls.from_dict(json.loads(json.dumps(as_dict))) == value
    assert cls.from_json(value.to_json()) == value
    assert cls.from_json(value.to_json().decode()) == value
    assert json.loads(value.to_json()) == as_dict
    assert hash(cls.from_dict(as_dict)) == hash(value)


@settings(max_examples=60, deadline=None)
@given(messages)
def test_message_round_trips(value: Message) -> None:
    _assert_round_trips(Message, value)


@settings(max_examples=60, deadline=None)
@given(partials)
def test_partial_message_round_trips(value: PartialMessage) -> None:
    _assert_round_trips(PartialMessage, value)


@pytest.mark.slow
@settings(max_examples=60, deadline=None)
@given(sessions)
def test_session_round_trips(value: Session) -> None:
    _assert_round_trips(Session, value)


@pytest.mark.slow
@settings(max_examples=60, deadline=None)
@given(tool_descriptors)
def test_tool_descriptor_round_trips(value: ToolDescriptor) -> None:
    _assert_round_trips(ToolDescriptor, value)


# -- construction ----------------------------------------------------------------------


def test_message_positional_and_keyword_construction() -> None:
    by_keyword = Message(role="user", content="Hello")
    by_position = Message("user", "Hello")
    assert by_keyword == by_position
    assert (by_keyword.role, by_keyword.content) == ("user", "Hello")
    assert by_keyword.metadata == {} and isinstance(by_keyword.metadata, FrozenDict)
    assert by_keyword.multipart_content is None and by_keyword.tool_result is None
    full = Message("tool", "3", {"tool_call_id": "c1"}, [{"type": "text"}], {"success": True})
    assert full.metadata == {"tool_call_id": "c1"}
    assert full.multipart_content == [{"type": "text"}] and isinstance(full.multipart_content, FrozenList)
    assert full.tool_result == {"success": True} and isinstance(full.tool_result, FrozenDict)


def test_session_freezes_a_plain_list_of_messages() -> None:
    msg = Message(role="user", content="Hello")
    source = [msg]
    session = Session(session_id="s1", messages=source)
    assert isinstance(session.messages, FrozenVector)
    assert session.messages == [msg] and session.messages[0] is msg
    source.append(Message(role="assistant", content="late"))
    assert len(session.messages) == 1
    assert Session(session_id="s1").messages == [] and Session(session_id="s1").metadata == {}


def test_session_accepts_message_dicts() -> None:
    session = Session(session_id="s", messages=[{"role": "user", "content": "hi", "metadata": {"a": [1]}}])
    assert session.messages[0] == Message(role="user", content="hi", metadata={"a": [1]})
    assert isinstance(session.messages[0], Message)


def test_metadata_given_as_a_plain_dict_is_copied() -> None:
    meta = {"tags": ["a"]}
    msg = Message(role="user", content="x", metadata=meta)
    meta["tags"].append("b")
    meta["extra"] = 1
    assert msg.metadata == {"tags": ["a"]}


def test_from_dict_does_not_alias_its_input() -> None:
    data = {"role": "user", "content": ["part"], "metadata": {"k": [1]}, "toolResult": {"r": [2]}}
    msg = Message.from_dict(data)
    data["content"].append("more")
    data["metadata"]["k"].append(2)
    data["toolResult"]["r"].clear()
    assert msg.to_dict() == {"role": "user", "content": ["part"], "metadata": {"k": [1]}, "toolResult": {"r": [2]}}


# -- value semantics --------------------------------------------------------------------


def test_equality_is_by_content_and_values_are_hashable() -> None:
    a = Message(role="assistant", content="hi", metadata={"usage": {"input_tokens": 1}})
    b = Message.from_dict({"role": "assistant", "content": "hi", "metadata": {"usage": {"input_tokens": 1}}})
    assert a == b and a is not b and hash(a) == hash(b)
    assert a != a.with_metadata(usage={"input_tokens": 2})
    assert a != Message(role="user", content="hi", metadata={"usage": {"input_tokens": 1}})
    assert len({a, b, Message(role="user", content="hi")}) == 2

    s1 = Session(session_id="s", messages=[a], metadata={"k": [1]})
    s2 = Session(session_id="s", messages=[b], metadata={"k": [1]})
    assert s1 == s2 and hash(s1) == hash(s2)
    assert s1 != Session(session_id="other", messages=[a], metadata={"k": [1]})
    assert {s1: 1}[s2] == 1

    t1 = ToolDescriptor(plugin_name="p", tool_name="t", schema={"type": "object"})
    t2 = ToolDescriptor("p", "t", {"type": "object"})
    assert t1 == t2 and hash(t1) == hash(t2)
    p = PartialMessage(role="assistant", content="d")
    assert p == PartialMessage("assistant", "d") and hash(p) == hash(PartialMessage("assistant", "d"))


VALUES = {
    "message": lambda: Message(role="user", content="x", metadata={"a": 1}),
    "partial": lambda: PartialMessage(role="assistant", content="x"),
    "session": lambda: Session(session_id="s", messages=[Message(role="user", content="x")]),
    "tool": lambda: ToolDescriptor(plugin_name="p", tool_name="t", schema={}),
}


@pytest.mark.parametrize("kind", VALUES)
def test_attributes_cannot_be_assigned_or_deleted(kind: str) -> None:
    value = VALUES[kind]()
    before = value.to_dict()
    for field in value.__struct_fields__:
        with pytest.raises(AttributeError):
            setattr(value, field, None)
        with pytest.raises(AttributeError):
            delattr(value, field)
    with pytest.raises(AttributeError):
        value.brand_new = 1
    assert value.to_dict() == before


# -- the messages vector refuses mutation -------------------------------------------------


def _iadd(vec: Any) -> None:
    vec += [Message(role="user", content="sneaky")]


def _setitem(vec: Any) -> None:
    vec[0] = Message(role="user", content="sneaky")


def _delitem(vec: Any) -> None:
    del vec[0]


VECTOR_MUTATIONS: dict[str, Callable[[Any], Any]] = {
    "append": lambda v: v.append(Message(role="user", content="sneaky")),
    "extend": lambda v: v.extend([Message(role="user", content="sneaky")]),
    "insert": lambda v: v.insert(0, Message(role="user", content="sneaky")),
    "pop": lambda v: v.pop(),
    "remove": lambda v: v.remove(v[0]),
    "clear": lambda v: v.clear(),
    "item set": _setitem,
    "item del": _delitem,
    "+=": _iadd,
}


@pytest.mark.parametrize("mutation", VECTOR_MUTATIONS)
def test_session_messages_refuse_mutation(mutation: str) -> None:
    session = Session(session_id="s", messages=[Message(role="user", content="a"), Message(role="assistant", content="b")])
    before = session.to_dict()
    vec = session.messages
    with pytest.raises(TypeError) as info:
        VECTOR_MUTATIONS[mutation](vec)
    assert "with_message" in str(info.value), "the error should say what to write instead"
    assert session.messages is vec
    assert session.to_dict() == before and len(session.messages) == 2


# -- to_dict gives independent plain data -------------------------------------------------


def _rich_session() -> Session:
    return Session(
        session_id="s",
        messages=[
            Message(role="assistant", content=None, metadata={"tool_calls": [{"id": "c1", "function": {"name": "f"}}]}),
            Message(role="user", content="look", multipart_content=[{"type": "text", "text": "look"}]),
            Message(role="tool", content="ok", tool_result={"success": True, "result": [1]}),
        ],
        metadata={"history": {"echo": [{"role": "user"}]}},
    )


def test_to_dict_results_are_plain_and_independent() -> None:
    session = _rich_session()
    before = session.to_dict()
    first, second = session.to_dict(), session.to_dict()
    assert first == second and first is not second
    assert first["messages"] is not second["messages"]
    assert first["messages"][0]["metadata"] is not second["messages"][0]["metadata"]
    assert first["metadata"]["history"] is not second["metadata"]["history"]
    assert type(first["metadata"]) is dict and type(first["messages"]) is list
    assert type(first["messages"][0]["metadata"]["tool_calls"]) is list

    first["messages"][0]["metadata"]["tool_calls"][0]["id"] = "changed"
    first["messages"][1]["multipartContent"].append({"type": "text"})
    first["messages"][2]["toolResult"]["result"].append(2)
    first["metadata"]["history"]["echo"].clear()
    first["messages"].append({"role": "user", "content": "x"})
    first["session_id"] = "other"
    assert session.to_dict() == before == second


def test_message_to_dict_is_independent() -> None:
    msg = Message(role="user", content=["a"], metadata={"m": {"n": [1]}})
    out = msg.to_dict()
    out["content"].append("b")
    out["metadata"]["m"]["n"].append(2)
    assert msg.to_dict() == {"role": "user", "content": ["a"], "metadata": {"m": {"n": [1]}}}
    assert msg.to_dict() is not msg.to_dict()


# -- serialized shape ------------------------------------------------------------------------


def test_seed_session_dict_shape() -> None:
    session = Session(session_id="s", messages=[Message(role="user", content="hi")])
    assert session.to_dict() == {"session_id": "s", "messages": [{"role": "user", "content": "hi"}], "metadata": {}}
    assert json.loads(session.to_json()) == session.to_dict()


def test_message_keys_are_camel_case_and_empty_parts_are_left_out() -> None:
    bare = Message(role="user", content="hi")
    assert bare.to_dict() == {"role": "user", "content": "hi"}
    assert Message(role="user", content="hi", metadata={}, multipart_content=[], tool_result={}).to_dict() == {
        "role": "user",
        "content": "hi",
    }
    full = Message(role="tool", content="3", metadata={"a": 1}, multipart_content=[{"t": 1}], tool_result={"r": 3})
    assert list(full.to_dict()) == ["role", "content", "metadata", "multipartContent", "toolResult"]
    assert json.loads(full.to_json()) == full.to_dict()
    assert "multipart_content" not in full.to_json().decode() and "tool_result" not in full.to_json().decode()


def test_partial_and_tool_descriptor_shapes() -> None:
    assert PartialMessage(role="assistant", content="d").to_dict() == {"role": "assistant", "content": "d"}
    assert PartialMessage(role="assistant", content="d", metadata={"i": 1}).to_dict() == {
        "role": "assistant",
        "content": "d",
        "metadata": {"i": 1},
    }
    assert ToolDescriptor(plugin_name="p", tool_name="t", schema={"type": "object"}).to_dict() == {
        "plugin_name": "p",
        "tool_name": "t",
        "schema": {"type": "object"},
        "metadata": {},
    }


def test_as_mapping_is_the_frozen_serialized_shape() -> None:
    msg = Message(role="assistant", content="x", metadata={"tool_calls": [{"id": "c"}]})
    mapping = msg.as_mapping()
    assert isinstance(mapping, FrozenDict) and mapping == msg.to_dict()
    assert mapping["metadata"] is msg.metadata
    with pytest.raises(TypeError):
        mapping["content"] = "y"


def test_serialized_forms_snapshot(snapshot: Any) -> None:
    tool_call = {"id": "call_1", "type": "function", "function": {"name": "add", "arguments": '{"a": 1, "b": 2}'}}
    session = Session(
        session_id="snap-1",
        messages=[
            Message(role="system", content="You add numbers."),
            Message(
                role="user",
                content="What is 1 + 2? See the picture.",
                multipart_content=[
                    {"type": "text", "text": "What is 1 + 2? See the picture."},
                    {"type": "image_url", "image_url": {"url": "data:image/png;base64,AAAA"}},
                ],
            ),
            Message(
                role="assistant",
                content="",
                metadata={"tool_calls": [tool_call], "finish_reason": "tool_calls", "usage": {"input_tokens": 12, "output_tokens": 7}},
            ),
            Message(
                role="tool",
                content="Result: 3",
                metadata={"tool_call_id": "call_1", "tool_name": "add"},
                tool_result={"success": True, "result": 3},
            ),
            Message(role="assistant", content="1 + 2 = 3.", metadata={"finish_reason": "stop"}),
        ],
        metadata={"agent_core.native_history": {"echo": [{"role": "user", "content": "What is 1 + 2?"}]}, "title": "sums"},
    )
    assert session.to_dict() == snapshot(name="to_dict")
    assert json.loads(session.to_json()) == snapshot(name="to_json")


# -- bad input ------------------------------------------------------------------------------


@pytest.mark.parametrize("bad", ["text", {"a": 1}, 3, True])
def test_from_dict_rejects_non_list_multipart_content(bad: Any) -> None:
    with pytest.raises(TypeError, match="multipartContent"):
        Message.from_dict({"role": "user", "content": "x", "multipartContent": bad})


@pytest.mark.parametrize("bad", ["text", [1], 3])
def test_from_dict_rejects_non_object_tool_result(bad: Any) -> None:
    with pytest.raises(TypeError, match="toolResult"):
        Message.from_dict({"role": "user", "content": "x", "toolResult": bad})


def test_null_multipart_content_and_tool_result_are_accepted() -> None:
    msg = Message.from_dict({"role": "user", "content": "x", "multipartContent": None, "toolResult": None})
    assert msg == Message(role="user", content="x")


@pytest.mark.parametrize(
    ("cls", "data", "key"),
    [
        (Message, {"content": "x"}, "role"),
        (Message, {"role": "user"}, "content"),
        (PartialMessage, {"role": "assistant"}, "content"),
        (Session, {"messages": []}, "session_id"),
        (Session, {"session_id": "s", "messages": [{"role": "user"}]}, "content"),
        (ToolDescriptor, {"plugin_name": "p", "tool_name": "t"}, "schema"),
    ],
)
def test_missing_fields_raise_missing_field_error(cls: Any, data: dict[str, Any], key: str) -> None:
    with pytest.raises(MissingFieldError) as info:
        cls.from_dict(data)
    err = info.value
    assert isinstance(err, KeyError) and isinstance(err, ValueError)
    assert err.key == key
    assert repr(key) in str(err)
    with pytest.raises(KeyError):
        cls.from_dict(data)
    with pytest.raises(ValueError):
        cls.from_json(json.dumps(data))


@pytest.mark.parametrize("cls", [Message, PartialMessage])
def test_bad_roles_are_refused(cls: Any) -> None:
    with pytest.raises(ValueError, match="robot") as info:
        cls(role="robot", content="x")
    assert all(role in str(info.value) for role in ROLES)
    with pytest.raises(TypeError, match="role"):
        cls(role=1, content="x")
    with pytest.raises(ValueError):
        cls.from_dict({"role": "Robot", "content": "x"})


@pytest.mark.parametrize("bad", [[("a", 1)], "text", 3])
def test_metadata_must_be_a_mapping(bad: Any) -> None:
    for build in (
        lambda: Message(role="user", content="x", metadata=bad),
        lambda: Message.from_dict({"role": "user", "content": "x", "metadata": bad}),
        lambda: PartialMessage(role="user", content="x", metadata=bad),
        lambda: Session(session_id="s", metadata=bad),
        lambda: Session.from_dict({"session_id": "s", "metadata": bad}),
        lambda: ToolDescriptor(plugin_name="p", tool_name="t", schema={}, metadata=bad),
    ):
        with pytest.raises(TypeError, match="metadata"):
            build()


def test_other_bad_fields() -> None:
    with pytest.raises(TypeError, match="session_id"):
        Session(session_id=1)
    with pytest.raises(TypeError, match="messages"):
        Session(session_id="s", messages="not a list")
    with pytest.raises(TypeError, match=r"messages\[1\]"):
        Session(session_id="s", messages=[Message(role="user", content="ok"), 42])
    with pytest.raises(TypeError, match="messages"):
        Session.from_dict({"session_id": "s", "messages": {"role": "user"}})
    with pytest.raises(TypeError, match="schema"):
        ToolDescriptor(plugin_name="p", tool_name="t", schema=[])
    with pytest.raises(TypeError, match="tool_name"):
        ToolDescriptor(plugin_name="p", tool_name=None, schema={})
    with pytest.raises(TypeError, match="mapping"):
        Message.from_dict(["role", "user"])


@pytest.mark.parametrize("cls", [Message, PartialMessage, Session, ToolDescriptor])
@pytest.mark.parametrize("text", ["{not json", "", '{"role": "user", "content": "x"', b"\xff"])
def test_from_json_on_invalid_json_raises_value_error(cls: Any, text: Any) -> None:
    with pytest.raises(ValueError, match="invalid JSON"):
        cls.from_json(text)


# -- functional updates ---------------------------------------------------------------------


def test_with_message_returns_a_new_session() -> None:
    old = Session(session_id="s1", messages=[Message(role="user", content="Hello")])
    reply = Message(role="assistant", content="Hi!")
    new = old.with_message(reply)
    assert new is not old
    assert new.to_dict() == {
        "session_id": "s1",
        "messages": [{"role": "user", "content": "Hello"}, {"role": "assistant", "content": "Hi!"}],
        "metadata": {},
    }
    assert old.messages == [Message(role="user", content="Hello")]
    assert new.messages[0] is old.messages[0] and new.messages[1] is reply
    assert old.with_message({"role": "user", "content": "d"}).messages[-1] == Message(role="user", content="d")


def test_with_messages_appends_several() -> None:
    old = Session(session_id="s", messages=[Message(role="user", content="a")])
    new = old.with_messages([Message(role="assistant", content="b"), {"role": "user", "content": "c"}])
    assert [m.content for m in new.messages] == ["a", "b", "c"]
    assert [m.content for m in old.messages] == ["a"]
    assert old.with_messages([]) == old


def test_session_with_metadata_merges() -> None:
    old = Session(session_id="s", metadata={"keep": 1, "replace": "old"})
    new = old.with_metadata({"replace": "new"}, added=[1])
    assert new.metadata == {"keep": 1, "replace": "new", "added": [1]}
    assert isinstance(new.metadata["added"], FrozenList)
    assert old.metadata == {"keep": 1, "replace": "old"}
    assert new.session_id == old.session_id and new.messages is old.messages


def test_message_functional_updates() -> None:
    old = Message(role="assistant", content="x", metadata={"a": 1}, tool_result={"r": 1})
    new = old.with_metadata({"b": {"c": 2}}, a=10)
    assert new.metadata == {"a": 10, "b": {"c": 2}} and isinstance(new.metadata["b"], FrozenDict)
    assert old.metadata == {"a": 1}
    assert (new.role, new.content, new.tool_result) == (old.role, old.content, old.tool_result)
    changed = old.with_content(["y"])
    assert changed.content == ["y"] and isinstance(changed.content, FrozenList)
    assert old.content == "x" and changed.metadata is old.metadata


def test_replace_messages_and_with_schema() -> None:
    old = Session(session_id="s", messages=[Message(role="user", content="a")], metadata={"k": 1})
    new = old.replace_messages([{"role": "user", "content": "b"}])
    assert [m.content for m in new.messages] == ["b"] and new.metadata == {"k": 1}
    assert [m.content for m in old.messages] == ["a"]
    tool = ToolDescriptor(plugin_name="p", tool_name="t", schema={"a": 1}, metadata={"format": "json_schema"})
    assert tool.with_schema({"b": 2}).schema == {"b": 2} and tool.schema == {"a": 1}
    assert tool.with_schema({"b": 2}).metadata == {"format": "json_schema"}


def test_tool_calls_property() -> None:
    call = {"id": "c1", "type": "function", "function": {"name": "add", "arguments": "{}"}}
    assert Message(role="assistant", content="", metadata={"tool_calls": [call]}).tool_calls == [call]
    assert Message(role="assistant", content="").tool_calls == []


def test_with_message_shares_structure_with_a_long_session() -> None:
    old = Session(session_id="long", messages=[Message(role="user", content=str(i)) for i in range(10_000)])
    reply = Message(role="assistant", content="done")

    # Appending must not copy the 10k-entry history: measure memory, not time.
    # A copy of 10k references alone is ~80 KB; a persistent append is a few
    # hundred bytes.
    tracemalloc.start()
    try:
        base, _ = tracemalloc.get_traced_memory()
        tracemalloc.reset_peak()
        new = old.with_message(reply)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak - base < 16_000, f"with_message allocated {peak - base} bytes; it seems to copy the history"

    assert len(old.messages) == 10_000 and len(new.messages) == 10_001
    assert new.messages[-1] is reply and old.messages[-1].content == "9999"
    assert new.messages[1234] is old.messages[1234]

    # A chain of appends keeps every earlier version intact.
    versions = [new]
    for i in range(200):
        versions.append(versions[-1].with_message(Message(role="user", content=f"more {i}")))
    assert [len(v.messages) for v in versions[::50]] == [10_001, 10_051, 10_101, 10_151, 10_201]
    assert len(old.messages) == 10_000


# -- copy and pickle -------------------------------------------------------------------------


@pytest.mark.parametrize(
    "value",
    [
        _rich_session(),
        Message(role="tool", content={"type": "x"}, metadata={"a": [1]}, tool_result={"r": 1}),
        PartialMessage(role="assistant", content="d", metadata={"i": 2}),
        ToolDescriptor(plugin_name="p", tool_name="t", schema={"type": "object"}, metadata={"f": "json_schema"}),
    ],
    ids=["session", "message", "partial", "tool"],
)
def test_deepcopy_and_pickle_round_trips(value: Any) -> None:
    for restored in (copy.deepcopy(value), copy.copy(value), pickle.loads(pickle.dumps(value))):
        assert restored == value and type(restored) is type(value)
        assert restored.to_dict() == value.to_dict()
        assert isinstance(restored.metadata, FrozenDict)
        with pytest.raises(TypeError):
            restored.metadata["new"] = 1
    if isinstance(value, Session):
        restored = pickle.loads(pickle.dumps(value))
        assert isinstance(restored.messages, FrozenVector)
        with pytest.raises(TypeError):
            restored.messages.append(Message(role="user", content="x"))


# -- every session that can be built round-trips exactly (issue: values always round-trip) ------

import enum  # noqa: E402

from agent_core.errors import InvalidValueError  # noqa: E402


class Colour(str, enum.Enum):
    RED = "red"


class Level(enum.IntEnum):
    HIGH = 3


# Everything a caller or plugin can hand in: tuples, sets, frozensets, enums, empty parts,
# any float JSON can carry, big ints. The rule (docs/conventions.md) normalises these once.
hashable_scalars = (
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False, allow_infinity=False) | st.text()
)
buildable_values = st.recursive(
    hashable_scalars | st.just(Colour.RED) | st.just(Level.HIGH) | st.integers(min_value=2**64, max_value=2**80),
    lambda inner: (
        st.lists(inner, max_size=4)
        | st.lists(inner, max_size=3).map(tuple)
        | st.frozensets(hashable_scalars, max_size=4)
        | st.sets(st.text(max_size=3), max_size=4)
        | st.dictionaries(st.text(), inner, max_size=4)
    ),
    max_leaves=20,
)
buildable_messages = st.builds(
    Message,
    role=roles,
    content=buildable_values,
    metadata=st.dictionaries(st.text(), buildable_values, max_size=4),
    multipart_content=st.none() | st.lists(buildable_values, max_size=3),
    tool_result=st.none() | st.dictionaries(st.text(), buildable_values, max_size=3),
)
buildable_sessions = st.builds(
    Session,
    session_id=st.text(),
    messages=st.lists(buildable_messages, max_size=4),
    metadata=st.dictionaries(st.text(), buildable_values, max_size=4),
)


@pytest.mark.slow
@settings(max_examples=200, deadline=None)
@given(buildable_sessions)
def test_every_buildable_session_round_trips_through_json_exactly(value: Session) -> None:
    again = Session.from_json(value.to_json())
    assert again == value
    assert again.to_json() == value.to_json()  # normalised once: a second trip changes nothing
    assert Session.from_dict(value.to_dict()) == value


def test_sets_tuples_enums_and_empty_parts_are_normalised_when_frozen() -> None:
    m = Message("tool", ("a", Colour.RED), {"ids": {3, 1, 2}, Colour.RED: Level.HIGH}, [], {})
    assert m.content == ["a", "red"] and type(m.content[1]) is str
    assert m.metadata == {"ids": [1, 2, 3], "red": 3} and type(m.metadata["red"]) is int
    assert m.multipart_content is None and m.tool_result is None  # empty parts are left out of JSON
    assert Message.from_json(m.to_json()) == m


@pytest.mark.parametrize(
    ("build", "path", "why"),
    [
        (lambda: Message("user", b"x"), "Message.content", "bytes"),
        (lambda: Message("user", "x", {"cost": float("nan")}), "Message.metadata['cost']", "not a JSON number"),
        (lambda: Message("user", [1, float("-inf")]), "Message.content[1]", "not a JSON number"),
        (lambda: Message("user", "x", {"k": {1: "a"}}), "Message.metadata['k']", "keys are strings"),
        (lambda: Message("user", "x", tool_result={"r": object()}), "Message.tool_result['r']", "object"),
        (lambda: Message("user", "bad \ud800 text"), "Message.content", "surrogate"),
        (lambda: Session("s", [], {"raw": bytearray(b"x")}), "Session.metadata['raw']", "bytearray"),
        (lambda: Session("\udfff"), "Session.session_id", "surrogate"),
        (lambda: PartialMessage("assistant", {float("inf")}), "PartialMessage.content{set item}", "JSON number"),
    ],
)
def test_values_json_cannot_carry_are_refused_naming_the_path(build: Callable[[], Any], path: str, why: str) -> None:
    with pytest.raises(InvalidValueError) as info:
        build()
    assert info.value.path == path and why in str(info.value)
    assert isinstance(info.value, ValueError)


def test_a_checked_part_is_shared_when_a_session_is_derived() -> None:
    big = Session("s", [Message("user", "x")], {"blob": [{"n": i} for i in range(1000)]})
    blob = big.metadata["blob"]
    again = big.with_metadata({"more": 1})
    assert again.metadata["blob"] is blob  # the checked part is shared, not copied
