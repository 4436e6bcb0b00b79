"""How to install an optional extra, said the way that works from where the user stands.

``pip install 'agent-core[server]'`` fails in a git checkout of agent-core installed in
development mode (pip would fetch a release instead of adding the extra to the checkout);
there ``pip install -e '.[server]'`` is what works.
"""

from __future__ import annotations

from functools import cache
from pathlib import Path

__all__ = ["install_hint"]


@cache
def _checkout() -> Path | None:
    """The checkout agent-core runs from (its ``pyproject.toml`` beside ``core/``), or None for an installed copy."""
    root = Path(__file__).resolve().parents[3]
    project = root / "pyproject.toml"
    try:
        if project.is_file() and 'name = "agent-core"' in project.read_text(encoding="utf-8"):
            return root
    except OSError:
        return None
    return None


def install_hint(extra: str) -> str:
    """The pip command that adds ``extra`` to this agent-core."""
    root = _checkout()
    if root is None:
        return f"pip install 'agent-core[{extra}]'"
    return f"pip install -e '.[{extra}]' (in {root})"
