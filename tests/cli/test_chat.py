"""``agent-core chat`` driven through a real pseudo-terminal, as a person at a keyboard would."""

from __future__ import annotations

import os
import pty
import select
import sys
import time

import pytest
from agent_core.store import open_store
from providers._server import Delay, sse_reply
from providers._wire import OA_DONE, oa_chunk, oa_text

pytestmark = [
    pytest.mark.slow,  # each test runs agent-core chat on a pseudo-terminal: the tier `pytest -m slow`
    pytest.mark.skipif(sys.platform == "win32", reason="pseudo-terminals are POSIX"),
]


class Terminal:
    """``agent-core chat`` in a child process whose controlling terminal is a pty we type into."""

    def __init__(self, args: list[str], home: str, term: str = "dumb") -> None:
        env = {**os.environ, "AGENT_CORE_HOME": home, "TERM": term, "COLUMNS": "200"}
        for key in ("AGENT_CORE_PROVIDER", "AGENT_CORE_MODEL", "AGENT_CORE_BASE_URL", "AGENT_CORE_CONFIG"):
            env.pop(key, None)
        pid, fd = pty.fork()
        if pid == 0:  # the child: a new session with the pty as its terminal (Ctrl-C is a real SIGINT)
            os.execve(sys.executable, [sys.executable, "-m", "agent_core.cli", "chat", *args], env)
        self.pid, self.fd, self.seen = pid, fd, b""

    def expect(self, text: str, timeout: float = 15.0) -> str:
        """Read until ``text`` appears; everything read so far is kept in ``seen``."""
        want = text.encode()
        deadline = time.monotonic() + timeout
        while want not in self.seen:
            left = deadline - time.monotonic()
            if left <= 0:
                raise AssertionError(f"{text!r} never appeared; the terminal shows:\n{self.seen.decode(errors='replace')}")
            ready, _, _ = select.select([self.fd], [], [], left)
            if ready:
                try:
                    data = os.read(self.fd, 4096)
                except OSError:  # the child exited and the pty closed
                    data = b""
                if not data:
                    raise AssertionError(f"{text!r} never appeared before the program ended:\n{self.seen.decode()}")
                self.seen += data
        at = self.seen.index(want) + len(want)
        shown, self.seen = self.seen[:at].decode(errors="replace"), self.seen[at:]
        return shown

    def shows(self, text: str, timeout: float) -> bool:
        """Whether ``text`` appears within ``timeout``, without taking it from ``seen`` (False if anything else came)."""
        deadline = time.monotonic() + timeout
        while text.encode() not in self.seen:
            left = deadline - time.monotonic()
            if left <= 0 or not select.select([self.fd], [], [], left)[0]:
                return bool(self.seen)  # something came back: the key arrived, its answer is on the way
            try:
                data = os.read(self.fd, 4096)
            except OSError:
                return False
            if not data:
                return False
            self.seen += data
        return True

    def type(self, keys: str) -> None:
        os.write(self.fd, keys.encode())

    def exit_code(self, timeout: float = 10.0, *, kill: bool = True) -> int | None:
        """The child's exit code; at ``timeout`` it is killed and this fails (or, without ``kill``, None)."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            try:  # keep the pty drained so the child never blocks writing
                if select.select([self.fd], [], [], 0.05)[0]:
                    self.seen += os.read(self.fd, 4096)
            except OSError:
                pass
            pid, status = os.waitpid(self.pid, os.WNOHANG)
            if pid:
                return os.waitstatus_to_exitcode(status)
        if not kill:
            return None
        os.kill(self.pid, 9)
        raise AssertionError(f"chat did not exit; the terminal shows:\n{self.seen.decode(errors='replace')}")


@pytest.fixture
def home(tmp_path) -> str:
    return str(tmp_path)




def test_a_conversation_survives_a_restart(home):
    term = Terminal(["--session", "kept"], home)
    term.expect("new session kept")
    term.expect("> ")
    term.type("my name is Ada\r")
    term.expect("Echo: my name is Ada")
    term.expect("> ")
    term.type("\x04")  # Ctrl-D at an empty prompt
    assert term.exit_code() == 0

    again = Terminal(["--session", "kept"], home)
    shown = again.expect("> ")
    assert "resuming session kept (2 messages)" in shown and "user: my name is Ada" in shown
    again.type("and now?\r")
    again.expect("Echo: and now?")
    again.type("/exit\r")
    assert again.exit_code() == 0
    stored = open_store(f"sqlite:///{home}/sessions.db").get("kept")
    assert [m.content for m in stored.session.messages] == [
        "my name is Ada", "Echo: my name is Ada", "and now?", "Echo: and now?"]
    assert stored.revision == 2


def test_ctrl_c_cancels_the_reply_not_the_program(home, server):
    dribble = [part for _ in range(150) for part in (oa_chunk({"content": "."}), Delay(0.1))]
    server.enqueue(
        sse_reply(oa_chunk({"role": "assistant", "content": "Thinking"}), *dribble, oa_chunk({}, "stop"), OA_DONE),
        oa_text("second answer"),
    )
    term = Terminal(["--provider", "openai", "--base-url", server.url + "/v1", "--api-key", "sk-test",
                     "--model", "m", "-c", "max_retries=0", "--session", "c1"], home)
    term.expect("> ")
    term.type("think hard\r")
    term.expect("Thinking")
    started = time.monotonic()
    term.type("\x03")  # Ctrl-C, through the terminal driver: a SIGINT to the program
    term.expect("(cancelled)")
    assert time.monotonic() - started < 5  # not the 15 s the reply would have taken
    term.expect("> ")
    term.type("again\r")
    term.expect("second answer")
    term.type("/exit\r")
    assert term.exit_code() == 0
    messages = open_store(f"sqlite:///{home}/sessions.db").get("c1").session.messages
    # the cancelled request keeps the question (saved as the engine returns a cancelled session), not the
    # half answer; the next turn goes on from there
    assert [(m.role, m.content) for m in messages] == [
        ("user", "think hard"), ("user", "again"), ("assistant", "second answer")]


SCRIPT = ('[{"tool_calls": [{"name": "calculate", "arguments": {"expression": "6*7"}}]},'
          ' {"content": "It is 42."}]')


def test_a_tool_call_is_approved_at_the_prompt(home):
    term = Terminal(["--provider", "scripted", "-c", f"script={SCRIPT}", "-c", 'enabled_plugins=["calculator"]',
                     "-c", 'tool_policy={"calculate": "ask"}'], home)
    term.expect("> ")
    term.type("what is 6*7?\r")
    term.expect("[y/N]")
    term.type("y\r")
    term.expect("It is 42.")
    term.type("/exit\r")
    assert term.exit_code() == 0
    stored = open_store(f"sqlite:///{home}/sessions.db")
    (info,) = stored.list()
    tool = [m for m in stored.get(info.session_id).session.messages if m.role == "tool"]
    assert tool[0].content == "Result: 42" and tool[0].metadata["tool_policy"]["decision"] == "allowed"


def test_a_bad_config_is_one_line_and_exit_2(home):
    term = Terminal(["--provider", "nosuch"], home)
    assert term.exit_code() == 2
    assert term.seen.decode().strip().startswith("error: ") and "Traceback" not in term.seen.decode()


def test_tab_completes_a_file_mention(home, tmp_path):
    (tmp_path / "notes.txt").write_text("budget: 1200\n")
    term = Terminal(["-c", 'enabled_plugins=["file_mentions"]', "-c", f"files_root={tmp_path}",
                     "--session", "tabs"], home)
    term.expect("> ")
    term.type("read @no\t")
    term.expect("@notes.txt")  # readline echoes the completed word
    term.type("\r")
    term.expect("Echo: read @notes.txt")
    term.type("/exit\r")
    assert term.exit_code() == 0


def test_the_status_bar_follows_each_reply(home):
    script = '[{"content": "Hi.", "usage": {"input_tokens": 12, "output_tokens": 3}}]'
    term = Terminal(["--provider", "scripted", "-c", f"script={script}",
                     "-c", 'prices={"*": {"input": 1.0, "output": 2.0}}'], home)
    term.expect("> ")
    term.type("hello\r")
    term.expect("Hi.")
    shown = term.expect("> ")
    assert "[Session total: 12 in / 3 out tokens, $0.000018]" in shown
    term.type("/exit\r")
    assert term.exit_code() == 0


def test_an_unpriced_model_says_why_its_cost_is_unknown_once(home):
    script = ('[{"content": "Hi.", "usage": {"input_tokens": 12, "output_tokens": 3}},'
              ' {"content": "Again.", "usage": {"input_tokens": 20, "output_tokens": 4}}]')
    term = Terminal(["--provider", "scripted", "-c", f"script={script}"], home)
    term.expect("> ")
    term.type("hello\r")
    shown = term.expect("> ")
    assert "[Session total: 12 in / 3 out tokens, $?]" in shown and "no price is set for this model" in shown
    term.type("more\r")
    shown = term.expect("> ")
    assert "[Session total: 32 in / 7 out tokens, $?]" in shown  # a running total
    assert "no price is set" not in shown  # said once
    term.type("exit\r")  # a bare exit leaves, and is not sent to the model
    assert term.exit_code() == 0
    messages = open_store(f"sqlite:///{home}/sessions.db").list()
    assert [m.message_count for m in messages] == [4]


def test_ctrl_c_at_the_prompt_twice_quits(home):
    term = Terminal([], home)
    term.expect("> ")
    # The prompt is printed before readline has set the terminal up for it: on a loaded machine a
    # Ctrl-C typed at that moment can go nowhere (CI once waited 15 s for the hint). So it is typed
    # again while nothing at all has come back; a slow hint still arrives before the next try.
    for _ in range(5):
        term.type("\x03")
        if term.shows("Ctrl-C again", timeout=3):
            break
    term.expect("Ctrl-C again, Ctrl-D or /exit quits")
    term.expect("> ")
    # readline sets the terminal up around each prompt; on a loaded machine a key typed at that
    # very moment can be lost, so the second Ctrl-C is sent again if the first went nowhere.
    for _ in range(3):
        time.sleep(0.3)
        term.type("\x03")
        code = term.exit_code(timeout=3, kill=False)
        if code is not None:
            break
    assert code == 0 or term.exit_code() == 0, term.seen[-600:]
    assert b"Ctrl-C again" not in term.seen, term.seen[-600:]  # it quit at once: no second hint


def test_an_unreachable_api_is_reported_once(home):
    import socket

    with socket.socket() as s:  # a port nothing listens on
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    term = Terminal(["--provider", "openai", "--base-url", f"http://127.0.0.1:{port}/v1", "--api-key", "sk-x",
                     "--model", "m", "-c", "max_retries=0"], home)
    term.expect("> ")
    term.type("hi\r")
    shown = term.expect("> ")
    assert shown.count("error") == 1 and "stopped:" not in shown, shown
    term.type("/exit\r")
    assert term.exit_code() == 0


def test_an_unanswered_approval_takes_the_default_and_leaves_the_prompt_alone(home):
    script = ('[{"tool_calls": [{"name": "calculate", "arguments": {"expression": "1+1"}}]},'
              ' {"content": "Done."}, {"content": "Second."}]')
    term = Terminal(["--provider", "scripted", "-c", f"script={script}", "-c", 'enabled_plugins=["calculator"]',
                     "-c", 'tool_policy={"calculate": "ask"}', "-c", "approval_timeout_s=1"], home)
    term.expect("> ")
    term.type("add\r")
    term.expect("[y/N]")
    # the engine's timeout and the prompt's fire together: the note and the answer come in either order
    shown = term.expect("(no answer in 1 s: deny)")
    if "Done." not in shown:
        term.expect("Done.")
    time.sleep(0.2)
    term.type("next\r")  # read by the prompt, not by a leftover approval reader
    term.expect("Second.")
    term.type("/exit\r")
    assert term.exit_code() == 0


def test_compact_shortens_what_the_model_is_sent_and_keeps_the_conversation(home):
    term = Terminal(["--session", "long"], home)
    term.expect("> ")
    for i in range(3):
        term.type(f"question {i} " + "words " * 60 + "\r")
        term.expect(f"Echo: question {i}")
        term.expect("> ")
    term.type("/compact 200\r")
    shown = term.expect("> ")
    assert "compacted (drop): 4 older messages no longer sent" in shown, shown
    term.type("/compact 200\r")
    assert "nothing to compact" in term.expect("> ")
    term.type("/exit\r")
    assert term.exit_code() == 0
    stored = open_store(f"sqlite:///{home}/sessions.db").get("long")
    assert len(stored.session.messages) == 6  # every message kept
    native = stored.session.metadata["agent_core.native_history"]["echo"]["messages"]
    assert [m["content"][:10] for m in native] == ["question 2", "Echo: ques"]


def test_a_mistyped_command_is_not_sent_to_the_model_and_a_path_is(home):
    term = Terminal(["--session", "slashes"], home)
    term.expect("> ")
    term.type("/hepl\r")
    shown = term.expect("> ")
    assert "unknown command /hepl; did you mean /help?" in shown and "Echo" not in shown, shown
    term.type("/usr/bin holds programs\r")
    assert "Echo: /usr/bin holds programs" in term.expect("> ")
    term.type("//compact is a word\r")
    assert "Echo: /compact is a word" in term.expect("> ")
    term.type("/exit\r")
    assert term.exit_code() == 0
    stored = open_store(f"sqlite:///{home}/sessions.db").get("slashes")
    assert [m.content for m in stored.session.messages if m.role == "user"] == [
        "/usr/bin holds programs", "/compact is a word"]


def test_compact_that_would_send_more_leaves_the_session_as_it_was(tmp_path):
    """A summary longer than the short messages it replaces is not called compacting, and not saved."""
    from agent_core import AgentCore
    from agent_core.cli.chat import _compact
    from agent_core.store import stream_turn

    core, config = AgentCore.discover(), {"provider": "echo"}
    with open_store(f"sqlite:///{tmp_path}/s.db") as store:
        for i in range(3):
            for _ in stream_turn(core, store, "c1", f"q{i} short", config):
                pass
        revision = store.get("c1").revision
        said = _compact(core, store, "c1", config, ["5", "summarize"])
        assert said.startswith("left as it was: compacting (summarize) would send about") and "instead of" in said
        assert store.get("c1").revision == revision  # nothing saved
        assert _compact(core, store, "c1", config, ["5"]).startswith("compacted (drop): 4 older messages")
        assert store.get("c1").revision == revision + 1


def _user_messages(home: str, session: str) -> list[str]:
    stored = open_store(f"sqlite:///{home}/sessions.db").get(session).session
    return [m.content for m in stored.messages if m.role == "user"]


def test_a_pasted_block_is_one_message(home):
    """A terminal wraps a paste in bracketed-paste marks; readline hands it over whole (TERM=dumb turns them off)."""
    term = Terminal(["--session", "pasted"], home, term="xterm")
    term.expect("> ")
    term.type("\x1b[200~first line\rsecond line\rthird line\x1b[201~\r")  # a terminal sends a pasted newline as CR
    term.expect("Echo: first line")
    term.expect("> ")
    term.type("/exit\r")
    assert term.exit_code() == 0
    assert _user_messages(home, "pasted") == ["first line\nsecond line\nthird line"]


def test_three_quotes_open_and_close_a_message_of_several_lines(home):
    term = Terminal(["--session", "typed"], home)
    term.expect("> ")
    term.type('"""\r')
    term.expect("... ")
    term.type("def f():\r")
    term.expect("... ")
    term.type("    return 1\r")
    term.expect("... ")
    term.type('"""\r')
    term.expect("Echo: def f():")
    term.expect("> ")
    term.type("one line\r")
    term.expect("Echo: one line")
    term.type("/exit\r")
    assert term.exit_code() == 0
    assert _user_messages(home, "typed") == ["def f():\n    return 1", "one line"]
