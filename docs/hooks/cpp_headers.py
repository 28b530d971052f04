"""MkDocs hook: shows C++ public headers on a page, read from the source tree at build time.

A line `<!-- cpp-header: core/graph.h -->` becomes the header's opening comment as prose (what
the file is for) followed by its declarations and their contract comments in a collapsible C++
block; includes, include guards and namespace lines are dropped. The page stays what the code says.
"""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
MARKER = re.compile(r"^<!-- cpp-header: ([\w/.-]+\.h) -->$", re.MULTILINE)
NOISE = re.compile(r"^\s*(#include|#pragma|#ifndef|#define \w+_H_?$|#endif|namespace \w*\s*\{|\}\s*// namespace)")


def opening_comment(lines: list[str]) -> tuple[list[str], int]:
    """The header's first comment block (its purpose) and the index of the line after it."""
    start = 0
    while start < len(lines) and not lines[start].startswith("//"):
        if lines[start].strip() and not NOISE.match(lines[start]):
            return [], start
        start += 1
    end = start
    while end < len(lines) and lines[end].startswith("//"):
        end += 1
    return [line[2:].removeprefix(" ").rstrip() for line in lines[start:end]], end


def prose(comment: list[str]) -> str:
    """Comment lines as Markdown: paragraphs kept, `* item` lines made a list (with the blank
    line Markdown needs before it), continuation lines joined to their item."""
    out: list[str] = []
    in_list = False
    for line in comment:
        item = re.match(r"\s*[*-] (.*)", line)
        if item:
            if not in_list and out and out[-1]:
                out.append("")
            out.append("- " + item.group(1))
            in_list = True
        elif not line.strip():
            out.append("")
            in_list = False
        else:
            out.append(("  " if in_list else "") + line.strip())
    return "\n".join(out)


def header_markdown(relative: str) -> str:
    path = ROOT / relative
    if not path.is_file():
        raise FileNotFoundError(f"cpp-header marker names {relative}, which does not exist")
    lines = path.read_text().splitlines()
    purpose, end = opening_comment(lines)
    body = [line for line in lines[end:] if not NOISE.match(line)]
    while body and not body[0].strip():
        body.pop(0)
    while body and not body[-1].strip():
        body.pop()
    paragraphs = prose(purpose)
    code = "\n".join("    " + line if line else "" for line in body)
    return (f"### `{relative}`\n\n{paragraphs}\n\n??? note \"`{relative}`: declarations and contract comments "
            f"({len(body)} lines)\"\n\n    ```cpp\n{code}\n    ```\n")


def on_page_markdown(markdown: str, **_) -> str:
    return MARKER.sub(lambda match: header_markdown(match.group(1)), markdown)
