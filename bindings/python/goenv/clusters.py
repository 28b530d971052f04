"""Device clusters: named presets, or your own `goenv.Cluster(name, devices, links)`."""

from __future__ import annotations

from goenv._core import Cluster, InvalidArgument


def list() -> list[str]:  # noqa: A001 - mirrors goenv.datasets.list()
    """Names of the cluster presets."""
    return Cluster.preset_names()


def get(name: str | Cluster) -> Cluster:
    """The preset called `name` (a Cluster passes through). Raises goenv.NotFound, and
    goenv.InvalidArgument for what is neither a name nor a Cluster."""
    if isinstance(name, Cluster):
        return name
    if not isinstance(name, str):
        raise InvalidArgument(f"a cluster is a preset's name (goenv.clusters.list()) or a goenv.Cluster, got "
                              f"{type(name).__name__}")
    return Cluster.preset(name)
