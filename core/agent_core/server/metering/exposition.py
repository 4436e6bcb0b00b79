"""One scrape of ``GET /metrics`` for every worker of ``agent-core serve --workers N``.

Theory of operation. Each worker measures into an OpenTelemetry provider of its own
(:func:`.metrics.prometheus_reader`), so each holds the numbers of the requests it served.
The worker that takes a scrape renders its own exposition, asks the other workers for
theirs over the workers' sockets (:mod:`agent_core.server.fleet.siblings`), and answers
with all of them in one body:

- every sample carries ``worker="<slot>"``, the worker's stable index (``0`` to ``N-1``),
  so no two workers' series share a name and ``sum`` over ``worker`` counts each request
  once. A worker's counters are cumulative from its start, so each series only grows while
  its worker lives; a worker started in place of a dead one takes its slot and starts the
  series again from zero, which Prometheus reads as a counter reset.
- families are merged by name: one ``# HELP`` and ``# TYPE`` each, then every worker's
  samples, as the text format wants.
- ``agent_core_workers`` (how many the server runs) and ``agent_core_workers_scraped`` (how
  many are in this body) say whether it is whole; a worker that has not answered within
  :attr:`~agent_core.server.fleet.siblings.Siblings.wait` is left out and named in a comment.

The expositions merged are those prometheus_client's ``generate_latest`` wrote in these
processes, whose shape is fixed (two header lines per family, one sample a line, names in
the legacy character set), so they are read line by line rather than parsed in full.
"""

from __future__ import annotations

import hashlib
import hmac
import re
from collections.abc import Callable, Iterable
from pathlib import Path

from ..fleet.siblings import Siblings
from .metrics import Metrics, prometheus_reader

__all__ = ["WorkerScrape", "labelled", "merged", "worker_metrics"]

_NAME = re.compile(rb"[a-zA-Z_:][a-zA-Z0-9_:]*")
_KEY_USE = b"agent-core: a worker asks another for its metrics"


def worker_metrics(directory: Path, count: int, admin_token: str) -> Metrics:
    """A worker's metrics, whose scrape holds every worker's numbers (the ``metrics`` extra).

    Raises:
        ConfigError: the ``metrics`` extra is not installed.
    """
    provider, render, kind = prometheus_reader()
    scrape = WorkerScrape(render, kind, directory, count, admin_token)
    return Metrics(provider, scrape=scrape, serving=scrape.siblings)


class WorkerScrape:
    """A worker's ``GET /metrics``: its own numbers and the other workers', in one body.

    Args:
        render: this worker's exposition (prometheus_client's ``generate_latest`` of its registry).
        kind: the exposition's content type.
        directory, count: the workers' directory and how many there are (:class:`Siblings`).
        admin_token: the operator's token, from which the key of the workers' asks is derived.
    """

    def __init__(self, render: Callable[[], bytes], kind: str, directory: Path, count: int, admin_token: str) -> None:
        key = hmac.new(admin_token.encode(), _KEY_USE, hashlib.sha256).hexdigest().encode()
        self.render, self.kind = render, kind
        self.siblings = Siblings(directory, count, key, self.mine)

    def mine(self) -> bytes:
        """This worker's exposition, each sample labelled with its slot: what it answers another worker."""
        return labelled(self.render(), self.siblings.slot or 0)

    async def __call__(self) -> tuple[bytes, str]:
        mine = self.mine()  # before the wait: the numbers as the scrape arrived
        got = await self.siblings.gather()
        bodies = {**got.answers, self.siblings.slot or 0: mine}
        return merged(bodies[slot] for slot in sorted(bodies)) + self._account(len(bodies), got.missing), self.kind

    def _account(self, scraped: int, missing: tuple[int, ...]) -> bytes:
        lines = ["# HELP agent_core_workers Worker processes the server runs",
                 "# TYPE agent_core_workers gauge", f"agent_core_workers {self.siblings.count}",
                 "# HELP agent_core_workers_scraped Worker processes whose numbers this scrape holds",
                 "# TYPE agent_core_workers_scraped gauge", f"agent_core_workers_scraped {scraped}"]
        if missing:
            lines.append(f"# worker {', '.join(map(str, missing))} did not answer within {self.siblings.wait:g} s: "
                         "its series are not in this scrape")
        return "\n".join(lines).encode() + b"\n"


def labelled(exposition: bytes, worker: int) -> bytes:
    """``exposition`` with ``worker="<worker>"`` among each sample's labels."""
    label = b'worker="%d"' % worker
    out = []
    for line in exposition.splitlines():
        name = None if line.startswith(b"#") else _NAME.match(line)
        if name is not None:
            end = name.end()
            if line[end:end + 1] != b"{":
                line = line[:end] + b"{" + label + b"}" + line[end:]
            else:
                line = line[:end + 1] + label + (b"" if line[end + 1:end + 2] == b"}" else b",") + line[end + 1:]
        out.append(line + b"\n")
    return b"".join(out)


def merged(expositions: Iterable[bytes]) -> bytes:
    """One exposition of several: each family's header once, then the samples of all, in the order given."""
    headers: dict[bytes, list[bytes]] = {}
    samples: dict[bytes, list[bytes]] = {}
    for text in expositions:
        family: bytes | None = None
        for line in text.splitlines():
            if line.startswith(b"# HELP "):
                family = line.split(b" ", 3)[2]
                headers.setdefault(family, [line])
                samples.setdefault(family, [])
            elif line.startswith(b"# TYPE "):
                if family is not None and len(headers[family]) == 1:
                    headers[family].append(line)
            elif family is not None and line and not line.startswith(b"#"):
                samples[family].append(line)
    return b"".join(b"\n".join([*headers[name], *samples[name]]) + b"\n" for name in headers)
