"""The console's side of the server, without a browser: its files, their headers, and the routes it needs.

The files are served under a strict Content-Security-Policy and reference nothing outside
the server; the page loads without a token (it holds no data) while every API route still
wants one. Tool approvals and input completions are plain HTTP any client can use; these
tests drive them with httpx against a real server (the browser tier, ``tests/browser``,
drives them from the page).
"""

from __future__ import annotations

import json
import re
import runpy
import threading
import time
from importlib.resources import files
from pathlib import Path
from typing import Any

import httpx
import pytest

pytest.importorskip("starlette", reason="agent-core serve needs the server extra")

from agent_core.server import ServeSettings, create_app
from agent_core.server.console.files import CONSOLE_FILES
from agent_core.store import open_store
from browser._console_app import OPERATOR_CONFIG, build_core

from ._live import running

TOKEN = "console-test-token"
CONSOLE = files("agent_core.server").joinpath("console")


def _app(tmp_path: Path, token: str | None = None, **settings: Any) -> Any:
    store = open_store(f"sqlite:///{tmp_path / 'sessions.db'}")
    return create_app(build_core(), store, token, config=OPERATOR_CONFIG,
                      settings=ServeSettings(allow_config=("approval_timeout_s",), **settings))


@pytest.fixture
def url(tmp_path: Path) -> Any:
    with running(_app(tmp_path)) as base:
        yield base


# -- the files ------------------------------------------------------------------------------


def test_the_files_are_served_with_their_types_and_a_strict_policy(url: str) -> None:
    for name in CONSOLE_FILES:
        path = "/" if name == "index.html" else f"/console/{name}"
        answer = httpx.get(url + path)
        assert answer.status_code == 200, path
        assert answer.headers["content-type"].startswith(CONSOLE_FILES[name].split(";")[0])
        assert answer.content == CONSOLE.joinpath(name).read_bytes()
        assert answer.headers["x-content-type-options"] == "nosniff"
        policy = dict(part.strip().split(" ", 1) for part in answer.headers["content-security-policy"].split(";"))
        assert policy["default-src"] == "'none'"
        for directive in ("script-src", "style-src", "connect-src", "img-src"):
            assert policy[directive] == "'self'", directive  # no inline code, no other origin
        assert policy["frame-ancestors"] == "'none'" and policy["base-uri"] == "'none'"


def test_only_the_console_files_are_served(url: str) -> None:
    for path in ("/console/index.html", "/console/nothing.js", "/console/..%2Fapp.py", "/console/%2e%2e%2fguard.py",
                 "/console/", "/console/app.js/x"):
        assert httpx.get(url + path).status_code == 404, path


def test_the_page_references_nothing_outside_the_server() -> None:
    text_of = {name: CONSOLE.joinpath(name).read_text(encoding="utf-8") for name in CONSOLE_FILES
               if name != "icon.svg"}
    for name, text in text_of.items():
        assert not re.search(r"(https?:)?//[a-z0-9]", re.sub(r"(?m)^\s*//.*$", "", text), re.IGNORECASE), name
        assert "@import" not in text and "url(" not in text, name
    scripts = [name for name in CONSOLE_FILES if name.endswith(".js")]
    html = text_of["index.html"]
    # no inline script: each script is a file of the console, and each file is loaded
    assert sorted(re.findall(r"<script\b[^>]*>", html)) == sorted(f'<script src="/console/{n}" defer>' for n in scripts)
    assert not re.search(r"\son[a-z]+\s*=", html) and " style=" not in html  # no inline handlers or styles
    # what the server or a model sends is put on the page as text or built as nodes, never parsed as HTML
    for name in scripts:
        for sink in ("innerHTML", "outerHTML", "insertAdjacentHTML", "document.write", "eval(", "new Function",
                     "DOMParser", "createContextualFragment", "srcdoc"):
            assert sink not in text_of[name], (name, sink)


def test_the_page_loads_without_a_token_and_the_api_still_wants_one(tmp_path: Path) -> None:
    with running(_app(tmp_path, TOKEN)) as base:
        assert httpx.get(base + "/").status_code == 200
        assert httpx.get(base + "/console/app.js").status_code == 200
        for method, path in (("GET", "/v1/sessions"), ("GET", "/v1/ui-schema"), ("GET", "/v1/plugins"),
                             ("POST", "/v1/input/completions"), ("POST", "/v1/requests/r1/approvals/c1"),
                             ("POST", "/")):
            assert httpx.request(method, base + path, json={}).status_code == 401, path
        auth = {"authorization": f"Bearer {TOKEN}"}
        assert httpx.get(base + "/v1/sessions", headers=auth).status_code == 200
        # the Host check holds for the page too: a rebound name gets nothing
        assert httpx.get(base + "/", headers={"host": "evil.example"}).status_code == 400


@pytest.mark.parametrize(("models", "default"), [(None, "model"), (("model",), "model"),
                                                  (("model/scripted-2",), None)])
def test_the_model_list_says_which_model_a_turn_naming_none_gets(tmp_path: Path, models: Any,
                                                                 default: str | None) -> None:
    """The picker's "server's default" exists only where a turn naming no model is not refused."""
    with running(_app(tmp_path, models=models)) as base:
        listed = httpx.get(base + "/v1/models").json()
        assert listed["default"] == default
        body = {"message": "hello", "config": {}}
        status = httpx.post(base + "/v1/sessions/s/turns", json=body).status_code
        assert status == (200 if default else 403)


def test_the_ui_schema_says_which_settings_a_client_may_send(url: str) -> None:
    elements = httpx.get(url + "/v1/ui-schema").json()["data"]
    settable = {e["key"]: e["client_settable"] for e in elements if e["ui_type"] == "config"}
    assert settable == {"tool_policy": False, "approval_timeout_s": True, "approval_default": False}
    assert all("client_settable" not in e for e in elements if e["ui_type"] != "config")


# -- approvals ---------------------------------------------------------------------------------


class _Turn:
    """A sessions-API turn read on a thread, its frames collected as they come."""

    def __init__(self, base: str, sid: str, text: str, rid: str, **headers: str) -> None:
        self.frames: list[dict[str, Any]] = []
        self.status = 0
        self._thread = threading.Thread(target=self._read, args=(base, sid, text, rid, headers), daemon=True)
        self._thread.start()

    def _read(self, base: str, sid: str, text: str, rid: str, headers: dict[str, str]) -> None:
        with httpx.stream("POST", f"{base}/v1/sessions/{sid}/turns?approvals=ask", json={"message": text},
                          headers={"x-request-id": rid, **headers}, timeout=30) as answer:
            self.status = answer.status_code
            for line in answer.iter_lines():
                if line.startswith("data: "):
                    self.frames.append(json.loads(line[6:]))

    def wait_for(self, kind: str, timeout: float = 10) -> dict[str, Any]:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            for frame in self.frames:
                if frame["type"] == kind:
                    return frame
            time.sleep(0.02)
        raise AssertionError(f"no {kind} frame in {[f['type'] for f in self.frames]}")

    def end(self) -> list[dict[str, Any]]:
        self._thread.join(timeout=20)
        assert not self._thread.is_alive()
        return self.frames


def _tool_message(frames: list[dict[str, Any]]) -> dict[str, Any]:
    return next(f for f in frames if f["type"] == "tool_result")["message"]


def test_a_turn_asks_its_client_and_runs_the_tool_once_approved(url: str) -> None:
    turn = _Turn(url, "approve-1", "calculate", "req-a")
    asked = turn.wait_for("approval")
    assert asked == {"type": "approval", "request_id": "req-a", "call_id": "call_1", "tool_name": "echo",
                     "plugin": "tool_policy", "prompt": asked["prompt"], "payload": {"text": "6 * 7 = 42"},
                     "options": ["allow", "deny"], "default": "deny", "timeout_s": 300.0}
    answered = httpx.post(f"{url}/v1/requests/req-a/approvals/call_1", json={"decision": "allow"})
    assert answered.status_code == 204
    frames = turn.end()
    assert _tool_message(frames)["content"] == "Result: 6 * 7 = 42"
    assert frames[-1]["type"] == "saved"
    # answered once: a second answer finds nothing waiting
    again = httpx.post(f"{url}/v1/requests/req-a/approvals/call_1", json={"decision": "deny"})
    assert again.status_code == 404 and again.json()["error"]["type"] == "approval_not_found"


def test_a_denied_call_does_not_run(url: str) -> None:
    turn = _Turn(url, "deny-1", "calculate", "req-d")
    turn.wait_for("approval")
    assert httpx.post(f"{url}/v1/requests/req-d/approvals/call_1", json={"decision": "deny"}).status_code == 204
    tool = _tool_message(turn.end())
    assert "not approved" in tool["content"] and tool["metadata"]["tool_policy"]["decision"] == "denied"


@pytest.mark.parametrize("body, param", [({"decision": "yes"}, "decision"), ({}, "decision"),
                                         ({"decision": "allow", "why": 1}, "why")])
def test_a_bad_answer_is_a_400_naming_the_field(url: str, body: dict[str, Any], param: str) -> None:
    answer = httpx.post(f"{url}/v1/requests/r1/approvals/c1", json=body)
    assert answer.status_code == 400 and param in answer.json()["error"]["message"]


def test_cancelling_a_turn_withdraws_its_question(url: str) -> None:
    turn = _Turn(url, "cancel-1", "calculate", "req-c")
    turn.wait_for("approval")
    started = time.monotonic()
    assert httpx.delete(f"{url}/v1/requests/req-c").status_code == 204
    frames = turn.end()
    assert time.monotonic() - started < 5  # not the approval's 300 s
    assert next(f for f in frames if f["type"] == "done")["outcome"]["reason"] == "cancelled"


def test_a_turn_that_does_not_ask_for_approvals_gets_the_default_at_once(url: str) -> None:
    """Without ?approvals=ask a client that knows nothing of approval frames is never kept waiting."""
    started = time.monotonic()
    answer = httpx.post(f"{url}/v1/sessions/plain-1/turns", json={"message": "calculate"}, timeout=20)
    frames = [json.loads(line[6:]) for line in answer.text.splitlines() if line.startswith("data: ")]
    assert time.monotonic() - started < 5
    assert "approval" not in [f["type"] for f in frames]
    assert _tool_message(frames)["metadata"]["tool_policy"]["decision"] == "denied"
    bad = httpx.post(f"{url}/v1/sessions/plain-1/turns?approvals=yes", json={"message": "calculate"})
    assert bad.status_code == 400 and bad.json()["error"]["param"] == "approvals"


def test_nobody_to_ask_means_the_default_decides_at_once(url: str) -> None:
    """A facade request has no stream to ask in: approval_default (deny) decides, as before the desk."""
    answer = httpx.post(f"{url}/v1/chat/completions", timeout=10, json={
        "model": "model", "messages": [{"role": "user", "content": "calculate"}]})
    assert answer.status_code == 200, answer.text


def test_one_tenant_cannot_answer_for_another(tmp_path: Path) -> None:
    tokens = tmp_path / "tokens.toml"
    tokens.write_text('[[tenants]]\nname = "alice"\ntoken = "alice-token-0123456789"\n\n'
                      '[[tenants]]\nname = "bob"\ntoken = "bob-token-0123456789"\n')
    with running(_app(tmp_path, tokens_file=str(tokens))) as base:
        turn = _Turn(base, "mine", "calculate", "req-t", authorization="Bearer alice-token-0123456789")
        turn.wait_for("approval")
        path = f"{base}/v1/requests/req-t/approvals/call_1"
        refused = httpx.post(path, json={"decision": "allow"}, headers={"authorization": "Bearer bob-token-0123456789"})
        assert refused.status_code == 404
        assert httpx.post(path, json={"decision": "deny"},
                          headers={"authorization": "Bearer alice-token-0123456789"}).status_code == 204
        assert "not approved" in _tool_message(turn.end())["content"]


# -- completions -------------------------------------------------------------------------------


def test_completions_come_from_the_features_hooks(url: str) -> None:
    found = httpx.post(f"{url}/v1/input/completions", json={"text": "run /ca"}).json()["data"]
    assert found == [{"text": "/calculate", "label": "/calculate", "replace": "/ca", "plugin": "shortcuts"}]
    assert httpx.post(f"{url}/v1/input/completions", json={"text": "no slash"}).json()["data"] == []
    applied = httpx.post(f"{url}/v1/input/completions/apply", json={"text": "run /ca", "completion": found[0]})
    assert applied.json() == {"text": ""}  # the feature leaves the replacing to the client


@pytest.mark.parametrize("body, param", [({"text": "x" * 20_001}, "text"), ({"text": 3}, "text"),
                                         ({"text": "a", "config": {"tool_policy": {}}}, "tool_policy"),
                                         ({"text": "a", "extra": 1}, "extra")])
def test_completion_requests_are_checked(url: str, body: dict[str, Any], param: str) -> None:
    answer = httpx.post(f"{url}/v1/input/completions", json=body)
    assert answer.status_code in (400, 403) and param in answer.json()["error"]["message"]


def test_the_readme_links_each_screenshot_the_docs_command_refreshes() -> None:
    """``scripts/console_screenshots.py`` copies the browser tier's screenshots into docs/; the README links each."""
    root = Path(__file__).resolve().parents[2]
    command = runpy.run_path(str(root / "scripts" / "console_screenshots.py"))  # defines, does not run
    readme = (root / "README.md").read_text(encoding="utf-8")
    for name in command["SHOTS"]:
        assert f"(docs/console-{name}.png)" in readme, name
        assert (root / "docs" / f"console-{name}.png").is_file(), name
    linked = set(re.findall(r"\(docs/console-([a-z-]+)\.png\)", readme))
    assert linked == set(command["SHOTS"])  # and nothing the command would not refresh
    shots = (root / "tests" / "browser").glob("test_*.py")
    taken = set(re.findall(r'shot\(page, "([a-z-]+)"\)', "".join(p.read_text(encoding="utf-8") for p in shots)))
    assert set(command["SHOTS"]) <= taken  # each is taken by a browser test

