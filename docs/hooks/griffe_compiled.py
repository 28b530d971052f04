"""Griffe extension: the compiled module goenv._core, read by inspection, joins the goenv package.

mkdocstrings reads goenv's Python source statically from bindings/python, but the pybind11 module
`_core` is built elsewhere (the editable install puts it in site-packages), so static loading
never sees it and the names goenv re-exports from it (Graph, Cluster, simulate's result, the
exceptions) would not resolve. This extension imports it and attaches what inspection finds.
"""

from __future__ import annotations

import importlib

import griffe

COMPILED = ("_core",)


def exception_class(name: str, cls: type, parent: griffe.Module) -> griffe.Class:
    """The binding registers its exceptions under the package's name (goenv.Error), so inspection
    sees them as aliases of goenv.X, which goenv itself imports from _core: a loop. They become
    plain classes here, with their docstring and standard bases."""
    bases = [griffe.ExprName(base.__name__) for base in cls.__bases__]
    docstring = griffe.Docstring(cls.__doc__, parent=None) if cls.__doc__ else None
    made = griffe.Class(name, docstring=docstring, bases=bases, parent=parent)
    if docstring:
        docstring.parent = made
    return made


class CompiledModules(griffe.Extension):
    def on_package(self, *, pkg: griffe.Module, **_) -> None:
        if pkg.name != "goenv":
            return
        for name in COMPILED:
            if name in pkg.members:
                continue
            module = griffe.inspect(name, parent=pkg)
            runtime = importlib.import_module(f"goenv.{name}")
            for member_name, member in list(module.members.items()):
                if member.is_alias and member.target_path == f"goenv.{member_name}":
                    module.set_member(member_name, exception_class(member_name, getattr(runtime, member_name), module))
            pkg.set_member(name, module)
