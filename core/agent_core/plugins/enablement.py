"""Step 4 of a resolution (:mod:`.resolution`): tags and enablement, settled as a fixed point.

Apart from the rest of the resolution because it is the one step that loops: the
enabled set decides the tags and the tags decide the enabled set, so it runs in
rounds until a set repeats. What each plugin sees of the config on the way
(:func:`own_config`) is the same view every other hook that takes config is handed.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ..errors import ConfigError, PluginError
from ..values.frozen import FrozenDict, FrozenList, freeze
from .hooks import LivePlugin, PluginSpec, call_hook
from .selection import Switches, string_list, tag_hint

__all__ = ["CHAIN_KINDS", "Enablement", "own_config"]

#: the kinds whose plugins form chains (the provider is one, never a chain)
CHAIN_KINDS = ("extension", "feature", "tool")
_PLURAL = {"provider": "providers", "extension": "extensions", "feature": "features", "tool": "tools"}


def own_config(plugin: LivePlugin, config: FrozenDict) -> FrozenDict:
    """``config`` as ``plugin`` may see it: with the secret values it declares itself."""
    return config.merged(plugin.secrets) if plugin.secrets else config


class Enablement:
    """Step 4: tags and enablement, a fixed point over the candidates (see the module docstring).

    What does not change from round to round is asked once, here: each
    plugin's ``get_tags``, ``required_tags`` and ``forbidden_tags``, for every
    candidate in order, one hook after the other.
    """

    def __init__(self, provider: LivePlugin, candidates: Mapping[str, list[PluginSpec]],
                 live: Mapping[str, LivePlugin], switches: Switches, view: FrozenDict, models: Any) -> None:
        self.provider, self.candidates, self.switches, self.view, self.models = provider, candidates, switches, view, models
        self.plugins = [live[s.name] for kind in CHAIN_KINDS for s in candidates[kind]]
        self.provider_tags = _tags(provider, view, models)
        self.own = {p.name: _tags(p, view, models) for p in self.plugins}
        self.required = {p.name: _declared(p, "required_tags") for p in self.plugins}
        self.forbidden = {p.name: _declared(p, "forbidden_tags") for p in self.plugins}

    def settle(self, reasons: dict[str, str]) -> tuple[frozenset[str], set[str]]:
        """Rounds from "every candidate on" until the enabled set repeats; returns it and its tags.

        Raises:
            ConfigError: an older set came back (the plugins that keep flipping are named).
            PluginError: ``is_enabled`` raised or returned something else than True, False or None.
        """
        enabled = frozenset(p.name for p in self.plugins)
        history = [enabled]
        while True:
            tags = set(self.provider_tags).union(*(self.own[n] for n in enabled))
            new = self.round(enabled, tags, reasons)
            if new == enabled:
                return enabled, tags
            if new in history:
                cycle = history[history.index(new):]
                flipping = sorted(set().union(*cycle) - frozenset.intersection(*cycle))
                raise ConfigError(
                    "plugin enablement does not settle: "
                    f"{', '.join(flipping)} keep switching each other on and off through their tags",
                    plugins=flipping,
                )
            history.append(new)
            enabled = new

    def round(self, enabled: frozenset[str], tags: set[str], reasons: dict[str, str]) -> frozenset[str]:
        """One round: which candidates are on given the tags ``enabled`` makes; ``reasons`` says why for each."""
        asked: tuple[Any, Any] | None = None  # is_enabled's tags and context, made for the first plugin that asks
        on = set()
        for plugin in self.plugins:
            name = plugin.name
            if name in self.switches.forced:
                verdict, reasons[name] = True, "on: forced by force_enabled_plugins"
            elif "is_enabled" not in plugin.defined:  # the default has no verdict: the tag rules decide
                verdict, reasons[name] = self.decided(plugin, None, tags)
            else:
                if asked is None:
                    asked = (FrozenList(sorted(tags)), self._context(enabled))
                verdict = call_hook(plugin, "is_enabled", own_config(plugin, self.view), asked[0], self.models,
                                    asked[1])
                verdict, reasons[name] = self.decided(plugin, verdict, tags)
            if verdict:
                on.add(name)
        return frozenset(on)

    def _context(self, enabled: frozenset[str]) -> FrozenDict:
        """``is_enabled``'s context: the plugins on in this round, the ones switched off and the forced ones."""
        return freeze({  # type: ignore[no-any-return]
            "enabled_plugin_ids": {
                "providers": [self.provider.name],
                **{_PLURAL[k]: [s.name for s in self.candidates[k] if s.name in enabled] for k in CHAIN_KINDS},
            },
            "disabled_plugins": sorted(self.switches.disabled),
            "force_enabled_plugins": sorted(self.switches.forced),
        })

    def decided(self, plugin: LivePlugin, verdict: Any, tags: set[str]) -> tuple[bool, str]:
        """``is_enabled``'s answer, or the tag rules when it has none: on or off, and why."""
        if verdict is True:
            return True, "on: is_enabled returned True"
        if verdict is False:
            return False, "off: is_enabled returned False (the plugin switched itself off for this config)"
        if verdict is not None:
            raise PluginError(
                plugin.name, "is_enabled", TypeError("bad return value"),
                detail=f"must return True, False or None, got {verdict!r}",
            )
        if missing := self.required[plugin.name] - tags:
            return False, f"off: missing required tags {sorted(missing)}{tag_hint(missing, tags)}"
        if present := self.forbidden[plugin.name] & tags:
            return False, f"off: forbidden tags present {sorted(present)}"
        return True, "on: tag rules satisfied" if self.required[plugin.name] else "on: enabled by default"


_NO_TAGS: frozenset[str] = frozenset()


def _tags(plugin: LivePlugin, view: FrozenDict, models: Any) -> frozenset[str]:
    if "get_tags" not in plugin.defined:
        return _NO_TAGS
    return string_list(plugin, "get_tags", call_hook(plugin, "get_tags", own_config(plugin, view), models))


def _declared(plugin: LivePlugin, hook: str) -> frozenset[str]:
    """``required_tags`` or ``forbidden_tags`` of ``plugin``; none when it does not define the hook."""
    return string_list(plugin, hook, call_hook(plugin, hook)) if hook in plugin.defined else _NO_TAGS
