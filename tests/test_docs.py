"""The docs describe the present: short enough to read, free of tracker numbers, their links all land.

``docs/performance.md`` holds targets and figures of record, not the story of how they were
reached (that is git's and ``CHANGELOG.md``'s), so it has a size it must stay under. A tracker's
issue numbers mean nothing to a reader of the repository, so no doc, code comment, docstring or
test name carries one; a reference to another project's tracker (``encode/httpcore#1035``)
names its repository and stays. Every relative link, anchor included, must reach a heading that
exists, and so must the sections of ``performance.md`` the benchmarks' docstrings name.
"""

from __future__ import annotations

import ast
import io
import re
import tokenize
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
DOCS = [ROOT / "README.md", ROOT / "CHANGELOG.md", *sorted((ROOT / "docs").glob("*.md"))]
CODE_DIRS = ("core", "providers", "plugins", "features", "tests", "benchmarks", "scripts")
PERFORMANCE_MAX_LINES = 300

# The word followed by a number, with or without "#", in any case: our tracker's numbers. A "#"
# and digits alone too, unless a repository or path stands right before it (owner/name#123 is a
# public reference a reader can follow).
ISSUE = re.compile(r"\bissues? ?#?\d+", re.IGNORECASE)
BARE_NUMBER = re.compile(r"(?<![\w/.-])#\d+\b")
LINK = re.compile(r"\]\(([^)\s]+)\)")
HEADING = re.compile(r"^#{1,6} (.+)$")
DEFINED = re.compile(r"^\s*(?:async\s+)?(?:def|class)\s+(\w+)", re.MULTILINE)
NAMED_SECTION = re.compile(r"docs/performance\.md``?,? \(?(?:section )?\"([^\"]+)\"")


def _slug(heading: str) -> str:
    """The anchor GitHub gives a heading: lower case, punctuation dropped, spaces as hyphens."""
    return re.sub(r"[^\w\- ]", "", heading.strip().lower()).replace(" ", "-")


def _headings(path: Path) -> list[str]:
    found, fenced = [], False
    for line in path.read_text(encoding="utf-8").splitlines():
        if line.startswith("```"):
            fenced = not fenced
        elif not fenced and (m := HEADING.match(line)):
            found.append(m.group(1).strip())
    return found


def _anchors(path: Path) -> set[str]:
    seen: dict[str, int] = {}
    anchors = set()
    for heading in _headings(path):
        slug = _slug(heading)
        anchors.add(f"{slug}-{seen[slug]}" if slug in seen else slug)
        seen[slug] = seen.get(slug, 0) + 1
    return anchors


def _python_files() -> list[Path]:
    return [p for d in CODE_DIRS for p in sorted((ROOT / d).rglob("*.py")) if ".venv" not in p.parts]


def _prose(path: Path) -> list[tuple[int, str]]:
    """A module's comments and docstrings, with their line numbers: the parts written for readers."""
    source = path.read_text(encoding="utf-8")
    out = [(tok.start[0], tok.string) for tok in tokenize.generate_tokens(io.StringIO(source).readline)
           if tok.type == tokenize.COMMENT]
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)):
            doc = ast.get_docstring(node, clean=False)
            if doc:
                out.append((node.body[0].lineno, doc))
    return out


def test_the_performance_doc_stays_a_page_of_the_present():
    lines = (ROOT / "docs" / "performance.md").read_text(encoding="utf-8").count("\n")
    assert lines < PERFORMANCE_MAX_LINES, f"docs/performance.md has {lines} lines; history belongs in CHANGELOG.md"


def test_no_doc_names_a_tracker_issue():
    found = [f"{path.relative_to(ROOT)}:{number}: {line.strip()}"
             for path in DOCS
             for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1)
             if ISSUE.search(line) or BARE_NUMBER.search(line)]
    assert found == []


def test_no_comment_or_docstring_names_a_tracker_issue():
    # Only a file whose text matches at all is read token by token (a string the code uses may match).
    suspects = [path for path in _python_files() if ISSUE.search(path.read_text(encoding="utf-8"))]
    found = [f"{path.relative_to(ROOT)}:{number}" for path in suspects
             for number, text in _prose(path) if ISSUE.search(text)]
    assert found == []


def test_no_test_name_carries_an_issue_number():
    pattern = re.compile(r"issues?_?\d+", re.IGNORECASE)
    found = [str(path.relative_to(ROOT)) for path in (ROOT / "tests").rglob("test_*.py") if pattern.search(path.stem)]
    for path in (ROOT / "tests").rglob("*.py"):
        names = DEFINED.findall(path.read_text(encoding="utf-8"))
        found += [f"{path.relative_to(ROOT)}::{name}" for name in names
                  if name.startswith(("test", "Test")) and pattern.search(name)]
    assert found == []


def test_every_relative_link_in_the_docs_lands_on_a_file_and_heading():
    broken = []
    for path in DOCS:
        for target in LINK.findall(path.read_text(encoding="utf-8")):
            if re.match(r"[a-z]+:", target):
                continue
            file, _, anchor = target.partition("#")
            dest = (path.parent / file) if file else path
            if not dest.exists():
                broken.append(f"{path.relative_to(ROOT)}: {target} (no such file)")
            elif anchor and dest.suffix == ".md" and anchor not in _anchors(dest):
                broken.append(f"{path.relative_to(ROOT)}: {target} (no such heading)")
    assert broken == []


def test_the_sections_the_benchmarks_name_exist():
    headings = set(_headings(ROOT / "docs" / "performance.md"))
    named = [(path.name, section) for path in sorted((ROOT / "benchmarks").glob("*.py"))
             for section in NAMED_SECTION.findall(" ".join(path.read_text(encoding="utf-8").split()))]
    assert named, "the benchmarks name no section of docs/performance.md: is the pattern still right?"
    assert [f"{name}: {section!r}" for name, section in named if section not in headings] == []
