"""The syrupy extension behind ``agent_snapshot`` (imports syrupy: load it only when the fixture is used)."""

from __future__ import annotations

from typing import Any

from syrupy.extensions.amber import AmberSnapshotExtension

from .render import render

__all__ = ["AgentSnapshotExtension"]


class AgentSnapshotExtension(AmberSnapshotExtension):
    """Amber snapshots (``__snapshots__/<test file>.ambr``) whose body is :func:`render`'s text."""

    def serialize(self, data: Any, **kwargs: Any) -> str:
        return super().serialize(_Text(render(data)), **kwargs)


class _Text(str):
    """Rendered text; amber writes a ``str`` subclass verbatim between quotes, one line per line."""
