"""What runs for a config and why, the UI schema, the actions, and running an action on a stored session."""

from __future__ import annotations

import httpx


def test_plugins_say_what_runs_and_why(plugins_url: str) -> None:
    base_url = plugins_url
    r = httpx.get(f"{base_url}/v1/plugins", params={"provider": "echo", "enabled_plugins": '["title"]'})
    assert r.status_code == 200
    rows = {row["name"]: row for row in r.json()["data"]}
    assert rows["echo"] == {"kind": "provider", "name": "echo", "enabled": True, "reason": "selected provider"}
    assert rows["title"]["enabled"] is True and rows["title"]["kind"] == "feature"
    assert rows["openai"]["enabled"] is False and rows["openai"]["reason"] == "off: not the selected provider"
    assert rows["openai_tools"]["enabled"] is False and "provider:openai" in rows["openai_tools"]["reason"]


def test_plugins_with_a_bad_config_is_400(base_url: str) -> None:
    r = httpx.get(f"{base_url}/v1/plugins", params={"provider": "nosuch"})
    assert r.status_code == 400 and "nosuch" in r.json()["error"]["message"]


def test_ui_schema_and_actions_follow_the_config(plugins_url: str) -> None:
    base_url = plugins_url
    plain = {"provider": "echo"}
    titled = {"provider": "echo", "enabled_plugins": '["title"]'}
    # usage, tool_output_budget and compact_history are on by default, so their lifecycle actions are listed in both
    always = [("tool_output_budget", "tool_output_budget_record"), ("compact_history", "compact_native_history"),
              ("usage", "usage_total")]
    assert [(a["plugin"], a["id"]) for a in httpx.get(f"{base_url}/v1/actions", params=plain).json()["data"]] == (
        always)
    actions = httpx.get(f"{base_url}/v1/actions", params=titled).json()["data"]
    assert [(a["plugin"], a["id"]) for a in actions] == [*always, ("title", "set_title")]
    ui = httpx.get(f"{base_url}/v1/ui-schema", params=titled).json()["data"]
    assert any(e.get("data") == "session.metadata.title" for e in ui)
    assert not any(e.get("data") == "session.metadata.title"
                   for e in httpx.get(f"{base_url}/v1/ui-schema", params=plain).json()["data"])


def test_a_session_action_runs_and_is_saved_at_a_new_revision(plugins_url: str) -> None:
    base_url = plugins_url
    r = httpx.post(f"{base_url}/v1/sessions/act/turns", json={"message": "plan a trip", "config": {"provider": "echo"}})
    assert '"saved"' in r.text
    config = {"provider": "echo", "enabled_plugins": ["title"]}
    r = httpx.post(f"{base_url}/v1/sessions/act/actions/set_title", json={"config": config},
                   headers={"if-match": "1"})
    assert r.status_code == 200, r.text
    assert r.json()["revision"] == 2 and r.headers["etag"] == '"2"'
    assert httpx.get(f"{base_url}/v1/sessions/act").json()["metadata"]["title"] == "plan a trip"
    # stale If-Match, unknown action, unknown session
    r = httpx.post(f"{base_url}/v1/sessions/act/actions/set_title", json={"config": config}, headers={"if-match": "1"})
    assert r.status_code == 409 and r.json()["error"]["current_revision"] == 2
    r = httpx.post(f"{base_url}/v1/sessions/act/actions/nope", json={"config": config})
    assert r.status_code == 400 and "'nope'" in r.json()["error"]["message"]
    assert r.json()["error"]["type"] == "ActionInputError"
    assert httpx.post(f"{base_url}/v1/sessions/none/actions/set_title", json={"config": config}).status_code == 404
    r = httpx.post(f"{base_url}/v1/sessions/act/actions/set_title", json={"params": [1]})
    assert r.status_code == 400 and "params" in r.json()["error"]["message"]


def test_choosing_plugins_is_the_operators_unless_allowed(base_url: str) -> None:
    # On the defaults, a query or a body that switches plugins on is refused by name, with the way to allow it.
    r = httpx.get(f"{base_url}/v1/plugins", params={"provider": "echo", "enabled_plugins": '["files"]'})
    assert r.status_code == 403, r.text
    error = r.json()["error"]
    assert error["type"] == "ConfigNotAllowedError" and error["param"] == "enabled_plugins"
    assert "--allow-config enabled_plugins" in error["message"]
    r = httpx.post(f"{base_url}/v1/sessions/act/actions/set_title",
                   json={"config": {"enabled_plugins": ["title"]}})
    assert r.status_code == 403 and r.json()["error"]["param"] == "enabled_plugins"
