"""The generated sections of the documentation: text between <!-- NAME:begin --> and
<!-- NAME:end --> markers that a results script writes, never a person.

Each section lives in exactly one page, README.md or a page under docs/; the scripts find it
there by its markers, so a section can move between pages without changing any script:

    path = section_file("baselines")            # the one page holding the markers, or SystemExit
    write_section(path, "baselines", table)     # atomically, the rest of the page unchanged

A script that measures for minutes checks its target first (`section_file` does), so a typo or a
missing marker fails before the work, not after it.
"""

from __future__ import annotations

import re
from pathlib import Path

import goenv
from goenv.files import write_atomic

ROOT = Path(__file__).resolve().parent.parent  # the project: README.md and docs/


def _pattern(name: str) -> re.Pattern:
    return re.compile(rf"(<!-- {re.escape(name)}:begin -->\n)(?:.*?\n)?(<!-- {re.escape(name)}:end -->)", re.S)


def has_section(text: str, name: str) -> bool:
    return _pattern(name).search(text) is not None


def replace_section(text: str, name: str, body: str, where: str = "the page") -> str:
    """`text` with `body` between its <!-- name:begin/end --> markers (`where` names the file in the error)."""
    pattern = _pattern(name)
    if not pattern.search(text):
        raise SystemExit(f"{where} has no <!-- {name}:begin/end --> markers")
    return pattern.sub(lambda m: m.group(1) + body + "\n" + m.group(2), text)


def pages(root: Path = ROOT) -> list[Path]:
    """Where generated sections may live: the project's README.md and every page under docs/."""
    readme = root / "README.md"
    return ([readme] if readme.is_file() else []) + sorted((root / "docs").rglob("*.md"))


def find_section(name: str, root: Path = ROOT) -> Path:
    """The one page of `root` holding the section's markers; none or several is an error."""
    begin = f"<!-- {name}:begin -->"
    holders = [page for page in pages(root) if begin in page.read_text(encoding="utf-8")]
    if not holders:
        raise SystemExit(f"no page holds <!-- {name}:begin/end --> markers (searched {root / 'README.md'} "
                         f"and {root / 'docs'}/**/*.md)")
    if len(holders) > 1:
        raise SystemExit(f"<!-- {name}:begin/end --> markers are in {len(holders)} pages, "
                         f"{', '.join(str(page) for page in holders)}: keep them in one")
    if not has_section(holders[0].read_text(encoding="utf-8"), name):
        raise SystemExit(f"{holders[0]}: <!-- {name}:begin --> has no <!-- {name}:end --> after it")
    return holders[0]


def section_file(name: str, given: str | Path | None = None, flag: str = "--readme") -> Path:
    """The page a script will write its `name` section into, checked before the script measures
    anything (hours of results are not lost to a typo).

    `given` None: the project's page holding the markers. A README.md (the command lines of earlier
    releases say `--readme README.md`): the one page of that README and the docs/ beside it that
    holds them. Any other file: that file, which must hold the markers."""
    if given is None:
        return find_section(name)
    path = Path(goenv.files.checked_output_path(given, flag))
    if not path.is_file():
        raise SystemExit(f"{flag} {path}: no such file (it needs <!-- {name}:begin/end --> markers)")
    if path.name == "README.md":
        return find_section(name, path.resolve().parent)
    if not has_section(path.read_text(encoding="utf-8"), name):
        raise SystemExit(f"{flag} {path}: has no <!-- {name}:begin/end --> markers")
    return path


def write_section(path: Path, name: str, body: str) -> None:
    """Replaces the section's body in `path`, read again now (the page may have been edited while
    the script measured), and writes the page atomically."""
    text = path.read_text(encoding="utf-8")
    write_atomic(path, replace_section(text, name, body, where=str(path)).encode("utf-8"))
