"""Direct access to the simulator, outside any environment."""

from __future__ import annotations

import numpy as np

import goenv._core as _core
from goenv._core import Cluster, Graph, SimulationResult
from goenv.arguments import checked_flag, checked_int
from goenv.clusters import get as get_cluster


def simulate(graph: Graph, cluster: str | Cluster, placement: np.ndarray | None = None,
             priority: np.ndarray | None = None, fusion: np.ndarray | None = None,
             max_fusion_size: int = 16) -> SimulationResult:
    """Simulates one step of `graph` on `cluster` (a preset name or a Cluster).

    placement: device index per node (default: all on device 0).
    priority: per node, higher runs first among ready ops of a device (default: FIFO).
    fusion: per node fusion priority, 0 = keep alone (default: no fusion); the greedy
    pass merges ops into producers' kernels when legal (same device, convex, fusible
    kinds, at most max_fusion_size ops). result.kernel tells which nodes fused.
    Returns runtime (s), per-device peak memory (bytes) and busy time, the oom and
    invalid flags, per-node start/finish/device, and the transfers. The GIL is released.
    """
    # Checked here: pybind11's refusal of a non-int is a signature dump that does not name it.
    max_fusion_size = checked_int("max_fusion_size", max_fusion_size, 1, 2**31 - 1)
    return _core.simulate(graph, get_cluster(cluster), placement, priority, fusion, max_fusion_size)


def lower_bound(graph: Graph, cluster: str | Cluster, fusion: bool = False) -> float:
    """Seconds no decision can beat: max(critical path on the fastest devices, work / devices).
    fusion=True: no decision with fusion either (a fusible op counts only its compute: a fused
    kernel pays one launch and touches only the bytes that cross it)."""
    return _core.lower_bound(graph, get_cluster(cluster), checked_flag("fusion", fusion))["value"]
