"""``agent-core serve``: the pipeline behind HTTP (the ``server`` extra: Starlette + uvicorn).

``create_app`` builds the ASGI app; ``serve`` runs it with uvicorn. See
``docs/server.md`` for the routes and ``docs/security.md`` for what the front door
refuses. It sits above the kernel: it may import :mod:`agent_core`, the store and
the testing kit's scripted provider, and nothing in the kernel imports it.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from typing import Any

import msgspec

from .app import create_app
from .facades.client_tools import ClientTools
from .http.collector import YOUNG
from .access.settings import ServeSettings

__all__ = ["ClientTools", "ServeSettings", "create_app", "serve"]


def _address(servers: list[Any]) -> str:
    """``http://HOST:PORT`` of the first socket uvicorn listens on (the port it got, for ``--port 0``)."""
    for server in servers:
        for sock in server.sockets:
            host, port = sock.getsockname()[:2]
            return f"http://[{host}]:{port}" if ":" in host else f"http://{host}:{port}"
    return "http://?"


def serve(app: Any, *, host: str = "127.0.0.1", port: int = 8000, grace: float = 30.0,
          header_timeout_s: float = 10.0, gc_young: int = YOUNG) -> None:
    """Run ``app`` until SIGTERM/SIGINT.

    On the signal, uvicorn stops accepting connections and gives running responses ``grace``
    seconds to finish; then it closes them, and the app cancels the requests still running
    (a cancelled turn is saved, as any stopped one) before the process exits. A connection
    that takes longer than ``header_timeout_s`` to send a request's headers is closed, as long as
    uvicorn is a release its tuning was tested with (:mod:`.uvicorn_tuning`; otherwise it runs
    stock, with a warning logged, and that deadline is lost).

    Once it listens, the start banner goes to the ``agent_core.server`` logger, and a line
    as it starts stopping; uvicorn's access log stays off (the app logs each request) and
    its logging setup is left to the caller (:func:`~agent_core.server.http.access_log.configure_logging`).

    Before it listens, the cycle collector is set for many requests at once: what start-up left
    alive is frozen and the young generation holds ``gc_young`` objects (0 leaves the collector
    as it is; see :mod:`agent_core.server.http.collector`).
    """
    import uvicorn

    from .http.access_log import log_event
    from .http.banner import describe
    from .http.collector import tune_collector
    from .http.uvicorn_tuning import http_option

    class Server(uvicorn.Server):
        async def startup(self, sockets: Any = None) -> None:
            await super().startup(sockets)
            if not self.started:
                return
            address = _address(self.servers)
            if not logging.getLogger("agent_core.server").isEnabledFor(logging.INFO):  # --quiet: the port, once
                print(f"agent-core serve: listening on {address}", flush=True)  # stdout: a script reads it there
            inner = getattr(getattr(app, "state", None), "server", None)
            if inner is None:
                log_event(logging.INFO, "start", f"listening on {address}", address=address)
            else:
                text, fields = describe(inner, address)
                log_event(logging.INFO, "start", text, **fields)
                for note in inner.config_notes:  # a typo in the operator's config: said once, not per request
                    log_event(logging.WARNING, "config_warning", f"warning: {note}", note=note)

        async def shutdown(self, sockets: Any = None) -> None:
            running = getattr(app, "running", 0)
            said = (f"stopping: {running} request{'s' * (running != 1)} running, given up to {grace:g} s to "
                    "finish (--grace)") if running else "stopping: no request running"
            log_event(logging.INFO, "stopping", said, running=running, grace_s=grace)
            await super().shutdown(sockets)

    config = uvicorn.Config(app, host=host, port=port, log_config=None, log_level=None, access_log=False,
                            timeout_graceful_shutdown=grace, http=http_option(header_timeout_s))
    tune_collector(gc_young)  # no stop-the-world walks of the start-up heap (see .collector)
    try:
        Server(config).run()
    except KeyboardInterrupt:  # SIGINT, re-raised by uvicorn once it has shut down (as uvicorn.run does)
        pass


def check_exposure(host: str, token: str | None, settings: ServeSettings) -> ServeSettings:
    """Refuse to listen beyond loopback without a token (unless ``insecure``); answer to the bound address.

    Raises:
        ConfigError: a non-loopback ``host`` with no token or tokens file and no ``insecure``.
    """
    from ..errors import ConfigError
    from .access.settings import is_loopback

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
               settings: ServeSettings | None = None, log_level: str = "info", log_json: bool = False,
               quiet: bool = False, workers: int = 1, admin_token: str | None = None) -> None:
    """What ``agent-core serve`` does: set up its log on stderr, check the exposure, open the store, build the app, serve.

    ``log_level``, ``log_json`` and ``quiet`` are :func:`~agent_core.server.http.access_log.configure_logging`'s.
    ``workers`` above 1 serves with that many processes (:mod:`agent_core.server.workers`).
    ``admin_token`` turns metrics on and opens the operator's routes to that token (``GET /metrics``,
    ``GET /v1/admin/tenants/usage``: :mod:`.metering.admin`).
    """
    from ..store import open_store
    from .fleet.peers import relay_url
    from .http.access_log import configure_logging

    configure_logging(log_level, as_json=log_json, quiet=quiet)
    settings = check_exposure(host, token, settings or ServeSettings())
    if workers > 1:
        from .workers import WorkerApp, run_workers

        spec = WorkerApp(token=token, store_url=store_url, config=dict(config or {}), settings=settings,
                         log_level=log_level, log_json=log_json, quiet=quiet, gc_young=YOUNG,
                         admin_token=admin_token)
        run_workers(spec, host=host, port=port, workers=workers, grace=grace, header_timeout_s=settings.header_timeout_s)
        return
    metrics = None
    if admin_token:
        from .metering.metrics import prometheus_metrics

        metrics = prometheus_metrics()
    store = open_store(store_url)
    try:
        # Processes on one store relay cancels and approval answers to each other (.peers).
        app = create_app(store=store, token=token, config=config, cancel_url=relay_url(store_url), settings=settings,
                         metrics=metrics, admin_token=admin_token)
        serve(app, host=host, port=port, grace=grace, header_timeout_s=settings.header_timeout_s)
    finally:
        store.close()
