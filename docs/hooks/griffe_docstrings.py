"""Griffe extension: goenv's prose docstrings keep their shape on the API pages.

goenv's docstrings are prose with one convention: a line `name: what it is`, its continuation
lines indented under it, describes one argument or one part of the result. Markdown would run
those lines together into one paragraph, so they become a list here (`- name: what it is`); the
rest of the docstring is left as written, but for `<` outside code spans, escaped so that
"<task>-<graph>" is shown rather than taken for an HTML tag.
"""

from __future__ import annotations

import re

import griffe

ENTRY = re.compile(r"^([A-Za-z_][\w.]*(?:, [A-Za-z_][\w.]*)*(?: \([^)]*\))?): (\S.*)$")


def escaped(line: str) -> str:
    """`<` outside `code spans` as &lt; (even pieces of a split on backticks are outside)."""
    pieces = line.split("`")
    return "`".join(piece.replace("<", "&lt;") if i % 2 == 0 else piece for i, piece in enumerate(pieces))


def listed(text: str) -> str:
    out: list[str] = []
    in_entry = False
    for line in map(escaped, text.splitlines()):
        entry = ENTRY.match(line)
        if entry:
            if not in_entry and out and out[-1].strip():
                out.append("")  # a list needs a blank line before it
            out.append(f"- `{entry.group(1)}`: {entry.group(2)}")
            in_entry = True
        elif in_entry and line.startswith((" ", "\t")) and line.strip():
            out.append("  " + line.strip())  # continuation of the entry above
        else:
            if in_entry and line.strip():
                out.append("")  # prose after the list
            out.append(line)
            in_entry = False
    return "\n".join(out)


class ArgumentLists(griffe.Extension):
    def on_instance(self, *, obj: griffe.Object, **_) -> None:
        if obj.docstring is not None and obj.docstring.value:
            obj.docstring.value = listed(obj.docstring.value)
