"""Drive provider and extension hooks in the order the engine does, for one provider call.

Until (and besides) the engine, this is how the provider tests exercise the
whole hook chain: init -> to_native_messages -> initialize_request ->
stream_api + process_chunk (or call_api) -> finalize -> closing
process_chunk(None) -> from_native_messages. A ``StreamRetry`` in the stream
sets the history, state and finals back to the call's start, as the engine
does, and stays in ``Turn.partials`` where it came. Every value passed between
hooks is frozen, as the engine does, so a hook that mutates its input fails.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from agent_core import StreamRetry, freeze


@dataclass
class Turn:
    partials: list[Any]
    native_finals: list[Any]
    finals: list[Any]  # core message dicts
    native: list[Any]  # full native history after the call
    state: Any
    chunks: int


def _hook(plugin: Any, name: str) -> Any:
    return getattr(plugin, name, None)


def prepare(
    provider: Any,
    extensions: list[Any],
    messages: list[dict],
    config: dict,
    *,
    history: list | None = None,
    stream: bool = True,
    request_id: str = "req-1",
) -> tuple[Any, Any, dict]:
    context = freeze({"request_id": request_id, "stream": stream, "config": config, "iteration": 0})
    messages = freeze(messages)
    state = freeze(provider.init(freeze(config)))
    for ext in extensions:
        if _hook(ext, "init"):
            state = freeze(ext.init(state["config"], state))
    native = freeze(provider.to_native_messages(messages, state, context=context))
    for ext in extensions:
        if _hook(ext, "to_native_messages"):
            native = freeze(ext.to_native_messages(messages, native, state, context=context))
    native = freeze([*(history or []), *native])
    native, state = provider.initialize_request(native, state, request_id=request_id, context=context)
    native, state = freeze(native), freeze(state)
    for ext in extensions:
        if _hook(ext, "initialize_request"):
            native, state = map(freeze, ext.initialize_request(native, state, context=context))
    return native, state, context


def on_chunk(provider: Any, extensions: list[Any], chunk: Any, native: Any, state: Any) -> tuple:
    chunk = freeze(chunk)
    partials, finals, native, state = map(freeze, provider.process_chunk(chunk, native, state))
    for ext in extensions:
        if _hook(ext, "process_chunk"):
            partials, finals, native, state = map(freeze, ext.process_chunk(chunk, partials, finals, native, state))
    return partials, finals, native, state


def close(
    provider: Any,
    extensions: list[Any],
    finals: Any,
    native: Any,
    state: Any,
    context: Any,
    partials: list,
    chunks: int,
) -> Turn:
    for ext in extensions:
        if _hook(ext, "process_chunk"):
            _, finals, native, state = map(freeze, ext.process_chunk(None, [], finals, native, state))
    for ext in extensions:
        if _hook(ext, "finalize"):
            finals, native, state = map(freeze, ext.finalize(finals, native, state, context=context))
    core = freeze(provider.from_native_messages(finals, state, context=context))
    for ext in extensions:
        if _hook(ext, "from_native_messages"):
            core = freeze(ext.from_native_messages(finals, core, state, context=context))
    return Turn(partials, list(finals), list(core), list(native), state, chunks)


def run_turn(
    provider: Any,
    extensions: list[Any],
    messages: list[dict],
    config: dict,
    *,
    stream: bool = True,
    history: list | None = None,
    request_id: str = "req-1",
) -> Turn:
    """One provider call through all hooks (sync API)."""
    native, state, context = prepare(
        provider, extensions, messages, config, history=history, stream=stream, request_id=request_id
    )
    partials: list[Any] = []
    chunks = 0
    if stream:
        finals: Any = []
        start = (native, state)
        for chunk in provider.stream_api(native, state, request_id=request_id):
            if isinstance(chunk, StreamRetry):  # as the engine does: back to the call's start
                partials.append(chunk)  # kept in place, so a test sees where the retry came
                (native, state), finals = start, []
                continue
            chunks += 1
            p, f, native, state = on_chunk(provider, extensions, chunk, native, state)
            partials.extend(p)
            finals = [*finals, *f]
        f, native, state = map(freeze, provider.finalize(native, state, context=context))
        finals = freeze([*finals, *f])
    else:
        _, finals, native, state = map(freeze, provider.call_api(native, state, request_id=request_id))
        f, native, state = map(freeze, provider.finalize(native, state, context=context))
        finals = freeze([*finals, *f])
    return close(provider, extensions, finals, native, state, context, partials, chunks)


async def arun_turn(
    provider: Any,
    extensions: list[Any],
    messages: list[dict],
    config: dict,
    *,
    stream: bool = True,
    history: list | None = None,
    request_id: str = "req-1",
) -> Turn:
    """One provider call through all hooks (async API)."""
    native, state, context = prepare(
        provider, extensions, messages, config, history=history, stream=stream, request_id=request_id
    )
    partials: list[Any] = []
    chunks = 0
    if stream:
        finals: Any = []
        start = (native, state)
        async for chunk in provider.astream_api(native, state, request_id=request_id):
            if isinstance(chunk, StreamRetry):  # as the engine does: back to the call's start
                partials.append(chunk)  # kept in place, so a test sees where the retry came
                (native, state), finals = start, []
                continue
            chunks += 1
            p, f, native, state = on_chunk(provider, extensions, chunk, native, state)
            partials.extend(p)
            finals = [*finals, *f]
        f, native, state = map(freeze, provider.finalize(native, state, context=context))
        finals = freeze([*finals, *f])
    else:
        _, finals, native, state = map(freeze, await provider.acall_api(native, state, request_id=request_id))
        f, native, state = map(freeze, provider.finalize(native, state, context=context))
        finals = freeze([*finals, *f])
    return close(provider, extensions, finals, native, state, context, partials, chunks)
