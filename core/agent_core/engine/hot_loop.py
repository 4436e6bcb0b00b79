"""One provider call and its hot loop (steps 4c-4d of :mod:`agent_core.engine.run`).

The hot path is every chunk of a stream: the provider's ``process_chunk`` then each
extension's, in chain order. It is written as one small method, :meth:`HotLoop.feed`, over a
chain prepared once per call, and the driver runs the loop (one :class:`~agent_core.runtime.effects.Pump`
effect per stream), so a chunk costs a few calls, not a resumption of every generator between
the driver and the request run.

What a plugin hands back is frozen only when it is new: a history or state
returned as given (the usual case) costs an identity check; an empty list
costs a length check. Partials are never frozen: they live for one chunk,
never enter a session, and are read once, when the last plugin in the chain
has returned them and :class:`PartialMessage` copies what it needs. So an
extension is handed the plain list of plain dicts the plugin before it made
(the seed's ``List[Dict]``), and a pass-through extension costs one call and
four identity checks.

The stream ends with the closing step (:meth:`HotLoop.close`): the same chain
once more with ``native_chunk=None``, the extensions only, each handed the
partials and finals the one before returned. What an extension held back and
flushes there still passes every extension after it.

A stream may start over (a ``StreamRetry`` between two chunks): the loop then
goes back to the history and state the call began with, as :mod:`.retract` explains.
"""

from __future__ import annotations

from collections.abc import Callable, Generator
from typing import Any

from ..errors import EmptyResponseError, PluginError
from ..plugins.answers import expect_tuple, frozen_list, frozen_map
from ..plugins.hooks import LivePlugin, call_hook
from ..plugins.stubs import provider_streams
from ..runtime.effects import END, Call, CancellationToken, NextItem, OpenIter, Pump
from ..runtime.flight import Flight, RunCancelled
from ..tools.toolkit import twin_calls
from ..values.events import AnsweredEvent, PartialEvent, StreamRetry
from ..values.frozen import _SCALARS, FrozenDict, FrozenList
from ..values.messages import EMPTY_METADATA, PartialMessage
from ..plugins.finals_check import checked_finals
from ..plugins.native_view import viewing
from .blame import PASS_CLOSING, hot_failure, provider_failure
from .retract import retract_event, retrying_event
from .tally import UsageTally

__all__ = ["HotChain", "HotLoop", "call_once", "call_provider", "finalized", "hot_chain", "hot_failure",
           "partial_message", "pump_stream"]

#: a chain prepared for the hot loop: (plugin, its bound ``process_chunk``), provider first. The
#: loop reads only a plugin's ``name`` (to blame it), so a test harness may put its own steps in.
HotChain = tuple[tuple[Any, Callable[..., Any]], ...]

_NONE = FrozenList()  # the empty list a plugin's ``[]`` becomes
_SHAPE = "(partial_messages, final_messages, native_messages, state)"


def hot_chain(provider: LivePlugin, extensions: list[LivePlugin]) -> HotChain:
    """The provider's ``process_chunk`` and those of the extensions that define one, in order."""
    return ((provider, provider.hook("process_chunk")),
            *((e, e.hook("process_chunk")) for e in extensions if "process_chunk" in e.defined))


def _listed(plugin: LivePlugin, hook: str, value: Any, what: str) -> Any:
    if value.__class__ is FrozenList:
        return value
    if value.__class__ is list:
        if not value:
            return _NONE
        flat = _flat(value)
        if flat is not None:
            return flat
    return frozen_list(plugin, hook, value, what)


_frozen_dict, _frozen_list = FrozenDict.from_frozen, FrozenList.from_frozen


def _flat(value: list[Any]) -> FrozenList | None:
    """A list of flat dicts (text finals: role and content), frozen without the general walk; else None.

    The usual finals a plugin returns as a plain list: their values are
    scalars, so each dict is copied as it is into a FrozenDict.
    """
    out = []
    for item in value:
        if item.__class__ is not dict:
            return None
        for v in item.values():
            if v.__class__ not in _SCALARS:
                return None
        out.append(_frozen_dict(item))
    return _frozen_list(out)


def taken(plugin: LivePlugin, out: Any, native: Any, state: Any,
          hook: str = "process_chunk") -> tuple[Any, Any, Any, Any]:
    """Check a hot hook's 4-tuple; freeze only the parts the plugin made new.

    Partials are only checked to be a list (see the module's docstring);
    :func:`partial_message` checks each one when it is built. An answer that is not
    a 4-tuple is never iterated: a generator (a hook written with ``yield`` by
    mistake) would run the plugin's code.
    """
    if out.__class__ is not tuple or len(out) != 4:
        out = expect_tuple(plugin, hook, out, 4, _SHAPE)
    partials, finals, new_native, new_state = out
    if new_native is not native and new_native.__class__ is not FrozenList:
        new_native = frozen_list(plugin, hook, new_native, "native_messages", native)
    if new_state is not state and new_state.__class__ is not FrozenDict:
        new_state = frozen_map(plugin, hook, new_state, "state")
    if finals.__class__ is not FrozenList:
        finals = _listed(plugin, hook, finals, "final_messages")
        if finals:  # new finals are rare: checked in full, where the plugin made them
            checked_finals(plugin, hook, finals)
    if partials.__class__ is not list and partials.__class__ is not FrozenList:
        if not isinstance(partials, (list, tuple)):
            frozen_list(plugin, hook, partials, "partial_messages")  # raises, naming the plugin
    return partials, finals, new_native, new_state


def partial_message(plugin: LivePlugin, p: Any, hook: str = "process_chunk") -> PartialMessage:
    """Build the :class:`PartialMessage` for one returned partial (checked once, here)."""
    if p.__class__ is PartialMessage:
        return p  # type: ignore[no-any-return]
    try:
        get = p.get
        return PartialMessage(get("role") or "assistant", get("content", ""), get("metadata"))
    except (TypeError, ValueError, AttributeError) as exc:
        raise PluginError(plugin.name, hook, exc, detail=f"returned an invalid partial {p!r}") from exc


_NOT_FOUR = ()  # what :meth:`HotLoop.feed` unpacks in place of a hook's answer that is not a tuple
#: what :meth:`HotLoop.feed` returns for a chunk with nothing to show (a list: see ``effects.Pump``)
_NO_EVENTS: list[Any] = []


class HotLoop:
    """One open stream: the chain prepared once, and what :meth:`feed` carries from chunk to chunk.

    ``native`` and ``state`` are the provider's history and state after the
    last chunk; ``seen`` the finals produced so far; ``chunks`` how many were fed.
    ``start`` is the history and state the call began with, which a retry goes
    back to; ``billed`` (the request's :class:`~.tally.UsageTally`) takes
    the usage of attempts a retry threw away.
    """

    __slots__ = ("provider", "exts", "native", "state", "seen", "chunks", "request_id", "iteration", "token",
                 "start", "billed")

    def __init__(self, chain: HotChain, native: Any, state: Any, *, request_id: str = "", iteration: int = 0,
                 token: CancellationToken | None = None, billed: UsageTally | None = None) -> None:
        self.provider = chain[0]
        self.exts = chain[1:]
        self.native = native
        self.state = state
        self.start = (native, state)
        self.billed = billed
        self.seen: list[Any] = []
        self.chunks = 0
        self.request_id = request_id  # what the events carry
        self.iteration = iteration
        self.token = token if token is not None else CancellationToken()  # ``cancelled`` is read per chunk

    def feed(self, chunk: Any) -> Any:
        """Run one native chunk through the chain (provider first, each plugin seeing what the one before returned).

        New finals and native history are frozen; partials become events, an invalid one blamed on the
        last plugin that changed them. Returns a tuple of one event (the usual chunk) or a list of any number.
        Raises RunCancelled (the request was cancelled), PluginError (a hook raised or returned a bad shape;
        it names plugin and hook), and a hook's LLMError or ProviderRequestCancelled as they are.
        """
        if self.token.cancelled:
            raise RunCancelled
        if chunk.__class__ is StreamRetry:
            return self.retract(chunk)
        self.chunks += 1
        (owner, fn), native, state = self.provider, self.native, self.state
        try:
            out = fn(chunk, native, state)
        except Exception as exc:
            raise hot_failure(owner, exc)
        # the usual chunk, checked inline; anything else goes to taken(), which names the shape it got
        try:
            p, f, n, s = out if out.__class__ is tuple else _NOT_FOUR
        except ValueError:
            p = None
        if (p.__class__ is list and n is native and (s is state or s.__class__ is FrozenDict)
                and f.__class__ is list and not f):
            partials, finals, state = p, _NONE, s
        else:
            partials, finals, native, state = taken(owner, out, native, state)
        for plugin, fn in self.exts:
            try:
                out = fn(chunk, partials, finals, native, state)
            except Exception as exc:
                raise hot_failure(plugin, exc)
            try:
                p, f, n, s = out if out.__class__ is tuple else _NOT_FOUR
            except ValueError:
                p = None
            if p is partials and f is finals and n is native and s is state:
                continue  # a pass-through extension: nothing new to check
            owner = plugin if p is not partials else owner  # whose partials an invalid one is blamed on
            partials, finals, native, state = taken(plugin, out, native, state)
        self.native, self.state = native, state
        if finals:
            self.seen.extend(finals)
        if not partials:
            return _NO_EVENTS
        if len(partials) == 1:
            (p,) = partials
            if p.__class__ is dict or p.__class__ is FrozenDict:  # partial_message, inline for the usual chunk
                get = p.get
                try:
                    message = PartialMessage(get("role") or "assistant", get("content", ""),
                                             get("metadata") or EMPTY_METADATA)
                except (TypeError, ValueError) as exc:
                    raise PluginError(owner.name, "process_chunk", exc,
                                      detail=f"returned an invalid partial {p!r}") from exc
                return (PartialEvent(self.request_id, message, self.iteration),)
            return (PartialEvent(self.request_id, partial_message(owner, p), self.iteration),)
        return [PartialEvent(self.request_id, partial_message(owner, p), self.iteration) for p in partials]

    def retract(self, retry: StreamRetry) -> list[Any]:
        """The stream starts over (:mod:`.retract`): back to the call's first history and state.

        A retry before any output (``voids`` false) forgets nothing; both say a retry is coming.
        """
        events: list[Any] = []
        if retry.voids:
            self.native, self.state = self.start
            self.seen = []
            events.append(retract_event(retry, self.request_id, self.iteration, self.billed))
        events.append(retrying_event(retry, self.request_id, self.iteration))
        return events

    def close(self, partials: Any, finals: Any, native: Any, state: Any) -> tuple[Any, FrozenList, Any, Any, Any, str]:
        """The closing step: each extension's ``process_chunk(None, partials, finals, native, state)``, once, in order.

        It is one more turn of the chain, for the end of the stream: what an
        extension returns is what the next one is handed, partials included.
        So text an extension held back and releases here (a tag it was unsure
        of, a buffer) goes through every extension after it, as its partials
        did during the stream, and nothing skips one that masks or reorders
        text (``redact``); the partials of the whole call then join to its
        final text. ``partials`` starts as the ``call_api`` answer's partials
        (none after a stream), ``finals`` as what ``finalize`` and ``call_api``
        returned that no extension has seen. Runs once per provider call, so
        it is written for clarity, not speed.

        Returns:
            ``(partials, finals, native, state, owner, hook)``: the partials the
            last extension returned, to be shown, and the plugin and hook to blame
            for an invalid one (the last that changed them).

        Raises:
            PluginError: a hook raised or returned a bad shape (names plugin and hook);
                a typed error (LLMError, ConfigError, ...) passes as it is.
        """
        owner, hook = self.provider[0], "call_api"
        for plugin, fn in self.exts:
            try:
                out = fn(None, partials, finals, native, state)
            except Exception as exc:
                raise hot_failure(plugin, exc, PASS_CLOSING, finals=finals, provider=self.provider[0])
            if out.__class__ is not tuple or len(out) != 4 or out[0] is not partials:
                owner, hook = plugin, "process_chunk"
            partials, finals, native, state = taken(plugin, out, native, state)
        return partials, finals, native, state, owner, hook


def call_provider(
    provider: LivePlugin, exts: list[LivePlugin], native: Any, state: Any, *,
    stream: bool, request_id: str, flight: Flight, iteration: int, ctx: Any, billed: UsageTally | None = None,
    on_first: Callable[[], None] | None = None,
) -> Generator[Any, Any, tuple[FrozenList, FrozenList, FrozenDict]]:
    """One provider call up to the extensions' closing ``process_chunk(None, ...)``.

    Streams when asked and the provider streams (it says so, see
    :func:`~agent_core.plugins.stubs.provider_streams`), else ``call_api``
    (:func:`call_once`); then the provider's ``finalize`` (:func:`finalized`);
    then the closing step (:meth:`HotLoop.close`), whose partials are yielded
    as events. One call, one request: a stream that yields nothing is never
    followed by ``call_api`` (that would be a second, billable request).
    A stream that starts over (:meth:`HotLoop.retract`) adds the broken
    attempt's usage to ``billed``; ``on_first`` runs at a stream's first chunk. Returns ``(finals, native, state)``.

    Raises:
        EmptyResponseError: the stream sent no chunk and ``finalize`` no answer.
        RunCancelled, PluginError, LLMError, ...: see :func:`provider_failure`.
    """
    spec = provider.spec
    streamed = (stream and provider_streams(spec)) or not ("call_api" in spec.defined or "acall_api" in spec.defined)
    run = HotLoop(hot_chain(provider, exts), native, state, request_id=request_id, iteration=iteration,
                  token=flight.token, billed=billed)
    opening: Any = _NONE  # the partials of a call_api answer: they enter the closing step like any other
    unseen: list[Any] = []
    if streamed:
        announce = bool(ctx["config"].get("announce_answer"))
        yield from pump_stream(run, native, state, flight, announce=announce, on_first=on_first)
        if flight.cancelled:  # a stream that ended quietly once cancel_request had stopped it
            raise RunCancelled
        native, state = run.native, run.state
    else:
        opening, finals, native, state = yield from call_once(provider, native, state, request_id, flight)
        unseen.extend(finals)
    finals, native, state = finalized(provider, native, state, ctx)
    unseen.extend(finals)
    if streamed and not run.chunks and not run.seen and not unseen:
        raise EmptyResponseError(
            "the stream ended without sending a single chunk, and finalize produced no answer; "
            "the call was not repeated (a provider whose stream_api is a placeholder declares "
            "streams = False and answers through call_api)",
            provider=provider.name,
        )
    with viewing(provider, state):  # rewrite_finals reads the provider's natives in the core shape
        partials, pending, native, state, owner, hook = run.close(opening, FrozenList.from_frozen(unseen), native,
                                                                  state)
    for p in partials:
        yield PartialEvent(request_id, partial_message(owner, p, hook), iteration)
    return FrozenList.from_frozen([*run.seen, *pending]), native, state


def pump_stream(run: HotLoop, native: Any, state: Any, flight: Flight, *, announce: bool = False,
                on_first: Callable[[], None] | None = None) -> Generator[Any, Any, None]:
    """Open the provider's stream and pump every chunk through ``run``'s :meth:`HotLoop.feed`.

    ``announce`` (an :class:`AnsweredEvent` before its events) or ``on_first`` (called): the first
    chunk is pulled on its own, so the per-chunk loop stays as it is.
    """
    provider = run.provider[0]
    sync, asyn = twin_calls(provider, "stream_api", "astream_api", native, state, request_id=run.request_id)
    try:
        handle = yield OpenIter(sync, asyn, label=f"provider {provider.name!r} stream")
        if announce or on_first is not None:
            first = yield NextItem(handle)
            while first.__class__ is StreamRetry:  # a retry before any answer: not an answer yet
                yield from run.feed(first)
                first = yield NextItem(handle)
            if first is END:
                return
            if on_first is not None:
                on_first()
            if announce:
                yield AnsweredEvent(run.request_id, run.iteration)
            yield from run.feed(first)
        yield Pump(handle, run.feed)
    except Exception as exc:
        raise provider_failure(flight, provider, "stream_api", exc) from exc


def call_once(
    provider: LivePlugin, native: Any, state: Any, request_id: str, flight: Flight,
) -> Generator[Any, Any, tuple[Any, FrozenList, Any, Any]]:
    """``call_api``: the whole answer at once, as ``(partials, finals, native, state)`` checked like a chunk's."""
    sync, asyn = twin_calls(provider, "call_api", "acall_api", native, state, request_id=request_id)
    try:
        out = yield Call(sync, asyn, label=f"provider {provider.name!r} call_api")
    except Exception as exc:
        raise provider_failure(flight, provider, "call_api", exc) from exc
    if flight.cancelled:
        raise RunCancelled
    return taken(provider, out, native, state, hook="call_api")


def finalized(provider: LivePlugin, native: Any, state: Any, ctx: Any) -> tuple[FrozenList, Any, Any]:
    """The provider's ``finalize(native, state, context=...)``, checked and frozen: ``(finals, native, state)``."""
    out = expect_tuple(provider, "finalize", call_hook(provider, "finalize", native, state, context=ctx), 3,
                       "(final_messages, native_messages, state)")
    return (frozen_list(provider, "finalize", out[0], "final_messages"),
            frozen_list(provider, "finalize", out[1], "native_messages", native),
            frozen_map(provider, "finalize", out[2], "state"))
