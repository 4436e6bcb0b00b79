"""The README's end-to-end run: one `agent-core run` with system_prompt, usage, timestamps, tool_policy,
files and calculator working together, against a scripted OpenAI-compatible server on 127.0.0.1."""

from __future__ import annotations

import json
import re

import pytest
from agent_core.cli import main
from providers._server import sse_reply
from providers._wire import OA_DONE, OA_USAGE, oa_chunk, oa_text


def _call(index, call_id, name, arguments):
    return {"index": index, "id": call_id, "type": "function",
            "function": {"name": name, "arguments": json.dumps(arguments)}}


def test_the_bundled_plugins_work_together_in_one_run(server, capsys, tmp_path):
    (tmp_path / "notes.txt").write_text("budget: 1200\nspent: 845\n")
    server.enqueue(
        sse_reply(
            oa_chunk({"role": "assistant", "tool_calls": [
                _call(0, "c1", "read_file", {"path": "notes.txt"}),
                _call(1, "c2", "calculate", {"expression": "1200 - 845"}),
                _call(2, "c3", "read_file", {"path": "../../etc/passwd"}),
                _call(3, "c4", "calculate", {"expression": "9**9**9**9"}),
                _call(4, "c5", "list_dir", {}),
            ]}),
            oa_chunk({}, "tool_calls"), oa_chunk(usage=OA_USAGE, choices=False), OA_DONE,
        ),
        oa_text("You have 355 left."),
    )
    code = main([
        "run", "--provider", "openai", "--base-url", f"{server.url}/v1", "--model", "m", "--json",
        "-c", 'enabled_plugins=["files", "calculator", "timestamps"]',
        "-c", f"files_root={tmp_path}",
        "-c", "system_prompt=You are a careful assistant running {model}.",
        "-c", 'prices={"m": {"input": 1.0, "output": 2.0, "cached": 0.5}}',
        "-c", 'tool_policy={"list_dir": "deny", "*": "allow"}',
        "How much budget is left?",
    ])
    out = capsys.readouterr()
    assert code == 0, out.err
    events = [json.loads(line) for line in out.out.splitlines()]
    start, done = events[0], next(e for e in events if e["type"] == "done")  # "saved" follows: runs are kept
    assert start["features"] == ["system_prompt", "tool_policy", "timestamps", "usage"]
    assert sorted(start["tools"]) == ["calculator", "files"]

    # system_prompt: on the wire, every call; not stored in the session
    first, second = server.requests[0].body, server.requests[1].body
    assert first["messages"][0] == {"role": "system", "content": "You are a careful assistant running m."}
    assert second["messages"][0] == first["messages"][0]
    assert sorted(t["function"]["name"] for t in first["tools"]) == ["calculate", "list_dir", "read_file",
                                                                      "search_text"]
    session = done["session"]
    assert [m["role"] for m in session["messages"]] == ["user", "assistant", *["tool"] * 5, "assistant"]

    # files + calculator + tool_policy, as the model read them
    results = {m["tool_call_id"]: m["content"] for m in second["messages"] if m["role"] == "tool"}
    assert results["c1"] == "Result: budget: 1200\nspent: 845\n"
    assert results["c2"] == "Result: 355"
    assert "'..' is not allowed" in results["c3"]
    assert "exponent 387420489 is out of bounds" in results["c4"]
    assert results["c5"].startswith("Error: tool call denied by tool_policy")
    policy = {m["metadata"]["tool_call_id"]: m["metadata"]["tool_policy"] for m in session["messages"]
              if m["role"] == "tool"}
    assert policy["c5"]["decision"] == "denied" and policy["c1"]["decision"] == "allowed"

    # usage: per message and for the session, with the cost from prices
    answers = [m for m in session["messages"] if m["role"] == "assistant"]
    per_call = (7 * 1.0 + 4 * 0.5 + 7 * 2.0) / 1e6  # 11 input of which 4 cached, 7 output
    for m in answers:
        assert m["metadata"]["usage"]["cost"] == pytest.approx(per_call)
        assert re.match(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ$", m["metadata"]["timestamp"])  # timestamps
    total = session["metadata"]["usage"]
    assert (total["input_tokens"], total["output_tokens"], total["messages"]) == (22, 14, 2)
    assert total["cost"] == pytest.approx(2 * per_call)
    assert answers[-1]["content"] == "You have 355 left."


def test_plugins_lists_every_bundled_feature_and_tool_with_why(capsys):
    assert main(["plugins", "-c", "system_prompt=hi", "-c", 'enabled_plugins=["calculator"]']) == 0
    lines = {line.split()[1]: line for line in capsys.readouterr().out.splitlines()}
    for name in ("system_prompt", "usage", "timestamps", "tool_policy", "title", "file_mentions"):
        assert lines[name].startswith("feature"), lines[name]
    for name in ("files", "calculator"):
        assert lines[name].startswith("tool"), lines[name]
    assert " on" in lines["system_prompt"] and " on" in lines["calculator"]
    assert " off" in lines["tool_policy"] and " off" in lines["files"]
    assert "on: enabled by default" in lines["usage"]  # it only records; disabled_plugins turns it off


OFFLINE_SCRIPT = (
    '[{"tool_calls": [{"name": "read_file", "arguments": {"path": "notes.txt"}},'
    ' {"name": "calculate", "arguments": {"expression": "1200 - 845"}},'
    ' {"name": "read_file", "arguments": {"path": "../../etc/passwd"}},'
    ' {"name": "calculate", "arguments": {"expression": "9**9**9**9"}},'
    ' {"name": "list_dir", "arguments": {}}],'
    ' "usage": {"input_tokens": 120, "output_tokens": 30}},'
    ' {"content": "You have 355 left.", "usage": {"input_tokens": 300, "output_tokens": 8}}]'
)


def test_the_offline_run_with_the_scripted_provider(capsys, tmp_path, monkeypatch):
    """The README's offline command, word for word: no model, no network, every plugin at work."""
    (tmp_path / "notes.txt").write_text("budget: 1200\nspent: 845\n")
    monkeypatch.chdir(tmp_path)
    code = main([
        "run", "--provider", "scripted", "--json",
        "-c", 'enabled_plugins=["files", "calculator", "timestamps"]', "-c", "files_root=.",
        "-c", "system_prompt=You are a careful assistant running {model}.",
        "-c", 'prices={"scripted-1": {"input": 1.0, "output": 2.0}}',
        "-c", 'tool_policy={"list_dir": "deny", "*": "allow"}',
        "-c", f"script={OFFLINE_SCRIPT}",
        "How much budget is left in notes.txt?",
    ])
    out = capsys.readouterr()
    assert code == 0, out.err
    events = [json.loads(line) for line in out.out.splitlines()]
    assert events[0]["features"] == ["system_prompt", "tool_policy", "timestamps", "usage"]
    session = next(e for e in events if e["type"] == "done")["session"]
    tools = {m["metadata"]["tool_call_id"]: m for m in session["messages"] if m["role"] == "tool"}
    assert tools["call_0_0"]["content"] == "Result: budget: 1200\nspent: 845\n"
    assert tools["call_0_1"]["content"] == "Result: 355"
    assert "'..' is not allowed" in tools["call_0_2"]["content"]
    assert "out of bounds" in tools["call_0_3"]["content"]
    assert tools["call_0_4"]["metadata"]["tool_policy"]["decision"] == "denied"
    assert session["messages"][-1]["content"] == "You have 355 left."
    assert re.match(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ$", session["messages"][-1]["metadata"]["timestamp"])
    assert session["metadata"]["usage"] == {"input_tokens": 420, "output_tokens": 38, "messages": 2,
                                            "cost": pytest.approx((420 * 1.0 + 38 * 2.0) / 1e6)}


def test_a_bad_script_is_a_clear_error(capsys):
    assert main(["run", "--provider", "scripted", "-c", 'script=[{"tool_calls": "x"}]', "hi"]) != 0
    assert "script[0] must be a text or" in capsys.readouterr().err
