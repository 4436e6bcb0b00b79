"""The uvicorn tuning is used only on a uvicorn it was tested with; otherwise serve runs stock, saying so once."""

from __future__ import annotations

import logging
from typing import Any

import pytest

uvicorn = pytest.importorskip("uvicorn", reason="agent-core serve needs the server extra")

from agent_core.server import serve  # noqa: E402
from agent_core.server.http.uvicorn_tuning import STOCK, http_option  # noqa: E402
from agent_core.server.http.uvicorn_tuning.compat import NEEDED, TESTED, missing_internals, why_not_tuned  # noqa: E402


def test_the_installed_uvicorn_is_one_the_tuning_was_tested_with() -> None:
    # When this fails, a new uvicorn is installed: run tests/server against it, then widen TESTED.
    assert why_not_tuned() is None
    assert missing_internals(NEEDED) == []


@pytest.mark.parametrize("version", ["0.28.9", "0.55.0", "1.0.0", "0.55.0rc1", "dev"])
def test_a_version_outside_the_tested_range_is_refused_by_name(version: str) -> None:
    reason = why_not_tuned(version)
    assert reason is not None and f"uvicorn {version} " in reason and "tested with" in reason


def test_both_ends_of_the_range() -> None:
    (low_major, low_minor), (high_major, high_minor) = TESTED
    assert why_not_tuned(f"{low_major}.{low_minor}.0") is None
    assert why_not_tuned(f"{high_major}.{high_minor - 1}.99") is None
    assert why_not_tuned(f"{high_major}.{high_minor}.0") is not None


def test_a_missing_internal_is_named() -> None:
    needed = (
        ("uvicorn.protocols.http.h11_impl", "H11Protocol", None, ("handle_events", "no_such_method")),
        ("uvicorn.protocols.http.h11_impl", "RequestResponseCycle", "__init__", ("scope", "no_such_attribute")),
        ("uvicorn.protocols.http.h11_impl", "NoSuchClass", None, ("send",)),
        ("uvicorn.no_such_module", "H11Protocol", None, ("send",)),
        ("uvicorn.protocols.http.h11_impl", "H11Protocol", "no_such_method", ("loop",)),
    )
    assert missing_internals(needed) == [
        "H11Protocol.no_such_method",
        "RequestResponseCycle.no_such_attribute",
        "uvicorn.protocols.http.h11_impl.NoSuchClass",
        "uvicorn.no_such_module.H11Protocol",
        "H11Protocol.no_such_method",
    ]


def test_an_untested_uvicorn_gets_the_stock_protocol_and_one_warning(caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.WARNING, logger="agent_core.server"):
        assert http_option(10.0, version="0.99.0") == STOCK
    warnings = [r for r in caplog.records if r.levelno == logging.WARNING]
    assert len(warnings) == 1
    assert "uvicorn 0.99.0" in warnings[0].getMessage() and "header deadline" in warnings[0].getMessage()


def test_a_tested_uvicorn_gets_the_tuned_protocol_quietly(caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.WARNING, logger="agent_core.server"):
        option = http_option(10.0)
    assert option != STOCK and option.__module__ == "agent_core.server.http.uvicorn_tuning.protocol"
    assert not caplog.records


def test_serve_enters_the_tuning(monkeypatch: pytest.MonkeyPatch) -> None:
    seen: list[Any] = []
    monkeypatch.setattr(uvicorn.Server, "run", lambda self, sockets=None: seen.append(self.config.http))
    serve(object(), port=0, gc_young=0)
    assert seen[0] != STOCK and seen[0].__module__ == "agent_core.server.http.uvicorn_tuning.protocol"
