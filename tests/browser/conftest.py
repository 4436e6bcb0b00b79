"""The browser tier: the web console in a real headless Chromium, driven by Playwright.

``pytest -m browser tests/browser`` runs it; a plain ``pytest`` deselects it (the hook below),
so the fast suite never starts a browser. Playwright comes from the ``browser`` extra
(``pip install -e '.[test,test-browser]'``) and drives the system's Chromium (Debian package
``chromium``): it never downloads a browser of its own. Without either the tests skip,
with the reason, or fail when ``AGENT_CORE_BROWSER=required`` (``.ci/run`` sets it).

One server (:mod:`._console_app`: a model written in the test, real features, a SQLite
store in a temporary directory) and one browser serve the whole run; each test gets a
fresh browser context (no storage shared between tests) and fails if the page logged an
error to the browser console or threw.

Screenshots go to ``build/console-shots/`` (git-ignored; ``AGENT_CORE_CONSOLE_SHOTS`` names
another folder), so the tests never write into tracked files; ``scripts/console_screenshots.py``
runs the tier and copies the ones the README links into ``docs/``.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from ._console_app import OPERATOR_CONFIG, build_core

#: the flags that keep Chromium to itself on a machine without a network or a display
CHROMIUM_FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                  "--disable-background-networking", "--disable-component-update", "--disable-sync"]

ROOT = Path(__file__).resolve().parents[2]

#: where the tests put their screenshots
SHOTS = Path(os.environ.get("AGENT_CORE_CONSOLE_SHOTS") or ROOT / "build" / "console-shots")

#: the window sizes a person opens the console in: a laptop, and a phone
DESKTOP: dict[str, Any] = {"viewport": {"width": 1366, "height": 768}}
PHONE: dict[str, Any] = {"viewport": {"width": 390, "height": 844}, "device_scale_factor": 2, "is_mobile": True,
                         "has_touch": True}


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Deselect the tier unless the ``-m`` expression names it (``-m browser``)."""
    if "browser" in (config.getoption("markexpr", "") or ""):
        return
    kept = [item for item in items if item.get_closest_marker("browser") is None]
    if len(kept) != len(items):
        config.hook.pytest_deselected(items=[item for item in items if item not in kept])
        items[:] = kept


def _missing(why: str) -> None:
    if os.environ.get("AGENT_CORE_BROWSER") == "required":
        pytest.fail(f"the browser tier is required (AGENT_CORE_BROWSER=required): {why}")
    pytest.skip(why)


@pytest.fixture(scope="session")
def browser() -> Iterator[Any]:
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        _missing("Playwright is not installed (pip install -e '.[test,test-browser]')")
    binary = shutil.which("chromium") or shutil.which("chromium-browser")
    if binary is None:
        _missing("no Chromium on this machine (Debian package chromium)")
    with sync_playwright() as pw:
        launched = pw.chromium.launch(executable_path=binary, args=CHROMIUM_FLAGS)
        try:
            yield launched
        finally:
            launched.close()


def serve(tmp: Path, **settings: Any) -> Any:
    """A running console server over a fresh store in ``tmp`` (a context manager yielding its URL)."""
    from agent_core.server import ServeSettings, create_app
    from agent_core.store import open_store
    from server._live import running

    token = settings.pop("token", None)
    app = create_app(build_core(), open_store(f"sqlite:///{tmp / 'sessions.db'}"), token, config=OPERATOR_CONFIG,
                     settings=ServeSettings(allow_config=("approval_timeout_s",), **settings))
    return running(app)


@pytest.fixture(scope="session")
def base_url(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    with serve(tmp_path_factory.mktemp("console")) as url:
        yield url


class Watched:
    """A page and what it logged: errors on the browser console, and uncaught exceptions."""

    def __init__(self, page: Any) -> None:
        self.page = page
        self.errors: list[str] = []
        self.allowed: tuple[str, ...] = ()  # substrings of errors a test expects (a 401 it provokes)
        page.on("console", lambda m: self.errors.append(f"console: {m.text}") if m.type == "error" else None)
        page.on("pageerror", lambda e: self.errors.append(f"exception: {e}"))

    def unexpected(self) -> list[str]:
        return [e for e in self.errors if not any(a in e for a in self.allowed)]


@pytest.fixture
def new_page(browser: Any) -> Iterator[Any]:
    """Opens a watched page in a fresh context of its own (``new_page(**PHONE)``); each is checked at the end."""
    opened: list[tuple[Any, Watched]] = []

    def make(**options: Any) -> Watched:
        context = browser.new_context(**{**DESKTOP, "accept_downloads": True, **options})
        page = context.new_page()
        page.set_default_timeout(10_000)
        seen = Watched(page)
        opened.append((context, seen))
        return seen

    try:
        yield make
    finally:
        for context, _ in opened:
            context.close()
    for _, seen in opened:
        assert seen.unexpected() == [], "the page logged errors"


@pytest.fixture
def watched(new_page: Any) -> Watched:
    return new_page()
