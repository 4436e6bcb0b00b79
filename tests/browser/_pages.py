"""What the console's browser tests do to a page, as a person would: open it, type, look."""

from __future__ import annotations

import re
from typing import Any
from urllib.parse import parse_qs, urlparse

from .conftest import SHOTS, Watched

__all__ = ["expect", "in_view", "open_console", "send", "session_id", "shot"]


def expect(target: Any) -> Any:
    """Playwright's retrying assertions (imported late: without Playwright the browser fixture skips first)."""
    from playwright.sync_api import expect as playwright_expect

    return playwright_expect(target)


def open_console(watched: Watched, base_url: str, path: str = "/") -> Any:
    page = watched.page
    page.goto(base_url + path)
    page.get_by_role("textbox", name="Message").wait_for()  # shown once the server has answered
    return page


def send(page: Any, text: str) -> None:
    box = page.get_by_role("textbox", name="Message")
    box.fill(text)
    box.press("Enter")


def session_id(page: Any) -> str:
    """The open session's id, from the address bar (the first turn of a new session puts it there)."""
    page.wait_for_url(re.compile(r"[?&]session="))
    return parse_qs(urlparse(page.url).query)["session"][0]


def in_view(page: Any, locator: Any) -> bool:
    """Whether the bottom of ``locator`` is on screen inside the conversation pane, the page unscrolled.

    Asked until it holds (up to 2 s): the pane scrolls once the browser has laid the new text out.
    """
    script = """(node) => {
        const box = node.getBoundingClientRect();
        const pane = document.getElementById("transcript").getBoundingClientRect();
        const page = document.scrollingElement;
        return box.height > 0 && box.bottom <= pane.bottom + 2 && box.bottom >= pane.top
            && pane.bottom <= window.innerHeight && page.scrollTop === 0 && page.scrollHeight <= window.innerHeight;
    }"""
    for _ in range(20):
        if locator.evaluate(script):
            return True
        page.wait_for_timeout(100)
    return False


def shot(page: Any, name: str) -> None:
    """``build/console-shots/console-{name}.png``; ``scripts/console_screenshots.py`` copies them into docs/."""
    SHOTS.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(SHOTS / f"console-{name}.png"))
