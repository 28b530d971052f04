"""Shared helpers for the pytest suite: seeded random graphs, decisions and clusters.

Everything takes a `random.Random`, so a failing case is reproduced from its seed.
"""

from __future__ import annotations

import json
import math
import os
import random
import struct
import tempfile

import numpy as np

import goenv

# Presets every differential test runs on, plus `tiny_bus_cluster()`.
PRESETS = ("2xgpu-pcie", "4xgpu-nvlink", "cpu+2xgpu", "placeto-k80")


def random_graph_arrays(rng: random.Random, num_nodes: int | None = None, max_nodes: int = 60) -> dict:
    """Keyword arguments of goenv.Graph.from_arrays for a layered random DAG.

    Node ids are shuffled (topological order is not id order); flops, bytes and
    params are log-uniform with exact zeros mixed in; sometimes per-edge bytes
    (with a duplicated edge), measured costs (1-D or per kind, NaN = roofline,
    zeros included) and colocation groups.
    """
    n = num_nodes if num_nodes is not None else rng.randint(1, max_nodes)
    num_layers = rng.randint(1, n)
    layer_of_position = sorted(rng.randrange(num_layers) for _ in range(n))
    ids = list(range(n))
    rng.shuffle(ids)  # node at position i gets id ids[i]
    edge_density = rng.choice([0.05, 0.15, 0.4])
    edges = []
    for i in range(n):
        earlier = [j for j in range(n) if layer_of_position[j] < layer_of_position[i]]
        if not earlier:
            continue
        chosen = {j for j in earlier if rng.random() < edge_density}
        if not chosen and rng.random() < 0.9:
            chosen.add(rng.choice(earlier))
        edges += [(ids[j], ids[i]) for j in sorted(chosen)]

    def log_uniform(low_exp, high_exp, zero_probability):
        if rng.random() < zero_probability:
            return 0
        return int(10 ** rng.uniform(low_exp, high_exp))

    arrays = {
        "edge_index": np.array(edges, dtype=np.int64).reshape(-1, 2).T.copy(),
        "flops": [0.0 if rng.random() < 0.2 else 10 ** rng.uniform(3, 12) for _ in range(n)],
        "output_bytes": [log_uniform(0, 8, 0.2) for _ in range(n)],
        "param_bytes": [log_uniform(0, 8, 0.6) for _ in range(n)],
        "op_type": [rng.choice(goenv.op_type_names()) for _ in range(n)],
        "name": f"random{n}",
    }
    if edges and rng.random() < 0.5:
        arrays["edge_bytes"] = [log_uniform(0, 8, 0.2) for _ in edges]
        if rng.random() < 0.5:  # a tensor consumed twice by one op: one dependency, largest bytes kept
            k = rng.randrange(len(edges))
            arrays["edge_index"] = np.concatenate([arrays["edge_index"], arrays["edge_index"][:, k:k + 1]], axis=1)
            arrays["edge_bytes"].append(log_uniform(0, 8, 0.2))
    if rng.random() < 0.3:
        def measured():
            x = rng.random()
            return math.nan if x < 0.5 else 0.0 if x < 0.6 else rng.uniform(0.1, 500.0)
        per_kind = rng.random() < 0.5
        arrays["cost_us"] = [[measured() for _ in range(3)] if per_kind else measured() for _ in range(n)]
    if rng.random() < 0.3:
        num_groups = rng.randint(1, max(1, n // 3))
        arrays["colocation"] = [rng.randrange(num_groups) if rng.random() < 0.4 else -1 for _ in range(n)]
    return arrays


def random_graph(rng: random.Random, num_nodes: int | None = None, max_nodes: int = 60) -> goenv.Graph:
    return goenv.Graph.from_arrays(**random_graph_arrays(rng, num_nodes, max_nodes))


def with_allowed_kinds(graph: goenv.Graph, masks) -> goenv.Graph:
    """The same graph with per-node allowed device kinds (bitmask over cpu, gpu, tpu;
    0 = any). from_arrays has no such column, so this goes through the JSON file."""
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "graph.json")
        graph.save(path)
        with open(path) as f:
            record = json.load(f)
        record["graph"]["allowed_kinds"] = [int(m) for m in masks]
        with open(path, "w") as f:
            json.dump(record, f)
        return goenv.Graph.load(path)


def tiny_bus_cluster() -> goenv.Cluster:
    """Three devices of three kinds with little memory (OOM is common), launch
    overheads and op gaps, and shared channels: every link out of devices 0 and 1
    shares channel 0 (one bus), links out of device 2 share channel 1. Links out
    of device 0 have no latency, so an empty tensor arrives the instant it is sent."""
    devices = [
        goenv.Device("cpu:0", "cpu", peak_flops=1e11, memory_bandwidth=2e10, memory_bytes=2e8,
                     launch_overhead=2e-6, op_gap=0.0),
        goenv.Device("gpu:0", "gpu", peak_flops=5e12, memory_bandwidth=5e11, memory_bytes=1.5e8,
                     launch_overhead=0.0, op_gap=3e-6),
        goenv.Device("tpu:0", "tpu", peak_flops=2e13, memory_bandwidth=1e12, memory_bytes=1e8,
                     launch_overhead=1e-6, op_gap=1e-6),
    ]
    links = []
    for src in range(3):
        for dst in range(3):
            if src != dst:
                links.append(goenv.Link(src, dst, bandwidth=[4e9, 1.2e10, 2.5e10][src],
                                        latency=0.0 if src == 0 else 7e-6, channel=0 if src < 2 else 1))
    return goenv.Cluster("tiny-bus", devices, links)


def random_placements(rng: random.Random, graph: goenv.Graph, num_devices: int) -> list:
    """Placements to try: the default (None), all on one device, uniformly random,
    and random with every colocation group kept together."""
    n = graph.num_nodes
    uniform = [rng.randrange(num_devices) for _ in range(n)]
    group_device = {}
    grouped = []
    for v, c in enumerate(graph.colocation.tolist()):
        if c == -1:
            grouped.append(rng.randrange(num_devices))
        else:
            grouped.append(group_device.setdefault(c, rng.randrange(num_devices)))
    return [None, [rng.randrange(num_devices)] * n, uniform, grouped]


def random_priorities(rng: random.Random, n: int) -> list:
    """Priorities to try: the default FIFO (None), random reals (negative too) and a
    few integer levels (many ties)."""
    return [None, [rng.uniform(-10.0, 10.0) for _ in range(n)], [float(rng.randrange(3)) for _ in range(n)]]


def require_agents():
    """goenv.agents with its goenv._agents module built; else skips the calling test module."""
    import pytest

    pytest.importorskip("torch")
    agents = pytest.importorskip("goenv.agents")
    try:
        agents.options()
    except ImportError as error:  # goenv built without _agents
        pytest.skip(f"goenv._agents is not built: {error}", allow_module_level=True)
    return agents


def permuted_cluster(cluster: goenv.Cluster, perm) -> goenv.Cluster:
    """The same devices and links listed in another order: new device i is old device perm[i]
    (links keep their channels, so a shared bus stays shared)."""
    data = json.loads(cluster.to_json())
    c = data["cluster"]
    perm = [int(p) for p in perm]
    new_of = {old: new for new, old in enumerate(perm)}
    for key in ("device_names", "kinds", "peak_flops", "memory_bandwidth", "memory_bytes", "launch_overhead",
                "op_gap"):
        c[key] = [c[key][old] for old in perm]
    c["link_src"] = [new_of[s] for s in c["link_src"]]
    c["link_dst"] = [new_of[d] for d in c["link_dst"]]
    c["name"] = c["name"] + "-relabelled"
    return goenv.Cluster.from_json(json.dumps(data))


def cache_switching(cls, other, switch_after: int):
    """A subclass of `cls` (a reader with a one-slot `_cached` shard) whose cache another
    thread replaces with `other` right after the `switch_after`-th look at it since
    `looks[0] = 0`: a thread switch between two reads of the cache, made deterministic.
    Returns (the subclass, looks)."""
    looks = [0]

    class Switching(cls):
        def __getattribute__(self, name):
            value = object.__getattribute__(self, name)
            if name == "_cached" and value is not None:
                looks[0] += 1
                if looks[0] == switch_after:
                    object.__setattr__(self, "_cached", other)
            return value

    return Switching, looks


def checksum64(data: bytes) -> int:
    """The checksum of goenv's file envelope and snapshots: FNV-1a mixing over little-endian
    64-bit words, then the tail bytes (docs/limits.md)."""
    h, prime, mask = 14695981039346656037, 1099511628211, 2**64 - 1
    words = len(data) // 8
    for word in np.frombuffer(data, dtype="<u8", count=words).tolist():
        h = ((h ^ word) * prime) & mask
    for byte in data[words * 8:]:
        h = ((h ^ byte) * prime) & mask
    return h


def reseal_snapshot(body: bytes) -> bytes:
    """A snapshot whose closing checksum matches `body` (a snapshot without its last 8 bytes):
    what a hostile edit that knows the format looks like, so the field checks are what refuse it."""
    return body + struct.pack("<Q", checksum64(body))

