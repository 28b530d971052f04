"""MkDocs hook: the "Development notes" section of the navigation lists every docs/notes/*.md.

mkdocs.yml names the section with the placeholder `notes/`; the notes are records added over
time, so the list is read from the folder instead of kept by hand.
"""

from __future__ import annotations

from pathlib import Path

PLACEHOLDER = "notes/"


def on_config(config, **_):
    notes_dir = Path(config["docs_dir"]) / "notes"
    notes = sorted(path.relative_to(config["docs_dir"]).as_posix() for path in notes_dir.glob("*.md"))
    if "notes/index.md" in notes:  # the section's own page first
        notes.insert(0, notes.pop(notes.index("notes/index.md")))
    for entry in config["nav"]:
        if isinstance(entry, dict) and PLACEHOLDER in entry.values():
            title = next(key for key, value in entry.items() if value == PLACEHOLDER)
            entry[title] = notes
    return config
