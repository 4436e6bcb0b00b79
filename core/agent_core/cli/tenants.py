"""``agent-core tenants usage``: what each tenant of a server used, read from the store the servers share."""

from __future__ import annotations

import argparse
import json

from .settings import STORE_HELP

__all__ = ["add_tenants"]


def add_tenants(sub: argparse._SubParsersAction) -> None:
    """The ``tenants`` command and its ``usage`` subcommand."""
    from . import add_command
    tenants = add_command(
        sub, "tenants", help="what the tenants of agent-core serve used (requests, tokens, spend)",
        examples=(("agent-core tenants usage --store postgresql://u@db/agents", "every replica's tenants"),
                  ("agent-core tenants usage --json", "one JSON object per tenant")))
    verbs = tenants.add_subparsers(dest="verb", required=True)
    usage = verbs.add_parser("usage", help="each tenant's requests, tokens and spend, and what runs now; counted "
                                           "for tenants with limits in the tokens file")
    usage.add_argument("--store", metavar="URL", help=STORE_HELP)
    usage.add_argument("--json", action="store_true", help="one JSON object per line")
    usage.set_defaults(func=_usage)


def _usage(args: argparse.Namespace) -> int:
    import msgspec

    from ..server.fleet.peers import relay_url
    from ..store import open_store
    from ..store import TenantLedger

    url = relay_url(args.store)
    open_store(url).close()  # the same checks and messages as every command that opens the store
    ledger = TenantLedger(url)
    try:
        rows = ledger.usage()
    finally:
        ledger.close()
    if args.json:
        for row in rows:
            print(json.dumps(msgspec.to_builtins(row)))
        return 0
    if not rows:
        print("no tenant usage recorded (only tenants with limits in the tokens file are counted)")
        return 0
    print(f"{'TENANT':<20} {'REQUESTS':>9} {'TOKENS':>12} {'SPENT $':>12} {'RUNNING':>8} {'REQ/MIN':>8} {'TOK/MIN':>10}")
    for row in rows:
        print(f"{row.tenant:<20} {row.requests:>9} {row.tokens:>12} {row.spent_usd:>12.6f} {row.running:>8} "
              f"{row.requests_this_minute:>8} {row.tokens_this_minute:>10}")
    return 0
