"""Planted secrets reach only the plugin that declares them.

One request through the real OpenAI provider against a loopback server, with
a key, two custom auth headers, a schema-marked secret of a feature
(``format: "password"``), one of a tool (``"secret": true``) and an
undeclared ``*_token``. Every other plugin's ``init`` config, every
``context["config"]``, ``resolve().config``, UI and config schema output,
events, the session, warnings, errors and DEBUG logs are scanned for every
8-character piece of every secret a reader does not own.
"""

from __future__ import annotations

import logging
import warnings
from typing import Any

import pytest
from agent_core import AgentCore, ConfigError, Message, encode_event
from agent_core_plugins.openai_tools import OpenAIToolsExtension
from agent_core_providers.openai import OpenAIProvider
from providers._server import ScriptedServer, json_reply, sse_reply
from providers._wire import OA_DONE, oa_chunk, oa_text

# Distinct random-looking values: no two share an 8-character piece.
KEY = "sk-Qm7vX2pL9tRz4KwB8nYd"
AUTH_HDR = "hA3fJ6uE1oW5cV0gT8sN"
OCP_HDR = "oZ4xM9bQ2rK7yH5dP1lF"
DSN = "dU8wC3jG6eS0aI4vN7qT"  # the feature's, schema says format: password
SIG = "gB5nR1mX9kL3tY6hW2pE"  # the tool's, schema says secret: true
SIG_DEFAULT = "fD7sA4zQ0cV8jU2oI5rG"
TOKEN = "tP6eK1wN3bH9xM4yL0uC"  # nobody declares github_token: secret by name, shown to no plugin
pytestmark = pytest.mark.filterwarnings("ignore::agent_core.UnknownConfigKeyWarning")  # github_token, on purpose
ALL = (KEY, AUTH_HDR, OCP_HDR, DSN, SIG, SIG_DEFAULT, TOKEN)
R = "<redacted>"


def pieces(secret: str) -> set[str]:
    return {secret[i : i + 8] for i in range(len(secret) - 7)}


def leaks(text: str, secrets: tuple[str, ...] = ALL) -> list[str]:
    """The secrets any 8-character piece of which appears in ``text``."""
    return [s for s in secrets if any(p in text for p in pieces(s))]


SEEN: dict[str, list[Any]] = {}


def seen(who: str, what: Any) -> None:
    SEEN.setdefault(who, []).append(what)


class SpyExtension:
    name = "spy_ext"

    def init(self, config, state):
        seen("spy_ext", ("init", dict(config)))
        return state

    def initialize_request(self, native_messages, state, *, context=None):
        seen("spy_ext", ("context", dict(context["config"])))
        seen("spy_ext", ("state", dict(state["config"])))
        return native_messages, state


class SpyFeature:
    name = "spy_feature"

    def get_config_schema(self):
        return {"vault_dsn": {"type": "string", "format": "password"}}

    def init(self, config, state):
        seen("spy_feature", ("init", dict(config)))
        return state

    def prepare_tools(self, config, tools, context):
        seen("spy_feature", ("prepare_tools", dict(config), dict(context["config"])))
        return tools

    def get_ui_elements(self, config, context=None):
        return [
            {"key": "vault_dsn", "value": config.get("vault_dsn")},
            {"key": "admin_password", "default": "pw-literal-in-ui-0099"},
        ]


class SpyTool:
    name = "spy_tool"

    def get_config_schema(self):
        return {"endpoint_sig": {"type": "string", "secret": True, "default": SIG_DEFAULT}}

    def init(self, config):
        seen("spy_tool", ("init", dict(config)))
        return {}

    def get_tool_schemas(self, state):
        return [{"type": "function", "function": {"name": "lookup", "parameters": {"type": "object"}}}]

    def execute_tool(self, tool_name, payload, state, *, context=None):
        seen("spy_tool", ("execute_context", dict(context["config"])))
        return {"success": True, "result": "found"}


def lookup_then_answer(server: ScriptedServer) -> None:
    call = {"index": 0, "id": "call_1", "type": "function", "function": {"name": "lookup", "arguments": "{}"}}
    server.enqueue(
        sse_reply(oa_chunk({"role": "assistant", "tool_calls": [call]}), oa_chunk({}, "tool_calls"), OA_DONE),
        oa_text("done"),
    )




def make_core() -> AgentCore:
    """A core of spies; what earlier tests' spies saw is forgotten, so each test reads only its own."""
    SEEN.clear()
    return AgentCore(providers=[OpenAIProvider], extensions=[OpenAIToolsExtension, SpyExtension],
                     features=[SpyFeature], tools=[SpyTool])


def config(server: ScriptedServer, **extra: Any) -> dict[str, Any]:
    return {
        "base_url": f"{server.url}/v1",
        "model": "m",
        "max_retries": 0,
        "api_key": KEY + "\n",  # as read from a key file
        "extra_headers": {"X-Auth-Key": AUTH_HDR, "Ocp-Apim-Subscription-Key": OCP_HDR},
        "vault_dsn": DSN,
        "endpoint_sig": SIG,
        "github_token": TOKEN,
        **extra,
    }


def session() -> Any:
    core = make_core()
    return core.add_message(core.create_session(), Message("user", "look it up"))


def test_each_secret_reaches_only_its_declaring_plugin_and_nothing_else_shows_it(server, caplog):
    lookup_then_answer(server)
    core = make_core()
    caplog.set_level(logging.DEBUG)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        events = list(core.stream_request(session(), config(server)))
    assert events[-1].outcome.ok, events[-1].outcome

    # The provider sent each credential, the key without its trailing newline.
    first = server.requests[0]
    assert first.headers["authorization"] == f"Bearer {KEY}"
    assert first.headers["x-auth-key"] == AUTH_HDR and first.headers["ocp-apim-subscription-key"] == OCP_HDR

    # Owners get their own value in init; everyone else sees "<redacted>".
    (tool_init,) = [c for kind, c, *_ in SEEN["spy_tool"] if kind == "init"]
    assert tool_init["endpoint_sig"] == SIG
    assert {tool_init[k] for k in ("api_key", "extra_headers", "vault_dsn", "github_token")} == {R}
    (feature_init,) = [c for kind, c, *_ in SEEN["spy_feature"] if kind == "init"]
    assert feature_init["vault_dsn"] == DSN
    assert {feature_init[k] for k in ("api_key", "extra_headers", "endpoint_sig", "github_token")} == {R}
    assert {c["api_key"] for kind, c in SEEN["spy_ext"] if kind in ("init", "context")} == {R}
    assert {"api_key", "extra_headers"}.isdisjoint(SEEN["spy_ext"][-1][1])  # the provider's shared state has neither

    # Scan what each plugin saw, less the one value it owns.
    own = {"spy_tool": (SIG,), "spy_feature": (DSN,), "spy_ext": ()}
    for who, records in SEEN.items():
        secrets = tuple(s for s in ALL if s not in own[who])
        assert leaks(repr(records), secrets) == [], who
    assert any(kind == "execute_context" for kind, *_ in SEEN["spy_tool"])  # the tool's context was scanned too

    out = "\n".join(encode_event(e).decode() for e in events)
    out += events[-1].session.to_json().decode()
    out += "".join(str(w.message) for w in caught)
    out += caplog.text
    assert leaks(out) == []
    # The undeclared token is pointed out by name only.
    assert "github_token" in events[0].warnings[0]


def test_resolve_ui_schema_and_config_schema_show_secrets_as_redacted(server):
    core = make_core()
    cfg = config(server)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        res = core.resolve(cfg)
        ui = core.get_ui_schema(cfg)
    for key in ("api_key", "extra_headers", "vault_dsn", "endpoint_sig", "github_token"):
        assert res.config[key] == R, key
    assert res.config["model"] == "m" and res.config["max_retries"] == 0  # plain values stay
    assert {e["key"]: e.get("value", e.get("default")) for e in ui} == {"vault_dsn": R, "admin_password": R}
    schema = core.get_config_schema()
    sig = next(e for e in schema if e["key"] == "endpoint_sig")
    assert sig["default"] == R and sig["secret"] is True
    assert next(e for e in schema if e["key"] == "api_key")["secret"] is True
    text = repr(res) + repr(dict(res.config)) + repr(ui) + repr(schema)
    assert leaks(text) == [] and "pw-literal-in-ui-0099" not in text


@pytest.mark.parametrize("bad", ["\x00", "\r", "\nX-Evil: 1", "\x7f", "é"])
def test_a_key_with_a_control_character_is_a_config_error_that_never_quotes_it(server, caplog, bad):
    caplog.set_level(logging.DEBUG)
    server.enqueue(oa_text("never sent"))
    key = KEY[:10] + bad + KEY[10:]
    core = make_core()
    with pytest.raises(ConfigError) as info:
        core.request(session(), config(server, api_key=key))
    assert info.value.key == "api_key" and "openai" in info.value.plugins
    events = list(core.stream_request(session(), config(server, api_key=key)))
    assert [e.type for e in events][-2:] == ["error", "done"]
    assert events[-2].error.type == "ConfigError" and events[-1].outcome.reason == "invalid_input"
    text = str(info.value) + repr(info.value) + "".join(encode_event(e).decode() for e in events) + caplog.text
    assert leaks(text, (KEY[:10], KEY[10:], KEY)) == []
    assert server.requests == []  # httpx never saw it, nothing was retried


def test_a_key_from_the_environment_is_stripped_and_checked_too(server, monkeypatch):
    server.enqueue(oa_text("ok"))
    monkeypatch.setenv("OPENAI_API_KEY", f"  {KEY}\r\n")
    cfg = {"base_url": f"{server.url}/v1", "model": "m", "max_retries": 0, "stream": True}
    core = AgentCore(providers=[OpenAIProvider])
    session_ = core.add_message(core.create_session(), Message("user", "hi"))
    assert core.request(session_, cfg).outcome.ok
    assert server.requests[0].headers["authorization"] == f"Bearer {KEY}"
    monkeypatch.setenv("OPENAI_API_KEY", KEY[:6] + "\x01" + KEY[6:])
    with pytest.raises(ConfigError) as info:
        core.request(session_, cfg)
    assert "$OPENAI_API_KEY" in str(info.value) and leaks(str(info.value), (KEY[6:],)) == []


@pytest.mark.parametrize(
    "headers",
    [
        {"X-Auth-Key": AUTH_HDR + "\r\nX-Evil: 1"},
        {"X-Auth-Key\n": AUTH_HDR},
        {"X-Auth-Key": [AUTH_HDR]},
        [("X-Auth-Key", AUTH_HDR)],
        AUTH_HDR,
    ],
    ids=["crlf-in-value", "newline-in-name", "list-value", "not-a-mapping", "a-string"],
)
def test_a_bad_extra_headers_is_a_config_error_that_never_quotes_it(server, headers):
    server.enqueue(oa_text("never sent"))
    with pytest.raises(ConfigError) as info:
        make_core().request(session(), config(server, extra_headers=headers))
    assert info.value.key == "extra_headers"
    assert leaks(str(info.value) + repr(info.value), (AUTH_HDR,)) == []
    assert server.requests == []


def test_an_api_error_echoing_the_credentials_is_scrubbed(server):
    echoed = f"bad key {KEY}; X-Auth-Key: {AUTH_HDR}; Ocp-Apim-Subscription-Key: {OCP_HDR}"
    server.enqueue(json_reply({"error": {"message": echoed, "type": "invalid_request_error"}}, status=401))
    events = list(make_core().stream_request(session(), config(server)))
    assert events[-2].type == "error" and events[-2].error.type == "AuthenticationError"
    assert leaks("".join(encode_event(e).decode() for e in events)) == []


@pytest.mark.parametrize(
    ("key", "secret"),
    [
        ("api_key", True), ("openai_api_key", True), ("client_secret", True), ("secret", True),
        ("password", True), ("db_password", True), ("authorization", True), ("access_token", True),
        ("Authorization", True), ("max_tokens", False), ("max_completion_tokens", False),
        ("max_output_tokens", False), ("max_token", False), ("thinking_budget", False), ("tokenizer", False),
        ("keyword", False), ("monkey", False), ("top_k", False), ("cache_key", False),
    ],
)
def test_secret_keys_are_known_by_name_never_by_a_substring(key, secret):
    from agent_core.plugins.config import is_secret_name

    assert is_secret_name(key) is secret


def test_a_wrong_max_tokens_is_quoted_in_the_error_not_redacted():
    core = AgentCore(providers=[OpenAIProvider])
    with pytest.raises(ConfigError) as info:
        core.resolve({"max_tokens": "lots", "max_completion_tokens": 5})
    assert "'lots'" in str(info.value) and R not in str(info.value)
    with pytest.raises(ConfigError) as info:
        core.resolve({"max_completion_tokens": "many"})
    assert "'many'" in str(info.value)


def test_a_redacted_config_passed_back_is_refused_naming_the_key(server):
    core = make_core()
    redacted = dict(core.resolve(config(server)).config)
    with pytest.raises(ConfigError, match="placeholder") as info:
        core.request(session(), redacted)
    assert info.value.key in ("api_key", "extra_headers", "vault_dsn", "endpoint_sig", "github_token")
    assert server.requests == []
