"""The console as a chat people know: the reply in view, Markdown, no lost text, an address per session.

What is checked is what a person would notice: the answer on screen without scrolling, at a
laptop's size and on a phone, while it streams; formatted text and code blocks, with a hostile
model's Markdown shown as the text it is; a send that fails keeping what was typed; a session
that survives a reload and the back button; the model picker offering only the operator's models;
and a server that is down said in words, with nothing thrown at the browser console.
"""

from __future__ import annotations

import re
import time
from pathlib import Path
from typing import Any

import httpx
import pytest

from ._console_app import MARKUP
from ._pages import expect, in_view, open_console, send, session_id, shot
from .conftest import PHONE, Watched, serve

pytestmark = pytest.mark.browser

#: a long session: a page that grew with it would push the next reply below the window
EARLIER = [m for i in range(12) for m in (
    {"role": "user", "content": f"earlier question {i}"},
    {"role": "assistant", "content": f"earlier answer {i}\n\n" + "A paragraph of an earlier answer. " * 12})]


@pytest.mark.parametrize("size", ["desktop", "phone"])
def test_the_reply_is_in_view_after_send_and_while_it_streams(new_page: Any, base_url: str, size: str) -> None:
    sid = f"long-{size}-{time.time_ns()}"
    assert httpx.post(f"{base_url}/v1/sessions", json={"id": sid, "messages": EARLIER}).status_code == 201
    watched = new_page(**(PHONE if size == "phone" else {}))
    page = open_console(watched, base_url, f"/?session={sid}")
    log = page.get_by_role("log", name="Conversation")
    expect(log.get_by_text("earlier question 11")).to_be_in_viewport()  # an opened session shows its end
    send(page, "slow, and a long one")
    question = log.locator(".msg.user").last
    expect(question.locator(".text")).to_have_text("slow, and a long one")
    assert in_view(page, question)  # what was just sent, at once
    reply = log.locator(".msg.assistant.streaming")
    reply.get_by_text(re.compile(r"\bword2\b")).wait_for()
    assert in_view(page, reply)
    reply.get_by_text(re.compile(r"\bword25\b")).wait_for()  # a few paragraphs later: the pane followed it
    assert in_view(page, reply)
    expect(page.get_by_role("textbox", name="Message")).to_be_in_viewport()  # the composer stays at the bottom
    if size == "phone":
        shot(page, "phone")
    page.get_by_role("button", name="Cancel").click()
    expect(page.get_by_role("button", name="Send")).to_be_enabled()


def _earlier_sessions(url: str) -> None:
    """Two sessions a person might have had before, so the list looks as it would."""
    for question in ("Plan a week in Lisbon", "Why does my regex match too much?"):
        made = httpx.post(f"{url}/v1/sessions", json={"messages": [{"role": "user", "content": question},
                                                                  {"role": "assistant", "content": "..."}]})
        assert made.status_code == 201


def test_on_a_phone_the_sessions_slide_over_the_chat(new_page: Any, base_url: str) -> None:
    sid = f"phone-{time.time_ns()}"
    question = f"a question from the phone {sid}"
    made = httpx.post(f"{base_url}/v1/sessions", json={"id": sid, "messages": [{"role": "user", "content": question}]})
    assert made.status_code == 201
    page = open_console(new_page(**PHONE), base_url)
    page.wait_for_load_state("networkidle")
    sessions = page.get_by_role("navigation", name="Sessions")
    expect(sessions).not_to_be_in_viewport()  # the chat has the whole width
    opener = page.get_by_role("button", name="Show the sessions")
    opener.click()
    expect(opener).to_have_attribute("aria-expanded", "true")
    expect(sessions).to_be_in_viewport()
    page.keyboard.press("Escape")  # closes it, back on the button that opened it
    expect(sessions).not_to_be_in_viewport()
    expect(opener).to_be_focused()
    opener.click()
    sessions.get_by_role("button", name=re.compile(question)).click()
    page.wait_for_url(re.compile(f"session={sid}"))
    expect(sessions).not_to_be_in_viewport()  # choosing one closes the list
    expect(page.get_by_role("log", name="Conversation").get_by_text(question)).to_be_in_viewport()


def test_markdown_and_code_blocks_are_rendered(watched: Watched, tmp_path: Path) -> None:
    with serve(tmp_path) as url:  # a server of its own: the screenshot shows only this test's sessions
        _earlier_sessions(url)
        _markdown_rendered(watched, url)


def _markdown_rendered(watched: Watched, base_url: str) -> None:
    page = open_console(watched, base_url)
    send(page, "markdown, please")
    reply = page.get_by_role("log", name="Conversation").locator(".msg.assistant").last
    expect(reply.locator("strong")).to_have_text("355")
    assert "**" not in reply.locator("p").first.inner_text()
    expect(reply.locator("em")).to_have_text("that")
    expect(reply.locator("p code")).to_have_text("final")
    expect(reply.get_by_role("heading", name="Steps")).to_be_visible()
    expect(reply.locator("ol > li")).to_have_count(2)
    link = reply.get_by_role("link", name="docs")
    assert link.get_attribute("href") == "https://example.org/docs"
    assert "noopener" in (link.get_attribute("rel") or "")
    block = reply.locator(".code-block")
    expect(block.locator(".code-lang")).to_have_text("python")
    # inside a code block Markdown is text: the comment's stars stay stars
    assert block.locator("code").inner_text() == "def area(r):\n    return 3.14 * r * r  # **not bold**"
    expect(block.get_by_role("button", name="Copy the python block")).to_be_visible()
    expect(reply.locator("table td")).to_have_text(["pi", "3.14"])
    expect(page.get_by_role("navigation", name="Sessions").locator("#session-list button")).to_have_count(3)
    shot(page, "chat")
    page.wait_for_load_state("networkidle")
    page.close()  # before the server stops


def test_hostile_markdown_is_shown_as_text(watched: Watched, base_url: str) -> None:
    page = open_console(watched, base_url)
    send(page, "hostile markdown")
    reply = page.get_by_role("log", name="Conversation").locator(".msg.assistant").last
    reply.get_by_text("Click", exact=False).wait_for()
    text = reply.inner_text()
    assert "[here](javascript:document.title='pwned')" in text  # a link it may not be stays its text
    assert "![x](javascript:alert(1))" in text
    assert MARKUP in text and "<script>document.title='pwned'</script>" in text
    assert "</code></pre><img src=x onerror=alert(1)>" in reply.locator(".code-block code").inner_text()
    assert page.locator("img").count() == 0 and page.locator("script:not([src])").count() == 0
    hrefs = reply.locator("a").evaluate_all("(links) => links.map((a) => a.getAttribute('href'))")
    assert all(h.startswith("https://") and '"' not in h for h in hrefs), hrefs
    assert "pwned" not in page.title()


def test_a_failed_send_keeps_the_text_and_retry_sends_it(watched: Watched, base_url: str) -> None:
    watched.allowed = ("Failed to load resource: the server responded with a status of 5",)  # the browser's own
    page = open_console(watched, base_url)
    text = f"flaky question {time.time_ns()}"
    send(page, text)
    log = page.get_by_role("log", name="Conversation")
    failed = log.locator(".msg.user.failed")
    expect(failed).to_contain_text("overloaded")  # the error, said on the turn it belongs to
    expect(page.get_by_role("textbox", name="Message")).to_have_value(text)  # and the text is not lost
    sid = session_id(page)
    failed.get_by_role("button", name="Retry").click()
    log.get_by_text(f"You said: {text}").wait_for()
    expect(log.locator(".msg.user.failed")).to_have_count(0)
    expect(page.get_by_role("textbox", name="Message")).to_have_value("")
    stored = httpx.get(f"{base_url}/v1/sessions/{sid}").json()
    assert [(m["role"], m["content"]) for m in stored["messages"]] == [("user", text), ("assistant", f"You said: {text}")]


def test_a_server_that_is_down_is_said_in_words(watched: Watched, tmp_path: Path) -> None:
    page = watched.page
    with serve(tmp_path) as url:
        open_console(watched, url)
        send(page, "are you there")
        page.get_by_text("You said: are you there").wait_for()
        page.wait_for_load_state("networkidle")
    # the server is stopped now; the page is still open
    watched.allowed = ("Failed to load resource: net::ERR_CONNECTION_REFUSED",)
    send(page, "and now?")
    banner = page.locator("#offline")
    expect(banner).to_be_visible()
    expect(banner).to_have_attribute("role", "alert")
    expect(banner).to_contain_text("The server did not answer")
    failed = page.get_by_role("log", name="Conversation").locator(".msg.user.failed")
    expect(failed).to_contain_text("Not sent: The server did not answer")
    expect(page.get_by_role("textbox", name="Message")).to_have_value("and now?")
    page.get_by_role("button", name="Try again").click()  # still down: said again, nothing thrown
    expect(banner).to_be_visible()
    shot(page, "offline")
    # only the browser's own line for each refused request (no page can silence those): nothing thrown
    assert watched.errors and set(watched.errors) == {"console: Failed to load resource: net::ERR_CONNECTION_REFUSED"}


def test_a_session_has_an_address_that_survives_reload_and_back(watched: Watched, base_url: str) -> None:
    page = open_console(watched, base_url)
    log = page.get_by_role("log", name="Conversation")
    send(page, "the first session")
    log.get_by_text("You said: the first session").wait_for()
    first = session_id(page)
    page.reload()
    log.get_by_text("You said: the first session").wait_for()
    expect(page.get_by_role("heading", level=2, name="the first session")).to_be_visible()
    page.get_by_role("button", name="New session").click()
    page.wait_for_url(base_url + "/")
    expect(log.locator(".msg")).to_have_count(0)
    send(page, "the second session")
    log.get_by_text("You said: the second session").wait_for()
    second = session_id(page)
    assert second != first
    # the list: most recent first, by title, with how long ago
    rows = page.get_by_role("navigation", name="Sessions").locator("#session-list button")
    expect(rows.nth(0)).to_contain_text("the second session")
    expect(rows.nth(1)).to_contain_text("the first session")
    expect(rows.nth(0)).to_contain_text("just now")
    expect(rows.nth(0)).to_have_attribute("aria-current", "page")
    page.go_back()  # the new, empty session
    page.wait_for_url(base_url + "/")
    expect(log.locator(".msg")).to_have_count(0)
    page.go_back()  # the first session again
    page.wait_for_url(re.compile(f"session={first}"))
    log.get_by_text("You said: the first session").wait_for()
    page.go_forward()
    page.go_forward()
    log.get_by_text("You said: the second session").wait_for()


def test_a_streaming_reply_stays_with_its_own_session(watched: Watched, base_url: str) -> None:
    page = open_console(watched, base_url)
    log = page.get_by_role("log", name="Conversation")
    send(page, "another topic first")
    log.get_by_text("You said: another topic first").wait_for()
    other = session_id(page)
    page.get_by_role("button", name="New session").click()
    send(page, "slow, while I look elsewhere")
    log.get_by_text(re.compile(r"\bword2\b")).wait_for()
    streaming = session_id(page)
    page.locator(f'#session-list button[data-id="{other}"]').click()
    log.get_by_text("You said: another topic first").wait_for()
    page.wait_for_timeout(500)  # five more words streamed meanwhile, none of them here
    expect(log.locator(".msg")).to_have_count(2)
    assert "word" not in log.inner_text()
    page.go_back()  # back on the session whose reply runs: once it ends, the page shows what was kept
    page.wait_for_url(re.compile(f"session={streaming}"))
    page.get_by_role("button", name="Cancel").click()  # it is still the running turn's
    expect(page.get_by_role("button", name="Send")).to_be_enabled()
    kept = httpx.get(f"{base_url}/v1/sessions/{streaming}").json()["messages"]
    assert kept[-1]["metadata"]["stopped"] == "cancelled" and "word2" in kept[-1]["content"]
    reply = log.locator(".msg.assistant").last
    expect(reply.locator(".who")).to_contain_text("Stopped")
    assert reply.locator(".text").inner_text().split() == kept[-1]["content"].split()


def test_the_model_picker_offers_only_the_operators_models(watched: Watched, tmp_path: Path) -> None:
    with serve(tmp_path, models=("model/scripted-2", "model/scripted-3")) as url:
        offered = [m["id"] for m in httpx.get(f"{url}/v1/models").json()["data"]]
        assert offered == ["model/scripted-2", "model/scripted-3"]  # the model lists three; --models keeps two
        page = open_console(watched, url)
        picker = page.get_by_role("combobox", name="Model")
        # the operator's default is not among them: no "default" to pick, the first is chosen
        expect(picker.locator("option")).to_have_text(offered)
        expect(picker).to_have_value("model/scripted-2")
        picker.select_option("model/scripted-3")
        send(page, "which model answers")
        reply = page.get_by_role("log", name="Conversation").locator(".msg.assistant").last
        expect(reply.locator(".who")).to_contain_text("scripted-3")  # each reply says which model wrote it
        sid = session_id(page)
        stored = httpx.get(f"{url}/v1/sessions/{sid}").json()["messages"][-1]
        assert stored["metadata"]["model"] == "scripted-3"
        page.reload()  # the choice belongs to the session
        expect(page.get_by_role("combobox", name="Model")).to_have_value("model/scripted-3")
        page.wait_for_load_state("networkidle")
        page.close()


def test_the_theme_follows_the_system(new_page: Any, tmp_path: Path) -> None:
    colours = {}
    with serve(tmp_path) as url:
        _earlier_sessions(url)
        for scheme in ("light", "dark"):
            watched = new_page(color_scheme=scheme)
            page = open_console(watched, url)
            if scheme == "dark":
                send(page, "markdown in the dark")
                page.get_by_role("log", name="Conversation").locator(".code-block").wait_for()
                expect(page.locator("#session-list button")).to_have_count(3)
                shot(page, "dark")
            colours[scheme] = page.evaluate("getComputedStyle(document.documentElement).backgroundColor")
            page.wait_for_load_state("networkidle")
            page.close()
    assert colours["light"] != colours["dark"]
    assert sum(map(int, re.findall(r"\d+", colours["dark"])[:3])) < 150  # dark is dark
