"""``agent-core serve``: the pipeline behind HTTP (the ``server`` extra: Starlette + uvicorn).

``create_app`` builds the ASGI app; ``serve`` runs it with uvicorn. See
``docs/server.md`` for the routes.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from .app import create_app
from .client_tools import ClientTools

__all__ = ["ClientTools", "create_app", "serve"]


def serve(app: Any, *, host: str = "127.0.0.1", port: int = 8000, grace: float = 30.0) -> None:
    """Run ``app`` until SIGTERM/SIGINT.

    On the signal, uvicorn stops accepting connections and gives running responses ``grace``
    seconds to finish; then it closes them, and the app cancels the requests still running
    (a cancelled turn is saved, as any stopped one) before the process exits.
    """
    import uvicorn

    uvicorn.run(app, host=host, port=port, log_level="warning", timeout_graceful_shutdown=grace)


def run_server(*, host: str, port: int, token: str | None, store_url: str | None,
               config: Mapping[str, Any] | None = None, grace: float = 30.0) -> None:
    """What ``agent-core serve`` does: open the store, build the app, serve."""
    from ..store import open_store

    store = open_store(store_url)
    try:
        # Processes on one PostgreSQL store relay cancels to each other (LISTEN/NOTIFY).
        cancel_url = store_url if store_url and store_url.startswith(("postgresql://", "postgres://")) else None
        app = create_app(store=store, token=token, config=config, cancel_url=cancel_url)
        serve(app, host=host, port=port, grace=grace)
    finally:
        store.close()
