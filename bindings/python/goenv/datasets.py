"""Graphs: the registered model families, and files of graphs."""

from __future__ import annotations

from goenv import _core
from goenv._core import Graph


def list() -> list[str]:  # noqa: A001 - the DESIGN's public name
    """Names of the registered graph families (each is also the <graph> part of env ids)."""
    return _core.graph_names()


def info(name: str) -> dict:
    """Description, default cluster and parameters (with defaults) of a graph family."""
    return _core.graph_family(name)


def load(name: str, **params: float) -> Graph:
    """Builds the graph family `name` with builder parameters, e.g. load("inception", batch_size=64)."""
    return _core.build_graph(name, {key: float(value) for key, value in params.items()})
