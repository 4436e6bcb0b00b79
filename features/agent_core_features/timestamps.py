"""``timestamps``: when each answer arrived, on the message itself.

Every assistant message a provider call produces gets ``metadata["timestamp"]``,
the UTC time in ISO 8601 (``2026-11-23T13:05:09Z``), set in
``from_native_messages`` so it is stored with the message whatever the
provider. A message that already carries one (a replayed turn) keeps it.
"""

from __future__ import annotations

from datetime import datetime, timezone
from typing import Any

from agent_core.plugin_kit import Feature

__all__ = ["TimestampsFeature", "utc_now"]


def utc_now() -> str:
    return datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


class TimestampsFeature(Feature):
    name = "timestamps"
    version = "1.0.0"
    default_enabled = False  # opt-in: enabled_plugins=["timestamps"]
    ui_elements = ({"ui_type": "message_footer", "data": "metadata.timestamp", "template": "{{data}}",
                    "label": "Time"},)

    def from_native_messages(self, native_messages: Any, messages: Any, state: Any = None, *,
                             context: Any = None) -> list[Any]:
        now = utc_now()
        out = []
        for m in messages:
            meta = m.get("metadata") or {}
            out.append(m if meta.get("timestamp") else {**m, "metadata": {**meta, "timestamp": now}})
        return out
