"""Threads (or servers) opening one fresh SQLite file at once all open it: none fails with "database is locked"."""

from __future__ import annotations

import threading
from pathlib import Path

import pytest
from agent_core.store import open_store


@pytest.mark.slow
def test_opening_a_fresh_sqlite_file_at_once_from_many_threads(tmp_path: Path) -> None:
    failures: list[str] = []
    for n in range(100):
        url = f"sqlite:///{tmp_path}/fresh{n}.db"

        def open_one(url: str = url) -> None:
            try:
                open_store(url).close()
            except Exception as exc:  # noqa: BLE001 - collected, then asserted
                failures.append(repr(exc))

        threads = [threading.Thread(target=open_one) for _ in range(6)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
    assert failures == []
