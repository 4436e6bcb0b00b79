"""A resolution made again for a config seen before: every hook asked again, our own steps not redone.

Why this exists
---------------
Resolving a config is about a fifth of a request's CPU in the server, and most of that is
our own work between the hook calls: reading each schema, filling defaults, finding and
redacting secrets, freezing the views, going round the enablement fixed point. All of it is
a function of the config and of what the hooks answered. Request handlers resolve the same
few configs over and over (one per tenant and model, give or take a token limit).

So a config that comes again is recorded, on its second resolution (one that never repeats
costs only its key): which plugins were made, and every hook call they got (plugin, hook,
arguments, answer; only the hooks called are watched, so recording costs little more than
resolving). A later resolution of an equal config makes new plugin instances (they serve one request each), calls the same hooks with the
same arguments in the same order and compares each answer with the recorded one. When all
are the same, the recorded outcome is the outcome: resolution is deterministic given the
config and the answers. A plugin therefore sees exactly the calls a fresh resolution would
make, and nothing is assumed about whether its hooks are pure.

What falls back to a fresh resolution
-------------------------------------
- an answer that differs (then that request's plugins may be asked the hooks twice: once
  by the replay that found the difference, once by the fresh resolution); that config is
  then resolved afresh and not recorded again, so a plugin whose answers keep changing
  costs one fresh resolution a request, as without the replay;
- a config that cannot be compared exactly (a value :mod:`pickle` refuses), or arguments
  that are not frozen, or an answer that is not plain data;
- a resolution with config warnings (they are raised as warnings each time), one that read
  the schemas of plugins that are not candidates, and cores with a ``model_cache`` (whose
  point is to skip ``get_models``, which a replay would ask again).

Configs are compared by their pickled bytes, which keep what equality would blur (``1``,
``1.0`` and ``True``; a tuple and a list). A hook that raises during a replay raises exactly
what a fresh resolution would have, since every call before it got the same answers.
"""

from __future__ import annotations

import dataclasses
import pickle
import threading
from collections.abc import Callable, Mapping, MutableMapping, Sequence
from typing import Any

import msgspec

from ..values.frozen import FrozenDict, FrozenList
from .config import parse_schema
from .hooks import LivePlugin, PluginSpec, call_hook
from .resolution import _ENGINE_OWNED, Resolution, resolve
from .selection import instantiate

__all__ = ["Replays"]

_NEW, _ONCE, _VOLATILE = object(), object(), object()  # a config not seen; seen once; seen to answer differently
_FROZEN_SCALARS = (str, int, float, bool, type(None), bytes, frozenset, FrozenDict, FrozenList)


def _plain(value: Any) -> Any:
    if isinstance(value, Mapping):
        return dict(value)
    if isinstance(value, (FrozenList, tuple, set, frozenset)):
        return list(value)
    raise TypeError(f"cannot compare a {type(value).__name__}")


_ENCODE = msgspec.msgpack.Encoder(enc_hook=_plain).encode


def _frozen(value: Any) -> bool:
    if isinstance(value, tuple):
        return all(_frozen(v) for v in value)
    return isinstance(value, _FROZEN_SCALARS)


class _Recording:
    """What one resolution did: the plugins it made, in order, and every hook call with its answer."""

    __slots__ = ("calls", "chain", "resolution", "secrets", "specs")

    def __init__(self, specs: tuple[PluginSpec, ...], calls: tuple[tuple[Any, ...], ...],
                 secrets: tuple[tuple[str, Any], ...], resolution: Resolution) -> None:
        self.specs = specs
        self.calls = calls
        self.secrets = secrets
        # without the recording request's instances and basis: a kept entry must not hold one request's plugins
        self.resolution = dataclasses.replace(resolution, live={}, basis=None)
        self.chain = tuple(str(ref) for ref in resolution.enabled)


class _Watched(dict):  # type: ignore[type-arg]
    """A plugin's bound-hook table while its resolution is recorded: each hook asked for comes wrapped.

    Only the hooks a resolution calls are bound and wrapped (a plugin has about forty), so
    recording costs little more than resolving.
    """

    __slots__ = ("name", "plugin", "recorder")

    def __init__(self, recorder: _Recorder, name: str, plugin: LivePlugin) -> None:
        super().__init__()
        self.recorder, self.name, self.plugin = recorder, name, plugin

    def get(self, hook: str, default: Any = None) -> Any:
        fn = dict.get(self, hook)
        if fn is None:
            real = self.recorder.real[self.name].get(hook)
            if real is None:
                real = self.recorder.real[self.name][hook] = self.plugin.spec.bind(self.plugin.instance, hook)
            fn = self[hook] = self.recorder.watching(self.name, hook, real)
        return fn


class _Recorder:
    """Watches the hooks of one resolution's plugins through their bound-hook tables."""

    def __init__(self) -> None:
        self.live: dict[str, LivePlugin] = {}
        self.calls: list[tuple[Any, ...]] = []
        self.schemas: dict[str, Any] = {}
        self.usable = True
        self.done = False
        self.real: dict[str, dict[str, Callable[..., Any]]] = {}

    def attach(self, live: Mapping[str, LivePlugin]) -> None:
        for name, plugin in live.items():
            self.live[name], self.real[name] = plugin, dict(plugin._bound)
            plugin._bound = _Watched(self, name, plugin)

    def detach(self) -> None:
        self.done = True  # a bound hook kept by someone past the resolution records nothing more
        for name, plugin in self.live.items():
            plugin._bound = self.real[name]

    def watching(self, name: str, hook: str, fn: Callable[..., Any]) -> Callable[..., Any]:
        def call(*args: Any, **kwargs: Any) -> Any:
            answer = fn(*args, **kwargs)
            self._note(name, hook, args, kwargs, answer)
            return answer

        return call

    def _note(self, name: str, hook: str, args: tuple[Any, ...], kwargs: dict[str, Any], answer: Any) -> None:
        if self.done or not self.usable:
            return
        if not (_frozen(args) and _frozen(tuple(kwargs.values()))):
            self.usable = False
            return
        try:
            raw = _ENCODE(answer)
        except (TypeError, ValueError, OverflowError):
            self.usable = False
            return
        if hook == "get_config_schema":
            self.schemas[name] = answer
        self.calls.append((name, hook, args, FrozenDict(kwargs) if kwargs else None, type(answer), raw))


class Replays:
    """The recorded resolutions of one core, by config; at most ``size`` of them, the oldest dropped first."""

    def __init__(self, size: int = 256) -> None:
        self._size = size
        self._kept: dict[tuple[Any, ...], _Recording] = {}
        # configs resolved once and not yet recorded, or whose answers changed (4 x size at most)
        self._seen: dict[tuple[Any, ...], object] = {}
        self._lock = threading.Lock()

    def resolve(self, registry: Mapping[str, Sequence[PluginSpec]], generation: int, user_config: Mapping[str, Any],
                *, only: frozenset[str] | None, model_cache: MutableMapping[str, Any] | None,
                basis: Any) -> Resolution:
        """:func:`~agent_core.plugins.resolution.resolve`, replayed when this config was resolved before."""
        key = self._key(generation, user_config, only) if model_cache is None else None
        if key is None:
            return resolve(registry, user_config, only=only, model_cache=model_cache, basis=basis)
        kept = self._kept.get(key)
        if kept is not None:
            replayed = _replay(kept, basis)
            if replayed is not None:
                return replayed
            self._note_seen(key, volatile=True)  # an answer changed: not recorded again, lest every request pay twice
            return resolve(registry, user_config, only=only, basis=basis)
        seen = self._seen.get(key, _NEW)
        if seen is not _ONCE:  # recorded the second time a config comes: one that never repeats costs nothing
            if seen is _NEW:
                self._note_seen(key)
            return resolve(registry, user_config, only=only, basis=basis)
        recorder = _Recorder()
        try:
            resolution = resolve(registry, user_config, only=only, basis=basis, on_live=recorder.attach)
        finally:
            recorder.detach()
        if recorder.usable and not resolution.warnings and not _read_others(recorder, user_config):
            self._keep(key, _Recording(
                tuple(p.spec for p in recorder.live.values()), tuple(recorder.calls),
                tuple((name, p.secrets) for name, p in recorder.live.items()), resolution))
        return resolution

    @staticmethod
    def _key(generation: int, user_config: Mapping[str, Any], only: frozenset[str] | None) -> tuple[Any, ...] | None:
        try:
            return generation, only, pickle.dumps(user_config, protocol=pickle.HIGHEST_PROTOCOL)
        except Exception:  # noqa: BLE001 - a value pickle refuses: this config is resolved afresh each time
            return None

    def _keep(self, key: tuple[Any, ...], recording: _Recording) -> None:
        with self._lock:
            self._seen.pop(key, None)
            self._kept[key] = recording
            while len(self._kept) > self._size:
                del self._kept[next(iter(self._kept))]

    def _note_seen(self, key: tuple[Any, ...], *, volatile: bool = False) -> None:
        with self._lock:
            if volatile:
                self._kept.pop(key, None)
            self._seen[key] = _VOLATILE if volatile else _ONCE
            while len(self._seen) > 4 * self._size:
                del self._seen[next(iter(self._seen))]


def _read_others(recorder: _Recorder, user_config: Mapping[str, Any]) -> bool:
    """Whether the resolution also read non-candidates' schemas (for a key no candidate declares)."""
    known = {f.key for name, raw in recorder.schemas.items() for f in parse_schema(name, raw)}
    return any(k not in known and k not in _ENGINE_OWNED for k in user_config)


def _replay(kept: _Recording, basis: Any) -> Resolution | None:
    """``kept``'s outcome for new plugin instances, or None when one of them answered differently."""
    live = {spec.name: instantiate(spec) for spec in kept.specs}
    for name, hook, args, kwargs, kind, raw in kept.calls:
        answer = call_hook(live[name], hook, *args, **kwargs) if kwargs else call_hook(live[name], hook, *args)
        if type(answer) is not kind:
            return None
        try:
            if _ENCODE(answer) != raw:
                return None
        except (TypeError, ValueError, OverflowError):
            return None
    for name, secrets in kept.secrets:
        live[name].secrets = secrets
    r = kept.resolution
    return Resolution(provider=r.provider, extensions=r.extensions, features=r.features, tools=r.tools, tags=r.tags,
                      models=r.models, reasons=r.reasons, config=r.config,
                      live={name: live[name] for name in kept.chain}, warnings=r.warnings, basis=basis)
