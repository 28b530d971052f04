"""The optional packages goenv's extras install, and the one error that says which extra a
missing one comes with:

    ray = import_extra("ray", extra="distributed", feature="goenv.distributed")
    # ImportError: goenv.distributed needs ray, which is not installed: pip install 'goenv[distributed]'

The extras are pyproject.toml's [project.optional-dependencies].
"""

from __future__ import annotations

import importlib
from types import ModuleType

__all__ = ["import_extra", "missing_extra"]


def missing_extra(feature: str, package: str, extra: str) -> str:
    """The message for `feature` without `package`: the pip line of the extra that has it."""
    return f"{feature} needs {package}, which is not installed: pip install 'goenv[{extra}]'"


def import_extra(module: str, *, extra: str, feature: str, package: str | None = None) -> ModuleType:
    """`module`, imported; when it (or the package it is in) is missing, ImportError naming the
    extra to install. `package` is the name pip knows it by (default: the module's top package).
    A package that is there but fails to import keeps its own error, the extra named beside it."""
    package = package or module.split(".")[0]
    try:
        return importlib.import_module(module)
    except ModuleNotFoundError as error:
        if error.name is not None and module.split(".")[0] == error.name.split(".")[0]:
            raise ImportError(missing_extra(feature, package, extra), name=module) from error
        raise ImportError(f"{feature}: {package} failed to import ({error}); reinstall it with "
                          f"pip install 'goenv[{extra}]'", name=module) from error
