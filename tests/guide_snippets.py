"""The docs' ``# file: NAME`` snippets loaded as modules, so tests run the code a reader copies."""

from __future__ import annotations

import re
import types
from pathlib import Path

GUIDE = Path(__file__).resolve().parents[1] / "docs" / "writing-plugins.md"


def guide_module(name: str) -> types.ModuleType:
    """The guide's ``# file: NAME`` snippet, loaded as a module (never installed in ``sys.modules``)."""
    text = GUIDE.read_text(encoding="utf-8")
    body = re.search(r"```python\n# file: " + re.escape(name) + r"\n(.*?)^```", text, re.DOTALL | re.MULTILINE)
    assert body is not None, f"the guide has no {name}"
    module = types.ModuleType(name.removesuffix(".py"))
    exec(compile(body.group(1), str(GUIDE), "exec"), module.__dict__)  # noqa: S102 - the guide's own code
    return module
