"""Device clusters: named presets, or your own `goenv.Cluster(name, devices, links)`."""

from __future__ import annotations

from goenv._core import Cluster


def list() -> list[str]:  # noqa: A001 - mirrors goenv.datasets.list()
    """Names of the cluster presets."""
    return Cluster.preset_names()


def get(name: str | Cluster) -> Cluster:
    """The preset called `name` (a Cluster passes through). Raises goenv.NotFound."""
    return name if isinstance(name, Cluster) else Cluster.preset(name)
