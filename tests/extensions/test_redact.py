"""redact: keys and configured patterns masked in every partial and the final, however the stream is cut."""

from __future__ import annotations

import pytest
from agent_core import AgentCore, ConfigError, Message
from agent_core.testing import PluginHarness, check_plugin
from agent_core.testing.strategies import splits
from agent_core_plugins.redact import MASK, RedactExtension, Redactor
from agent_core_providers.echo import EchoProvider
from hypothesis import given, settings
from hypothesis import strategies as st

from ._kit import partials_of, reasoning_of

KEY = "sk-proj-Abc123def456ghi789JKL"
TEXT = f"Use {KEY} with AKIAIOSFODNN7EXAMPLE; header: Bearer eyJhbGciOi.J9x done, task-force-one-two-three ok"
MASKED = f"Use {MASK} with {MASK}; header: Bearer {MASK} done, task-force-one-two-three ok"


def stream(chunks, config=None, finals=None):
    return PluginHarness(RedactExtension, config).stream([{}] * len(chunks), partials=chunks, finals=finals)


def test_keeps_the_hook_contract():
    check_plugin(RedactExtension)
    check_plugin(RedactExtension, samples={"chunks": [{"delta": "s"}, {"delta": "k-0123456789abcdefghij"}]})


@pytest.mark.parametrize(
    ("text", "masked"),
    [
        (TEXT, MASKED),
        ("sk-ant-api03-AAAAAAAAAAAAAAAAAAAAAAAA.", f"{MASK}."),
        ("ghp_" + "aB3" * 12 + " and xoxp-1234-5678-abcd", f"{MASK} and {MASK}"),
        ("bearer authentication and ghp_" + "x" * 36, "bearer authentication and ghp_" + "x" * 36),
        ("sk-learn and AKIA123 are not keys", "sk-learn and AKIA123 are not keys"),
        ("risk-assessment-of-the-new-system", "risk-assessment-of-the-new-system"),  # 'sk-' inside a word
    ],
)
def test_whole_texts(text, masked):
    assert Redactor().text(text) == masked


def test_configured_patterns_are_masked_too():
    redactor = Redactor(("password=\\w+", "\\b\\d{3}-\\d{4}\\b"))
    assert redactor.text("password=hunter2, call 555-1234.") == f"{MASK}, call {MASK}."


def test_a_bad_pattern_is_a_config_error_naming_the_key():
    core = AgentCore(providers=[EchoProvider], extensions=[RedactExtension])
    session = core.add_message(core.create_session(), Message(role="user", content="hi"))
    with pytest.raises(ConfigError, match="redact_patterns.*item 1") as info:
        core.request(session, {"enabled_plugins": ["redact"], "redact_patterns": ["ok", "(unclosed"]})
    assert info.value.key == "redact_patterns"


def test_streamed_record(agent_snapshot):
    chunks = ["key: s", "k-proj-Abc", "123def456ghi789", "JKL and more"]
    record = stream(chunks, finals=["".join(chunks)])
    assert record.text == f"key: {MASK} and more" == record.finals[0]["content"]
    assert record == agent_snapshot


def test_reasoning_partials_are_masked_in_their_own_stream():
    parts = [[{"role": "assistant", "content": "", "metadata": {"reasoning": "the key sk-0123456"}}],
             [{"role": "assistant", "content": "", "metadata": {"reasoning": "789abcdefghij is"}}],
             "answer"]
    record = PluginHarness(RedactExtension).stream([{}] * 3, partials=parts)
    assert reasoning_of(record) == f"the key {MASK} is"
    assert record.text == "answer"


def test_only_what_may_be_a_key_is_held_back():
    # "s" may start sk-: it waits for the next chunk; "r" and "e" do not (rk_ and eyJ are found at k_ and J)
    record = stream(["Hello wor", "ld, s", "o it we", "nt"])
    assert [p["content"] for p in partials_of(record)] == ["Hello wor", "ld, ", "so it we", "nt"]


def test_a_key_at_the_very_end_is_flushed_masked():
    record = stream(["tail sk-0123456789", "abcdefXYZ"])
    assert record.text == f"tail {MASK}"


@settings(max_examples=150)
@given(splits(TEXT))
def test_every_split_masks_every_partial_and_the_final(chunks):
    record = stream(chunks, finals=["".join(chunks)])
    assert record.text == MASKED == record.finals[0]["content"]
    for p in partials_of(record):
        for secret_piece in ("Abc123def456", "IOSFODNN7", "eyJhbGciOi"):
            assert secret_piece not in p["content"]


@settings(max_examples=100)
@given(splits("id 555-1234, password=hunter2 and 555-12345 ok"))
def test_every_split_of_configured_patterns_gives_the_whole_text_result(chunks):
    config = {"redact_patterns": ["password=\\w+", "\\b\\d{3}-\\d{4}\\b"]}
    whole = "".join(chunks)
    record = stream(chunks, config, finals=[whole])
    expected = Redactor(tuple(config["redact_patterns"])).text(whole)
    assert expected == f"id {MASK}, {MASK} and 555-12345 ok"
    assert record.text == expected == record.finals[0]["content"]
    assert not any("hunter2" in p["content"] for p in partials_of(record))


@given(st.text(alphabet="skA-IxobBearer _0123456789ghp", max_size=40), st.data())
def test_random_texts_stream_like_their_whole(text, data):
    chunks = data.draw(splits(text))
    assert stream(chunks).text == Redactor().text(text)


def test_listed_off_by_default_and_on_when_enabled():
    core = AgentCore(providers=[EchoProvider], extensions=[RedactExtension])
    assert core.resolve({}).reasons["redact"].startswith("off")
    assert core.resolve({"enabled_plugins": ["redact"]}).reasons["redact"].startswith("on")
