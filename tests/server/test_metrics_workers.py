"""One scrape for every worker: each worker's series, labelled with its slot, gathered over the workers' sockets.

The workers here are two apps built by ``create_app`` in this process, each behind a uvicorn
of its own and each with its own OpenTelemetry provider, sharing a workers' directory as the
processes of ``agent-core serve --workers 2`` do (``test_workers.py`` runs those).
"""

from __future__ import annotations

import asyncio
import os
import shutil
import socket
import tempfile
import time
from collections.abc import Iterator
from contextlib import ExitStack
from pathlib import Path

import httpx
import pytest

pytest.importorskip("opentelemetry.sdk.metrics", reason="the metrics tests read through the OpenTelemetry SDK")

from agent_core.server import create_app  # noqa: E402
from agent_core.server.fleet.siblings import Siblings  # noqa: E402
from agent_core.server.metering.exposition import WorkerScrape, labelled, merged, worker_metrics  # noqa: E402
from agent_core.server.metering.metrics import Metrics, prometheus_reader  # noqa: E402
from agent_core.store import open_store  # noqa: E402
from prometheus_client.parser import text_string_to_metric_families  # noqa: E402

from ._live import running  # noqa: E402

ADMIN = "admin-token-0123456789"
SCRAPE = {"authorization": f"Bearer {ADMIN}"}


@pytest.fixture
def workers_dir() -> Iterator[Path]:
    """What ``run_workers`` makes: a directory of this user's alone, with a short path (sockets' paths are short)."""
    directory = tempfile.mkdtemp(prefix="ac-workers-")
    yield Path(directory)
    shutil.rmtree(directory, ignore_errors=True)


def _apps(stack: ExitStack, tmp_path: Path, workers_dir: Path, count: int, started: int) -> list[tuple[str, Metrics]]:
    served = []
    for i in range(started):
        store = open_store(f"sqlite:///{tmp_path / f'{i}.db'}")
        stack.callback(store.close)
        metrics = worker_metrics(workers_dir, count, ADMIN)
        app = create_app(store=store, metrics=metrics, admin_token=ADMIN)
        served.append((stack.enter_context(running(app, lifespan="on")), metrics))
    return served


def _chat(url: str) -> None:
    with httpx.Client() as client:
        assert client.post(f"{url}/v1/chat/completions", timeout=30, json={
            "model": "echo", "messages": [{"role": "user", "content": "hi"}]}).status_code == 200


def _counts(text: str) -> dict[str, float]:
    """Chat completions counted per worker, read with prometheus_client's own parser (which refuses a bad body)."""
    counts: dict[str, float] = {}
    for family in text_string_to_metric_families(text):
        for sample in family.samples:
            if sample.name == "http_server_request_duration_seconds_count" \
                    and sample.labels.get("http_route") == "/v1/chat/completions":
                worker = sample.labels["worker"]
                counts[worker] = counts.get(worker, 0) + sample.value
    return counts


def test_merging_keeps_one_header_per_family_and_every_workers_samples() -> None:
    readers = [prometheus_reader() for _ in range(2)]
    for i, (provider, _, _) in enumerate(readers):
        counter = provider.get_meter("t").create_counter("jobs", description="jobs done")
        counter.add(i + 2, {"kind": "a"})
    body = merged(labelled(render(), i) for i, (_, render, _) in enumerate(readers)).decode()
    assert body.count("# TYPE jobs_total counter") == 1 and body.count("# TYPE target_info gauge") == 1
    jobs = {s.labels["worker"]: s.value for f in text_string_to_metric_families(body) for s in f.samples
            if s.name == "jobs_total"}
    assert jobs == {"0": 2.0, "1": 3.0}
    assert labelled(b'up 1.0\nx{} 2\ny{a="b c"} 3\n', 4) == b'up{worker="4"} 1.0\nx{worker="4"} 2\ny{worker="4",a="b c"} 3\n'


def test_a_scrape_of_either_worker_holds_both(tmp_path: Path, workers_dir: Path) -> None:
    with ExitStack() as stack:
        (first, _), (second, _) = _apps(stack, tmp_path, workers_dir, 2, 2)
        for url, made in ((first, 3), (second, 2)):
            for _ in range(made):
                _chat(url)
        for url in (first, second):
            scraped = httpx.get(f"{url}/metrics", headers=SCRAPE, timeout=10)
            assert scraped.status_code == 200
            assert sorted(_counts(scraped.text).items()) == [("0", 3.0), ("1", 2.0)]
            assert "agent_core_workers_scraped 2" in scraped.text and "did not answer" not in scraped.text
            assert scraped.text.count("# TYPE http_server_request_duration_seconds histogram") == 1
        assert httpx.get(f"{first}/metrics", timeout=10).status_code == 401


def test_a_worker_that_does_not_answer_is_left_out_and_named(tmp_path: Path, workers_dir: Path) -> None:
    silent = socket.socket(socket.AF_UNIX)  # takes the connection (the backlog) and never answers
    silent.bind(str(workers_dir / "1-1-silent.sock"))
    silent.listen()
    try:
        with ExitStack() as stack:
            ((url, metrics),) = _apps(stack, tmp_path, workers_dir, 3, 1)
            metrics.serving.wait = 0.3
            _chat(url)
            started = time.monotonic()
            scraped = httpx.get(f"{url}/metrics", headers=SCRAPE, timeout=10)
            took = time.monotonic() - started
    finally:
        silent.close()
    assert scraped.status_code == 200 and _counts(scraped.text) == {"0": 1.0}
    assert took < 5  # the wait, not the client's timeout
    assert "agent_core_workers 3" in scraped.text and "agent_core_workers_scraped 1" in scraped.text
    assert "# worker 1, 2 did not answer within 0.3 s" in scraped.text


def test_a_worker_answers_only_its_siblings_key(tmp_path: Path, workers_dir: Path) -> None:
    async def ask(path: Path, line: bytes) -> bytes:
        reader, writer = await asyncio.open_unix_connection(str(path))
        writer.write(line)
        answer = await reader.read()
        writer.close()
        return answer

    with ExitStack() as stack:
        ((url, metrics),) = _apps(stack, tmp_path, workers_dir, 2, 1)
        _chat(url)
        path = metrics.serving.path
        assert os.stat(path).st_mode & 0o777 == 0o600 and os.stat(workers_dir).st_mode & 0o777 == 0o700
        for wrong in (ADMIN.encode() + b"\n", b"metrics\n", b"\n", b"x" * 100_000 + b"\n"):
            assert asyncio.run(ask(path, wrong)) == b""
        elsewhere = WorkerScrape(lambda: b"", "", workers_dir, 2, "another-admin-token-0123").siblings.key
        assert asyncio.run(ask(path, elsewhere + b"\n")) == b""  # the key of another server's token
        right = asyncio.run(ask(path, metrics.serving.key + b"\n"))
        assert int.from_bytes(right[:4], "big") == len(right) - 4 and b'worker="0"' in right


def test_slots_are_the_lowest_free_and_pass_to_the_next_worker(workers_dir: Path) -> None:
    async def run() -> list[int | None]:
        made = [Siblings(workers_dir, 2, b"k", lambda: b"") for _ in range(3)]
        for each in made[:2]:
            await each.start()
        slots = [made[0].slot, made[1].slot]
        await made[0].close()  # a worker ends; the one started in its place takes its slot
        await made[2].start()
        slots.append(made[2].slot)
        for each in made[1:]:
            await each.close()
        return slots

    assert asyncio.run(run()) == [0, 1, 0]


def test_a_directory_others_may_enter_is_refused(workers_dir: Path) -> None:
    os.chmod(workers_dir, 0o755)
    with pytest.raises(PermissionError, match="no other user may enter"):
        asyncio.run(Siblings(workers_dir, 2, b"k", lambda: b"").start())
