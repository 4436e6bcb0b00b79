"""Streamed text kept as a chain of pieces, and the usual chunk's state change made the engine's way."""

from __future__ import annotations

from agent_core import FrozenDict, freeze
from agent_core.plugin_kit import push, pushed, text_of
from hypothesis import given
from hypothesis import strategies as st


@given(st.lists(st.text(max_size=5), max_size=30))
def test_pushed_pieces_join_to_the_text_frozen_or_not(pieces: list[str]) -> None:
    plain: object = {"other": 1}
    frozen: object = freeze({"other": 1})
    for piece in pieces:
        plain = pushed(plain, "text", piece)  # type: ignore[arg-type]
        frozen = pushed(frozen, "text", piece)  # type: ignore[arg-type]
        frozen = freeze(frozen)  # what the engine does with a hook's state: nothing, once it is frozen
    assert text_of(plain.get("text")) == text_of(frozen.get("text")) == "".join(pieces)  # type: ignore[attr-defined]
    assert plain["other"] == frozen["other"] == 1  # type: ignore[index]


def test_a_frozen_state_comes_back_frozen_and_needs_no_walk() -> None:
    state = freeze({"config": {"model": "m"}, "text": push(None, "a")})
    after = pushed(state, "text", "b")
    assert after.__class__ is FrozenDict
    assert freeze(after) is after  # already frozen all the way down: freezing hands it back as it is
    assert text_of(after["text"]) == "ab" and state["text"] == freeze(push(None, "a"))  # the old state unchanged


def test_a_plain_state_comes_back_plain_and_an_empty_piece_changes_nothing() -> None:
    state = {"text": None}
    assert pushed(state, "text", "") is state
    after = pushed(state, "text", "x")
    assert after.__class__ is dict and after is not state and state == {"text": None}
    assert text_of(after["text"]) == "x"
