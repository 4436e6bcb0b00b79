"""``agent-core sessions list|show|export|delete`` and ``agent-core logs``: the session store from a terminal.

The store is the one ``agent-core run``, ``chat`` and ``serve`` use: the
SQLite file under ``$AGENT_CORE_HOME`` unless ``--store URL`` names another
(``sqlite:///path.db``, ``postgresql://...``). ``export`` prints the session
as JSON (no secrets are ever stored), so it can be read back with
``Session.from_json``; the providers' native history, which the engine keeps
in the metadata, is left out unless ``--native`` asks for it.

Ids and messages come from models and clients, so what a terminal shows has
its control characters escaped: a stored message cannot move the cursor,
clear the screen or retitle the window. ``--json`` listings use the HTTP
API's names (``id``, ``message_count``) and ISO 8601 times.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from datetime import datetime, timezone
from typing import Any

from ..values.messages import Message, Session
from ..values.native_history import without_native_history
from .settings import STORE_HELP

__all__ = ["add_sessions", "describe", "open_cli_store"]


def iso_time(seconds: float) -> str:
    from ..store.values import iso_time as iso

    return iso(seconds)


def open_cli_store(url: str | None) -> Any:
    from ..store import open_store

    return open_store(url)


def _when(seconds: float) -> str:
    return datetime.fromtimestamp(seconds, timezone.utc).strftime("%Y-%m-%d %H:%M:%SZ")


_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f\u2028\u2029\u202a-\u202e\u2066-\u2069]")


def printable(text: str, *, newlines: bool = False) -> str:
    """``text`` with control characters (escape sequences, bidi overrides) shown as escapes, not obeyed.

    Tabs stay; newlines stay only where the caller prints a multi-line body.
    """
    out = _CONTROL.sub(lambda m: m.group().encode("unicode_escape").decode("ascii"), text)
    return out if newlines else out.replace("\n", "\\n").replace("\r", "\\r")


def recent(store: Any, limit: int) -> list[Any]:
    """The ``limit`` sessions updated last, latest first (the store pages by id)."""
    infos, after = [], None
    while True:
        page = store.list(limit=500, after=after)
        infos.extend(page)
        if len(page) < 500:
            break
        after = page[-1].session_id
    return sorted(infos, key=lambda i: i.updated_at, reverse=True)[:limit]


def title_of(session: Session, width: int = 60) -> str:
    """The session's title, else its first user prompt's first line, cut to ``width``."""
    title = session.metadata.get("title")
    if not isinstance(title, str) or not title.strip():
        first = next((m.content for m in session.messages if m.role == "user" and isinstance(m.content, str)), "")
        title = first.strip().split("\n", 1)[0]
    title = printable(title)
    return title if len(title) <= width else title[: width - 3] + "..."


def describe(message: Message, width: int = 0) -> str:
    """One message as a line for a terminal: ``role: text`` (tool calls and results named)."""
    content = message.content
    text = content if isinstance(content, str) else json.dumps(content)
    meta = message.metadata or {}
    calls = meta.get("tool_calls") or ()
    if calls:
        names = ", ".join(str(c.get("name", "?")) for c in calls if isinstance(c, dict) or hasattr(c, "get"))
        text = f"{text} [calls {names}]".strip()
    if message.role == "tool" and meta.get("tool_name"):
        text = f"[{meta.get('tool_name')}] {text}"
    line = f"{message.role}: {printable(text, newlines=not width)}"
    return line if not width or len(line) <= width else line[: width - 3] + "..."


def _list(args: argparse.Namespace) -> int:
    store = open_cli_store(args.store)
    try:
        infos = recent(store, args.limit)
        if args.json:
            for info in infos:
                print(json.dumps({"id": info.session_id, "revision": info.revision,
                                  "message_count": info.message_count, "created_at": iso_time(info.created_at),
                                  "updated_at": iso_time(info.updated_at),
                                  "title": title_of(store.get(info.session_id).session, 200)}))
            return 0
        if not infos:
            print("no sessions yet: agent-core run \"...\" or agent-core chat keeps one", file=sys.stderr)
        for info in infos:
            title = title_of(store.get(info.session_id).session)
            print(f"{printable(info.session_id):14} {_when(info.updated_at)}  {info.message_count:>4} messages  "
                  f"{title}".rstrip())
    finally:
        store.close()
    return 0


def _load(args: argparse.Namespace) -> tuple[Session, int]:
    store = open_cli_store(args.store)
    try:
        stored = store.get(args.session_id)  # SessionNotFoundError names the id
    finally:
        store.close()
    return stored.session, stored.revision


def _show(args: argparse.Namespace) -> int:
    session, revision = _load(args)
    title = session.metadata.get("title")
    print(f"session {printable(session.session_id)} (revision {revision}, {len(session.messages)} messages)"
          + (f": {printable(title)}" if isinstance(title, str) and title else ""))
    for message in session.messages:
        print(describe(message))
    return 0


def _export(args: argparse.Namespace) -> int:
    session, _ = _load(args)
    if not args.native:
        session = without_native_history(session)
    sys.stdout.write(session.to_json().decode() + "\n")
    return 0


def _delete(args: argparse.Namespace) -> int:
    store = open_cli_store(args.store)
    try:
        store.delete(args.session_id)
    finally:
        store.close()
    print(f"deleted {printable(args.session_id)}", file=sys.stderr)
    return 0


def add_sessions(sub: argparse._SubParsersAction) -> None:
    """``sessions`` and its four subcommands, and ``logs`` (the recent ones)."""
    from . import add_command
    store = argparse.ArgumentParser(add_help=False)
    store.add_argument("--store", metavar="URL", help=STORE_HELP)
    listing_flags = argparse.ArgumentParser(add_help=False)
    listing_flags.add_argument("--json", action="store_true",
                               help="one JSON object per line (id, revision, message_count, created_at, updated_at, "
                                    "title)")
    sessions = add_command(
        sub, "sessions", help="list, show, export or delete stored sessions",
        examples=(("agent-core sessions list --limit 5", "the five updated last"),
                  ("agent-core sessions show 3f2a9c1b7d0e", "its messages"),
                  ("agent-core sessions export 3f2a9c1b7d0e > chat.json", "as JSON, for Session.from_json")))
    verbs = sessions.add_subparsers(dest="verb", required=True)
    listing = verbs.add_parser("list", parents=[store, listing_flags], help="stored sessions, most recently updated first")
    listing.add_argument("--limit", type=int, default=100, metavar="N", help="show at most N (default 100)")
    listing.set_defaults(func=_list)
    for verb, func, what in (("show", _show, "print a session's messages"),
                             ("export", _export, "print a session as JSON"),
                             ("delete", _delete, "delete a session")):
        p = verbs.add_parser(verb, parents=[store], help=what)
        p.add_argument("session_id", metavar="ID")
        if verb == "export":
            p.add_argument("--native", action="store_true",
                           help="include each provider's native history (the engine's own record)")
        p.set_defaults(func=func)
    logs = add_command(sub, "logs", parents=[store, listing_flags],
                       help="the latest runs and chats, with their first prompt (agent-core sessions list)",
                       examples=(("agent-core logs", "the ten latest"),
                                 ("agent-core logs -n 3 --json", "as JSON lines"),
                                 ('agent-core run --session ID "go on"', "continue one of them")))
    logs.add_argument("--limit", "-n", type=int, default=10, metavar="N", help="show at most N (default 10)")
    logs.set_defaults(func=_list)
