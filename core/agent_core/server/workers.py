"""``agent-core serve --workers N``: N server processes on one listening socket, kept alive by a parent.

Theory of operation. The work is uvicorn's own :class:`uvicorn.supervisors.Multiprocess`:
the parent binds the socket once, starts N children by ``spawn`` that all accept on it
(the kernel spreads the connections), pings each child, and starts a new one in place of
a child that died or hung. On SIGTERM or SIGINT it sends SIGTERM to every child and waits
for them; each child then does what a lone ``agent-core serve`` does on the signal: stops
accepting, gives running responses ``grace`` seconds, cancels what still runs (a cancelled
turn is saved as stopped), and exits.

What this module adds is the glue a spawned child needs, since nothing but a pickled
:class:`uvicorn.Config` crosses to it: :class:`WorkerApp`, a picklable value holding what
``run_server`` was given, which builds the app inside the child (its own store
connection, its own pipeline), and :class:`WorkerConfig`, which picks the tuned HTTP
protocol in the child (the tuned protocol is a class made at run time, which does not
pickle).

Every child opens the store itself, so what the processes share lives there: sessions,
leases, and (for cancels and approvals sent to a process that does not run the request)
the relay of :mod:`agent_core.server.fleet.peers`. With metrics on, the parent also makes a
directory for its workers' sockets, through which a scrape of one worker gathers the numbers
of all (:mod:`agent_core.server.metering.exposition`).
"""

from __future__ import annotations

import atexit
import logging
import os
import shutil
import tempfile
from pathlib import Path
from typing import Any

import msgspec
import uvicorn
from uvicorn.supervisors import Multiprocess

from .access.settings import ServeSettings

__all__ = ["WorkerApp", "WorkerConfig", "run_workers"]


class WorkerApp(msgspec.Struct, frozen=True, kw_only=True):
    """What one worker builds its app from; called in the child (uvicorn's ``factory``).

    A token travels inside this value to the child through the pipe ``spawn`` uses, never
    through the environment or the command line, where other users could read it.
    """

    token: str | None = None
    store_url: str | None = None
    config: dict[str, Any] = {}
    settings: ServeSettings = ServeSettings()
    log_level: str = "info"
    log_json: bool = False
    quiet: bool = False
    gc_young: int = 0
    admin_token: str | None = None
    #: the directory :func:`run_workers` made for its workers' sockets, and how many workers it runs
    siblings: str | None = None
    workers: int = 1

    def __call__(self) -> Any:
        from ..store import open_store
        from .app import create_app
        from .http.access_log import configure_logging
        from .http.collector import tune_collector
        from .fleet.peers import relay_url

        configure_logging(self.log_level, as_json=self.log_json, quiet=self.quiet)
        metrics = self.metrics()
        store = open_store(self.store_url)
        atexit.register(store.close)  # the child ends after its server has shut down
        app = create_app(store=store, token=self.token, config=self.config, settings=self.settings,
                         cancel_url=relay_url(self.store_url), metrics=metrics, admin_token=self.admin_token)
        tune_collector(self.gc_young)
        return app

    def metrics(self) -> Any:
        """Each worker measures its own requests; a scrape of any of them gathers every worker's numbers."""
        if not self.admin_token:
            return None
        if self.siblings is None:
            from .metering.metrics import prometheus_metrics

            return prometheus_metrics()
        from .metering.exposition import worker_metrics

        return worker_metrics(Path(self.siblings), self.workers, self.admin_token)


class WorkerConfig(uvicorn.Config):
    """uvicorn's config, which chooses the tuned HTTP protocol where it is loaded: in the child."""

    def __init__(self, app: WorkerApp, *, header_timeout_s: float, **kwargs: Any) -> None:
        super().__init__(app, factory=True, http="h11", **kwargs)
        self.header_timeout_s = header_timeout_s

    def load(self) -> None:
        from .http.uvicorn_tuning import http_option

        self.http = http_option(self.header_timeout_s)
        super().load()


def run_workers(app: WorkerApp, *, host: str, port: int, workers: int, grace: float,
                header_timeout_s: float) -> None:
    """Serve with ``workers`` processes until SIGTERM/SIGINT, restarting a worker that dies.

    The parent says where it listens (the port it got, for ``--port 0``) before the workers
    are up: connections made meanwhile wait in the socket's backlog for the first worker.
    """
    from .http.access_log import log_event

    app = _with_siblings(msgspec.structs.replace(app, workers=workers))
    config = WorkerConfig(app, header_timeout_s=header_timeout_s, host=host, port=port, workers=workers,
                          log_config=None, log_level=None, access_log=False, lifespan="on",
                          timeout_graceful_shutdown=grace)
    sock = config.bind_socket()
    try:
        host_, port_ = sock.getsockname()[:2]
        address = f"http://[{host_}]:{port_}" if ":" in host_ else f"http://{host_}:{port_}"
        if not logging.getLogger("agent_core.server").isEnabledFor(logging.INFO):
            print(f"agent-core serve: listening on {address}", flush=True)  # stdout: a script reads it there
        log_event(logging.INFO, "start", f"listening on {address} with {workers} worker processes "
                  f"(parent {os.getpid()})", address=address, workers=workers)
        Multiprocess(config, sockets=[sock]).run()
    finally:
        sock.close()
    log_event(logging.INFO, "stop", "stopped: every worker has ended", workers=workers)


def _with_siblings(app: WorkerApp) -> WorkerApp:
    """With metrics on, ``app`` naming a directory for the workers' sockets (a scrape gathers through it).

    The directory goes when this process exits, however run_workers ended.
    """
    if not app.admin_token:
        return app
    base = tempfile.gettempdir()
    if len(base) > 60:  # a socket's path in it must fit in 108 bytes
        base = "/tmp"
    directory = tempfile.mkdtemp(prefix="agent-core-workers-", dir=base)  # mode 0700, a name nobody can guess
    atexit.register(shutil.rmtree, directory, ignore_errors=True)
    return msgspec.structs.replace(app, siblings=directory)
