"""The ``files`` tools: reading, listing and searching under ``files_root``, and nothing outside it."""

from __future__ import annotations

import pytest
from agent_core import AgentCore, Message
from agent_core.testing import PluginHarness, check_plugin, reply, scripted_provider, tool_call
from agent_core_plugins.files import FilesTool, PathRefused, confine


@pytest.fixture
def tree(tmp_path):
    root = tmp_path / "root"
    (root / "src").mkdir(parents=True)
    (root / "src" / "app.py").write_text("import os\n\ndef main():\n    return 42\n")
    (root / "notes.txt").write_text("one\ntwo\nthree\nfour\n")
    (tmp_path / "secret.txt").write_text("TOP SECRET\n")
    (root / "leak").symlink_to(tmp_path / "secret.txt")
    (root / "leakdir").symlink_to(tmp_path)
    (root / "inner").symlink_to(root / "notes.txt")
    return root


def run(tree, tool, payload, **config):
    harness = PluginHarness(FilesTool, {"files_root": str(tree), **config})
    return harness.call("execute_tool", tool, payload, harness.state)


def test_files_keeps_the_hook_contract():
    check_plugin(FilesTool)


def test_read_file_whole_and_by_line_range(tree):
    assert run(tree, "read_file", {"path": "notes.txt"}) == {"success": True, "result": "one\ntwo\nthree\nfour\n"}
    assert run(tree, "read_file", {"path": "notes.txt", "start_line": 2, "end_line": 3})["result"] == "two\nthree\n"
    assert run(tree, "read_file", {"path": "inner", "start_line": 4})["result"] == "four\n"  # a link inside is fine


def test_read_file_is_cut_at_the_size_limit(tree):
    out = run(tree, "read_file", {"path": "notes.txt"}, files_max_read_bytes=6)
    assert out["success"] and out["result"].startswith("one\ntw\n[cut at 6 bytes")


@pytest.mark.parametrize(
    ("payload", "words"),
    [
        ({"path": "../../etc/passwd"}, "'..' is not allowed"),
        ({"path": "src/../../secret.txt"}, "'..' is not allowed"),
        ({"path": "/etc/passwd"}, "outside files_root"),
        ({"path": "leak"}, "a symlink leads outside files_root"),
        ({"path": "leakdir/secret.txt"}, "a symlink leads outside files_root"),
        ({"path": "missing.txt"}, "does not exist"),
        ({"path": "src"}, "'src' is a directory, not a file"),
        ({"path": "notes.txt", "start_line": 3, "end_line": 1}, "end_line 1 is before start_line 3"),
        ({"path": "notes.txt", "start_line": "2"}, "start_line must be an integer"),
        ({}, "path must be a non-empty string"),
    ],
)
def test_read_file_refusals_are_error_results(tree, payload, words):
    out = run(tree, "read_file", payload)
    assert out["success"] is False and words in out["error"] and out["error"].startswith("read_file: ")
    assert "TOP SECRET" not in out["error"]


def test_list_dir_hides_links_leading_outside(tree):
    assert run(tree, "list_dir", {})["result"].splitlines() == ["inner", "notes.txt", "src/"]
    assert run(tree, "list_dir", {"path": "src"})["result"] == "app.py"
    assert "'..' is not allowed" in run(tree, "list_dir", {"path": ".."})["error"]
    assert "symlink leads outside" in run(tree, "list_dir", {"path": "leakdir"})["error"]


def test_search_text_finds_matches_and_stops_at_max_results(tree):
    assert run(tree, "search_text", {"pattern": r"return \d+"})["result"] == "src/app.py:4:     return 42"
    out = run(tree, "search_text", {"pattern": "o", "max_results": 2})["result"].splitlines()
    assert out == ["inner:1: one", "inner:2: two", "[stopped at 2 matches]"]
    assert run(tree, "search_text", {"pattern": "SECRET"})["result"] == "no matches"  # the leaking link is skipped
    assert "bad regular expression" in run(tree, "search_text", {"pattern": "("})["error"]


def test_confine_is_the_one_gate(tree):
    assert confine(tree, "src/app.py") == tree / "src" / "app.py"
    with pytest.raises(PathRefused, match="symlink leads outside"):
        confine(tree, "leak")


def test_previews_and_single_line_summaries(tree):
    harness = PluginHarness(FilesTool, {"files_root": str(tree)})
    preview = harness.call("format_tool_call_preview", "read_file",
                           {"path": "a.py", "start_line": 3, "end_line": 9}, harness.state)
    assert preview == "read a.py lines 3-9"
    assert harness.call("format_tool_call_preview", "search_text", {"pattern": "x+"}, harness.state) == (
        "search /x+/ in .")
    display = harness.call("to_display_format", "a\nb\nc", {"success": True}, harness.state)
    assert display["single_line"] == "a (+2 lines)"


def test_a_request_reads_a_file_and_is_refused_a_hostile_path(tree):
    Provider = scripted_provider(
        reply(tool_calls=[tool_call("read_file", {"path": "notes.txt", "end_line": 1}, id="c1"),
                          tool_call("read_file", {"path": "../../etc/passwd"}, id="c2"),
                          tool_call("read_file", {"path": "leak"}, id="c3")]),
        reply("The first line is one."),
    )
    core = AgentCore(providers=[Provider], tools=[FilesTool])
    session = core.add_message(core.create_session(), Message(role="user", content="first line?"))
    events = list(core.stream_request(session, {"files_root": str(tree), "enabled_plugins": ["files"]}))
    calls = {e.call_id: e for e in events if e.type == "tool_call"}
    assert calls["c1"].preview == "read notes.txt lines 1-1"
    results = {e.call_id: e for e in events if e.type == "tool_result"}
    assert results["c1"].message.content == "Result: one\n"
    assert "'..' is not allowed" in results["c2"].message.content
    assert "symlink leads outside" in results["c3"].message.content
    assert all("TOP SECRET" not in str(e.message.content) for e in results.values())
    assert events[-1].outcome.status == "finished"


@pytest.mark.parametrize("pattern", ["(a+)+$", r"(\w*)*x", "(.*a){8}b", "(a|aa)*c"])
def test_search_text_runs_backtracking_patterns_in_linear_time(tree, pattern):
    # each of these takes Python's re hours on this line; RE2 answers at once
    (tree / "redos.txt").write_text("a" * 5000 + "!\n")
    out = run(tree, "search_text", {"pattern": pattern, "path": "redos.txt"})
    assert out == {"success": True, "result": "no matches"}


@pytest.mark.parametrize(("pattern", "words"), [
    (r"(a)\1", "invalid escape sequence: \\1"),
    ("(?=a)b", "invalid perl operator: (?="),
    ("(", "missing ): ("),
    ("[ab]{0,1000}c", "too big to search in bounded time ("),
])
def test_search_text_refuses_what_re2_cannot_run_in_linear_time(tree, pattern, words):
    out = run(tree, "search_text", {"pattern": pattern})
    assert out["success"] is False and words in out["error"], out
    assert out["error"].startswith("search_text: ") and f"'{pattern}'" in out["error"]


def test_search_text_matches_within_lines_with_line_anchors(tree):
    (tree / "m.txt").write_text("alpha\r\nbeta gamma\nalphabet\n")
    assert run(tree, "search_text", {"pattern": "^alpha$", "path": "m.txt"})["result"] == "m.txt:1: alpha"
    assert run(tree, "search_text", {"pattern": r"a\sb", "path": "m.txt"})["result"] == "no matches"  # no line spans
    assert run(tree, "search_text", {"pattern": r"(?i)GAMMA$", "path": "m.txt"})["result"] == "m.txt:2: beta gamma"
    assert run(tree, "search_text", {"pattern": "a.b", "literal": True, "path": "m.txt"})["result"] == "no matches"


def test_search_text_shows_a_long_line_around_its_match(tree):
    (tree / "min.js").write_text("x" * 5000 + "needle" + "y" * 5000 + "\n")
    line = run(tree, "search_text", {"pattern": "needle"})["result"]
    assert line.startswith("min.js:1: ...") and "needle" in line and line.endswith("...") and len(line) < 230


def test_without_re2_plain_text_is_still_searched_and_regexes_refused_naming_the_extra(tree, monkeypatch):
    from agent_core_plugins import file_search

    monkeypatch.setattr(file_search, "re2", None)
    assert run(tree, "search_text", {"pattern": "return 42"})["result"] == "src/app.py:4:     return 42"
    assert run(tree, "search_text", {"pattern": "main()", "literal": True})["result"] == "src/app.py:3: def main():"
    out = run(tree, "search_text", {"pattern": r"return \d+"})
    assert not out["success"] and "pip install 'agent-core[files]'" in out["error"] and "literal: true" in out["error"]
    harness = PluginHarness(FilesTool, {"files_root": str(tree)})
    [search] = [t for t in harness.call("get_tool_schemas", harness.state) if t["function"]["name"] == "search_text"]
    assert "regular expressions are not available" in search["function"]["parameters"]["properties"]["pattern"][
        "description"]
