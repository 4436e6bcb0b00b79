"""The kit's tool_turns: the calls a history made, and the results that answer a call never made."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from agent_core.plugin_kit import ToolTurn, tool_turns


def _call(call_id: str, *, incomplete: bool = False) -> dict:
    call = {"id": call_id, "type": "function", "function": {"name": "f", "arguments": "{}"}}
    return {**call, "incomplete": True} if incomplete else call


def _asks(*calls: dict) -> dict:
    return {"role": "assistant", "content": "", "metadata": {"tool_calls": list(calls)}}


def _result(call_id: str) -> dict:
    return {"role": "tool", "content": "42", "metadata": {"tool_call_id": call_id}}


def test_a_cut_call_is_left_out_and_its_result_is_marked():
    messages = [{"role": "user", "content": "hi"}, _asks(_call("a"), _call("b", incomplete=True)),
                _result("a"), _result("b")]
    natives = [{"n": i} for i in range(4)]
    turns = list(tool_turns(messages, natives))
    assert [t.native for t in turns] == natives
    assert turns[0] == ToolTurn(messages[0], natives[0], (), False, False)
    assert [c["id"] for c in turns[1].calls] == ["a"]
    assert (turns[2].is_result, turns[2].cut) == (True, False)
    assert (turns[3].is_result, turns[3].cut) == (True, True)


def test_an_answer_whose_every_call_was_cut_makes_none():
    turns = list(tool_turns([_asks(_call("x", incomplete=True)), _result("x")], [{}, {}]))
    assert turns[0].calls == () and not turns[0].is_result
    assert turns[1].cut


def test_a_result_before_its_cut_call_is_not_marked():
    """Only calls already seen count: history runs forward."""
    turns = list(tool_turns([_result("x"), _asks(_call("x", incomplete=True))], [{}, {}]))
    assert not turns[0].cut


def test_lists_of_two_lengths_are_refused():
    with pytest.raises(ValueError):
        list(tool_turns([{"role": "user", "content": "hi"}], []))


@given(st.lists(st.tuples(st.text("abc", min_size=1, max_size=2), st.booleans()), max_size=8))
def test_every_call_is_either_made_or_cut_in_order(calls):
    messages = [_asks(*(_call(i, incomplete=cut) for i, cut in calls)), *(_result(i) for i, _ in calls)]
    turns = list(tool_turns(messages, [{}] * len(messages)))
    made = [i for i, cut in calls if not cut]
    cut_ids = {i for i, cut in calls if cut}
    assert [c["id"] for c in turns[0].calls] == (made if calls else [])
    assert [t.cut for t in turns[1:]] == [i in cut_ids for i, _ in calls]
