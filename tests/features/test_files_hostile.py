"""The ``files`` tools and ``@`` mentions under hostile arguments and hostile file trees.

The model writes every tool argument, and the tree under ``files_root`` may hold
FIFOs, sockets, devices, symlink loops, names that are not UTF-8, huge sparse
files, a line of many megabytes, a directory 300 levels deep and one 600
entries wide. Whatever the mix, each call must give a result or a refusal the
model can read (JSON-safe text), in well under a second and a few MiB of
memory, and the request must go on.
"""

from __future__ import annotations

import json
import os
import socket
import stat
import threading
import time
import tracemalloc

import pytest
from agent_core import AgentCore, Message
from agent_core.runtime.guards import CancellationToken
from agent_core.testing import PluginHarness, reply, scripted_provider, tool_call
from agent_core_features.file_mentions import MAX_MENTIONED_FILES, FileMentionsFeature
from agent_core_plugins import file_access
from agent_core_plugins.file_search import SEARCH_MAX_DEPTH
from agent_core_plugins.files import LIST_MAX_NAMES, FilesTool
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

DEPTH = 300  # far deeper than search_text descends (SEARCH_MAX_DEPTH)
WIDE = LIST_MAX_NAMES + 100
SECRET = "TOP SECRET"
HUGE = 8 * 2**30  # sparse: no disk used
LONG_LINE = 16 * 2**20  # one line, no newline, written for real
# Bounded, not fast: a call that read an 8 GiB file or waited on a FIFO would take minutes or
# forever, so a few seconds tells the two apart even on a loaded machine (1 s failed there once,
# reading the 64 MiB read_file allows). How fast the tools are is the benchmarks' business.
SECONDS = 5.0
MEMORY = 8 * 2**20


def _deep(root, depth):
    """``depth`` nested directories named ``d`` with deep.txt at the bottom, made without recursion."""
    fd = os.open(root, os.O_RDONLY)
    for _ in range(depth):
        os.mkdir("d", dir_fd=fd)
        inner = os.open("d", os.O_RDONLY, dir_fd=fd)
        os.close(fd)
        fd = inner
    out = os.open("deep.txt", os.O_WRONLY | os.O_CREAT, 0o644, dir_fd=fd)
    os.write(out, b"bottom of the well\n")
    os.close(out)
    os.close(fd)


def _remove_deep(root):
    """Remove what :func:`_deep` made, a level at a time with short paths (shutil.rmtree recurses)."""
    top, spare = root / "d", root / "d.next"
    while (top / "d").is_dir():
        os.rename(top / "d", spare)
        os.rmdir(top)
        os.rename(spare, top)
    (top / "deep.txt").unlink()
    top.rmdir()


@pytest.fixture(scope="module")
def hostile(tmp_path_factory):
    base = tmp_path_factory.mktemp("hostile")
    root = base / "root"
    (root / "src").mkdir(parents=True)
    (root / "src" / "app.py").write_text("import os\n\ndef main():\n    return 42\n")
    (root / "notes.txt").write_text("one\ntwo\nthree\n")
    (base / "secret.txt").write_text(SECRET + "\n")
    os.mkfifo(root / "pipe")
    here = os.getcwd()
    try:  # bound by a short relative name: a socket's path has a length limit (108 bytes)
        os.chdir(root)
        with socket.socket(socket.AF_UNIX) as sock:
            sock.bind("sock")  # the socket file stays after the socket closes
    finally:
        os.chdir(here)
    try:
        os.mknod(root / "zero", stat.S_IFCHR | 0o666, os.makedev(1, 5))  # a /dev/zero of our own
    except OSError:
        pass  # no CAP_MKNOD here: the link to /dev/zero below still covers devices
    (root / "devzero").symlink_to("/dev/zero")
    (root / "leak").symlink_to(base / "secret.txt")
    (root / "loop").symlink_to("loop")
    (root / "ping").symlink_to("pong")
    (root / "pong").symlink_to("ping")
    (root / "src" / "up").symlink_to("..")  # a directory link back up: not followed by the walk
    (root / "loopdir").mkdir()
    (root / "loopdir" / "self").symlink_to("self")
    with open(os.path.join(os.fsencode(root), b"caf\xe9.txt"), "wb") as fh:
        fh.write("latin-1 caf\xe9 inside\n".encode("latin-1"))
    os.mkdir(os.path.join(os.fsencode(root), b"dir\xff"))
    (root / "new\nline.txt").write_text("a name with a newline\n")
    (root / "binary.dat").write_bytes(b"\x00\x01needle\x02" * 100)
    with open(root / "huge.bin", "wb") as fh:
        fh.truncate(HUGE)  # all NUL bytes, none on disk
    with open(root / "huge.txt", "wb") as fh:
        fh.write(b"needle in a haystack\n" * 500)
        fh.truncate(HUGE)  # text first, then gigabytes of NUL
    with open(root / "oneline.txt", "wb") as fh:
        fh.write(b"a" * LONG_LINE)
    (root / "unreadable.txt").write_text("no access\n")
    os.chmod(root / "unreadable.txt", 0)
    (root / ".git").mkdir()
    (root / ".git" / "config").write_text("needle hidden\n")
    (root / "wide").mkdir()
    for i in range(WIDE):
        (root / "wide" / f"f{i:04d}").touch()
    _deep(root, DEPTH)
    yield root
    _remove_deep(root)


NAMES = ["notes.txt", "src", "src/app.py", "src/up", "src/up/notes.txt", "pipe", "sock", "zero", "devzero", "leak",
         "loop", "ping", "loopdir", "loopdir/self", "loopdir/self/x", "caf\udce9.txt", "caf\\xe9.txt", "dir\udcff",
         "new\nline.txt", "binary.dat", "huge.bin", "huge.txt", "oneline.txt", "unreadable.txt", ".git", "wide",
         "wide/f0001", "d/d/d", "d/" * 200 + "x", "/".join(["d"] * DEPTH) + "/deep.txt", ".", "./notes.txt",
         "../secret.txt", "src/../../secret.txt", "/etc/passwd", "/dev/zero", "/", "~", "notes.txt\x00.png",
         "a" * 5000, "\udc80", "*", "missing"]
ODD_VALUES = st.one_of(st.none(), st.booleans(), st.floats(allow_nan=True), st.lists(st.integers(), max_size=2),
                       st.dictionaries(st.text(max_size=3), st.integers(), max_size=2))
PATHS = st.one_of(st.sampled_from(NAMES), st.text(max_size=40), ODD_VALUES,
                  st.lists(st.sampled_from(["d", "..", ".", "src", "loop", "pipe", "", "wide"]), max_size=6).map("/".join))
NUMBERS = st.one_of(st.none(), st.integers(min_value=-10**30, max_value=10**30), st.sampled_from([0, 1, 2, 10**9]),
                    ODD_VALUES, st.text(max_size=5))
PATTERNS = st.one_of(
    st.sampled_from(["(a+)+$", r"(\w*)*x", "(.*a){8}b", "(a|aa)*c", r"(a)\1", "(?=x)", "[", "a{1001}",
                     "(.{0,200}){5}z", "[ab]{0,1000}c", "(?:[ab]{1,99}){1,10}c", "needle", "^", "$", ".*", "x*",
                     "\x00", "a\nb", "\udce9", "é", "caf", "deep", "x" * 2000, "\\", ""]),
    st.text(max_size=20), ODD_VALUES,
)


def call(root, tool, payload, **config):
    harness = PluginHarness(FilesTool, {"files_root": str(root), **config})
    return harness.call("execute_tool", tool, payload, harness.state)


def bounded(fn):
    """``fn()``'s value, its time and its peak of Python memory."""
    tracemalloc.start()
    started = time.perf_counter()
    try:
        value = fn()
        return value, time.perf_counter() - started, tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


def assert_readable(out, seconds, peak):
    """A result or refusal the model reads, in bounded time and memory, and nothing from outside the root."""
    assert isinstance(out, dict) and isinstance(out.get("success"), bool), out
    text = out["result"] if out["success"] else out["error"]
    assert isinstance(text, str) and (text or out["success"]), out  # an empty file reads as ""
    json.dumps(out, ensure_ascii=False).encode("utf-8")  # no lone surrogate: JSON can carry it
    assert SECRET not in text
    assert seconds < SECONDS, (seconds, out)
    assert peak < MEMORY, (peak, out)


HYPOTHESIS = settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])


@HYPOTHESIS
@given(path=PATHS, start=NUMBERS, end=NUMBERS)
def test_read_file_answers_any_arguments_in_bounded_time_and_memory(hostile, path, start, end):
    payload = {"path": path, "start_line": start, "end_line": end}
    assert_readable(*bounded(lambda: call(hostile, "read_file", payload)))


@HYPOTHESIS
@given(path=PATHS)
def test_list_dir_answers_any_arguments_in_bounded_time_and_memory(hostile, path):
    assert_readable(*bounded(lambda: call(hostile, "list_dir", {"path": path})))


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(pattern=PATTERNS, path=st.one_of(st.just("."), PATHS), limit=NUMBERS, literal=st.one_of(st.booleans(), ODD_VALUES))
def test_search_text_answers_any_arguments_in_bounded_time_and_memory(hostile, pattern, path, limit, literal):
    payload = {"pattern": pattern, "path": path, "max_results": limit, "literal": literal}
    assert_readable(*bounded(lambda: call(hostile, "search_text", payload)))


@HYPOTHESIS
@given(payload=st.one_of(ODD_VALUES, st.text(max_size=10), st.dictionaries(st.text(max_size=12), NUMBERS, max_size=3)))
def test_any_payload_shape_is_answered(hostile, payload):
    for tool in ("read_file", "list_dir", "search_text", "write_file"):
        assert_readable(*bounded(lambda: call(hostile, tool, payload)))


def test_search_text_walks_the_whole_hostile_tree_and_says_what_it_skipped(hostile):
    out, seconds, peak = bounded(lambda: call(hostile, "search_text", {"pattern": "needle|bottom|caf"},
                                              files_max_results=1000))
    assert_readable(out, seconds, peak)
    lines = out["result"].splitlines()
    assert "caf\\xe9.txt:1: latin-1 caf\ufffd inside" in lines  # the name escaped, the byte replaced
    assert "huge.txt:1: needle in a haystack" in lines and "huge.txt:500: needle in a haystack" in lines
    assert not any(line.startswith((".git", "binary.dat", "huge.bin", "leak")) for line in lines)
    assert lines[-1].startswith("[skipped: binary files (from their first NUL byte): 3, ")  # huge.txt after its text
    assert "special files (FIFOs, sockets, devices): " in lines[-1]
    assert f"directories over {SEARCH_MAX_DEPTH} levels deep: 1" in lines[-1]


def test_search_text_goes_deep_from_a_deep_path(hostile):
    near = "/".join(["d"] * (DEPTH - 10))  # 290 levels down, the file 10 below
    out, seconds, peak = bounded(lambda: call(hostile, "search_text", {"pattern": "bottom", "path": near}))
    assert out["result"] == near + "/d" * 10 + "/deep.txt:1: bottom of the well"
    assert seconds < SECONDS and peak < MEMORY


def test_search_text_does_not_block_on_a_fifo(hostile):
    done = []
    worker = threading.Thread(target=lambda: done.append(call(hostile, "search_text", {"pattern": "x", "path": "pipe"})),
                              daemon=True)
    worker.start()
    worker.join(5)  # the old code waited for a writer forever
    assert done == [{"success": False, "error": "search_text: 'pipe' is a FIFO (named pipe), not a file"}]


@pytest.mark.parametrize(("path", "words"), [
    ("pipe", "'pipe' is a FIFO (named pipe), not a file"),
    ("sock", "'sock' is a socket, not a file"),
    ("devzero", "a symlink leads outside files_root"),
    ("loop", "path 'loop' is refused: it goes through a symlink loop"),
    ("ping", "path 'ping' is refused: it goes through a symlink loop"),
    ("loopdir/self/x", "it goes through a symlink loop"),
    ("huge.bin", "'huge.bin' looks binary (a NUL byte in its first 8 KiB); only text is read"),
    ("caf\udce9.txt", "is not valid Unicode (it holds a lone surrogate)"),
    ("notes.txt\x00.png", "contains a NUL character"),
    ("a" * 5000, "path is 5000 characters long; at most 4096 are allowed"),
    ("../secret.txt", "'..' is not allowed"),
    ("src/up/../../secret.txt", "'..' is not allowed"),
    ("/etc/passwd", "outside files_root"),
    ("leak", "a symlink leads outside files_root"),
])
def test_read_file_refuses_with_a_message_naming_what_was_wrong(hostile, path, words):
    out = call(hostile, "read_file", {"path": path})
    assert out["success"] is False and words in out["error"], out


def test_a_device_is_refused_even_when_the_root_holds_it(hostile):
    out = call("/dev", "read_file", {"path": "zero"})
    assert out == {"success": False, "error": "read_file: 'zero' is a character device, not a file"}
    if (hostile / "zero").exists():  # made with mknod when allowed
        assert "'zero' is a character device" in call(hostile, "read_file", {"path": "zero"})["error"]


def test_read_file_of_a_huge_line_keeps_only_its_cap_in_memory(hostile):
    out, seconds, peak = bounded(lambda: call(hostile, "read_file", {"path": "oneline.txt"}))
    assert out["result"] == "a" * 100_000 + "\n[cut at 100000 bytes; ask for a line range to read further]"
    assert seconds < SECONDS and peak < 2 * 2**20  # the file is 16 MiB
    out = call(hostile, "read_file", {"path": "oneline.txt", "start_line": 2})
    assert out["error"] == "read_file: start_line 2 is past the end of 'oneline.txt', which has 1 lines"


def test_read_file_looks_for_a_start_line_only_so_far(hostile):
    out, seconds, peak = bounded(lambda: call(hostile, "read_file", {"path": "huge.txt", "start_line": 10**9}))
    assert out["error"] == "read_file: start_line 1000000000 is not in the first 64 MiB of 'huge.txt'; read_file looks no further"
    assert seconds < SECONDS and peak < 2 * 2**20
    assert call(hostile, "read_file", {"path": "notes.txt", "start_line": 10**30})["error"] == (
        "read_file: start_line 1000000000000000000000000000000 is past the end of 'notes.txt', which has 3 lines")
    assert call(hostile, "read_file", {"path": "notes.txt", "start_line": 2, "end_line": 10**30})["result"] == (
        "two\nthree\n")


def test_an_unreadable_file_is_a_message(hostile):
    out = call(hostile, "read_file", {"path": "unreadable.txt"})
    if os.geteuid() == 0:  # root reads it anyway
        assert out == {"success": True, "result": "no access\n"}
    else:
        assert out == {"success": False, "error": "read_file: Permission denied"}


def test_list_dir_shows_odd_names_escaped_and_special_files_for_what_they_are(hostile):
    listed = call(hostile, "list_dir", {})["result"].splitlines()
    assert "caf\\xe9.txt  (name shown escaped: it is not valid UTF-8, and cannot be opened)" in listed
    assert "dir\\xff/  (name shown escaped: it is not valid UTF-8, and cannot be opened)" in listed
    assert "new\\nline.txt  (name shown escaped: it holds control characters)" in listed
    assert call(hostile, "read_file", {"path": "new\nline.txt"})["result"] == "a name with a newline\n"
    assert "pipe  (a FIFO (named pipe), not readable)" in listed and "sock  (a socket, not readable)" in listed
    assert "src/" in listed and "wide/" in listed and "d/" in listed
    assert not {"leak", "devzero", "loop", "ping", "pong"} & set(listed)  # links out and loops are not shown
    assert call(hostile, "list_dir", {"path": "loopdir"})["result"] == "(empty directory)"
    assert call(hostile, "list_dir", {"path": "pipe"})["error"] == "list_dir: 'pipe' is a FIFO (named pipe), not a directory"


def test_list_dir_of_a_wide_directory_is_cut(hostile, monkeypatch):
    listed = call(hostile, "list_dir", {"path": "wide"})["result"].splitlines()
    assert listed[0] == "f0000" and listed[LIST_MAX_NAMES - 1] == f"f{LIST_MAX_NAMES - 1:04d}"
    assert listed[LIST_MAX_NAMES:] == [f"[{WIDE} entries: the first {LIST_MAX_NAMES} by name are shown]"]
    monkeypatch.setattr(file_access, "DIR_MAX_ENTRIES", 200)  # as if the directory held a million entries
    listed = call(hostile, "list_dir", {"path": "wide"})["result"].splitlines()
    assert len(listed) == 201 and listed[-1] == "[more than 200 entries: the first 200 by name of 200 read are shown]"


def test_search_text_stops_at_its_time_and_byte_budgets(hostile):
    out, seconds, _ = bounded(lambda: call(hostile, "search_text", {"pattern": "(?:[ab]{1,99}){1,10}q"},
                                           files_search_seconds=0.01))
    assert seconds < 0.5 and "[search stopped early: it ran its files_search_seconds (0.01 s);" in out["result"]
    out = call(hostile, "search_text", {"pattern": "zzz"}, files_search_max_bytes=1000)
    assert "[search stopped early: it read its files_search_max_bytes (1000 bytes);" in out["result"]
    token = CancellationToken()
    token.cancel()
    harness = PluginHarness(FilesTool, {"files_root": str(hostile)})
    out = FilesTool().execute_tool("search_text", {"pattern": "zzz"}, harness.state, cancellation=token)
    assert "[search stopped early: the request was cancelled;" in out["result"]


@pytest.mark.parametrize(("payload", "words"), [
    ({"pattern": "x", "max_results": -3}, "max_results must be at least 1, not -3"),
    ({"pattern": "x", "max_results": "9"}, "max_results must be an integer, not '9'"),
    ({"pattern": "x", "literal": "yes"}, "literal must be true or false"),
    ({"pattern": "a\nb"}, "pattern holds a line break"),
    ({"pattern": "x" * 1001}, "pattern is 1001 characters long; at most 1000 are allowed"),
    ({"pattern": "\udce9"}, "is not valid Unicode"),
    ({"pattern": ""}, "pattern must be a non-empty string"),
])
def test_search_text_refuses_absurd_arguments_by_name(hostile, payload, words):
    out = call(hostile, "search_text", payload)
    assert out["success"] is False and words in out["error"], out


def test_search_text_takes_a_huge_max_results_as_the_configured_cap(hostile):
    out = call(hostile, "search_text", {"pattern": "needle", "path": "huge.txt", "max_results": 10**30})
    assert "[stopped at 100 matches]" in out["result"].splitlines()


# -- @ mentions and completion ----------------------------------------------------------------


def complete(root, text):
    core = AgentCore(providers=[scripted_provider("ok")], features=[FileMentionsFeature])
    return core.get_completions({"files_root": str(root), "enabled_plugins": ["file_mentions"]}, text)


def test_completion_offers_only_names_it_can_insert_and_files_it_can_read(hostile):
    offered = [c["text"] for c in complete(hostile, "@")]
    assert offered == ["@binary.dat", "@d/", "@huge.bin", "@huge.txt", "@loopdir/", "@notes.txt", "@oneline.txt",
                       "@src/", "@unreadable.txt", "@wide/"]  # no FIFO, socket, device, loop, link out, odd name
    assert complete(hostile, "@loopdir/") == [] and complete(hostile, "@loop/") == []
    assert [c["text"] for c in complete(hostile, "@src/")] == ["@src/app.py", "@src/up/"]
    assert len(complete(hostile, "@wide/")) == 50
    loop_root = hostile / "loop"
    assert complete(loop_root, "@") == []  # a root that is a loop offers nothing, raises nothing


def test_mentions_of_hostile_paths_are_refused_in_place_and_capped(hostile):
    harness = PluginHarness(FileMentionsFeature, {"files_root": str(hostile)})
    many = " ".join(f"@wide/f{i:04d}" for i in range(MAX_MENTIONED_FILES + 5))
    text = f"see @pipe @loop @ping @oneline.txt @caf\udce9.txt @huge.bin @leak {many}"
    (native, seconds, peak) = bounded(lambda: harness.to_native([{"role": "user", "content": text}]))
    body = native[0]["content"]
    assert seconds < SECONDS and peak < MEMORY
    assert '<file path="pipe" refused="true">\'pipe\' is a FIFO (named pipe), not a file</file>' in body
    assert "path 'loop' is refused: it goes through a symlink loop" in body and "'ping' is refused" in body
    assert '<file path="caf\\xe9.txt" refused="true">path \'caf\\xe9.txt\' is not valid Unicode' in body
    assert "looks binary" in body and SECRET not in body and "[cut at 50000 bytes]" in body
    assert body.count("<file ") == MAX_MENTIONED_FILES and body.endswith(
        f"[{7 + 5} more @mentions not read: at most {MAX_MENTIONED_FILES} files per message]")


# -- through a real request -----------------------------------------------------------------------


def test_a_request_survives_every_hostile_call_and_finishes(hostile):
    calls = [
        tool_call("search_text", {"pattern": "x", "path": "pipe"}, id="fifo"),
        tool_call("search_text", {"pattern": "(a+)+$"}, id="redos"),
        tool_call("read_file", {"path": "oneline.txt"}, id="huge"),
        tool_call("read_file", {"path": "loop"}, id="loop"),
        tool_call("list_dir", {}, id="names"),
        tool_call("read_file", {"path": "devzero"}, id="device"),
        tool_call("read_file", {"path": "notes.txt", "start_line": -5}, id="negative"),
    ]
    provider = scripted_provider(reply(tool_calls=calls), reply("done"))
    core = AgentCore(providers=[provider], tools=[FilesTool], features=[FileMentionsFeature])
    session = core.add_message(core.create_session(), Message(role="user", content="look at @pipe and @loop"))
    config = {"files_root": str(hostile), "enabled_plugins": ["files", "file_mentions"]}
    events, seconds, _ = bounded(lambda: list(core.stream_request(session, config)))
    assert events[-1].outcome.status == "finished" and seconds < 3 * SECONDS
    results = {e.call_id: e.message.content for e in events if e.type == "tool_result"}
    assert results["fifo"] == "Error: search_text: 'pipe' is a FIFO (named pipe), not a file"
    assert results["redos"].startswith("Result: ")
    assert results["huge"].startswith("Result: aaaa") and len(results["huge"]) < 100_200
    assert results["loop"] == "Error: read_file: path 'loop' is refused: it goes through a symlink loop"
    assert "caf\\xe9.txt  (name shown escaped" in results["names"]
    assert "symlink leads outside" in results["device"]
    assert results["negative"] == "Error: read_file: start_line and end_line count from 1"
    assert events[-1].outcome.status == "finished"
