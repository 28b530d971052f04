"""Makes `import goenv` load the package in $GOENV_PACKAGE_DIR (e.g. a copy with
a sanitizer-built _core) even where an editable install of goenv is registered:
its meta-path finder would otherwise win over sys.path. Imported by the fuzz
targets, and a pytest plugin (`pytest -p local_goenv`) for the sanitizer run.
Without the variable it does nothing."""

from __future__ import annotations

import os
import sys

_root = os.environ.get("GOENV_PACKAGE_DIR")
if _root:
    sys.meta_path[:] = [f for f in sys.meta_path if "goenv" not in repr(getattr(f, "known_source_files", ""))
                        and type(f).__name__ != "ScikitBuildRedirectingFinder"]
    sys.path.insert(0, os.path.abspath(_root))
    for name in [m for m in sys.modules if m == "goenv" or m.startswith("goenv.")]:
        del sys.modules[name]
