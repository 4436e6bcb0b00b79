"""Loading the installed plugins (the ``agent_core.*`` entry points) for :meth:`AgentCore.discover`.

One broken package must not leave a person unable to see what is broken, nor
stop everything when they have switched its plugin off. So a plugin that
fails to import or to register is named with where it came from (entry
point, target, the package that installed it) and how to leave it out; it
stops discovery unless its name is in ``disabled`` (the config's
``disabled_plugins``) or the caller asked to keep going (``agent-core
plugins``, which lists it as broken). A plugin left out is recorded, never
dropped without a word: a broken redaction plugin that nobody switched off
still fails the run rather than letting text through unredacted.
"""

from __future__ import annotations

from collections.abc import Collection
from importlib.metadata import EntryPoint, entry_points
from typing import Any

from ..errors import ConfigError

__all__ = ["ENTRY_POINT_GROUPS", "load_installed"]

#: plugin kind -> the entry-point group third-party packages (and the bundled ones) register in
ENTRY_POINT_GROUPS = {
    "provider": "agent_core.providers",
    "extension": "agent_core.provider_extensions",
    "feature": "agent_core.features",
    "tool": "agent_core.tools",
}


def load_installed(core: Any, disabled: Collection[str] = (), keep_going: bool = False) -> dict[str, str]:
    """Register every installed plugin on ``core``; return the broken ones left out, name -> why.

    Raises:
        ConfigError: a plugin that cannot be loaded or registered, not in ``disabled``, and
            ``keep_going`` false. It names the entry point, its target and package, and the fix.
    """
    broken: dict[str, str] = {}
    for kind, group in ENTRY_POINT_GROUPS.items():
        for ep in sorted(entry_points(group=group), key=lambda e: e.name):
            obj = None
            try:
                obj = ep.load()
                core._add(kind, obj, replace=True)
            except Exception as exc:  # whatever a package does on import or registration: name the package
                why = _why(ep, group, exc)
                named = {ep.name, getattr(obj, "name", None)}  # the entry point's name, or the plugin's own
                if not keep_going and not any(n in disabled for n in named):
                    raise ConfigError(
                        f"{why}. Fix or uninstall that package, or leave the plugin out with "
                        f"disabled_plugins = [{ep.name!r}] (agent-core: -c 'disabled_plugins=[\"{ep.name}\"]')",
                        plugins=[ep.name],
                    ) from exc
                broken[ep.name] = why
    return broken


def _why(ep: EntryPoint, group: str, exc: Exception) -> str:
    dist = getattr(ep, "dist", None)
    package = f", package {dist.name} {dist.version}" if dist is not None else ""
    detail = str(exc) if isinstance(exc, ConfigError) else f"{type(exc).__name__}: {exc}"
    return f"installed plugin {ep.name!r} ({group} entry point {ep.value}{package}) cannot be used: {detail}"
