"""The client tier: clients that people use, and nobody here wrote, against ``agent-core serve``.

``pytest -m clients tests/clients`` runs it; a plain ``pytest`` deselects it (the hook below,
as ``addopts`` does for the live tier: ``tests/test_readme.py`` pins that ``addopts`` line).
The clients come from the ``test-clients`` extra (``pip install -e '.[test,test-clients]'``); a client
that is not installed skips its tests with the reason, or fails them when
``AGENT_CORE_CLIENTS=required``. instructor cannot share that environment (see
``test_instructor.py``).

One scripted upstream (:mod:`._upstream`) and one ``agent-core serve`` process
(:mod:`._gateway`) serve the whole session: each test starts with the upstream's queue and
log empty, and a failed test gets the gateway restarted after it, because a gateway that
mishandled an error may still be retrying it and would eat the next test's answers.

Tests assert what the real OpenAI (or Anthropic) API would make the client do: the same
values, exception classes, error fields and headers, and as many upstream requests as the
client made.
"""

from __future__ import annotations

from collections.abc import Generator, Iterator
from pathlib import Path
from typing import Any

import pytest

from ._answers import ANTHROPIC_MODELS, OPENAI_MODELS
from ._gateway import Gateway, GatewayFailed
from ._kit import required
from ._responses_answers import refusal
from ._upstream import Upstream


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Deselect the tier unless the ``-m`` expression names it (``-m clients``, ``-m 'clients or live'``)."""
    if "clients" in (config.getoption("markexpr", "") or ""):
        return
    kept = [item for item in items if item.get_closest_marker("clients") is None]
    if len(kept) != len(items):
        config.hook.pytest_deselected(items=[item for item in items if item not in kept])
        items[:] = kept


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: Any) -> Generator[None, pytest.TestReport, pytest.TestReport]:
    """Keep each phase's report on the item, so the fixture below knows whether its test failed."""
    report = yield
    setattr(item, f"report_{report.when}", report)
    return report


@pytest.fixture(scope="session")
def upstream() -> Iterator[Upstream]:
    server = Upstream({"openai": OPENAI_MODELS, "anthropic": ANTHROPIC_MODELS}, checks={"responses": refusal})
    yield server
    server.close()


def _start(home: Path, upstream: Upstream, *args: str) -> Gateway:
    gateway = Gateway(home, upstream.openai_base_url, upstream.anthropic_base_url, *args)
    try:
        return gateway.start()
    except GatewayFailed as exc:
        if "needs the server extra" in str(exc) and not required():
            pytest.skip(f"agent-core serve needs the server extra (pip install -e '.[test,test-clients]'): {exc}")
        pytest.fail(str(exc), pytrace=False)


@pytest.fixture(scope="session")
def gateway(tmp_path_factory: pytest.TempPathFactory, upstream: Upstream) -> Iterator[Gateway]:
    """``agent-core serve`` with the operator's defaults; models are named ``provider/model``."""
    served = _start(tmp_path_factory.mktemp("gateway"), upstream)
    yield served
    served.stop()


@pytest.fixture(scope="session")
def default_gateway(tmp_path_factory: pytest.TempPathFactory, upstream: Upstream) -> Iterator[Gateway]:
    """``agent-core serve --default-provider openai``: a bare model name (``gpt-4o-mini``) goes to ``openai``."""
    served = _start(tmp_path_factory.mktemp("default-gateway"), upstream, "--default-provider", "openai")
    yield served
    served.stop()


@pytest.fixture(autouse=True)
def _clean_slate(request: pytest.FixtureRequest, upstream: Upstream) -> Iterator[None]:
    """An empty upstream for each test; a fresh gateway after a failed one."""
    upstream.reset()
    yield
    report = getattr(request.node, "report_call", None)
    if report is not None and report.failed:
        for name in ("gateway", "default_gateway"):
            if name in request.fixturenames:
                request.getfixturevalue(name).restart()
    upstream.reset()
