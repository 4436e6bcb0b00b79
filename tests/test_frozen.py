"""Frozen containers: they read like dict/list, refuse every mutation, and share safely."""

from __future__ import annotations

import copy
import json
import pickle
import sys
from collections.abc import Callable
from typing import Any

import msgspec
import pytest
from agent_core import FrozenDict, FrozenList, FrozenVector, Message, Session, ToolDescriptor, freeze, thaw
from hypothesis import given, settings
from hypothesis import strategies as st

json_scalars = st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text()
json_values = st.recursive(
    json_scalars,
    lambda inner: st.lists(inner, max_size=5) | st.dictionaries(st.text(), inner, max_size=5),
    max_leaves=20,
)


def _assert_deeply_frozen(value: Any) -> None:
    if isinstance(value, dict):
        assert type(value) is FrozenDict
        for v in value.values():
            _assert_deeply_frozen(v)
    elif isinstance(value, list):
        assert type(value) is FrozenList
        for v in value:
            _assert_deeply_frozen(v)


def _assert_plain(value: Any) -> None:
    if isinstance(value, dict):
        assert type(value) is dict
        for v in value.values():
            _assert_plain(v)
    elif isinstance(value, list):
        assert type(value) is list
        for v in value:
            _assert_plain(v)


# -- they are a dict and a list -------------------------------------------------------


def test_frozen_containers_are_dict_and_list_subclasses() -> None:
    d = freeze({"a": 1, "b": [1, 2]})
    assert isinstance(d, dict) and isinstance(d, FrozenDict)
    assert isinstance(d["b"], list) and isinstance(d["b"], FrozenList)
    assert {**d} == {"a": 1, "b": [1, 2]} and type({**d}) is dict
    assert {**d, "a": 2}["a"] == 2 and d["a"] == 1
    assert [*d["b"]] == [1, 2] and type([*d["b"]]) is list
    assert [*d["b"], 3] == [1, 2, 3] and d["b"] == [1, 2]
    assert dict(d) == d and list(d["b"]) == d["b"]


def test_frozen_containers_encode_like_plain_ones() -> None:
    d = freeze({"a": [1, {"b": None}], "c": "x"})
    assert json.loads(json.dumps(d)) == {"a": [1, {"b": None}], "c": "x"}
    assert msgspec.json.decode(msgspec.json.encode(d)) == {"a": [1, {"b": None}], "c": "x"}


def test_reading_works_as_usual() -> None:
    d = freeze({"a": 1, "b": [3, 1, 2]})
    assert d.get("a") == 1 and d.get("zz", 5) == 5
    assert list(d.keys()) == ["a", "b"] and "b" in d and len(d) == 2
    assert d["b"].index(1) == 1 and d["b"].count(2) == 1
    assert sorted(d["b"]) == [1, 2, 3] and d["b"] == [3, 1, 2]
    assert d["b"][-1] == 2 and list(reversed(d["b"])) == [2, 1, 3]


def test_slices_of_a_frozen_list_stay_frozen() -> None:
    items = freeze([1, [2], {"x": 3}])
    part = items[1:]
    assert isinstance(part, FrozenList) and part == [[2], {"x": 3}]
    with pytest.raises(TypeError):
        part.append(4)


# -- construction freezes deeply and copies -----------------------------------------


def test_construction_freezes_nested_values() -> None:
    d = FrozenDict({"a": {"b": [1, {"c": []}]}}, extra=[1])
    assert type(d["a"]) is FrozenDict
    assert type(d["a"]["b"]) is FrozenList
    assert type(d["a"]["b"][1]["c"]) is FrozenList
    assert type(d["extra"]) is FrozenList
    lst = FrozenList([{"a": 1}, [2]])
    assert type(lst[0]) is FrozenDict and type(lst[1]) is FrozenList


def test_freezing_copies_the_source() -> None:
    source = {"a": [1], "b": {"c": 2}}
    frozen = freeze(source)
    source["a"].append(99)
    source["b"]["c"] = 3
    source["new"] = True
    assert frozen == {"a": [1], "b": {"c": 2}}


def test_freeze_converts_tuples_sets_and_mappings() -> None:
    assert freeze((1, [2])) == [1, [2]] and type(freeze((1, [2]))) is FrozenList
    assert freeze({1, 2}) == frozenset({1, 2})
    from types import MappingProxyType

    assert type(freeze(MappingProxyType({"a": [1]}))) is FrozenDict


def test_freeze_leaves_foreign_objects_alone() -> None:
    class Client:
        pass

    client = Client()
    frozen = freeze({"client": client})
    assert frozen["client"] is client


# -- freeze never re-walks frozen values -----------------------------------------------


def test_freeze_returns_frozen_containers_unchanged() -> None:
    d = freeze({"a": [1, {"b": 2}]})
    lst = freeze([1, {"x": [2]}])
    vec = FrozenVector([1, 2])
    fs = frozenset({1})
    for value in (d, lst, vec, fs):
        assert freeze(value) is value
    for scalar in ("s", 1, 1.5, True, None, b"x"):
        assert freeze(scalar) is scalar


def test_freeze_keeps_frozen_parts_of_a_plain_container_by_identity() -> None:
    history = freeze([{"role": "user", "content": "hi"}] * 3)
    state = freeze({"buffer": "x"})
    outer = freeze({"history": history, "state": state, "new": [1]})
    assert outer["history"] is history
    assert outer["state"] is state
    assert freeze([*history, {"role": "assistant", "content": "ok"}])[0] is history[0]


@pytest.mark.parametrize("at", [0, 2, 4])
def test_one_new_item_anywhere_among_kept_ones_is_frozen_and_the_rest_kept(at: int) -> None:
    kept = [1, "s", None, freeze({"a": [1]}), freeze([2.5])]
    items = [*kept[:at], {"new": [1, {"deep": True}]}, *kept[at:]]
    as_list, as_dict = freeze(items), freeze({str(i): v for i, v in enumerate(items)})
    for out in (as_list, list(as_dict.values())):
        assert out[at].__class__ is FrozenDict and out[at]["new"].__class__ is FrozenList
        assert out[at]["new"][1].__class__ is FrozenDict
        assert all(a is b for i, (a, b) in enumerate(zip(out, items)) if i != at)
    only_kept = freeze(kept)
    assert only_kept == kept and all(a is b for a, b in zip(only_kept, kept))


def test_constructors_keep_frozen_values_by_identity() -> None:
    inner = freeze({"x": [1]})
    assert FrozenDict(a=inner)["a"] is inner
    assert FrozenList([inner])[0] is inner


# -- every mutation is refused, and refused without effect ------------------------------


def _ior(target: Any) -> None:
    target |= {"zz": 1}


def _iadd(target: Any) -> None:
    target += [9]


def _imul(target: Any) -> None:
    target *= 2


def _setslice(target: Any) -> None:
    target[0:1] = [7]


def _delslice(target: Any) -> None:
    del target[:]


def _set_item(target: Any, key: Any) -> None:
    target[key] = "changed"


def _del_item(target: Any, key: Any) -> None:
    del target[key]


DICT_MUTATIONS: dict[str, Callable[[Any], Any]] = {
    "item assignment": lambda d: _set_item(d, next(iter(d))),
    "new key": lambda d: _set_item(d, "zz"),
    "del": lambda d: _del_item(d, next(iter(d))),
    "update": lambda d: d.update({"zz": 1}),
    "update kwargs": lambda d: d.update(zz=1),
    "pop": lambda d: d.pop(next(iter(d))),
    "pop default": lambda d: d.pop("missing", None),
    "popitem": lambda d: d.popitem(),
    "setdefault": lambda d: d.setdefault("zz", 1),
    "clear": lambda d: d.clear(),
    "|=": _ior,
}

LIST_MUTATIONS: dict[str, Callable[[Any], Any]] = {
    "append": lambda lst: lst.append(9),
    "extend": lambda lst: lst.extend([9]),
    "insert": lambda lst: lst.insert(0, 9),
    "pop": lambda lst: lst.pop(),
    "pop index": lambda lst: lst.pop(0),
    "remove": lambda lst: lst.remove(lst[0]),
    "sort": lambda lst: lst.sort(key=repr),
    "reverse": lambda lst: lst.reverse(),
    "clear": lambda lst: lst.clear(),
    "item assignment": lambda lst: _set_item(lst, 0),
    "slice assignment": _setslice,
    "del": lambda lst: _del_item(lst, 0),
    "del slice": _delslice,
    "+=": _iadd,
    "*=": _imul,
}


def _message() -> Message:
    return Message(
        role="assistant",
        content="done",
        metadata={
            "tool_calls": [{"id": "c1", "type": "function", "function": {"name": "add", "arguments": "{}"}}],
            "nested": {"deeper": {"items": [3, 1, 2]}},
        },
        multipart_content=[{"type": "text", "text": "done"}, {"type": "text", "text": "!"}],
        tool_result={"success": True, "result": {"values": [1, 2]}},
    )


def _session() -> Session:
    return Session(session_id="s", messages=[_message()], metadata={"notes": {"tags": ["a", "b"]}, "n": 1})


# Each target: (root value, how to reach the container to attack). The root is
# compared before and after, so a mutation that slipped through anywhere shows.
DICT_TARGETS: dict[str, Callable[[], tuple[Any, Callable[[Any], Any]]]] = {
    "bare": lambda: (freeze({"a": 1, "b": [2]}), lambda r: r),
    "nested in dict": lambda: (freeze({"outer": {"a": 1}}), lambda r: r["outer"]),
    "message.metadata": lambda: (_message(), lambda m: m.metadata),
    "message.metadata nested": lambda: (_message(), lambda m: m.metadata["nested"]["deeper"]),
    "tool call in metadata": lambda: (_message(), lambda m: m.metadata["tool_calls"][0]["function"]),
    "message.tool_result": lambda: (_message(), lambda m: m.tool_result),
    "multipart part": lambda: (_message(), lambda m: m.multipart_content[0]),
    "session.metadata": lambda: (_session(), lambda s: s.metadata),
    "session.metadata nested": lambda: (_session(), lambda s: s.metadata["notes"]),
    "message inside session": lambda: (_session(), lambda s: s.messages[0].metadata["nested"]),
    "tool schema": lambda: (
        ToolDescriptor(plugin_name="p", tool_name="t", schema={"type": "object", "properties": {"a": {}}}),
        lambda t: t.schema["properties"],
    ),
}

LIST_TARGETS: dict[str, Callable[[], tuple[Any, Callable[[Any], Any]]]] = {
    "bare": lambda: (freeze([1, 2, 3]), lambda r: r),
    "nested in list": lambda: (freeze([[3, 1, 2]]), lambda r: r[0]),
    "message.metadata tool_calls": lambda: (_message(), lambda m: m.metadata["tool_calls"]),
    "message.metadata deep list": lambda: (_message(), lambda m: m.metadata["nested"]["deeper"]["items"]),
    "message.multipart_content": lambda: (_message(), lambda m: m.multipart_content),
    "message.tool_result list": lambda: (_message(), lambda m: m.tool_result["result"]["values"]),
    "session.metadata list": lambda: (_session(), lambda s: s.metadata["notes"]["tags"]),
    "message in session": lambda: (_session(), lambda s: s.messages[0].metadata["tool_calls"]),
}


def _snapshot(root: Any) -> Any:
    return root.to_dict() if hasattr(root, "to_dict") else thaw(root)


@pytest.mark.parametrize("target", DICT_TARGETS)
@pytest.mark.parametrize("mutation", DICT_MUTATIONS)
def test_dict_mutations_are_refused_and_change_nothing(target: str, mutation: str) -> None:
    root, reach = DICT_TARGETS[target]()
    before = _snapshot(root)
    container = reach(root)
    with pytest.raises(TypeError) as info:
        DICT_MUTATIONS[mutation](container)
    message = str(info.value)
    assert "FrozenDict is immutable" in message
    assert "{**" in message, "the error should show how to build a new mapping"
    assert _snapshot(root) == before
    assert reach(root) is container


@pytest.mark.parametrize("target", LIST_TARGETS)
@pytest.mark.parametrize("mutation", LIST_MUTATIONS)
def test_list_mutations_are_refused_and_change_nothing(target: str, mutation: str) -> None:
    root, reach = LIST_TARGETS[target]()
    before = _snapshot(root)
    container = reach(root)
    with pytest.raises(TypeError) as info:
        LIST_MUTATIONS[mutation](container)
    message = str(info.value)
    assert "FrozenList is immutable" in message
    assert "[*" in message, "the error should show how to build a new list"
    assert _snapshot(root) == before
    assert reach(root) is container


def test_refusal_names_the_method() -> None:
    with pytest.raises(TypeError, match=r"append\(\)"):
        freeze([]).append(1)
    with pytest.raises(TypeError, match=r"setdefault\(\)"):
        freeze({}).setdefault("a", 1)


def test_new_attributes_cannot_be_attached() -> None:
    with pytest.raises(AttributeError):
        freeze({}).extra = 1  # type: ignore[attr-defined]
    with pytest.raises(AttributeError):
        freeze([]).extra = 1  # type: ignore[attr-defined]


# -- deriving changed copies ------------------------------------------------------


def test_frozen_dict_derivations_return_new_frozen_values() -> None:
    d = freeze({"a": 1, "b": 2})
    assert d.set("c", [3]) == {"a": 1, "b": 2, "c": [3]} and type(d.set("c", [3])["c"]) is FrozenList
    assert d.merged({"a": 10}, z=0) == {"a": 10, "b": 2, "z": 0}
    assert d.without("a", "missing") == {"b": 2}
    union = d | {"c": {"x": 1}}
    assert type(union) is FrozenDict and type(union["c"]) is FrozenDict
    assert union == {"a": 1, "b": 2, "c": {"x": 1}}
    for derived in (d.set("c", 3), d.merged(c=3), d.without("a"), union):
        assert type(derived) is FrozenDict and derived is not d
    assert d == {"a": 1, "b": 2}


def test_frozen_list_derivations_return_new_frozen_values() -> None:
    lst = freeze([1, 2])
    added = lst + [{"x": 1}]
    assert type(added) is FrozenList and type(added[2]) is FrozenDict and added == [1, 2, {"x": 1}]
    appended = lst.appended([3])
    assert appended == [1, 2, [3]] and type(appended[2]) is FrozenList
    assert lst == [1, 2]


# -- equality and hashing ------------------------------------------------------------


def test_equal_to_plain_containers_and_hashable() -> None:
    a = freeze({"x": [1, {"y": 2}], "z": None})
    b = freeze({"z": None, "x": [1, {"y": 2}]})
    assert a == b == {"x": [1, {"y": 2}], "z": None}
    assert hash(a) == hash(b)
    assert {a: "found"}[b] == "found"
    assert len({freeze([1, 2]), freeze([1, 2]), freeze([2, 1])}) == 2
    assert freeze({"x": 1}) != freeze({"x": 2})


@pytest.mark.slow
@settings(max_examples=100, deadline=None)
@given(json_values)
def test_freeze_thaw_round_trip(value: Any) -> None:
    frozen = freeze(value)
    _assert_deeply_frozen(frozen)
    assert frozen == value
    assert freeze(frozen) is frozen
    hash(frozen)
    thawed = thaw(frozen)
    _assert_plain(thawed)
    assert thawed == value
    assert hash(freeze(thawed)) == hash(frozen)


def test_thaw_returns_an_independent_copy() -> None:
    frozen = freeze({"a": [1, {"b": []}]})
    plain = thaw(frozen)
    plain["a"][1]["b"].append("x")
    plain["a"].append(2)
    plain["new"] = 1
    assert frozen == {"a": [1, {"b": []}]}
    assert thaw(frozen) is not thaw(frozen)


def test_thaw_turns_vectors_and_values_into_plain_data() -> None:
    assert thaw(FrozenVector([freeze({"a": [1]})])) == [{"a": [1]}]
    assert thaw({"m": Message(role="user", content="hi")}) == {"m": {"role": "user", "content": "hi"}}


# -- copy, deepcopy, pickle -----------------------------------------------------------


def test_copies_of_frozen_containers_are_the_same_object() -> None:
    d = freeze({"a": [1]})
    lst = freeze([{"a": 1}])
    for value in (d, lst):
        assert copy.copy(value) is value
        assert copy.deepcopy(value) is value


def test_deepcopy_of_a_plain_structure_holding_frozen_values() -> None:
    inner = freeze({"a": [1]})
    outer = {"inner": inner, "plain": [1]}
    copied = copy.deepcopy(outer)
    assert copied == outer and copied["plain"] is not outer["plain"]
    assert copied["inner"] is inner


@pytest.mark.parametrize(
    "value",
    [freeze({"a": [1, {"b": None}]}), freeze([{"x": 1.5}, [True]]), FrozenVector([1, "two", None]), FrozenVector()],
    ids=["dict", "list", "vector", "empty vector"],
)
def test_pickle_round_trip_keeps_type_and_frozenness(value: Any) -> None:
    restored = pickle.loads(pickle.dumps(value))
    assert restored == value and type(restored) is type(value)
    if not isinstance(value, FrozenVector):
        _assert_deeply_frozen(restored)
        with pytest.raises(TypeError):
            restored.clear()
    else:
        with pytest.raises(TypeError):
            restored.append(1)


# -- FrozenVector ---------------------------------------------------------------------


def test_frozen_vector_reads_like_a_sequence() -> None:
    vec = FrozenVector(["a", "b", "c"])
    assert vec == ["a", "b", "c"] and vec == ("a", "b", "c") and vec != ["a", "b"]
    assert len(vec) == 3 and vec[0] == "a" and vec[-1] == "c" and "b" in vec
    assert list(reversed(vec)) == ["c", "b", "a"] and vec.index("c") == 2
    assert isinstance(vec[1:], FrozenVector) and vec[1:] == ["b", "c"]
    assert [*vec] == ["a", "b", "c"]
    assert hash(vec) == hash(FrozenVector(["a", "b", "c"]))


def test_frozen_vector_derivations_leave_the_original() -> None:
    vec = FrozenVector([1, 2])
    assert vec.appended(3) == [1, 2, 3]
    assert vec.extended([3, 4]) == [1, 2, 3, 4]
    assert vec == [1, 2]


def test_fromkeys_builds_a_frozen_dict() -> None:
    d = FrozenDict.fromkeys(["a", "b"], [1])
    assert type(d) is FrozenDict and d == {"a": [1], "b": [1]}
    assert type(d["a"]) is FrozenList
    assert FrozenDict.fromkeys("xy") == {"x": None, "y": None}
    with pytest.raises(TypeError):
        d["c"] = 1


# -- depth: a bounded walk, never a RecursionError --------------------------------------------

from agent_core.errors import InvalidValueError  # noqa: E402
from agent_core.values.frozen import MAX_DEPTH  # noqa: E402
from agent_core.values.json_values import freeze_json  # noqa: E402


def _nested(depth: int) -> list:
    value: list = []
    for _ in range(depth):
        value = [value]
    return value


@pytest.mark.parametrize("make", [lambda: _nested(10_000), lambda: _nested(MAX_DEPTH + 1)], ids=["10000", "limit+1"])
def test_freeze_refuses_values_nested_too_deeply(make: Any) -> None:
    with pytest.raises(InvalidValueError, match=f"deeper than {MAX_DEPTH}"):
        freeze(make())
    with pytest.raises(InvalidValueError, match=f"deeper than {MAX_DEPTH}"):
        freeze_json({"k": make()}, "x")


def test_freeze_accepts_values_up_to_the_limit() -> None:
    assert thaw(freeze(_nested(MAX_DEPTH - 1))) == _nested(MAX_DEPTH - 1)


def test_freeze_refuses_a_value_that_contains_itself() -> None:
    loop: dict = {}
    loop["again"] = [loop]
    with pytest.raises(InvalidValueError, match="contains itself"):
        freeze(loop)
    with pytest.raises(InvalidValueError, match=r"x\['again'\]\[0\]\['again'\]"):
        freeze_json(loop, "x")


def test_freeze_still_leaves_other_objects_alone_but_freeze_json_refuses_them() -> None:
    marker = object()
    assert freeze({"client": marker})["client"] is marker
    with pytest.raises(InvalidValueError, match="object"):
        freeze_json({"client": marker})


def test_begins_with_follows_the_lists_a_history_was_joined_from() -> None:
    import gc

    from agent_core.values.frozen import begins_with

    base = freeze([{"n": i} for i in range(5)])
    grown = FrozenList.joined(FrozenList.joined(base, freeze([{"n": 5}])), freeze([{"n": 6}]))
    assert begins_with(grown, base) and begins_with(grown, grown)
    assert begins_with(grown, [{"n": 0}, {"n": 1}])  # not an ancestor: compared item by item
    assert not begins_with(grown, [{"n": 1}])
    assert not begins_with(base, grown)  # longer than the list itself
    other = freeze([{"n": 0}, {"n": 9}])
    assert not begins_with(FrozenList.joined(other, freeze([1])), [{"n": 0}, {"n": 1}])
    # the link is weak: a history keeps no ancestor alive, and a dead link falls back to comparing
    keep = FrozenList.joined(freeze([{"gone": 1}]), freeze([2]))
    gc.collect()
    assert begins_with(keep, [{"gone": 1}]) and not begins_with(keep, [{"gone": 2}])


def test_a_grown_history_is_json_checked_in_place_when_its_new_items_are_already_frozen() -> None:
    from agent_core.values.json_values import freeze_json
    from agent_core.values.native_history import freeze_json_over

    base = freeze_json(freeze([{"role": "user", "content": "hi"}]))
    grown = FrozenList.joined(base, freeze([{"role": "assistant", "content": "yo"}]))
    assert not grown._json
    out = freeze_json_over(grown, base)
    assert out is grown and out._json  # no copy of the history
    bad = FrozenList.joined(base, freeze([{"role": "assistant", "content": float("nan")}]))
    with pytest.raises(InvalidValueError):
        freeze_json_over(bad, base)


@pytest.mark.slow
@settings(max_examples=200, deadline=None)
@given(st.lists(st.lists(st.integers(0, 3), max_size=4), min_size=1, max_size=6), st.data())
def test_begins_with_agrees_with_comparing_the_head(pieces: list[list[int]], data: Any) -> None:
    from agent_core.values.frozen import begins_with

    chain = [freeze(pieces[0])]
    for piece in pieces[1:]:
        chain.append(FrozenList.joined(chain[-1], freeze(piece)))
    value = data.draw(st.sampled_from(chain))
    base = data.draw(st.one_of(st.sampled_from(chain), st.lists(st.integers(0, 3), max_size=8).map(freeze)))
    assert begins_with(value, base) == (list(value[: len(base)]) == list(base) and len(value) >= len(base))


def test_the_pipeline_in_a_context_is_handed_back_without_asking_what_it_is() -> None:
    """The core and the tool registry ride in every hook's context: freeze keeps them as they are, asking nothing."""
    from agent_core import AgentCore
    from agent_core.plugins.core import PluginCore
    from agent_core.plugins.tool_interop import ToolInteropRegistry

    core = PluginCore(AgentCore(), "r1")  # what a request's hooks get as context["core"]
    registry = ToolInteropRegistry()
    asked: list[str] = []

    def spy(frame: Any, event: str, arg: Any) -> None:
        if event == "call" and frame.f_code.co_name == "__instancecheck__":
            asked.append(type(frame.f_locals.get("instance")).__name__)

    sys.setprofile(spy)
    try:
        frozen = freeze({"core": core, "tool_interop": registry, "tags": ["a"]})
    finally:
        sys.setprofile(None)
    assert frozen["core"] is core and frozen["tool_interop"] is registry
    assert asked == []


def test_a_subclass_of_a_class_left_as_is_is_still_asked_and_still_left_as_is() -> None:
    from agent_core.plugins.core import PluginCore

    class Mine(PluginCore):
        pass

    mine = Mine(None)
    assert freeze({"core": mine})["core"] is mine
    assert freeze([mine])[0] is mine
