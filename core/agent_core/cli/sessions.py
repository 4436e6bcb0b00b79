"""``agent-core sessions list|show|export|delete``: the session store from a terminal.

The store is the one ``agent-core chat`` and ``agent-core serve`` use: the
SQLite file under ``$AGENT_CORE_HOME`` unless ``--store URL`` names another
(``sqlite:///path.db``, ``postgresql://...``). ``export`` prints the session
as JSON exactly as the store holds it (no secrets are ever stored), so it can
be read back with ``Session.from_json``.
"""

from __future__ import annotations

import argparse
import json
import sys
from datetime import datetime, timezone
from typing import Any

from ..values.messages import Message, Session

__all__ = ["add_sessions", "describe", "open_cli_store"]


def open_cli_store(url: str | None) -> Any:
    from ..store import open_store

    return open_store(url)


def _when(seconds: float) -> str:
    return datetime.fromtimestamp(seconds, timezone.utc).strftime("%Y-%m-%d %H:%M:%SZ")


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
    line = f"{message.role}: {text}"
    return line if not width or len(line) <= width else line[: width - 3] + "..."


def _list(args: argparse.Namespace) -> int:
    store = open_cli_store(args.store)
    try:
        infos, after = [], None
        while True:  # the store pages by id; a terminal wants the latest first
            page = store.list(limit=500, after=after)
            infos.extend(page)
            if len(page) < 500:
                break
            after = page[-1].session_id
        infos = sorted(infos, key=lambda i: i.updated_at, reverse=True)[: args.limit]
        if args.json:
            for info in infos:
                print(json.dumps({"session_id": info.session_id, "revision": info.revision,
                                  "messages": info.message_count, "updated_at": info.updated_at}))
            return 0
        if not infos:
            print("no sessions", file=sys.stderr)
        for info in infos:
            title = store.get(info.session_id).session.metadata.get("title") or ""
            print(f"{info.session_id:34} rev {info.revision:<4} {info.message_count:>4} messages  "
                  f"{_when(info.updated_at)}  {title}".rstrip())
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
    print(f"session {session.session_id} (revision {revision}, {len(session.messages)} messages)"
          + (f": {title}" if title else ""))
    for message in session.messages:
        print(describe(message))
    return 0


def _export(args: argparse.Namespace) -> int:
    session, _ = _load(args)
    sys.stdout.write(session.to_json().decode() + "\n")
    return 0


def _delete(args: argparse.Namespace) -> int:
    store = open_cli_store(args.store)
    try:
        store.delete(args.session_id)
    finally:
        store.close()
    print(f"deleted {args.session_id}", file=sys.stderr)
    return 0


def add_sessions(sub: argparse._SubParsersAction) -> None:
    """``sessions`` and its four subcommands."""
    store = argparse.ArgumentParser(add_help=False)
    store.add_argument("--store", metavar="URL", help="session store URL (default: sessions.db in $AGENT_CORE_HOME)")
    sessions = sub.add_parser("sessions", help="list, show, export or delete stored sessions")
    verbs = sessions.add_subparsers(dest="verb", required=True)
    listing = verbs.add_parser("list", parents=[store], help="stored sessions, most recently updated first")
    listing.add_argument("--limit", type=int, default=100)
    listing.add_argument("--json", action="store_true", help="one JSON object per line")
    listing.set_defaults(func=_list)
    for verb, func, what in (("show", _show, "print a session's messages"),
                             ("export", _export, "print a session as JSON"),
                             ("delete", _delete, "delete a session")):
        p = verbs.add_parser(verb, parents=[store], help=what)
        p.add_argument("session_id", metavar="ID")
        p.set_defaults(func=func)
