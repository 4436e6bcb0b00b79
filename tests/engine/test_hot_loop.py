"""The hot loop on its own: feed_chunk over a prepared chain, without a request around it."""

from __future__ import annotations

from typing import Any

import pytest

from agent_core import FrozenDict, FrozenList, PluginError, RateLimitError, freeze
from agent_core.hooks import LivePlugin, spec_for
from agent_core.hot_loop import feed_chunk, hot_chain, partial_message


def live(kind: str, cls: type) -> LivePlugin:
    return LivePlugin(spec_for(kind, cls), cls())


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


def test_provider_alone_hands_back_its_partials_and_the_same_history_and_state() -> None:
    chain = hot_chain(live("provider", Provider), [])
    partials, finals, native, state, owner = feed_chunk(chain, {"delta": "a"}, NATIVE, STATE)
    assert [p["content"] for p in partials] == ["a"] and owner.name == "p"
    assert finals == [] and isinstance(finals, FrozenList)
    assert native is NATIVE and state is STATE  # returned as given: nothing re-frozen


def test_extensions_see_values_in_order_and_what_they_return_is_frozen() -> None:
    chain = hot_chain(live("provider", Provider), [live("extension", PassThrough), live("extension", Upper)])
    partials, finals, native, state, owner = feed_chunk(chain, {"delta": "a", "end": True}, NATIVE, STATE)
    ((ext_partials, ext_finals, ext_native, ext_state),) = seen
    # partials live for one chunk and never enter a session: handed on as the provider made them
    assert ext_partials.__class__ is list and ext_partials[0].__class__ is dict
    assert owner.name == "upper"  # the last plugin that changed the partials
    assert isinstance(ext_finals, FrozenList) and ext_finals == [{"role": "assistant", "content": "done"}]
    assert ext_native is NATIVE and ext_state is STATE
    assert [p["content"] for p in partials] == ["A"]
    assert finals == [{"role": "assistant", "content": "done"}]
    assert isinstance(state, FrozenDict) and state["n"] == 1


def test_an_extension_without_process_chunk_is_not_in_the_chain() -> None:
    class Quiet:
        name = "quiet"

    chain = hot_chain(live("provider", Provider), [live("extension", Quiet), live("extension", PassThrough)])
    assert [p.name for p, _ in chain] == ["p", "pass"]


def test_an_invalid_partial_is_blamed_on_the_extension_that_made_it() -> None:
    from agent_core.flight import Flight
    from agent_core.hot_loop import _Stream

    class Robot:
        name = "robot"

        def process_chunk(self, chunk, partials, finals, native_messages, state):
            return [{"role": "robot", "content": "x"}], finals, native_messages, state

    chain = hot_chain(live("provider", Provider), [live("extension", Robot), live("extension", PassThrough)])
    stream = _Stream(chain, NATIVE, STATE, "r1", 0, Flight("r1"))
    with pytest.raises(PluginError, match="invalid partial") as info:
        stream.step({"delta": "a"})
    assert (info.value.plugin, info.value.hook) == ("robot", "process_chunk")


def test_a_bad_shape_names_the_plugin_and_the_hook() -> None:
    class Broken:
        name = "broken"

        def process_chunk(self, chunk, partials, finals, native_messages, state):
            return partials, finals  # two items, not four

    chain = hot_chain(live("provider", Provider), [live("extension", Broken)])
    with pytest.raises(PluginError) as info:
        feed_chunk(chain, {"delta": "a"}, NATIVE, STATE)
    assert (info.value.plugin, info.value.hook) == ("broken", "process_chunk")


def test_a_hook_exception_becomes_a_plugin_error_but_a_typed_llm_error_passes() -> None:
    class Raises:
        name = "raises"
        error: Exception = ValueError("boom")

        def process_chunk(self, chunk, partials, finals, native_messages, state):
            raise self.error

    chain = hot_chain(live("provider", Provider), [live("extension", Raises)])
    with pytest.raises(PluginError, match="boom") as info:
        feed_chunk(chain, {"delta": "a"}, NATIVE, STATE)
    assert info.value.plugin == "raises"
    Raises.error = RateLimitError("slow down", provider="p")
    with pytest.raises(RateLimitError):
        feed_chunk(chain, {"delta": "a"}, NATIVE, STATE)


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
        feed_chunk(hot_chain(live("provider", Deep), []), {"delta": "a"}, NATIVE, STATE)


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
    from agent_core.hot_loop import _flat

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
