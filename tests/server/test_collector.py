"""The cycle collector ``agent-core serve`` runs with (``agent_core.server.http.collector``)."""

from __future__ import annotations

import gc
from collections.abc import Iterator

import pytest
import uvicorn
from agent_core.server import serve
from agent_core.server.http.collector import YOUNG, tune_collector


@pytest.fixture
def collector() -> Iterator[None]:
    """Put the collector back as it was: its thresholds, and nothing left frozen."""
    before = gc.get_threshold()
    try:
        yield
    finally:
        gc.unfreeze()
        gc.set_threshold(*before)


def test_tune_freezes_what_is_alive_and_raises_the_young_threshold(collector: None) -> None:
    gc.unfreeze()
    before = gc.get_threshold()
    kept = [[i] for i in range(100)]  # containers alive at "start-up"
    assert tune_collector(12_345) == before
    assert gc.get_threshold() == (12_345, *before[1:])
    assert gc.get_freeze_count() >= len(kept)  # the start-up heap is out of every later walk


def test_zero_leaves_the_collector_alone(collector: None) -> None:
    gc.unfreeze()
    before = gc.get_threshold()
    assert tune_collector(0) == before
    assert gc.get_threshold() == before
    assert gc.get_freeze_count() == 0


def test_serve_runs_with_the_tuned_collector(collector: None, monkeypatch: pytest.MonkeyPatch) -> None:
    seen: list[tuple[int, ...]] = []
    monkeypatch.setattr(uvicorn.Server, "run", lambda self, sockets=None: seen.append(gc.get_threshold()))
    serve(object(), port=0)
    assert seen and seen[0][0] == YOUNG
    gc.set_threshold(700, 10, 10)
    serve(object(), port=0, gc_young=0)
    assert seen[1] == (700, 10, 10)
