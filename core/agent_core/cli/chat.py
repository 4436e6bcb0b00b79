"""``agent-core chat``: a conversation in the terminal, kept in the session store.

Each line you type is one turn of :func:`agent_core.store.stream_turn`: the
session is loaded from the store, the reply streams to stdout, and the new
session is saved at the next revision, so ``--session ID`` resumes the same
conversation after a restart (or from another terminal). What a terminal
needs beyond that:

* A paste of several lines is one message (readline's bracketed paste); a
  line of three double quotes opens a block of lines, sent when another such
  line closes it (for terminals without bracketed paste).
* Ctrl-C while a reply streams cancels that request (``cancel_request``:
  the HTTP stream is closed; the session keeps your line, as the engine
  returns a cancelled request, not the half reply) and the prompt comes back;
  at the prompt it clears the line. Ctrl-D or ``/exit`` quits.
* A tool call a feature wants approved (``tool_policy`` ``ask``) is asked at
  the prompt: ``y`` allows it, anything else denies it.
* Features' completions (``@path`` from ``file_mentions``) complete on Tab
  when the terminal has readline.
* After each reply, the features' ``status_bar`` elements (``usage``: the
  session's tokens and cost) are printed as one line on stderr.
* ``/compact [TOKENS] [summarize]`` runs ``compact_history``'s action on the
  stored session: what the model is sent shrinks, the conversation stays.
"""

from __future__ import annotations

import argparse
import difflib
import json
import re
import signal
import sys
import threading
import uuid
from typing import Any

from ..errors import AgentCoreError, SessionNotFoundError
from ..tools.approval import ApprovalRequest
from ..values.messages import Message, Session
from .commands import make_core, show_on_stderr
from .sessions import describe, open_cli_store
from .notes import resolve_noted
from .settings import STORE_HELP, config_sources, layered_config

__all__ = ["add_chat", "render_status"]

_FIELD = re.compile(r"\{\{\s*data((?:\.[A-Za-z0-9_]+)*)\s*\}\}")
_HELP = ("/exit (or exit, Ctrl-D, Ctrl-C twice) quits, /session prints the session id, /compact [TOKENS] "
         "[summarize] shortens what the model is sent, Ctrl-C cancels a reply, a paste is one message, and "
         '""" opens (and closes) a message of several lines')
#: lines that leave the chat instead of going to the model (people type them out of habit)
_LEAVE = frozenset({"/exit", "/quit", "exit", "quit", "exit()", "quit()", ":q"})
_COMMANDS = ("/compact", "/exit", "/help", "/quit", "/session")
#: ``/word`` alone in front is a command; a path (``/usr/bin``) or ``//text`` goes to the model
_COMMAND_LIKE = re.compile(r"/[A-Za-z]+")
_NO_PRICE = ("(cost $?: no price is set for this model; -c prices='{\"MODEL\": {\"input\": USD_PER_MTOK, "
             "\"output\": USD_PER_MTOK}}' sets one)")


def _walk(root: Any, path: str) -> Any:
    value = root
    for part in (p for p in path.split(".") if p):
        if isinstance(value, Session):
            value = {"metadata": value.metadata, "messages": value.messages,
                     "session_id": value.session_id}.get(part)
        elif hasattr(value, "get"):
            value = value.get(part)
        else:
            return None
        if value is None:
            return None
    return value


def render_status(elements: list[dict[str, Any]], session: Session) -> str:
    """The ``status_bar`` elements filled from ``session`` (``data`` is a dotted path), joined; "" if none has data."""
    shown = []
    for el in elements:
        data = _walk({"session": session}, str(el.get("data") or ""))
        if data is None:
            continue
        template = el.get("template")
        if isinstance(template, str):
            text = _FIELD.sub(lambda m: _format(_walk(data, m.group(1))), template)
        else:
            text = data if isinstance(data, str) else json.dumps(data, default=str)
        label = el.get("label")
        shown.append(f"{label}: {text}" if label else text)
    return " | ".join(shown)


def _format(value: Any) -> str:
    if value is None:
        return "?"
    if isinstance(value, float):
        return f"{value:.6f}".rstrip("0").rstrip(".") or "0"
    return str(value)


class _Approver:
    """Asks at the terminal whether a tool call may run (the engine's ``approval`` callback)."""

    def __init__(self, err: Any) -> None:
        self.err = err
        self.lock = threading.Lock()

    def __call__(self, request: ApprovalRequest) -> bool:
        with self.lock:
            args = json.dumps(request.payload, default=str)
            self.err.write(f"\n{request.prompt or 'Run this tool?'} {request.tool_name}({args}) [y/N] ")
            self.err.flush()
            if not _line_within(request.timeout):
                # unanswered: the engine applies the default; and this thread must not stay behind
                # reading stdin, or it would swallow the next line typed at the prompt
                self.err.write(f"(no answer in {request.timeout:g} s: {request.default})\n")
                return request.default == "allow"
            answer = sys.stdin.readline()
        return answer.strip().lower() in ("y", "yes")


def _line_within(seconds: float) -> bool:
    """Whether stdin has input within ``seconds`` (always True where select cannot watch stdin)."""
    try:
        import select

        return bool(select.select([sys.stdin], [], [], max(seconds, 0.0))[0])
    except (OSError, ValueError, TypeError):
        return True


def _readline(core: Any, config: dict[str, Any]) -> None:
    """Tab completion from the features' ``get_completions``, and pastes whole, when stdin is a terminal with readline."""
    if not sys.stdin.isatty():
        return
    try:
        import readline
    except ImportError:  # pragma: no cover - Windows without pyreadline
        return
    matches: list[str] = []

    def complete(text: str, state: int) -> str | None:
        if state == 0:
            line = readline.get_line_buffer()[: readline.get_endidx()]
            try:
                found = core.get_completions(config, line)
            except AgentCoreError:
                found = []
            matches[:] = [c["text"] for c in found if isinstance(c.get("text"), str) and c["text"].startswith(text)]
        return matches[state] if state < len(matches) else None

    readline.parse_and_bind("set enable-bracketed-paste on")  # a pasted block is one message, not a turn a line
    readline.set_completer_delims(" \t\n")
    readline.set_completer(complete)
    readline.parse_and_bind("tab: complete")


def _turn(core: Any, store: Any, session_id: str, line: str, config: dict[str, Any], out: Any, err: Any) -> Any:
    """One turn, streamed; returns the saved session (None when nothing was saved)."""
    from ..store import stream_turn

    request_id = uuid.uuid4().hex
    cancelled: list[bool] = []

    def interrupt(signum: int, frame: Any) -> None:
        cancelled.append(True)
        core.cancel_request(request_id)

    previous = signal.signal(signal.SIGINT, interrupt)
    session = None
    streamed = False
    failed = False  # an error was printed: the stopped outcome would only say it again
    try:
        for event in stream_turn(core, store, session_id, line, config, request_id=request_id):
            t = event.type
            if t == "partial" and isinstance(event.message.content, str):
                out.write(event.message.content)
                out.flush()
                streamed = streamed or bool(event.message.content)
            elif t == "final" and event.message.role == "assistant":
                if not streamed and isinstance(event.message.content, str):
                    out.write(event.message.content)
                out.write("\n")
                out.flush()
                streamed = False
            elif t == "retry":
                err.write("(the session was changed elsewhere; asking again)\n")
            elif t == "retract":  # the terminal keeps what was printed: end its line, then the new answer
                if streamed:
                    out.write("\n")
                    streamed = False
                show_on_stderr(event, err)
            elif t == "done":
                session = event.session
                if streamed:
                    out.write("\n")
                if not event.outcome.ok and event.outcome.reason != "cancelled" and not failed:
                    err.write(f"stopped: {event.outcome.reason}: {event.outcome.detail}\n")
            elif t == "saved":
                pass
            else:
                failed = failed or t == "error"
                show_on_stderr(event, err)
    finally:
        signal.signal(signal.SIGINT, previous)
    if cancelled:
        err.write("(cancelled)\n")
    return session


def _compact(core: Any, store: Any, session_id: str, config: dict[str, Any], words: list[str]) -> str:
    """``/compact [TOKENS] [summarize]``: the ``compact_native_history`` action on the stored session, saved."""
    params: dict[str, Any] = {}
    for word in words:
        if word.isdigit():
            params["max_context_tokens"] = int(word)
        elif word == "summarize":
            params["mode"] = "summarize"
        else:
            return f"usage: /compact [TOKENS] [summarize] (not {word!r})"
    try:
        stored = store.get(session_id)
    except SessionNotFoundError:
        return "nothing to compact yet"
    result = core.execute_action(stored.session, "compact_native_history", params, config)
    report = result.payload.get("compact_history") or {}
    if not report.get("dropped_messages"):
        return f"nothing to compact: about {report.get('estimated_tokens_before', '?')} tokens fit the limit"
    before, after = report.get("estimated_tokens_before"), report.get("estimated_tokens_after")
    if isinstance(before, int) and isinstance(after, int) and after >= before:  # a summary longer than its messages
        return (f"left as it was: compacting ({report['mode']}) would send about {after} tokens instead of "
                f"{before}")
    store.put(result.session, expected_revision=stored.revision)
    return (f"compacted ({report['mode']}): {report['dropped_messages']} older messages no longer sent, about "
            f"{before} tokens now {after}")


def _chat(args: argparse.Namespace) -> int:
    """``agent-core chat``: the core and the store, the session opened, then a turn per line until ``/exit``."""
    out, err = sys.stdout, sys.stderr
    config = layered_config(args)
    core = make_core(args, approval=_Approver(err), provider=config["provider"], config=config)
    resolve_noted(core, config, config_sources(args), err)  # a config that cannot work fails here, before the first prompt
    status = [e for e in core.get_ui_schema(config) if e.get("ui_type") == "status_bar"]
    store = open_cli_store(args.store)
    try:
        session_id = _open_session(store, args, err)
        model = f" / {config['model']}" if config.get("model") else ""
        err.write(f"provider {config['provider']}{model}; {_HELP}\n")
        err.flush()
        _readline(core, config)
        try:
            _converse(core, store, session_id, config, status, out, err)
        except KeyboardInterrupt:  # a Ctrl-C outside the prompt and a model call (the second of two quick ones)
            out.write("\n")
    finally:
        _closing(store)
    return 0


def _closing(store: Any) -> None:
    """Close the store with Ctrl-C ignored: a key pressed again while the chat ends must not make it a traceback."""
    if threading.current_thread() is not threading.main_thread():
        store.close()
        return
    previous = signal.signal(signal.SIGINT, signal.SIG_IGN)
    try:
        store.close()
    finally:
        signal.signal(signal.SIGINT, previous)


def _converse(core: Any, store: Any, session_id: str, config: dict[str, Any], status: Any, out: Any,
              err: Any) -> None:
    """Prompt, answer, repeat, until Ctrl-D, ``/exit`` or two Ctrl-C in a row."""
    interrupted = False  # the last prompt ended with Ctrl-C: a second one in a row quits
    while (line := _prompt(out)) is not None:
        if line is _INTERRUPTED:
            if interrupted:
                return
            interrupted = True
            err.write("(Ctrl-C again, Ctrl-D or /exit quits)\n")
            err.flush()
            continue
        interrupted = False
        if not line:
            continue
        if line in _LEAVE:
            return
        if not _command(line, core, store, session_id, config, out, err):
            said = line[1:] if line.startswith("//") else line  # //text: a message that starts with a slash
            _say(core, store, session_id, said, config, status, out, err)


def _open_session(store: Any, args: argparse.Namespace, err: Any) -> str:
    """The session to talk in: ``--session`` resumed (its last messages shown), or a new one (with ``--system``)."""
    session_id = args.session or uuid.uuid4().hex[:12]
    try:
        stored = store.get(session_id).session
    except SessionNotFoundError:
        if args.system:
            store.create(Session(session_id=session_id, messages=[Message("system", args.system)]))
        err.write(f"new session {session_id}\n")
        return session_id
    err.write(f"resuming session {session_id} ({len(stored.messages)} messages)\n")
    for message in stored.messages[-10:]:
        err.write("  " + describe(message, width=160) + "\n")
    return session_id


_BLOCK = '"""'  # a line of its own that opens (and then closes) a message of several lines
_INTERRUPTED = "\x03"  # what _prompt returns for Ctrl-C (never a typed line: it is stripped of controls)


def _prompt(out: Any) -> str | None:
    """The next message typed, stripped; None at Ctrl-D, and ``_INTERRUPTED`` after Ctrl-C at the prompt.

    A paste comes whole, newlines and all, where readline has bracketed paste (set in
    :func:`_readline`); a line of three double quotes opens a block that the next such line
    closes, for terminals without it.
    """
    try:
        line = input("> ").strip()
        if line != _BLOCK:
            return line
        lines = []
        while (more := input("... ")).strip() != _BLOCK:
            lines.append(more)
        return "\n".join(lines).strip()
    except EOFError:
        out.write("\n")
        return None
    except KeyboardInterrupt:
        out.write("\n")
        return _INTERRUPTED


def _command(line: str, core: Any, store: Any, session_id: str, config: dict[str, Any], out: Any, err: Any) -> bool:
    """Run ``line`` when it is one of the chat's commands (``/session``, ``/help``, ``/compact``); else False."""
    if line == "/session":
        out.write(session_id + "\n")
    elif line == "/help":
        out.write(_HELP + "\n")
    elif line.split()[0] == "/compact":
        try:
            err.write(_compact(core, store, session_id, config, line.split()[1:]) + "\n")
        except AgentCoreError as exc:
            err.write(f"error: {exc}\n")
    elif _COMMAND_LIKE.fullmatch(line.split()[0]):  # a mistyped command is not a message for the model
        close = difflib.get_close_matches(line.split()[0], _COMMANDS, n=1, cutoff=0.6)
        hint = f"; did you mean {close[0]}?" if close else ""
        err.write(f"unknown command {line.split()[0]}{hint} (/help lists them; start with // to send a slash)\n")
    else:
        return False
    return True


_said_no_price: list[bool] = []  # the cost footnote is said once per chat


def _say(core: Any, store: Any, session_id: str, line: str, config: dict[str, Any], status: list[Any], out: Any,
         err: Any) -> None:
    """One turn for ``line``, then the status bar; a failed turn is reported and the conversation goes on."""
    try:
        session = _turn(core, store, session_id, line, config, out, err)
    except AgentCoreError as exc:
        err.write(f"error: {exc}\n")
        return
    if session is not None and status:
        shown = render_status(status, session)
        if shown:
            err.write(f"[{shown}]\n")
            if "$?" in shown and not _said_no_price:
                _said_no_price.append(True)
                err.write(_NO_PRICE + "\n")
    err.flush()


def add_chat(sub: argparse._SubParsersAction, common: argparse.ArgumentParser) -> None:
    from . import add_command

    chat = add_command(
        sub, "chat", parents=[common], help="a conversation, kept in the session store",
        examples=(("agent-core chat", "offline, the echo provider"),
                  ("agent-core chat --session work", "resume (or start) the session 'work'"),
                  ("agent-core chat --provider openai --model gpt-4o-mini", "needs OPENAI_API_KEY")))
    chat.add_argument("--session", metavar="ID", help="resume (or start) the session with this id")
    chat.add_argument("--store", metavar="URL", help=STORE_HELP)
    chat.add_argument("--system", help="a system message for a new session")
    chat.add_argument("--max-iterations", type=int, metavar="N",
                      help="most model calls in one turn, tool rounds included (default 10)")
    chat.set_defaults(func=_chat)
