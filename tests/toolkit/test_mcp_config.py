"""The ``mcp`` tool plugin before any server runs: its config, the names it makes, and life without the SDK."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap

import pytest
from agent_core import ConfigError
from agent_core_plugins.mcp_servers import MAX_NAME_CHARS, exposed_name, parse_servers

SECRET = "Bearer sk-do-not-show-0123456789"


@pytest.mark.parametrize(("raw", "said"), [
    ("time", "must be a list of server objects"),
    ([{"command": "x"}], "needs a 'name'"),
    ([{"name": "my_server", "command": "x"}], "no '_'"),
    ([{"name": "a", "command": "x", "url": "http://127.0.0.1/mcp"}], "exactly one of"),
    ([{"name": "a"}], "exactly one of"),
    ([{"name": "a", "url": "file:///etc/passwd"}], "http:// or https://"),
    ([{"name": "a", "command": "x", "headers": {"Authorization": SECRET}}], "'headers' is for a 'url' server"),
    ([{"name": "a", "url": "http://127.0.0.1/mcp", "env": {"K": "v"}}], "'env' is for a 'command' server"),
    ([{"name": "a", "command": "x", "shell": True}], "unknown settings ['shell']"),
    ([{"name": "a", "command": "x"}, {"name": "a", "command": "y"}], "two servers are named 'a'"),
    ([{"name": "a", "command": "x", "args": "--flag"}], "'args' must be a list of strings"),
])
def test_a_bad_server_entry_is_a_config_error_naming_the_key_and_what_is_wrong(raw, said) -> None:
    with pytest.raises(ConfigError) as caught:
        parse_servers(raw)
    assert said in str(caught.value)
    assert caught.value.key == "mcp_servers"


def test_a_refusal_never_quotes_a_header_or_an_environment_value() -> None:
    for raw in ([{"name": "a", "url": "http://127.0.0.1/mcp", "headers": {"Authorization": [SECRET]}}],
                [{"name": "a", "command": "x", "env": {"TOKEN": 7, "OTHER": SECRET}}]):
        with pytest.raises(ConfigError) as caught:
            parse_servers(raw)
        assert SECRET not in str(caught.value) and "sk-do-not-show" not in repr(caught.value)


def test_servers_may_be_an_object_by_name_and_the_identity_hides_the_credentials() -> None:
    (spec,) = parse_servers({"docs": {"url": "https://mcp.example/mcp", "headers": {"Authorization": SECRET}}})
    assert spec.name == "docs" and spec.url == "https://mcp.example/mcp"
    (other,) = parse_servers({"docs": {"url": "https://mcp.example/mcp", "headers": {"Authorization": "x"}}})
    assert spec.identity != other.identity  # pooled per exact config
    assert "sk-do-not-show" not in spec.identity and SECRET not in spec.where


def test_exposed_names_are_safe_bounded_and_never_merge_two_tools() -> None:
    assert exposed_name("time", "get_current_time") == "time_get_current_time"
    weird = exposed_name("web", "weird name!/../x")
    assert weird.startswith("web_weird_name_") and set(weird) <= set("abcdefghijklmnopqrstuvwxyz0123456789_-")
    assert exposed_name("web", "a.b") != exposed_name("web", "a/b")  # both sanitize to a_b; the digest tells them apart
    long = exposed_name("web", "x" * 500)
    assert len(long) == MAX_NAME_CHARS and long != exposed_name("web", "x" * 499)
    # the server's name never holds '_', so no server can offer a name that reads as another server's tool
    assert exposed_name("a", "b_c") != exposed_name("a-b", "c")


def _python(code: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-c", textwrap.dedent(code)], capture_output=True, text=True, timeout=60,
                          check=False)


def test_without_the_sdk_the_plugin_is_harmless_and_with_servers_it_says_what_to_install() -> None:
    got = _python("""
        import json, sys
        sys.modules["mcp"] = None  # as if the SDK were not installed: importing it fails
        from agent_core import AgentCore, ConfigError, Message
        from agent_core.testing import scripted_provider
        from agent_core_plugins.mcp_tools import MCPTool
        core = AgentCore(providers=[scripted_provider("fine")], tools=[MCPTool])
        session = core.add_message(core.create_session(), Message("user", "hi"))
        out = {"reply": core.request(session).final_messages[-1].content}
        try:
            core.request(session, {"mcp_servers": [{"name": "t", "command": "mcp-server-time"}]})
        except ConfigError as exc:
            out["error"], out["key"] = str(exc), exc.key
        out["imported"] = [m for m in sys.modules if m.startswith(("mcp.", "agent_core_plugins.mcp_pool"))]
        core.close()
        print(json.dumps(out))
    """)
    assert got.returncode == 0, got.stderr
    out = json.loads(got.stdout)
    assert out["reply"] == "fine" and out["imported"] == []
    assert out["key"] == "mcp_servers" and "pip install" in out["error"] and "[mcp]" in out["error"]


def test_a_server_client_cannot_set_mcp_servers_and_listings_never_show_them() -> None:
    from agent_core import ConfigNotAllowedError, ConfigPolicy

    with pytest.raises(ConfigNotAllowedError) as caught:
        ConfigPolicy().merge({}, {"mcp_servers": [{"name": "x", "command": "sh", "args": ["-c", "id"]}]})
    assert "mcp_servers" in str(caught.value)
    servers = json.dumps([{"name": "web", "url": "http://127.0.0.1:9/mcp", "headers": {"Authorization": SECRET}}])
    got = subprocess.run([f"{sys.prefix}/bin/agent-core", "plugins", "-c", f"mcp_servers={servers}"],
                         capture_output=True, text=True, timeout=60, check=False)
    assert got.returncode == 0, got.stderr
    line = next(x for x in got.stdout.splitlines() if x.split()[:2] == ["tool", "mcp"])
    assert "mcp_servers=<redacted>" in line and "sk-do-not-show" not in got.stdout + got.stderr
