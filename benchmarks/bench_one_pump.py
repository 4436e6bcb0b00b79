"""One pump per stream, against the provider's stream as two async generators: CPU a paced chunk.

    .venv/bin/python benchmarks/bench_one_pump.py                  # 10, 100 and 400 streams, 10 rounds
    .venv/bin/python benchmarks/bench_one_pump.py --streams 100 --rounds 6
    .venv/bin/python benchmarks/bench_one_pump.py --quick          # a smoke run
    .venv/bin/python benchmarks/bench_one_pump.py --instructions 400  # instructions a paced chunk, callgrind

The OpenAI provider's ``astream_api`` hands the engine a ``FlowStream``, which the engine's
driver pumps itself: one await per network read, and the provider's step and the engine's
hot loop in one loop. Before, it was an async generator around the driver of the provider's
flow, two more generators that every read resumed. This runs both ways in one process on
one upstream, switched round by round (the order alternating), as ``bench_stream_task.py``
does, for two paths: the app ``agent-core serve`` builds, called in-process, and the library
(``AgentCore.astream_request``). Each figure is ``bench_setup.py``'s paced measure: N streams
of 108 tokens less N of 8, per extra chunk, the upstream pausing 20 ms between tokens.
``--instructions N`` counts instead each way's instructions a paced chunk on the library
path, under callgrind (see ``bench_stream_task.py``).
"""

from __future__ import annotations

import sys
from contextlib import aclosing
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_setup import _app, _app_call, _upstream
from bench_stream_task import ab_args, ab_modes, alternate, run_loop


def _switched_provider() -> tuple[type, dict[str, Any]]:
    """The OpenAI provider, whose stream is one pump or two generators as ``way["two"]`` says (read per call).

    ``way`` also counts the streams each way made, so a switch that never took is found.
    """
    from agent_core.plugin_kit import drive_async
    from agent_core_providers.openai import OpenAIProvider

    way: dict[str, Any] = {"two": False, "made": {False: 0, True: 0}}

    class Switched(OpenAIProvider):  # type: ignore[misc]
        def astream_api(self, native_messages: Any, state: Any, *, request_id: str | None = None) -> Any:
            way["made"][way["two"]] += 1
            if way["two"]:
                return self._two_generators(state, request_id)
            return super().astream_api(native_messages, state, request_id=request_id)

        async def _two_generators(self, state: Any, request_id: str | None) -> Any:
            # the provider's stream as it was: its hook an async generator around the flow's own driver
            call = self._http_call(state, stream=True)
            async with self._exchange(call, request_id, self._async_client_for(state["config"])) as exchange:
                async with aclosing(drive_async(self._stream_flow(exchange))) as events:
                    async for event in events:
                        yield event

    return Switched, way


def _library_call(core: Any, url: str) -> Any:
    from agent_core import Message, Session

    session = Session("bench", [Message("user", "hi")])

    async def one(tokens: int) -> None:
        config = {"provider": "openai", "base_url": url + "/v1", "api_key": "k", "max_retries": 0,
                  "model": "paced", "max_tokens": tokens}
        last = None
        async for last in core.astream_request(session, config):  # noqa: B007 - the last event is the answer
            pass
        if type(last).__name__ != "DoneEvent":
            raise SystemExit(f"the library's stream ended with {last!r}")

    return one


def main(argv: list[str] | None = None) -> int:
    args, counts = ab_args(__doc__, argv)
    from agent_core import AgentCore

    provider, way = _switched_provider()

    def to(two: bool) -> Any:
        return lambda: way.__setitem__("two", two)

    ways = {"one pump": to(False), "two generators": to(True)}
    if ab_modes(__file__, args, ways, lambda url: _library_call(AgentCore.discover(providers=[provider]), url)):
        if args.one_stream and not way["made"][args.one_stream == "two generators"]:
            raise SystemExit(f"the way {args.one_stream!r} made no stream")
        return 0
    with _upstream(args.pace_ms) as url:
        app = _app(url, AgentCore.discover(providers=[provider]))
        library = _library_call(AgentCore.discover(providers=[provider]), url)
        served = _app_call(app, "openai/paced", stream=True)

        async def run() -> None:
            print("the app:", flush=True)
            await alternate(served, counts, args.rounds, ways)
            print("the library:", flush=True)
            await alternate(library, counts, args.rounds, ways)

        run_loop(run)
    if not all(way["made"].values()):
        raise SystemExit(f"a way never ran: streams made {way['made']}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
