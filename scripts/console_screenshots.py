"""Refresh the web console's screenshots in ``docs/`` from the browser tier.

The browser tests write their screenshots to ``build/console-shots/`` (git-ignored), so running
the tests never changes a tracked file. This command runs the tier and, only when all of it
passes, copies the screenshots the README links into ``docs/``. From the repository root::

    .venv/bin/python scripts/console_screenshots.py

It needs what the tier needs: Playwright (``pip install -e '.[test,test-browser]'``) and the system's
Chromium (Debian package ``chromium``).
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

#: the screenshots docs/ keeps (docs/console-{name}.png), each taken by a browser test
SHOTS = ("chat", "approval", "settings", "phone", "dark")

ROOT = Path(__file__).resolve().parents[1]


def main() -> int:
    taken = ROOT / "build" / "console-shots"
    shutil.rmtree(taken, ignore_errors=True)  # a stale picture must not pass for a fresh one
    env = {**os.environ, "AGENT_CORE_BROWSER": "required", "AGENT_CORE_CONSOLE_SHOTS": str(taken)}
    run = subprocess.run([sys.executable, "-m", "pytest", "-m", "browser", "-q", "tests/browser"], cwd=ROOT, env=env,
                         check=False)
    if run.returncode != 0:
        print("the browser tier failed: docs/ keeps its screenshots", file=sys.stderr)
        return run.returncode
    missing = [name for name in SHOTS if not (taken / f"console-{name}.png").is_file()]
    if missing:
        print(f"no screenshot taken for: {', '.join(missing)} (tests/browser names them)", file=sys.stderr)
        return 1
    for name in SHOTS:
        target = ROOT / "docs" / f"console-{name}.png"
        shutil.copyfile(taken / f"console-{name}.png", target)
        print(target.relative_to(ROOT))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
