"""Test helpers: a provider that replays a script of model turns.

``scripted_provider`` builds a provider class whose replies you write in
advance, including tool calls, so a test (yours or ours) can drive the whole
pipeline, the tool loop included, without a network::

    Provider = scripted_provider(
        reply(tool_calls=[tool_call("add", {"a": 1, "b": 2})]),
        reply("The sum is 3.", usage={"input_tokens": 12, "output_tokens": 5}),
    )
    core = AgentCore(providers=[Provider], tools=[Calculator])

The provider is stateless like every plugin: which turn it plays is the
number of assistant messages already in the native history. Text streams one
word per chunk; tool calls arrive in one chunk at the end. Its native format
is the OpenAI Chat Completions message shape, and it converts tool calls and
tool results itself, so it needs no extension.

The same provider is installed under the name ``scripted`` with its turns in
config ``script`` (:data:`ScriptProvider`), so ``agent-core run --provider
scripted -c 'script=[...]'`` shows a whole tool loop with no model and no
network: each turn is a text, or ``{"content", "tool_calls": [{"name",
"arguments", "id"}], "usage"}``.
"""

from __future__ import annotations

import inspect
import json
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from .. import thaw
from ..errors import ConfigError

__all__ = ["ScriptProvider", "ScriptedTurn", "function_provider", "parse_script", "reply", "scripted_provider",
           "tool_call"]


@dataclass(frozen=True)
class ScriptedTurn:
    content: str = ""
    tool_calls: tuple[dict[str, Any], ...] = ()
    usage: Mapping[str, Any] | None = None
    metadata: Mapping[str, Any] = field(default_factory=dict)


def tool_call(name: str, arguments: Any = None, *, id: str | None = None) -> dict[str, Any]:
    """One tool call in the core (OpenAI) shape; ``arguments`` may be a dict or raw text."""
    args = arguments if isinstance(arguments, str) else json.dumps(arguments or {}, sort_keys=True)
    return {"id": id or f"call_{name}", "type": "function", "function": {"name": name, "arguments": args}}


def reply(
    content: str = "",
    *,
    tool_calls: Sequence[dict[str, Any]] = (),
    usage: Mapping[str, Any] | None = None,
    metadata: Mapping[str, Any] | None = None,
) -> ScriptedTurn:
    """One scripted model turn.

    Calls in one turn that share an id (two ``tool_call("add", ...)``, each ``call_add``) get
    ``_2``, ``_3``, ... after it, as a real API gives each call its own id, so each result
    answers its own call.
    """
    seen: dict[Any, int] = {}
    calls = []
    for call in tool_calls:
        cid = call.get("id") if isinstance(call, Mapping) else None
        seen[cid] = seen.get(cid, 0) + 1
        calls.append(call if cid is None or seen[cid] == 1 else {**call, "id": f"{cid}_{seen[cid]}"})
    return ScriptedTurn(content, tuple(calls), usage, dict(metadata or {}))


def _turn_index(native_messages: Sequence[Mapping[str, Any]]) -> int:
    return sum(1 for m in native_messages if m.get("role") == "assistant")


def parse_script(raw: Any) -> tuple[ScriptedTurn, ...]:
    """Config ``script`` as turns: each a text, or a mapping with content, tool_calls and usage.

    Raises:
        ConfigError: naming ``script`` and the turn that cannot be read.
    """
    if raw is None:
        return ()
    if not isinstance(raw, (list, tuple)):
        raise ConfigError(f"script must be a list of turns, got {type(raw).__name__}", key="script")
    turns = []
    for i, item in enumerate(raw):
        if isinstance(item, str):
            turns.append(reply(item))
            continue
        calls = item.get("tool_calls") if isinstance(item, Mapping) else None
        if not isinstance(item, Mapping) or not isinstance(item.get("content", ""), str) or not isinstance(
            calls or [], (list, tuple)
        ) or not all(isinstance(c, Mapping) and isinstance(c.get("name"), str) for c in calls or []):
            raise ConfigError(
                f"script[{i}] must be a text or {{'content': text, 'tool_calls': [{{'name': ..., 'arguments': "
                f"{{...}}}}], 'usage': {{...}}}}, got {thaw(item)!r}", key="script",
            )
        usage = item.get("usage")
        turns.append(reply(
            item.get("content", ""), usage=usage if isinstance(usage, Mapping) else None,
            tool_calls=[tool_call(c["name"], c.get("arguments"), id=c.get("id") or f"call_{i}_{j}")
                        for j, c in enumerate(calls or [])],
        ))
    return tuple(turns)


def scripted_provider(
    *turns: ScriptedTurn | str, name: str = "scripted", tags: Sequence[str] = (), from_config: bool = False
) -> type:
    """Build a provider class that plays ``turns`` in order (strings are plain replies).

    Past the end of the script it answers ``"(script exhausted)"``. With
    ``from_config`` the turns come from each request's config ``script``.
    """
    fixed = tuple(reply(t) if isinstance(t, str) else t for t in turns)
    cls = type(f"ScriptedProvider_{name}", (_Scripted,), {
        "name": name, "script": fixed, "extra_tags": tuple(tags), "from_config": from_config,
    })
    cls.__qualname__ = cls.__name__
    return cls


def _native_final(turn: ScriptedTurn) -> dict[str, Any]:
    """The assistant message a turn answers with, in the OpenAI Chat Completions shape."""
    msg: dict[str, Any] = {"role": "assistant", "content": turn.content}
    if turn.tool_calls:
        msg["tool_calls"] = [dict(c) for c in turn.tool_calls]
    if turn.usage:
        msg["usage"] = dict(turn.usage)
    if turn.metadata:
        msg["metadata"] = dict(turn.metadata)
    return msg


def _chunks(turn: ScriptedTurn) -> Iterator[dict[str, Any]]:
    """A turn as the stream plays it: one word per chunk, then the whole final."""
    words = turn.content.split(" ") if turn.content else []
    for i, w in enumerate(words):
        yield {"delta": w if i == 0 else " " + w}
    yield {"end": True, "final": _native_final(turn)}


class _Scripted:
    """What :func:`scripted_provider` builds on: a provider playing ``script`` (or config ``script``).

    Subclasses set ``name``, ``script``, ``extra_tags`` and ``from_config``.
    Which turn it plays is the number of assistant messages in the native
    history, so the provider keeps nothing between requests.
    """

    version = "1.0.0"
    streams = True  # stream_api sends the reply word by word; call_api answers the same turn at once
    name = "scripted"
    script: tuple[ScriptedTurn, ...] = ()
    extra_tags: tuple[str, ...] = ()
    from_config = False

    def _turn_for(self, native_messages: Sequence[Mapping[str, Any]], state: Any) -> ScriptedTurn:
        script = parse_script(state["config"].get("script")) if self.from_config else self.script
        i = _turn_index(native_messages)
        return script[i] if i < len(script) else reply("(script exhausted)")

    def get_models(self, config: Any) -> list[dict[str, Any]]:
        return [{"id": "scripted-1"}]

    def get_tags(self, config: Any, models: Any) -> list[str]:
        return ["streaming", "tools", *self.extra_tags]

    def init(self, config: Any) -> dict[str, Any]:
        if self.from_config:
            parse_script(config.get("script"))  # a bad script fails before anything runs
        return {"config": config, "answered": False}

    def to_native_messages(self, messages: Any, state: Any, *, context: Any = None) -> list[dict[str, Any]]:
        out = []
        for m in messages:
            n: dict[str, Any] = {"role": m["role"], "content": m["content"]}
            meta = m.get("metadata") or {}
            if meta.get("tool_calls"):
                n["tool_calls"] = meta["tool_calls"]
            if m["role"] == "tool":
                n["tool_call_id"] = meta.get("tool_call_id")
            out.append(n)
        return out

    def from_native_messages(self, native_messages: Any, state: Any, *, context: Any = None) -> list[dict[str, Any]]:
        out = []
        for n in native_messages:
            meta = dict(n.get("metadata") or {})
            if n.get("tool_calls"):
                meta["tool_calls"] = n["tool_calls"]
            if n.get("usage"):
                meta["usage"] = n["usage"]
            out.append({"role": n["role"], "content": n.get("content", ""), "metadata": meta})
        return out

    def initialize_request(
        self, native_messages: Any, state: Any, *, request_id: str | None = None, context: Any = None
    ) -> tuple[Any, Any]:
        return native_messages, {**state, "answered": False}

    def stream_api(self, native_messages: Any, state: Any, *, request_id: str | None = None) -> Iterator[Any]:
        yield from _chunks(self._turn_for(native_messages, state))

    def process_chunk(self, chunk: Any, native_messages: Any, state: Any) -> tuple[Any, Any, Any, Any]:
        if "delta" in chunk:
            return [{"role": "assistant", "content": chunk["delta"]}], [], native_messages, state
        if "final" in chunk:  # the turn is decided once, when the stream starts: finalize uses it
            return [], [], native_messages, {**state, "final": chunk["final"]}
        return [], [], native_messages, state

    def finalize(self, native_messages: Any, state: Any, *, context: Any = None) -> tuple[Any, Any, Any]:
        # After a stream the final is assembled here; after call_api it was
        # already returned, so there is nothing left.
        if state["answered"]:
            return [], native_messages, state
        final = dict(state["final"]) if state.get("final") else _native_final(self._turn_for(native_messages, state))
        return [final], [*native_messages, final], {**state, "answered": True}

    def call_api(self, native_messages: Any, state: Any, *, request_id: str | None = None) -> tuple[Any, Any, Any, Any]:
        final = _native_final(self._turn_for(native_messages, state))
        return [], [final], [*native_messages, final], {**state, "answered": True}


class ScriptProvider(_Scripted):
    """``scripted``: the scripted provider, installed by entry point, its turns in config ``script``."""

    name = "scripted"
    extra_tags = ("provider:scripted",)
    from_config = True

    def get_config_schema(self) -> dict[str, Any]:
        return {"script": {"type": "array", "default": [],
                           "description": "Model turns to play: texts, or {content, tool_calls, usage}."},
                "model": {"type": "string", "default": "scripted-1", "description": "Reported model id."}}


def function_provider(fn: Callable[[list[dict[str, Any]]], Any], *, name: str = "function",
                      tags: Sequence[str] = ()) -> type:
    """Build a provider whose every turn is computed by ``fn`` from the messages it is sent.

    Where :func:`scripted_provider` plays turns written in advance, ``fn`` answers what it
    is asked: it gets the conversation as plain dicts in the OpenAI Chat Completions shape
    (``role``, ``content``, ``tool_calls``, ``tool_call_id``) and returns a text or a
    :func:`reply` (tool calls and usage included). An ``async def`` works too; the provider
    then has only the async hooks, which the engine also runs for a sync request. It
    streams word by word like the scripted provider, and answers at once without
    streaming; ``fn`` is called once per model turn either way.
    """
    if not callable(fn):
        raise ConfigError(f"function_provider needs a callable, got {type(fn).__name__}")
    base = _AsyncFunction if inspect.iscoroutinefunction(fn) else _Function
    cls = type(f"FunctionProvider_{name}", (base,), {"name": name, "fn": staticmethod(fn), "extra_tags": tuple(tags)})
    cls.__qualname__ = cls.__name__
    return cls


def _as_turn(answer: Any, fn: Any) -> ScriptedTurn:
    if isinstance(answer, str):
        return reply(answer)
    if isinstance(answer, ScriptedTurn):
        return answer
    raise TypeError(f"the function_provider function {getattr(fn, '__name__', fn)!r} must return a text or a "
                    f"reply(...), got {type(answer).__name__}")


class _Function(_Scripted):
    """:func:`function_provider` with a plain function."""

    fn: Callable[[list[dict[str, Any]]], Any]

    def _turn_for(self, native_messages: Sequence[Mapping[str, Any]], state: Any) -> ScriptedTurn:
        return _as_turn(self.fn([dict(thaw(m)) for m in native_messages]), self.fn)


class _AsyncFunction(_Scripted):
    """:func:`function_provider` with an ``async def``: the async twins only."""

    fn: Callable[[list[dict[str, Any]]], Any]
    stream_api = None  # type: ignore[assignment]
    call_api = None  # type: ignore[assignment]

    async def _aturn_for(self, native_messages: Sequence[Mapping[str, Any]]) -> ScriptedTurn:
        return _as_turn(await self.fn([dict(thaw(m)) for m in native_messages]), self.fn)

    async def astream_api(self, native_messages: Any, state: Any, *, request_id: str | None = None) -> Any:
        for chunk in _chunks(await self._aturn_for(native_messages)):
            yield chunk

    async def acall_api(self, native_messages: Any, state: Any, *,
                        request_id: str | None = None) -> tuple[Any, Any, Any, Any]:
        final = _native_final(await self._aturn_for(native_messages))
        return [], [final], [*native_messages, final], {**state, "answered": True}
