"""redact's key formats, one by one, across every split of the stream; and keys in tool-call arguments."""

from __future__ import annotations

import json
from typing import Any

import pytest
from agent_core import AgentCore, Message, Session
from agent_core.testing import PluginHarness, reply, scripted_provider, tool_call
from agent_core.testing.strategies import splits
from agent_core_plugins.redact import KEY_FORMATS, MASK, KeyFormat, RedactExtension, Redactor
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from ._kit import partials_of

B64URL = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_-"
SPACES = (" ", "  ", "\t", " \t ", "\n", "\u00a0", "\u2003")


def stream(chunks: list, finals: Any = None, native: Any = None) -> Any:
    return PluginHarness(RedactExtension).stream([{}] * len(chunks), partials=chunks, finals=finals, native=native)


@st.composite
def key_of(draw: Any, fmt: KeyFormat) -> tuple[str, str]:
    """A key in ``fmt`` (drawn from its prefixes, lead and characters) and what redact makes of it."""
    prefix = draw(st.sampled_from(fmt.prefixes))
    if fmt.prefixes == ("J",):  # a JWT: header, payload, signature; found at its J
        header = draw(st.text(B64URL, min_size=16, max_size=30))
        payload = draw(st.text(B64URL, min_size=17, max_size=40))
        signature = draw(st.text(B64URL, min_size=10, max_size=43))
        return f"eyJ{header}.ey{payload}.{signature}", "ey" + MASK
    shown = ""
    if prefix.startswith("k_"):  # a Stripe key found at its k_: the letter before stays
        shown = draw(st.sampled_from("rp"))
    body = list(draw(st.text(fmt.chars, min_size=fmt.need, max_size=fmt.need + 12)))
    if fmt.check is not None:  # a real key looks random: give it a digit
        body[draw(st.integers(0, len(body) - 1))] = draw(st.sampled_from([c for c in fmt.chars if c.isdigit()]))
    lead = draw(st.sampled_from(SPACES)) if fmt.lead else ""
    key = shown + prefix + lead + "".join(body)
    return key, shown + (prefix + lead + MASK if fmt.keep else MASK)


def test_every_format_names_its_source_and_has_a_prefix_no_other_starts_with() -> None:
    prefixes = [p for f in KEY_FORMATS for p in f.prefixes]
    assert len(prefixes) == len(set(prefixes))
    assert not [(a, b) for a in prefixes for b in prefixes if a != b and b.startswith(a)]
    assert all(f.source and f.what for f in KEY_FORMATS)


@pytest.mark.parametrize("fmt", KEY_FORMATS, ids=lambda f: f.prefixes[0].strip())
@settings(max_examples=30, deadline=None)
@given(data=st.data())
def test_each_format_is_masked_whole_for_every_split(fmt: KeyFormat, data: Any) -> None:
    key, masked = data.draw(key_of(fmt))
    text = f"here is {key} for you."
    expected = f"here is {masked} for you."
    assert Redactor().text(text) == expected
    chunks = data.draw(splits(text))
    record = stream(chunks, finals=[text])
    # every partial is a piece of the joined text, so no partial shows any part of the key
    assert record.text == expected == record.finals[0]["content"]


@settings(max_examples=60, deadline=None)
@given(data=st.data())
def test_keys_in_reasoning_and_in_streamed_tool_arguments_are_masked_per_stream(data: Any) -> None:
    key, masked = data.draw(st.sampled_from(KEY_FORMATS).flatmap(key_of))
    reasoning = f"the user pasted {key} earlier"
    arguments = json.dumps({"cmd": f"deploy --token={key}", "n": 1}, ensure_ascii=False)
    # deltas are masked as raw text: a key behind a JSON escape ("bearer\\t...") is caught in the final only
    assume("\\" not in arguments)
    r_chunks = data.draw(splits(reasoning))
    a_chunks = data.draw(splits(arguments))
    parts: list[Any] = [[{"role": "assistant", "content": "", "metadata": {"reasoning": r}}] for r in r_chunks]
    parts += [[{"role": "assistant", "content": "", "metadata": {"tool_calls": [
        {"index": 0, **({"id": "call_1", "function": {"name": "shell", "arguments": a}} if i == 0
                        else {"function": {"arguments": a}})}]}}] for i, a in enumerate(a_chunks)]
    record = stream(parts)
    out = partials_of(record)
    assert "".join((p.get("metadata") or {}).get("reasoning", "") for p in out) == Redactor().text(reasoning)
    streamed = "".join(c["function"]["arguments"] for p in out for c in (p.get("metadata") or {}).get("tool_calls", ()))
    assert streamed == Redactor().text(arguments)
    assert json.loads(streamed)["cmd"] == f"deploy --token={masked}"


def test_odd_tool_call_deltas_are_passed_on_or_keyed_by_position() -> None:
    deltas = [{"index": [0], "function": {"arguments": f'{{"k": "{KEY}"}}'}}, "not a call",
              {"index": 1, "function": {"arguments": 7}}, {"function": None}]
    out = partials_of(stream([[{"role": "assistant", "content": "", "metadata": {"tool_calls": deltas}}]]))
    calls = [c for p in out for c in (p.get("metadata") or {}).get("tool_calls", ())]
    assert calls[0]["function"]["arguments"] == f'{{"k": "{MASK}"}}'
    assert calls[1:4] == deltas[1:]


@pytest.mark.parametrize(
    ("prefix", "run"),
    [("sk-", "a" * 9000), ("J", "A" * 9000), ("Bearer", " " * 5000 + "b" * 5000)],
    ids=["sk-no-digit", "J-blob", "bearer-spaces"],
)
def test_a_long_run_that_is_no_key_goes_out_after_4096_characters(prefix: str, run: str) -> None:
    text = f"x {prefix}{run} y"
    chunks = [text[i : i + 100] for i in range(0, len(text), 100)]
    record = stream(chunks)
    out = [p["content"] for p in partials_of(record)]
    assert record.text == text == Redactor().text(text)
    # not held to the end: the run is released once it is 4096 characters long, then streams on
    assert sum(len(c) for c in out[: len(chunks) - 2]) > len(text) - 4096 - 300


@pytest.mark.parametrize("spelling", ["Bearer", "bearer", "BEARER", "bEaReR"])
@pytest.mark.parametrize("space", SPACES, ids=repr)
def test_bearer_in_any_case_after_any_whitespace(spelling: str, space: str) -> None:
    text = f"Authorization: {spelling}{space}abc.DEF_123-xyz~+/= next"
    assert Redactor().text(text) == f"Authorization: {spelling}{space}{MASK} next"


@pytest.mark.parametrize(
    "text",
    [
        "they say the key to money is time, e",
        "the bearer of good news; Bearer authentication; bearer\ttokens",
        "ASIAN markets and AKIA are words here",
        "sk_live_xxxxxxxxxxxxxxxx is a placeholder, rk_test_ a prefix",
        "eyJ is how a JWT starts: eyJhbGciOiJIUzI1NiJ9 alone is only a header",
        "ghs_ and github_pat_ and glpat- and xoxe. and AIza and SG. start keys",
        "risk-assessment-of-the-new-system",
    ],
)
def test_prose_and_bare_prefixes_stay(text: str) -> None:
    assert Redactor().text(text) == text


# -- tool calls in finals --------------------------------------------------------------------

KEY = "sk-proj-Abc123def456ghi789JKL"
TOKEN = "ghs_" + "aB3" * 12


def args_of(call: Any) -> dict:
    return json.loads(call["function"]["arguments"])


def test_openai_tool_call_arguments_are_masked_and_stay_json() -> None:
    arguments = json.dumps({"cmd": f"curl -H 'Authorization: Bearer {TOKEN}' -d key={KEY}", "n": 2})
    final = {"role": "assistant", "content": "", "tool_calls": [
        {"id": "call_1", "type": "function", "function": {"name": "shell", "arguments": arguments}}]}
    record = stream([], finals=[final], native=[{"role": "user", "content": "hi"}, final])
    (out,) = record.finals
    assert args_of(out["tool_calls"][0]) == {"cmd": f"curl -H 'Authorization: Bearer {MASK}' -d key={MASK}", "n": 2}
    assert out["tool_calls"][0]["id"] == "call_1"
    assert record.native_messages[-1] == out  # the history the provider stored is masked too


def test_keys_hidden_by_json_escapes_are_masked_too() -> None:
    # "\u0073" is "s" and "\t" a tab: the raw text shows no key, the decoded string does
    arguments = '{"cmd": "use \\u0073k-proj-Abc123def456ghi789JKL", "h": "BEARER\\tabcDEF123456"}'
    final = {"role": "assistant", "content": "", "tool_calls": [
        {"id": "c", "type": "function", "function": {"name": "shell", "arguments": arguments}}]}
    (out,) = stream([], finals=[final]).finals
    assert args_of(out["tool_calls"][0]) == {"cmd": f"use {MASK}", "h": f"BEARER\t{MASK}"}


def test_anthropic_tool_use_inputs_and_the_notes_on_cut_calls_are_masked() -> None:
    final = {
        "role": "assistant",
        "content": [{"type": "text", "text": f"running with {KEY}"},
                    {"type": "tool_use", "id": "toolu_1", "name": "shell",
                     "input": {"cmd": f"export K={KEY}", "n": 3, "all": [TOKEN, {"deep": KEY}]}}],
        "_tool_arguments": {"toolu_1": f'{{"cmd": "export K={KEY}'},
        "_cut_tool_uses": [{"id": "toolu_2", "name": "shell", "arguments": f'{{"t": "{TOKEN}'}],
    }
    (out,) = stream([], finals=[final]).finals
    text, use = out["content"]
    assert text["text"] == f"running with {MASK}"
    assert use["input"] == {"cmd": f"export K={MASK}", "n": 3, "all": [MASK, {"deep": MASK}]}
    assert use["id"] == "toolu_1" and use["name"] == "shell"
    assert out["_tool_arguments"] == {"toolu_1": f'{{"cmd": "export K={MASK}'}
    assert out["_cut_tool_uses"] == [{"id": "toolu_2", "name": "shell", "arguments": f'{{"t": "{MASK}'}]


def test_core_shaped_tool_calls_in_a_finals_metadata_are_masked() -> None:
    final = {"role": "assistant", "content": "", "metadata": {"tool_calls": [tool_call("shell", {"cmd": KEY})]}}
    (out,) = stream([], finals=[final]).finals
    assert args_of(out["metadata"]["tool_calls"][0]) == {"cmd": MASK}


def test_a_final_without_keys_is_handed_on_as_it_was() -> None:
    final = {"role": "assistant", "content": "fine", "tool_calls": [tool_call("shell", {"cmd": "ls -la"})]}
    out = RedactExtension().process_chunk(None, [], [final], [final], {"config": {}})
    assert out[1][0] is final and out[2][0] is final


class Shell:
    """A tool that records the payload it was given."""

    name = "shell"
    seen: list[Any] = []

    def get_tool_schemas(self, state, *, prepared=None):
        return [{"type": "function", "function": {
            "name": "shell", "description": "run a command",
            "parameters": {"type": "object", "properties": {"cmd": {"type": "string"}}}}}]

    def execute_tool(self, tool_name, payload, state, **kwargs):
        Shell.seen.append(payload)
        return {"success": True, "result": "ok"}


def test_through_the_engine_no_tool_call_event_tool_or_session_sees_the_key() -> None:
    Shell.seen = []
    provider = scripted_provider(
        reply(f"calling with {KEY}", tool_calls=[tool_call("shell", {"cmd": f"login {TOKEN}"}, id="a")]),
        reply("done"),
    )
    core = AgentCore(providers=[provider], extensions=[RedactExtension], tools=[Shell])
    events = list(core.stream_request(Session("s", [Message("user", "go")]), {"enabled_plugins": ["redact"]}))
    (call,) = [e for e in events if e.type == "tool_call"]
    assert call.payload == {"cmd": f"login {MASK}"}
    assert Shell.seen == [{"cmd": f"login {MASK}"}]
    stored = events[-1].session.to_json().decode()
    assert KEY not in stored and TOKEN not in stored and MASK in stored
