"""The checked-in JSON Schemas are current and describe what the types really emit."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path
from typing import Any

import jsonschema
import pytest
from agent_core import Message, PartialMessage, Session, ToolDescriptor
from hypothesis import given, settings
from hypothesis import strategies as st

ROOT = Path(__file__).resolve().parent.parent
SCRIPT = ROOT / "scripts" / "generate_schemas.py"


def _load_generator() -> Any:
    spec = importlib.util.spec_from_file_location("_generate_schemas_under_test", SCRIPT)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


gen = _load_generator()


def _validator(filename: str) -> jsonschema.Draft202012Validator:
    schema = json.loads((ROOT / "schemas" / filename).read_text(encoding="utf-8"))
    jsonschema.Draft202012Validator.check_schema(schema)
    return jsonschema.Draft202012Validator(schema)


MESSAGE = _validator("message.schema.json")
PARTIAL = _validator("partial_message.schema.json")
SESSION = _validator("session.schema.json")
TOOL = _validator("tool_descriptor.schema.json")


# -- staleness ---------------------------------------------------------------------


def test_checked_in_schemas_match_the_generator() -> None:
    stale = gen.stale_files()
    assert stale == [], f"stale schemas {stale}; run: python scripts/generate_schemas.py"


def test_the_four_core_types_are_published() -> None:
    table = dict(gen.SCHEMAS)
    assert table["message.schema.json"] is Message
    assert table["partial_message.schema.json"] is PartialMessage
    assert table["session.schema.json"] is Session
    assert table["tool_descriptor.schema.json"] is ToolDescriptor


def test_files_are_sorted_pretty_json_with_trailing_newline() -> None:
    for name, _ in gen.SCHEMAS:
        text = (ROOT / "schemas" / name).read_text(encoding="utf-8")
        assert text.endswith("}\n") and not text.endswith("\n\n")
        assert text == json.dumps(json.loads(text), indent=2, sort_keys=True, ensure_ascii=False) + "\n"
        assert json.loads(text)["$schema"] == "https://json-schema.org/draft/2020-12/schema"


def test_check_flag_lists_changed_missing_and_orphaned_files(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert gen.main(["--dir", str(tmp_path)]) == 0
    assert gen.main(["--check", "--dir", str(tmp_path)]) == 0

    (tmp_path / "message.schema.json").write_text("{}\n", encoding="utf-8")
    (tmp_path / "session.schema.json").unlink()
    (tmp_path / "retired.schema.json").write_text("{}\n", encoding="utf-8")
    (tmp_path / "notes.json").write_text("{}\n", encoding="utf-8")  # not ours: ignored
    capsys.readouterr()

    assert gen.main(["--check", "--dir", str(tmp_path)]) == 1
    err = capsys.readouterr().err
    for name in ("message.schema.json", "session.schema.json", "retired.schema.json"):
        assert name in err
    assert "notes.json" not in err
    assert "partial_message.schema.json" not in err

    # Regenerating repairs all three and leaves foreign files alone.
    assert sorted(gen.write(tmp_path)) == ["message.schema.json", "retired.schema.json", "session.schema.json"]
    assert gen.stale_files(tmp_path) == []
    assert not (tmp_path / "retired.schema.json").exists()
    assert (tmp_path / "notes.json").exists()


def test_duplicate_rows_are_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(gen, "SCHEMAS", [*gen.SCHEMAS, ("message.schema.json", Session)])
    with pytest.raises(ValueError, match="twice"):
        gen.expected_files()


def test_adding_a_row_publishes_a_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import msgspec

    class Ping(msgspec.Struct, tag="ping"):
        at: float

    monkeypatch.setattr(gen, "SCHEMAS", [*gen.SCHEMAS, ("ping.schema.json", Ping)])
    assert "ping.schema.json" in gen.write(tmp_path)
    schema = json.loads((tmp_path / "ping.schema.json").read_text(encoding="utf-8"))
    jsonschema.Draft202012Validator(schema).validate({"type": "ping", "at": 1.5})


# -- real output validates -----------------------------------------------------------

TOOL_CALL = {"id": "call_1", "type": "function", "function": {"name": "add", "arguments": '{"a": 1, "b": 2}'}}

MESSAGES = [
    Message(role="user", content="Hello"),
    Message(role="system", content=""),
    Message(role="assistant", content=None, metadata={"tool_calls": [TOOL_CALL], "usage": {"input_tokens": 3}}),
    Message(role="tool", content="Result: 3", metadata={"tool_call_id": "call_1", "tool_name": "add"}),
    Message(
        role="user",
        content="look",
        multipart_content=[{"type": "text", "text": "look"}, {"type": "image_url", "image_url": {"url": "x"}}],
    ),
    Message(role="tool", content={"type": "provider_native_tool_result", "content": []}, tool_result={"success": True}),
    Message(role="assistant", content=[{"type": "text", "text": "parts"}], metadata={"n": [1, 2.5, None, True]}),
]


def _both_forms(value: Any) -> list[Any]:
    return [value.to_dict(), json.loads(value.to_json())]


@pytest.mark.parametrize("message", MESSAGES, ids=lambda m: f"{m.role}")
def test_messages_validate(message: Message) -> None:
    for form in _both_forms(message):
        MESSAGE.validate(form)


@pytest.mark.parametrize(
    "partial",
    [PartialMessage(role="assistant", content="del"), PartialMessage(role="assistant", content="", metadata={"i": 0})],
)
def test_partials_validate(partial: PartialMessage) -> None:
    for form in _both_forms(partial):
        PARTIAL.validate(form)


def test_sessions_validate() -> None:
    sessions = [
        Session(session_id="empty"),
        Session(session_id="s1", messages=MESSAGES, metadata={"agent_core.native_history": {"echo": [{"a": 1}]}}),
    ]
    for session in sessions:
        for form in _both_forms(session):
            SESSION.validate(form)


def test_tool_descriptors_validate() -> None:
    descriptors = [
        ToolDescriptor(plugin_name="calculator", tool_name="add", schema={"type": "function", "function": {"name": "add"}}),
        ToolDescriptor(plugin_name="p", tool_name="t", schema={}, metadata={"format": "json_schema"}),
    ]
    for descriptor in descriptors:
        for form in _both_forms(descriptor):
            TOOL.validate(form)


@pytest.mark.parametrize(
    ("validator", "instance"),
    [
        (MESSAGE, {"role": "robot", "content": "x"}),
        (MESSAGE, {"role": "user"}),
        (MESSAGE, {"role": "user", "content": "x", "metadata": []}),
        (MESSAGE, {"role": "user", "content": "x", "toolResult": "ok"}),
        (MESSAGE, {"role": "user", "content": "x", "multipartContent": {}}),
        (PARTIAL, {"content": "x"}),
        (SESSION, {"messages": []}),
        (SESSION, {"session_id": "s", "messages": [{"role": "user"}]}),
        (SESSION, {"session_id": 1}),
        (TOOL, {"plugin_name": "p", "tool_name": "t"}),
    ],
)
def test_schemas_reject_malformed_data(validator: jsonschema.Draft202012Validator, instance: Any) -> None:
    assert not validator.is_valid(instance)


# -- arbitrary values validate --------------------------------------------------------

json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False, allow_infinity=False) | st.text(),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(), inner, max_size=4),
    max_leaves=12,
)
json_objects = st.dictionaries(st.text(), json_values, max_size=4)
roles = st.sampled_from(["system", "user", "assistant", "tool"])
messages = st.builds(
    Message,
    role=roles,
    content=json_values,
    metadata=json_objects,
    multipart_content=st.none() | st.lists(json_values, max_size=3),
    tool_result=st.none() | json_objects,
)


@pytest.mark.slow
@settings(max_examples=50, deadline=None)
@given(session_id=st.text(), msgs=st.lists(messages, max_size=4), metadata=json_objects)
def test_arbitrary_sessions_validate(session_id: str, msgs: list[Message], metadata: dict[str, Any]) -> None:
    session = Session(session_id=session_id, messages=msgs, metadata=metadata)
    for form in _both_forms(session):
        SESSION.validate(form)
    for message in msgs:
        MESSAGE.validate(message.to_dict())
