"""``agent-core serve``: the pipeline behind HTTP (the ``server`` extra: Starlette + uvicorn).

``create_app`` builds the ASGI app; ``serve`` runs it with uvicorn. See
``docs/server.md`` for the routes and ``docs/security.md`` for what the front door
refuses. It sits above the kernel: it may import :mod:`agent_core`, the store and
the testing kit's scripted provider, and nothing in the kernel imports it.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import msgspec

from .app import create_app
from .client_tools import ClientTools
from .settings import ServeSettings

__all__ = ["ClientTools", "ServeSettings", "create_app", "serve"]


def serve(app: Any, *, host: str = "127.0.0.1", port: int = 8000, grace: float = 30.0,
          header_timeout_s: float = 10.0) -> None:
    """Run ``app`` until SIGTERM/SIGINT.

    On the signal, uvicorn stops accepting connections and gives running responses ``grace``
    seconds to finish; then it closes them, and the app cancels the requests still running
    (a cancelled turn is saved, as any stopped one) before the process exits. A connection
    that takes longer than ``header_timeout_s`` to send a request's headers is closed.
    """
    import uvicorn

    from .protocol import with_header_timeout

    uvicorn.run(app, host=host, port=port, log_level="warning", timeout_graceful_shutdown=grace,
                http=with_header_timeout(header_timeout_s))


def check_exposure(host: str, token: str | None, settings: ServeSettings) -> ServeSettings:
    """Refuse to listen beyond loopback without a token (unless ``insecure``); answer to the bound address.

    Raises:
        ConfigError: a non-loopback ``host`` with no token or tokens file and no ``insecure``.
    """
    from ..errors import ConfigError
    from .settings import is_loopback

    if is_loopback(host):
        return settings
    if not (token or settings.tokens_file or settings.insecure):
        raise ConfigError(
            f"refusing to listen on {host} without a token: anyone who can reach it could use the server's "
            "credentials; give --token (or --tokens-file), or --insecure if something in front of it checks "
            "who connects")
    if host not in ("0.0.0.0", "::", "") and host not in settings.allowed_hosts:
        return msgspec.structs.replace(settings, allowed_hosts=(*settings.allowed_hosts, host))
    return settings


def run_server(*, host: str, port: int, token: str | None, store_url: str | None,
               config: Mapping[str, Any] | None = None, grace: float = 30.0,
               settings: ServeSettings | None = None) -> None:
    """What ``agent-core serve`` does: check the exposure, open the store, build the app, serve."""
    from ..store import open_store

    settings = check_exposure(host, token, settings or ServeSettings())
    store = open_store(store_url)
    try:
        # Processes on one PostgreSQL store relay cancels to each other (LISTEN/NOTIFY).
        cancel_url = store_url if store_url and store_url.startswith(("postgresql://", "postgres://")) else None
        app = create_app(store=store, token=token, config=config, cancel_url=cancel_url, settings=settings)
        serve(app, host=host, port=port, grace=grace, header_timeout_s=settings.header_timeout_s)
    finally:
        store.close()
