"""``GET /readyz``: ready while the session store answers, 503 naming the store (never its URL) when it does not."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import httpx
import pytest
from agent_core.server import create_app

from ._live import running


def test_ready_while_the_store_answers(base_url: str) -> None:
    answer = httpx.get(f"{base_url}/readyz")
    assert (answer.status_code, answer.json()) == (200, {"status": "ready"})


def test_unready_when_the_store_cannot_be_opened_while_healthz_still_answers(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    blocker = tmp_path / "a-file"
    blocker.write_text("not a directory")
    monkeypatch.setenv("AGENT_CORE_HOME", str(blocker / "home"))  # the default store cannot be made here
    with running(create_app()) as url:
        answer = httpx.get(f"{url}/readyz")
        assert answer.status_code == 503 and answer.headers["retry-after"] == "5"
        body: Any = answer.json()
        assert body["status"] == "unready" and "session store" in body["reason"]
        assert str(blocker) not in answer.text
        assert httpx.get(f"{url}/healthz").status_code == 200
