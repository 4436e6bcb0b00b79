"""``check_plugin``'s checks of what a plugin does across a request, beyond one hook on one input.

Two mistakes pass every single-hook rule and still break a request:

* **A provider that gathers one call's answer in a state that lasts the request.**
  ``init`` runs once per request, ``initialize_request`` before every provider
  call of its tool loop. A provider that empties its per-call keys only in ``init``
  starts the second call with the first call's text and tool calls, and its final
  repeats them. Checked by running the same answer as two calls of one request,
  each started with ``initialize_request`` on the state the last one left: the
  finals must come out the same twice (ids and times aside, as a snapshot renders them).
* **UI elements an application cannot read**, returned by ``get_ui_elements``
  (a declared ``ui_elements`` is checked when the plugin registers). Checked with
  the engine's own reading, so the sentence is the one ``get_ui_schema`` gives.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Iterable
from typing import Any

from .. import freeze, thaw
from ..errors import PluginContractError
from ..host_kit import ui_element_fault
from .harness import PluginHarness
from .render import normalise

__all__ = ["same_finals_twice", "ui_elements_read"]

_ASKED = [{"role": "user", "content": "hello"}]


def _one_call(h: PluginHarness, native: Any, state: Any, chunks_of: Callable[[Any, Any], Iterable[Any]]) -> Any:
    """One provider call as the engine makes it: ``initialize_request``, the chunks, ``finalize``."""
    nat, state = h._prepare(native, state)
    finals: list[Any] = []
    for chunk in chunks_of(nat, state):
        _, f, nat, state = h._hot(h._tuple("process_chunk", h.call("process_chunk", chunk, nat, state), 4,
                                           "(partial_messages, final_messages, native_messages, state)"))
        finals.extend(f)
    f, _, state = h._finalize_raw(nat, state)
    return [*finals, *f], state


def same_finals_twice(h: PluginHarness, chunks_of: Callable[[Any, Any], Iterable[Any]]) -> None:
    """The same answer, given as two provider calls of one request, gives the same finals both times.

    ``chunks_of(native, state)`` gives one call's native chunks (the samples', or
    what ``stream_api`` makes of a canned body).

    Raises:
        PluginContractError: naming the provider, ``initialize_request`` and the fix.
    """
    native = freeze(h.to_native(_ASKED))
    first, state = _one_call(h, native, h._state, chunks_of)
    second, _ = _one_call(h, native, state, chunks_of)
    if normalise(thaw(first)) != normalise(thaw(second)):  # ids and times a provider makes afresh may differ
        raise PluginContractError(h.name, "initialize_request", (
            "the same answer, given as the second provider call of a request, made other finals than as the first: "
            "the state init returns lasts the whole request (every call of its tool loop), so what one call gathers "
            "(its text, its tool calls) is carried into the next, whose final repeats it and asks for the same tools "
            "again; empty those keys in initialize_request, which runs before every provider call"),
            {"first call's finals": thaw(first), "second call's finals": thaw(second)})


def _ui_arguments(fn: Callable[..., Any], config: Any, context: Any) -> list[Any]:
    """The arguments for ``get_ui_elements`` in the shape it takes: the contract's, or a legacy one the engine adapts.

    ``(config, context=None)``; legacy: ``()``, ``(config)``, ``(config, tags, models)``,
    ``(config, tags, models, context)``.
    """
    params = inspect.signature(fn).parameters.values()
    if any(p.kind is p.VAR_POSITIONAL for p in params):
        return [config, context]
    positional = [p for p in params if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    shapes = {0: [], 1: [config], 2: [config, context], 3: [config, [], []]}
    return shapes.get(len(positional), [config, [], [], context])


def ui_elements_read(h: PluginHarness) -> None:
    """What ``get_ui_elements`` returns, read as an application's ``get_ui_schema`` reads it.

    Raises:
        PluginContractError: naming the plugin, ``get_ui_elements``, the element and its fault.
    """
    fn = getattr(h.plugin, "get_ui_elements", None)
    if not callable(fn):
        return
    context = freeze({"tags": [], "models": [], "available_tools": [], "tools": []})
    elements = fn(*_ui_arguments(fn, h._config, context))
    for i, element in enumerate(elements or ()):
        fault = ui_element_fault(element)
        if fault is not None:
            raise PluginContractError(h.name, "get_ui_elements", f"element {i}: {fault}", thaw(element))
