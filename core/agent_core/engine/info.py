"""What plugins tell applications outside requests: UI elements, config schemas, completions.

Each function takes a resolution (or the registered specs) and returns plain
dicts, normalized the same way for every plugin; secrets are shown as
``"<redacted>"`` (see :mod:`agent_core.plugins.config`).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from ..errors import PluginError
from ..plugins.config import REDACTED, is_secret_name, parse_schema, schema_fields
from ..plugins.hooks import LivePlugin, PluginSpec, call_hook
from ..plugins.resolution import Resolution
from ..plugins.ui_elements import as_mapping, ui_element_fault
from ..tools.api import catalog
from ..values.frozen import freeze, thaw

__all__ = ["apply_completion", "completions", "config_schema", "ui_schema"]


def ui_schema(res: Resolution, core: Any) -> list[dict[str, Any]]:
    """Every enabled plugin's UI elements, normalized into one flat list (see ``AgentCore.get_ui_schema``)."""
    tools, effective = catalog(res, core, prepare=False)
    available = [d for t in tools for d in t.schemas.values()]
    ctx = freeze({"tags": list(res.tags), "models": list(res.models),
                  "available_tools": available, "tools": list(effective)})
    out: list[dict[str, Any]] = []
    seen_keys: set[Any] = set()
    for ref in res.enabled:
        plugin = res.live[ref]
        if "get_ui_elements" not in plugin.defined:
            continue
        elements = call_hook(plugin, "get_ui_elements", res.config, ctx) or []
        for i, el in enumerate(elements):
            fault = ui_element_fault(el)
            if fault is not None:
                raise PluginError(plugin.name, "get_ui_elements", TypeError("bad element"),
                                  detail=f"element {i} ({el!r:.120}): {fault}")
            item = thaw(as_mapping(el))
            item["ui_type"] = item.get("ui_type") or "config"
            item.setdefault("plugin", plugin.name)
            if item["ui_type"] in ("session_action", "message_action") and ref.kind in ("extension", "feature"):
                item.setdefault("action_owner", plugin.name)
            if item["ui_type"] == "config" and "key" in item:
                if item["key"] in seen_keys:
                    continue
                seen_keys.add(item["key"])
                if res.config.get(item["key"]) == REDACTED or is_secret_name(str(item["key"])):
                    item.update({k: REDACTED for k in ("value", "default") if item.get(k) is not None})
            out.append(item)
    return out


def config_schema(specs: Iterable[PluginSpec]) -> list[dict[str, Any]]:
    """Every given plugin's config keys, one flat entry per key, with ``plugin``."""
    out = []
    for spec in specs:
        plugin = LivePlugin(spec, spec.factory())
        raw = call_hook(plugin, "get_config_schema")
        # the same checks a request makes
        secret = {f.key for f in parse_schema(spec.name, raw) if f.secret}
        for key, desc in (schema_fields(raw) if raw else {}).items():
            entry = {**thaw(desc), "key": key, "plugin": spec.name}
            if key in secret:  # a default or example of a secret is shown to nobody
                entry.update({k: REDACTED for k in ("default", "examples", "example") if k in entry})
                entry["secret"] = True
            out.append(entry)
    return out


def completions(res: Resolution, text: str) -> list[dict[str, Any]]:
    """Completions from every enabled feature for ``text``; each names its ``plugin``."""
    out = []
    for name in res.features:
        plugin = res.live[name]
        if "get_completions" in plugin.defined:
            for c in call_hook(plugin, "get_completions", res.config, text) or ():
                item = thaw(c)
                item.setdefault("plugin", plugin.name)
                out.append(item)
    return out


def apply_completion(res: Resolution, text: str, completion: Mapping[str, Any]) -> str:
    """Ask the feature that offered ``completion`` for replacement text ("" for none)."""
    owner = completion.get("plugin") if isinstance(completion, Mapping) else None
    for name in res.features:
        plugin = res.live[name]
        if owner is not None and plugin.name != owner:
            continue
        if "apply_completion" in plugin.defined:
            got = call_hook(plugin, "apply_completion", res.config, text, freeze(completion))
            if got:
                return str(got)
    return ""
