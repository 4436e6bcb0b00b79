"""The hot loop on its own: HotLoop.feed over a prepared chain, without a request around it."""

from __future__ import annotations

from typing import Any

import pytest
from agent_core import FrozenDict, FrozenList, PluginError, RateLimitError, freeze
from agent_core.engine.hot_loop import HotLoop, hot_chain, partial_message
from agent_core.plugins.hooks import LivePlugin, spec_for
from agent_core.runtime.flight import Flight


def live(kind: str, cls: type) -> LivePlugin:
    return LivePlugin(spec_for(kind, cls), cls())


def loop(provider: type, *extensions: type) -> HotLoop:
    chain = hot_chain(live("provider", provider), [live("extension", e) for e in extensions])
    return HotLoop(chain, NATIVE, STATE, request_id="r1", iteration=3)


class Provider:
    name = "p"

    def stream_api(self, native_messages, state, *, request_id=None):
        yield from ()

    def process_chunk(self, chunk, native_messages, state):
        finals = [{"role": "assistant", "content": "done"}] if chunk.get("end") else []
        return [{"role": "assistant", "content": chunk["delta"]}], finals, native_messages, state


class Upper:
    name = "upper"

    def process_chunk(self, chunk, partials, finals, native_messages, state):
        seen.append((partials, finals, native_messages, state))
        return ([{**p, "content": p["content"].upper()} for p in partials], finals, native_messages,
                {**state, "n": state.get("n", 0) + 1})


class PassThrough:
    name = "pass"

    def process_chunk(self, chunk, partials, finals, native_messages, state):
        return partials, finals, native_messages, state


seen: list[Any] = []


@pytest.fixture(autouse=True)
def _clear() -> None:
    seen.clear()


NATIVE = freeze([{"role": "user", "content": "hi"}])
STATE = freeze({"config": {}})


def test_provider_alone_makes_one_event_and_keeps_the_same_history_and_state() -> None:
    hot = loop(Provider)
    (event,) = hot.feed({"delta": "a"})
    assert (event.request_id, event.iteration, event.message.content) == ("r1", 3, "a")
    assert hot.seen == [] and hot.chunks == 1
    assert hot.native is NATIVE and hot.state is STATE  # returned as given: nothing re-frozen


class FrozenStateProvider(Provider):
    """As the bundled providers do on a text chunk: the new state handed back frozen already."""

    def process_chunk(self, chunk, native_messages, state):
        partials, finals, native, _ = super().process_chunk(chunk, native_messages, state)
        return partials, finals, native, FrozenDict.from_frozen({**state, "text": chunk["delta"]})


def test_a_provider_state_handed_back_frozen_is_taken_inline_without_the_general_check(monkeypatch) -> None:
    import agent_core.engine.hot_loop as hot_loop

    def general(*args: Any, **kwargs: Any) -> Any:
        raise AssertionError("the usual chunk went through taken()")

    monkeypatch.setattr(hot_loop, "taken", general)
    hot = loop(FrozenStateProvider, PassThrough)
    (event,) = hot.feed({"delta": "a"})
    assert event.message.content == "a"
    assert hot.state.__class__ is FrozenDict and hot.state == {"config": {}, "text": "a"}
    assert hot.native is NATIVE and hot.seen == []


def test_extensions_see_values_in_order_and_what_they_return_is_frozen() -> None:
    hot = loop(Provider, PassThrough, Upper)
    (event,) = hot.feed({"delta": "a", "end": True})
    ((ext_partials, ext_finals, ext_native, ext_state),) = seen
    # partials live for one chunk and never enter a session: handed on as the provider made them
    assert ext_partials.__class__ is list and ext_partials[0].__class__ is dict
    assert isinstance(ext_finals, FrozenList) and ext_finals == [{"role": "assistant", "content": "done"}]
    assert ext_native is NATIVE and ext_state is STATE
    assert event.message.content == "A"
    assert hot.seen == [{"role": "assistant", "content": "done"}] and isinstance(hot.seen[0], FrozenDict)
    assert isinstance(hot.state, FrozenDict) and hot.state["n"] == 1


def test_an_extension_without_process_chunk_is_not_in_the_chain() -> None:
    class Quiet:
        name = "quiet"

    chain = hot_chain(live("provider", Provider), [live("extension", Quiet), live("extension", PassThrough)])
    assert [p.name for p, _ in chain] == ["p", "pass"]


def test_an_invalid_partial_is_blamed_on_the_extension_that_made_it() -> None:
    class Robot:
        name = "robot"

        def process_chunk(self, chunk, partials, finals, native_messages, state):
            return [{"role": "robot", "content": "x"}], finals, native_messages, state

    with pytest.raises(PluginError, match="invalid partial") as info:
        loop(Provider, Robot, PassThrough).feed({"delta": "a"})
    assert (info.value.plugin, info.value.hook) == ("robot", "process_chunk")


def test_a_bad_shape_names_the_plugin_and_the_hook() -> None:
    class Broken:
        name = "broken"

        def process_chunk(self, chunk, partials, finals, native_messages, state):
            return partials, finals  # two items, not four

    with pytest.raises(PluginError) as info:
        loop(Provider, Broken).feed({"delta": "a"})
    assert (info.value.plugin, info.value.hook) == ("broken", "process_chunk")


class _Exploding:
    def __iter__(self):
        raise RuntimeError("boom")


@pytest.mark.parametrize("shape, said", [
    (lambda p, f, n, s: (p, f, n), "returned a 3-tuple"),
    (lambda p, f, n, s: (p, f, n, s, None), "returned a 5-tuple"),
    (lambda p, f, n, s: {"a": 1, "b": 2, "c": 3, "d": 4}, "returned dict"),  # four keys unpack, yet not a tuple
    (lambda p, f, n, s: (x for x in (p, f, n, s)), "returned generator"),  # four items, yet not a tuple: not run
    (lambda p, f, n, s: "four", "returned str"),
    (lambda p, f, n, s: None, "returned NoneType"),
    (lambda p, f, n, s: _Exploding(), "returned _Exploding"),
])
@pytest.mark.parametrize("who", ["provider", "extension"])
def test_every_bad_shape_of_a_hot_hook_is_named_as_a_shape_with_its_plugin(shape: Any, said: str, who: str) -> None:
    class BadProvider(Provider):
        name = "badp"

        def process_chunk(self, chunk, native_messages, state):
            return shape(*super().process_chunk(chunk, native_messages, state))

    class BadExtension:
        name = "bade"

        def process_chunk(self, chunk, partials, finals, native_messages, state):
            return shape(partials, finals, native_messages, state)

    hot = loop(BadProvider) if who == "provider" else loop(Provider, BadExtension)
    with pytest.raises(PluginError, match=said) as info:
        hot.feed({"delta": "a"})
    assert (info.value.plugin, info.value.hook) == ("badp" if who == "provider" else "bade", "process_chunk")
    assert "expected a 4-tuple" in str(info.value)


def test_a_hook_written_as_a_generator_by_mistake_is_named_and_its_body_never_runs() -> None:
    ran: list[str] = []

    class Yielding:
        name = "yielding"

        def process_chunk(self, chunk, partials, finals, native_messages, state):
            ran.append("body")
            yield from (partials, finals, native_messages, state)

    with pytest.raises(PluginError, match="returned generator") as info:
        loop(Provider, Yielding).feed({"delta": "a"})
    assert info.value.plugin == "yielding" and ran == []


def test_a_list_of_the_same_four_values_passes_through_like_the_tuple() -> None:
    class ListBack:
        name = "listback"

        def process_chunk(self, chunk, partials, finals, native_messages, state):
            return [partials, finals, native_messages, state]

    hot = loop(Provider, ListBack)
    (event,) = hot.feed({"delta": "a"})
    assert event.message.content == "a" and hot.native is NATIVE and hot.state is STATE


def test_a_hook_exception_becomes_a_plugin_error_but_a_typed_llm_error_passes() -> None:
    class Raises:
        name = "raises"
        error: Exception = ValueError("boom")

        def process_chunk(self, chunk, partials, finals, native_messages, state):
            raise self.error

    hot = loop(Provider, Raises)
    with pytest.raises(PluginError, match="boom") as info:
        hot.feed({"delta": "a"})
    assert info.value.plugin == "raises" and info.value.hook == "process_chunk"
    assert info.value.__cause__ is Raises.error and info.value.__suppress_context__  # as ``raise ... from``
    Raises.error = RateLimitError("slow down", provider="p")
    with pytest.raises(RateLimitError) as passed:
        hot.feed({"delta": "a"})
    assert passed.value is Raises.error and passed.value.__cause__ is None


def test_a_state_that_cannot_be_frozen_is_a_plugin_error() -> None:
    class Deep:
        name = "p"

        def stream_api(self, native_messages, state, *, request_id=None):
            yield from ()

        def process_chunk(self, chunk, native_messages, state):
            loop: dict[str, Any] = {}
            loop["self"] = loop
            return [], [], native_messages, loop

    with pytest.raises(PluginError, match="state"):
        loop(Deep).feed({"delta": "a"})


def test_partial_message_checks_what_a_plugin_returned_once() -> None:
    plugin = live("provider", Provider)
    msg = partial_message(plugin, {"content": "x"})
    assert (msg.role, msg.content) == ("assistant", "x")
    assert partial_message(plugin, msg) is msg
    with pytest.raises(PluginError, match="invalid partial"):
        partial_message(plugin, {"role": "robot", "content": "x"})
    with pytest.raises(PluginError, match="invalid partial"):
        partial_message(plugin, {"content": float("nan")})


def test_flat_partials_are_frozen_by_the_short_path_and_others_by_the_general_one() -> None:
    from agent_core.engine.hot_loop import _flat

    flat = [{"role": "assistant", "content": "x"}, {"role": "assistant", "content": "", "index": 2}]
    out = _flat(flat)
    assert out == flat and out.__class__ is FrozenList and all(d.__class__ is FrozenDict for d in out)
    assert out[0] is not flat[0]  # a copy: the provider's dict stays its own
    with pytest.raises(TypeError):
        out[0]["content"] = "changed"  # type: ignore[index]
    with pytest.raises(TypeError):
        out.append({})
    assert hash(out[0]) == hash(FrozenDict(flat[0]))  # usable as a key, like any frozen dict
    assert _flat([{"role": "assistant", "metadata": {"reasoning": "r"}}]) is None  # nested: the general walk
    assert _flat([FrozenDict(role="assistant")]) is None  # not a plain dict


def test_no_partials_make_no_event_several_make_several_and_a_cancel_stops_the_next_chunk() -> None:
    from agent_core.runtime.flight import RunCancelled

    class Splits:
        name = "splits"

        def process_chunk(self, chunk, partials, finals, native_messages, state):
            return [{"content": c} for c in chunk["delta"]], finals, native_messages, state

    hot = loop(Provider, Splits)
    assert list(hot.feed({"delta": ""})) == []
    assert [e.message.content for e in hot.feed({"delta": "abc"})] == ["a", "b", "c"]
    flight = Flight("r2")
    hot = HotLoop(hot_chain(live("provider", Provider), []), NATIVE, STATE, request_id="r2", token=flight.token)
    flight.token.cancel()
    with pytest.raises(RunCancelled):
        hot.feed({"delta": "a"})
    assert hot.chunks == 0


def test_a_token_cancelled_from_another_thread_stops_the_next_chunk_and_wakes_waiters() -> None:
    import threading

    from agent_core.runtime.flight import RunCancelled

    flight = Flight("r3")
    hot = HotLoop(hot_chain(live("provider", Provider), []), NATIVE, STATE, request_id="r3", token=flight.token)
    hot.feed({"delta": "a"})
    token = flight.token
    assert token.cancelled is False and token.wait(0) is False
    heard: list[str] = []
    token.on_cancel(lambda: heard.append("cancelled"))
    worker = threading.Thread(target=token.cancel)
    worker.start()
    assert token.wait(5) is True
    worker.join()
    token.cancel()  # a second cancel changes nothing and calls no callback again
    assert token.cancelled is True and heard == ["cancelled"]
    with pytest.raises(RunCancelled):
        hot.feed({"delta": "b"})
    assert hot.chunks == 1


def test_from_frozen_and_joined_build_frozen_values_without_a_walk() -> None:
    inner = freeze({"role": "user", "content": "hi"})
    d = FrozenDict.from_frozen({"m": inner, "n": 1})
    assert d == {"m": inner, "n": 1} and d["m"] is inner  # kept, not copied again
    assert hash(d) == hash(FrozenDict({"m": {"role": "user", "content": "hi"}, "n": 1}))
    with pytest.raises(TypeError):
        d["n"] = 2  # type: ignore[index]
    assert FrozenDict.from_frozen([("a", 1)]) == {"a": 1}  # pairs, as dict() takes them
    assert FrozenList.from_frozen(x for x in (1, 2)) == [1, 2]  # any iterable
    base = FrozenList.from_frozen([inner])
    grown = FrozenList.joined(base, freeze([{"role": "assistant", "content": "yo"}]))
    assert grown.__class__ is FrozenList and grown[0] is inner and len(grown) == 2
    from agent_core.values.frozen import begins_with

    assert begins_with(grown, base)
    with pytest.raises(TypeError):
        grown.append({})


def test_the_engine_reads_no_private_attribute_of_another_object() -> None:
    """The hot loop, the run, the tools and the effects use only public names of what they are handed.

    ``x._name`` is allowed on ``self`` and ``cls`` only: a private attribute of
    a ``threading.Event`` or of a frozen value is the owner's to change.
    """
    import ast
    from pathlib import Path

    import agent_core

    root = Path(agent_core.__file__).parent
    files = [root / "engine" / n for n in ("hot_loop.py", "run.py", "finalize.py", "request_injection.py")]
    files += sorted((root / "tools").glob("*.py")) + sorted((root / "runtime").glob("*.py"))
    found = []
    for path in files:
        for node in ast.walk(ast.parse(path.read_text())):
            if (isinstance(node, ast.Attribute) and node.attr.startswith("_") and not node.attr.startswith("__")
                    and not (isinstance(node.value, ast.Name) and node.value.id in ("self", "cls"))):
                found.append(f"{path.name}:{node.lineno} {ast.unparse(node)}")
    assert found == []


def test_close_runs_the_extensions_once_more_with_no_chunk_each_handed_what_the_one_before_returned() -> None:
    class Flushes:
        name = "flushes"

        def process_chunk(self, chunk, partials, finals, native_messages, state):
            held = [{"role": "assistant", "content": "held"}] if chunk is None else []
            return [*partials, *held], finals, native_messages, state

    hot = loop(Provider, Flushes, Upper)
    finals = freeze([{"role": "assistant", "content": "done"}])
    partials, out_finals, native, state, owner, hook = hot.close(FrozenList(), finals, NATIVE, STATE)
    ((upper_partials, upper_finals, _, _),) = seen  # Upper saw what Flushes released
    assert upper_partials == [{"role": "assistant", "content": "held"}] and upper_finals is finals
    assert partials == [{"role": "assistant", "content": "HELD"}] and (owner.name, hook) == ("upper", "process_chunk")
    assert out_finals == finals and native is NATIVE and state["n"] == 1
    assert hot.chunks == 0  # no chunk was fed


def test_close_passes_a_typed_error_as_it_is_and_wraps_the_rest() -> None:
    from agent_core import ConfigError

    class Raises:
        name = "raises"
        error: Exception = ConfigError("bad key")

        def process_chunk(self, chunk, partials, finals, native_messages, state):
            raise self.error

    hot = loop(Provider, Raises)
    with pytest.raises(ConfigError):
        hot.close(FrozenList(), FrozenList(), NATIVE, STATE)
    Raises.error = KeyError("x")
    with pytest.raises(PluginError) as info:
        hot.close(FrozenList(), FrozenList(), NATIVE, STATE)
    assert info.value.__cause__ is Raises.error
