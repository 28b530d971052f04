"""What made a results file: the goenv version and source commit a training log or a
results script records beside its numbers, so a number can be traced to the code that
produced it.

    from goenv.provenance import made_by
    made_by()   # {"goenv": "0.5.0", "commit": "c7e5950...", "dirty": False, "python": ..., ...}

The commit is the one of the git checkout goenv is imported from (an editable install, as
`make build` makes); a wheel installed elsewhere has none (None). $GOENV_COMMIT, where set,
names it instead: a copy of a clean tree whose .git is stale or absent (a GPU machine's).
"""

from __future__ import annotations

import datetime
import os
import platform
import subprocess
import sys
from pathlib import Path

from goenv.files import write_atomic

__all__ = ["made_by", "source_commit", "write_run_record"]

# goenv's version, kept here (below the modules that record it) so that none of them imports the goenv
# package for it; goenv/__init__.py re-exports it as goenv.__version__. pyproject.toml and
# CMakeLists.txt carry the same version (tests/python/test_packaging.py checks).
__version__ = "0.5.0"

PACKAGE_FOLDER = Path(__file__).resolve().parent


def source_commit(folder: str | os.PathLike = PACKAGE_FOLDER, exclude: tuple[str, ...] = ()) -> dict:
    """{"commit": the HEAD of the git checkout holding `folder` (None outside one, or without
    git), "dirty": whether tracked files there differ from it, the paths under `exclude`
    (relative to `folder`, e.g. the results folder a script writes into) left out}."""
    if os.environ.get("GOENV_COMMIT"):
        return {"commit": os.environ["GOENV_COMMIT"], "dirty": False}

    def git(*command: str) -> str | None:
        try:
            done = subprocess.run(["git", *command], cwd=folder, capture_output=True, text=True, timeout=30)
        except (OSError, subprocess.TimeoutExpired):
            return None
        return done.stdout.strip() if done.returncode == 0 else None

    commit = git("rev-parse", "HEAD")
    if commit is None:
        return {"commit": None, "dirty": False}
    changed = git("status", "--porcelain", "--untracked-files=no", "--", ".", *(f":(exclude){p}" for p in exclude))
    return {"commit": commit, "dirty": bool(changed)}


def made_by() -> dict:
    """goenv's version, its source commit (source_commit), the Python, torch (when imported)
    and platform, the command line and the UTC time: a JSON-ready dict."""
    record = {"goenv": __version__, **source_commit(), "python": platform.python_version(),
              "platform": platform.platform(), "argv": list(sys.argv),
              "time": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds")}
    if "torch" in sys.modules:
        record["torch"] = sys.modules["torch"].__version__
    return record


def write_run_record(folder: str | os.PathLike, name: str = "run.json", **details) -> str:
    """Writes `folder/name` (atomically, only over a regular file): made_by() under "made_by"
    and `details` (JSON-ready) beside it; returns its path. Training logs write it when they
    start, next to their metrics CSV."""
    import json

    path = os.path.join(os.fspath(folder), name)
    text = json.dumps({"made_by": made_by(), **details}, indent=2, allow_nan=False, default=str)
    write_atomic(path, (text + "\n").encode(), "run record")
    return path
