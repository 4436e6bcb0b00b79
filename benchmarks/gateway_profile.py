"""Where a gateway process spends its CPU: py-spy samples of it, summed by area.

``bench_gateway.py --profile FILE`` attaches py-spy to ``agent-core serve`` after the warm-up,
for the cells it runs, then prints what this module makes of the samples. py-spy is a tool, not
a dependency: ``.venv/bin/pip install py-spy``. It records only samples where a thread is
running (not idle), so the samples stand for CPU time.

How a sample is charged: the stack is walked from the innermost frame outward, and the first
frame that belongs to a named part (``AREAS``) takes the sample. The standard library, anyio
and h11 are plumbing, charged to whichever part called them (h11 parsing the upstream's
response under httpcore is the upstream read's; h11 framing a response under uvicorn is
uvicorn's; a ``socket.send`` under uvicorn is uvicorn's). A stack with no named part
at all is the event loop's own work (``epoll``, callback dispatch, timers).
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from collections import Counter
from pathlib import Path

EVENT_LOOP = "event loop (asyncio or uvloop: epoll, callbacks)"
# (a path fragment of a frame's file, the area it stands for), first match wins
AREAS = (
    ("httpcore/_async/connection_pool.py", "upstream connection pool"),
    ("httpcore/_async/connection.py", "upstream connection pool"),
    ("httpcore/", "upstream read (httpx, httpcore and its h11, socket stream)"),
    ("httpx/", "upstream read (httpx, httpcore and its h11, socket stream)"),
    ("uvicorn/", "HTTP server (uvicorn and its h11: request parsing, response writes)"),
    ("starlette/", "starlette (routing, streaming response)"),
    ("agent_core/server/", "agent-core server (facades, SSE encoding)"),
    ("agent_core_providers/transport/flat_pool.py", "upstream connection pool"),
    ("agent_core_providers/transport/aio_stream.py", "upstream read (httpx, httpcore and its h11, socket stream)"),  # the pool's socket stream
    ("agent_core_providers/transport/watched.py", "upstream read (httpx, httpcore and its h11, socket stream)"),  # the watched read
    ("agent_core_providers/", "provider (openai, SSE reader)"),
    ("agent_core_plugins/", "extensions"),
    ("agent_core_features/", "extensions"),
    ("agent_core/", "engine (agent_core)"),
    ("asyncio/runners.py", EVENT_LOOP),  # under uvloop the loop's own work (C) shows as its caller's line
    ("litellm/", "litellm"),
    ("fastapi/", "fastapi"),
    ("pydantic", "pydantic"),
    ("aiohttp/", "aiohttp"),
)


class Sampler:
    """py-spy recording one process until :meth:`stop`."""

    def __init__(self, pid: int, out: Path, rate: int = 250) -> None:
        self.out = out
        self.log = out.with_suffix(".log")
        with self.log.open("wb") as log:
            self.proc = subprocess.Popen(["py-spy", "record", "--pid", str(pid), "--rate", str(rate), "--format", "raw",
                                          "--output", str(out)], stdout=log, stderr=subprocess.STDOUT,
                                         env={**os.environ, "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}"})

    def stop(self) -> None:
        """Stop sampling; py-spy writes its file on SIGINT."""
        self.proc.send_signal(signal.SIGINT)
        self.proc.wait(timeout=60)
        if not self.out.exists():
            raise RuntimeError(f"py-spy wrote nothing: {self.log.read_text()[-1000:]}")


def _area(frames: list[str]) -> str:
    for frame in reversed(frames):
        for fragment, area in AREAS:
            if fragment in frame:
                return area
    return EVENT_LOOP


def summarize(raw: str, rate: int = 250, top: int = 15) -> str:
    """The samples of a py-spy raw file by area, then the busiest innermost functions."""
    by_area: Counter[str] = Counter()
    by_leaf: Counter[str] = Counter()
    inclusive: Counter[str] = Counter()
    for line in raw.splitlines():
        stack, _, count = line.rpartition(" ")
        if not stack or not count.isdigit():
            continue
        frames = stack.split(";")  # outermost first, each 'function (file:line)'
        by_area[_area(frames)] += int(count)
        by_leaf[frames[-1]] += int(count)  # py-spy already names files from their package down
        for frame in set(frames):
            if "agent_core" in frame:
                inclusive[frame.rsplit(":", 1)[0] + ")"] += int(count)  # the function, whatever line
    total = sum(by_area.values()) or 1
    lines = [f"{total} samples ({rate} a second of CPU), by area:"]
    lines += [f"  {area:<58}{n / total:>6.0%}" for area, n in by_area.most_common()]
    lines.append("innermost functions (self time):")
    lines += [f"  {leaf:<84}{n / total:>6.1%}" for leaf, n in by_leaf.most_common(top)]
    lines.append("agent-core's functions by the samples under them (inclusive; the ones under all left out):")
    lines += [f"  {name:<84}{n / total:>6.1%}" for name, n in inclusive.most_common() if n < 0.95 * total][:top]
    return "\n".join(lines)
