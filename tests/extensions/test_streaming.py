"""agent_core.plugin_kit.MarkerScanner: the same pieces however the stream is cut."""

from __future__ import annotations

import pytest
from agent_core.plugin_kit import Hit, MarkerScanner
from agent_core.testing.strategies import splits
from hypothesis import given
from hypothesis import strategies as st

THINK = MarkerScanner(["<think>", "</think>"])


def normalise(pieces: list[str]) -> list[str]:
    """Adjacent text pieces joined (a stream may release one text in several pieces)."""
    out: list[str] = []
    for p in pieces:
        if out and not isinstance(p, Hit) and not isinstance(out[-1], Hit):
            out[-1] = out[-1] + p
        elif p:
            out.append(p if isinstance(p, Hit) else str(p))
    return out


def streamed(scanner: MarkerScanner, chunks: list[str]) -> tuple[list[str], list[str]]:
    """Pieces from feeding ``chunks`` one by one, and every held value seen on the way."""
    held, pieces, helds = "", [], []
    for chunk in chunks:
        out, held = scanner.scan(chunk, held)
        pieces += out
        helds.append(held)
    return pieces + scanner.flush(held), helds


def test_a_whole_text_splits_into_text_and_markers():
    pieces = THINK.split("a<think>plan</think>answer")
    assert pieces == ["a", "<think>", "plan", "</think>", "answer"]
    assert [isinstance(p, Hit) for p in pieces] == [False, True, False, True, False]


def test_a_marker_cut_in_two_is_held_then_found():
    out, held = THINK.scan("hello <th")
    assert out == ["hello "] and held == "<th"
    out, held = THINK.scan("ink>x", held)
    assert out == ["<think>", "x"] and isinstance(out[0], Hit) and held == ""


def test_only_what_could_still_become_a_marker_is_held():
    assert THINK.scan("a < b")[1] == ""  # '< ' can never become a marker
    assert THINK.scan("a <x")[1] == ""
    assert THINK.scan("a </thi")[1] == "</thi"
    assert THINK.scan("a <")[1] == "<"


def test_flush_releases_a_partial_marker_as_text():
    out, held = THINK.scan("x <thin")
    assert THINK.flush(held) == ["<thin"]
    assert not isinstance(THINK.flush(held)[0], Hit)


def test_the_longest_marker_at_a_position_wins_even_when_cut():
    scanner = MarkerScanner(["</", "</think>"])
    assert normalise(streamed(scanner, ["a</th", "ink>b"])[0]) == ["a", "</think>", "b"]
    assert normalise(streamed(scanner, ["a</", "x"])[0]) == ["a", "</", "x"]


def test_bad_markers_are_refused_with_what_was_given():
    with pytest.raises(ValueError, match="non-empty marker"):
        MarkerScanner([])
    with pytest.raises(ValueError, match="''"):
        MarkerScanner(["<a>", ""])


TEXTS = [
    "<think>I should add</think>The answer is 3",
    "a<<think>>b</think</think>c<thin",
    "<think><think></think></think>",
    "plain text with < and > and </ but no marker",
]


@pytest.mark.parametrize("text", TEXTS)
@given(data=st.data())
def test_every_split_gives_the_pieces_of_the_whole_text(text, data):
    chunks = data.draw(splits(text))
    pieces, helds = streamed(THINK, chunks)
    assert normalise(pieces) == normalise(THINK.split(text))
    assert "".join(pieces) == text  # nothing lost, nothing doubled
    for held in helds:  # what is held is always the start of a marker
        assert held == "" or any(m.startswith(held) and m != held for m in THINK.markers)


@given(
    st.lists(st.sampled_from(["<", "/", "t", "h", "i", "n", "k", ">", "x", "</think>", "<think>"]), max_size=30),
    st.data(),
)
def test_random_streams_over_a_marker_alphabet(parts, data):
    text = "".join(parts)
    chunks = data.draw(splits(text))
    pieces, _ = streamed(THINK, chunks)
    assert normalise(pieces) == normalise(THINK.split(text))
    assert "".join(pieces) == text


def test_every_one_of_the_splits_of_a_short_text():
    """Exhaustive: all 2**(n-1) ways to cut a text: a near miss, an opening marker, a cut-off closing one.

    Kept to 16 characters (32,768 splits, under a second); longer texts with more near
    misses are covered by the hypothesis tests above.
    """
    text = "<<think>a</think"
    whole = normalise(THINK.split(text))
    for mask in range(2 ** (len(text) - 1)):
        edges = [0, *(i + 1 for i in range(len(text) - 1) if mask >> i & 1), len(text)]
        chunks = [text[a:b] for a, b in zip(edges, edges[1:])]
        assert normalise(streamed(THINK, chunks)[0]) == whole, chunks
