"""The web console in headless Chromium: what a person sees and does, through the public HTTP API only.

Each test drives the page as a person would (clicks, keys), waits for what the page shows,
and checks it against the server where that matters. The screenshots the README links are
taken here (into ``build/``; ``scripts/console_screenshots.py`` copies them to ``docs/``).
"""

from __future__ import annotations

import json
import re
import time
from pathlib import Path
from typing import Any

import httpx
import pytest

from ._console_app import MARKUP
from ._pages import expect, open_console, send, session_id, shot
from .conftest import Watched, serve

pytestmark = pytest.mark.browser


def test_a_turn_with_a_tool_call_that_needs_approval(watched: Watched, base_url: str) -> None:
    page = open_console(watched, base_url)
    send(page, "calculate six times seven")
    sid = session_id(page)
    approval = page.get_by_role("group", name="Approve echo?")
    approval.wait_for()
    assert "6 * 7 = 42" in approval.inner_text()  # the arguments the model sent
    assert "tool_policy" in approval.inner_text()  # who asks, and what happens without an answer
    assert "denied" in approval.inner_text()
    # the session is listed at once, by its question, while its first turn waits
    expect(page.locator(f'#session-list button[data-id="{sid}"]')).to_contain_text("calculate six times seven")
    shot(page, "approval")
    approval.get_by_role("button", name="Approve").click()
    log = page.get_by_role("log", name="Conversation")
    log.get_by_text("The tool said: Result: 6 * 7 = 42").wait_for()
    # the tool call, its arguments and its result, with the policy's record
    call = log.locator(".tool-call")
    assert "Tool call: echo" in call.inner_text() and "allowed by tool_policy" in call.inner_text()
    # each answer's footer: the timestamp feature's time and the usage feature's tokens and cost
    footer = log.locator(".msg.assistant .footer").last
    assert re.search(r"Time: \d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ", footer.inner_text())
    assert "Tokens: 12 in / 5 out, $0.000022" in footer.inner_text()
    # the status bar: the session's total over both model calls, and the title feature's title
    status = page.get_by_role("status", name="Status bar")
    expect(status).to_contain_text("Session total: 24 in / 10 out tokens, $0.000044")  # once the turn is done
    expect(status).to_contain_text("Title: calculate six times seven")
    expect(page.get_by_role("heading", level=2, name="calculate six times seven")).to_be_visible()
    expect(page.get_by_role("button", name="Send")).to_be_enabled()  # the stream has ended: the turn is saved
    stored = httpx.get(f"{base_url}/v1/sessions/{sid}").json()
    assert [m["role"] for m in stored["messages"]] == ["user", "assistant", "tool", "assistant"]
    assert stored["messages"][2]["metadata"]["tool_policy"]["decision"] == "allowed"


def test_a_denied_call_is_denied_and_the_turn_goes_on(watched: Watched, base_url: str) -> None:
    page = open_console(watched, base_url)
    send(page, "calculate again")
    page.get_by_role("button", name="Deny").click()
    log = page.get_by_role("log", name="Conversation")
    log.get_by_text(re.compile(r"^The tool said: .*tool call not approved")).wait_for()
    assert "denied by tool_policy" in log.locator(".tool-call").inner_text()


def test_a_setting_from_the_generated_panel_goes_with_the_turn(watched: Watched, base_url: str) -> None:
    page = open_console(watched, base_url)  # no session yet: the first turn makes one, and keeps the setting
    page.get_by_text("Settings", exact=True).click()  # a folded panel
    settings = page.locator("#settings")
    # only what the operator lets a client set: the approval timeout, not the policy itself
    # the panel is built from a fetch after the page opens: wait for it (is_visible does not wait)
    expect(settings.get_by_role("spinbutton", name="Approval timeout (s)")).to_be_visible()
    assert settings.get_by_role("textbox", name="Tool policy").count() == 0
    field = settings.get_by_role("spinbutton", name="Approval timeout (s)")
    field.fill("1")
    field.press("Tab")
    page.get_by_text("Approval timeout (s) set for this session's turns.").wait_for()
    started = time.monotonic()
    send(page, "calculate with nobody answering")
    log = page.get_by_role("log", name="Conversation")
    log.get_by_text("no answer within 1 s", exact=False).first.wait_for()
    assert time.monotonic() - started < 8  # the default would have waited 300 s
    session_id(page)
    expect(settings.get_by_role("spinbutton", name="Approval timeout (s)")).to_have_value("1")
    shot(page, "settings")


def test_reasoning_is_folded_under_the_answer(watched: Watched, base_url: str) -> None:
    page = open_console(watched, base_url)
    send(page, "think first")
    log = page.get_by_role("log", name="Conversation")
    log.get_by_text("Forty-two.", exact=True).wait_for()
    reasoning = log.locator("details.reasoning")
    expect(reasoning).to_have_count(1)
    thought = reasoning.get_by_text("Six times seven is forty-two.")
    assert reasoning.get_attribute("open") is None and not thought.is_visible()  # folded
    reasoning.get_by_text("Reasoning").click()
    expect(thought).to_be_visible()


def test_a_cancelled_reply_stays_marked_stopped_in_the_page_and_the_store(watched: Watched, base_url: str) -> None:
    page = open_console(watched, base_url)
    send(page, "slow answer please")
    sid = session_id(page)
    log = page.get_by_role("log", name="Conversation")
    log.get_by_text(re.compile(r"\bword3\b")).wait_for()
    cancel = page.get_by_role("button", name="Cancel")
    assert cancel.is_enabled()
    cancel.click()
    page.get_by_text("The turn was cancelled; what was written so far is kept.").wait_for()
    expect(page.get_by_role("button", name="Send")).to_be_enabled()
    expect(cancel).to_be_disabled()
    reply = log.locator(".msg.assistant").last
    expect(reply.locator(".who")).to_contain_text("Stopped")
    expect(reply).to_contain_text("word3")
    stored = httpx.get(f"{base_url}/v1/sessions/{sid}").json()
    assert [m["role"] for m in stored["messages"]] == ["user", "assistant"]
    assert stored["messages"][0]["content"] == "slow answer please"
    kept = stored["messages"][1]
    assert kept["metadata"]["stopped"] == "cancelled" and kept["content"].startswith("word0 word1 word2 word3")
    assert "word599" not in json.dumps(stored)
    # the page shows what the store kept, word for word; and so does the page loaded again
    assert reply.locator(".text").inner_text().split() == kept["content"].split()
    page.reload()
    again = page.get_by_role("log", name="Conversation").locator(".msg.assistant").last
    expect(again.locator(".who")).to_contain_text("Stopped")
    assert again.locator(".text").inner_text().split() == kept["content"].split()


def test_resume_action_export_and_delete(watched: Watched, base_url: str) -> None:
    sid = f"kept-{time.time_ns()}"
    made = httpx.post(f"{base_url}/v1/sessions", json={"id": sid, "messages": [
        {"role": "user", "content": "an earlier question"},
        {"role": "assistant", "content": "an earlier answer", "metadata": {"timestamp": "2026-11-27T10:00:00Z"}}]})
    assert made.status_code == 201
    page = open_console(watched, base_url)
    # listed by its first question, with how long ago it changed
    row = page.get_by_role("navigation", name="Sessions").get_by_role("button", name=re.compile("an earlier question"))
    expect(row).to_contain_text("just now")
    row.click()
    page.wait_for_url(re.compile(f"session={sid}"))
    log = page.get_by_role("log", name="Conversation")
    log.get_by_text("an earlier answer").wait_for()
    assert "Time: 2026-11-27T10:00:00Z" in log.locator(".footer").inner_text()
    # a session action a plugin offers, as a button; what it changed shows in the status bar
    page.get_by_label("Session menu").click()  # a plugin's session action, in the session's menu
    page.get_by_role("group", name="Session actions").get_by_role("button", name="Pin this session").click()
    page.get_by_text("Pin this session: done.").wait_for()
    expect(page.get_by_role("status", name="Status bar")).to_contain_text("Pin: pinned")
    menu = page.get_by_label("Session menu")
    menu.click()
    expect(page.get_by_role("button", name="Export as JSON")).to_be_visible()
    page.keyboard.press("Escape")  # a menu closes as menus do: Escape, or a click elsewhere
    expect(page.get_by_role("button", name="Export as JSON")).to_be_hidden()
    menu.click()
    page.get_by_role("log", name="Conversation").click()
    expect(page.get_by_role("button", name="Export as JSON")).to_be_hidden()
    menu.click()
    with page.expect_download() as got:
        page.get_by_role("button", name="Export as JSON").click()
    exported = json.loads(Path(got.value.path()).read_text(encoding="utf-8"))
    assert exported["id"] == sid and exported["metadata"]["pinned"] is True
    assert [m["content"] for m in exported["messages"]] == ["an earlier question", "an earlier answer"]
    page.once("dialog", lambda dialog: dialog.accept())
    page.get_by_label("Session menu").click()
    page.get_by_role("button", name="Delete").click()
    page.get_by_text('Deleted "an earlier question".').wait_for()
    # the notice comes before the list is fetched again: wait for the list, do not just count once
    expect(page.locator(f'#session-list button[data-id="{sid}"]')).to_have_count(0)
    assert httpx.get(f"{base_url}/v1/sessions/{sid}").status_code == 404


def test_the_about_panel_says_what_is_on_and_why(watched: Watched, base_url: str) -> None:
    page = open_console(watched, base_url)
    plugins = page.locator("#plugins")
    plugins.locator(".plugin").first.wait_for(state="attached")
    expect(plugins).to_be_hidden()  # the diagnostics are folded until someone asks
    page.get_by_text("About this server").click()
    expect(plugins).to_be_visible()
    rows = {row.locator(".name").inner_text(): row.inner_text() for row in plugins.locator(".plugin").all()}
    expected = httpx.get(f"{base_url}/v1/plugins").json()["data"]
    assert set(rows) == {p["name"] for p in expected}
    for plugin in expected:
        assert ("on" if plugin["enabled"] else "off") in rows[plugin["name"]]
        assert plugin["reason"] in rows[plugin["name"]]  # resolve()'s reason, word for word
    assert any(not p["enabled"] for p in expected) and any(p["enabled"] for p in expected)


def test_what_a_model_and_a_tool_send_is_shown_as_text(watched: Watched, base_url: str) -> None:
    page = open_console(watched, base_url)
    send(page, "xss please")
    page.get_by_role("button", name="Approve").click()
    log = page.get_by_role("log", name="Conversation")
    log.get_by_text("The tool said: Result: " + MARKUP).wait_for()
    assert MARKUP in log.get_by_text("Here is markup:", exact=False).inner_text()
    assert MARKUP in log.locator(".tool-output").inner_text()
    assert page.locator("img").count() == 0  # nothing was parsed as HTML
    assert "pwned" not in page.title()


def test_completions_come_from_the_completion_hook(watched: Watched, base_url: str) -> None:
    page = open_console(watched, base_url)
    box = page.get_by_role("textbox", name="Message")
    box.press_sequentially("run /ca")
    option = page.get_by_role("listbox", name="Completions").get_by_role("option", name="/calculate")
    option.wait_for()
    box.press("ArrowDown")
    assert option.get_attribute("aria-selected") == "true"
    box.press("Enter")
    expect(box).to_have_value("run /calculate")
    assert page.get_by_role("listbox", name="Completions").is_hidden()


def test_every_control_has_a_name_in_the_accessibility_tree(watched: Watched, base_url: str) -> None:
    page = open_console(watched, base_url)
    page.get_by_text("Settings", exact=True).click()
    send(page, "calculate for the tree")
    page.get_by_role("button", name="Approve").wait_for()
    tree = page.locator("body").aria_snapshot()
    for role in ("button", "textbox", "spinbutton", "combobox", "checkbox", "listbox", "link"):
        for line in tree.splitlines():
            item = line.strip()
            if item.startswith(f"- {role}") and not item.startswith(f"- {role} \""):
                pytest.fail(f"a {role} without a name in the accessibility tree: {item!r}\n{tree}")
    for role, name in (("navigation", "Sessions"), ("main", None), ("log", "Conversation"),
                       ("status", "Status bar"), ("textbox", "Message"), ("button", "Send"),
                       ("button", "Cancel"), ("group", "Approve echo?"), ("spinbutton", "Approval timeout (s)"),
                       ("combobox", "Model"), ("button", "New session")):
        found = page.get_by_role(role, name=name) if name else page.get_by_role(role)
        assert found.count() >= 1, f"no {role} named {name!r}"
    page.get_by_role("button", name="Approve").click()
    page.get_by_text("The tool said:", exact=False).wait_for()


def test_keyboard_only(watched: Watched, base_url: str) -> None:
    page = open_console(watched, base_url)

    def tab_to(name: str) -> None:
        for _ in range(40):
            page.keyboard.press("Tab")
            if page.evaluate("document.activeElement && document.activeElement.textContent.trim()") == name:
                return
        pytest.fail(f"Tab never reached {name!r}")

    tab_to("New session")
    page.keyboard.press("Enter")
    expect(page.get_by_role("textbox", name="Message")).to_be_focused()  # a new session puts the cursor there
    page.keyboard.type("calculate by keyboard")
    page.keyboard.press("Enter")
    page.get_by_role("button", name="Approve").wait_for()
    expect(page.get_by_role("button", name="Approve")).to_be_focused()  # the question takes the focus
    page.keyboard.press("Enter")
    page.get_by_text("The tool said: Result: 6 * 7 = 42").wait_for()


def test_a_token_goes_in_a_header_and_nowhere_else(watched: Watched, tmp_path: Any) -> None:
    watched.allowed = ("status of 401",)  # the console's first request, before it knows the token
    with serve(tmp_path, token="s3cret-console-token") as url:
        assert httpx.get(f"{url}/v1/sessions").status_code == 401
        page = watched.page
        page.goto(url + "/")
        token = page.get_by_label("Bearer token")
        token.fill("wrong-token")
        token.press("Enter")
        page.get_by_text("The server refused that token.").wait_for()
        sent: list[Any] = []
        page.on("request", lambda r: sent.append(r))
        token.fill("s3cret-console-token")
        token.press("Enter")
        page.get_by_role("button", name="New session").wait_for()
        send(page, "hello with a token")
        page.get_by_text("You said: hello with a token").wait_for()
        api = [r for r in sent if "/v1/" in r.url]
        assert api and all(r.headers.get("authorization") == "Bearer s3cret-console-token" for r in api)
        assert all("s3cret" not in r.url for r in sent)
        assert page.context.cookies() == []
        assert "s3cret" not in page.content()
        assert page.evaluate("sessionStorage.getItem('agent-core-console-token')") == "s3cret-console-token"
        # This test's server stops when the block ends: the page's last fetches (the session list
        # and its titles) must be done, and the page closed, before then, or they are refused and logged.
        page.wait_for_load_state("networkidle")
        page.close()
