"""The C++ simulator against the plain-Python reference (reference_simulator.py),
on random graphs, decisions and clusters. Every number must be identical, bit for
bit: both follow the same rules with the same floating-point expressions, so any
difference is a rule the two read differently.
"""

from __future__ import annotations

import math
import random

import numpy as np
import pytest

import goenv
from helpers import (PRESETS, random_graph, random_graph_arrays, random_placements, random_priorities,
                     tiny_bus_cluster, with_allowed_kinds)
from reference_simulator import ReferenceCluster, ReferenceGraph, simulate as reference_simulate

NUM_RANDOM_GRAPHS = 240
DECISIONS_PER_CLUSTER = 3

CLUSTERS = [goenv.clusters.get(name) for name in PRESETS] + [tiny_bus_cluster()]
REFERENCE_CLUSTERS = [ReferenceCluster.from_goenv(c) for c in CLUSTERS]


def first_difference(actual, expected):
    for i, (a, e) in enumerate(zip(actual, expected)):
        if a != e:
            return f"first at index {i}: {a!r} != {e!r}"
    return f"lengths {len(actual)} != {len(expected)}" if len(actual) != len(expected) else "none"


def assert_same_result(actual, expected, context: str) -> None:
    """Exact equality of every field the simulator reports. Critical flags are only
    checked to include the op that ends last: the header does not say which of
    several tied paths they follow."""
    def check(name, a, e):
        assert a == e, f"{context}: {name} differs ({first_difference(a, e) if isinstance(a, list) else f'{a!r} != {e!r}'})"

    check("start", actual.start.tolist(), expected.start)
    check("finish", actual.finish.tolist(), expected.finish)
    check("device", actual.device.tolist(), expected.device)
    check("runtime", actual.runtime, expected.runtime)
    check("device_busy", actual.device_busy.tolist(), expected.device_busy)
    check("peak_memory", actual.peak_memory.tolist(), expected.peak_memory)
    check("oom", actual.oom, expected.oom)
    check("invalid", actual.invalid, expected.invalid)
    check("invalid_reason is set", bool(actual.invalid_reason), actual.invalid)
    check("bytes_moved", actual.bytes_moved, expected.bytes_moved)
    if expected.start:
        check("critical flag of the last op", bool(actual.critical[int(np.argmax(actual.finish))]), True)
    transfers = actual.transfers
    check("transfers", list(zip(transfers["node"].tolist(), transfers["src"].tolist(), transfers["dst"].tolist(),
                                transfers["bytes"].tolist(), transfers["start"].tolist(), transfers["end"].tolist())),
          [(t.node, t.src, t.dst, t.bytes, t.start, t.end) for t in expected.transfers])


def compare(graph, reference_graph, cluster_index, placement, priority, context):
    cluster = CLUSTERS[cluster_index]
    actual = goenv.simulate(graph, cluster,
                            placement=None if placement is None else np.asarray(placement, dtype=np.int32),
                            priority=None if priority is None else np.asarray(priority, dtype=np.float64))
    expected = reference_simulate(reference_graph, REFERENCE_CLUSTERS[cluster_index], placement, priority)
    assert_same_result(actual, expected, f"{context} on {cluster.name}")
    return actual, expected


@pytest.mark.parametrize("seed", range(NUM_RANDOM_GRAPHS))
def test_random_graph_matches_reference(seed):
    rng = random.Random(seed)
    graph = random_graph(rng)
    if rng.random() < 0.2:
        graph = with_allowed_kinds(graph, [rng.choice([0, 0, 0, 1, 2, 3, 4, 6]) for _ in range(graph.num_nodes)])
    reference_graph = ReferenceGraph.from_goenv(graph)
    for cluster_index, cluster in enumerate(CLUSTERS):
        placements = random_placements(rng, graph, cluster.num_devices)
        priorities = random_priorities(rng, graph.num_nodes)
        combos = [(p, q) for p in range(len(placements)) for q in range(len(priorities))]
        for p, q in rng.sample(combos, DECISIONS_PER_CLUSTER):
            compare(graph, reference_graph, cluster_index, placements[p], priorities[q],
                    f"seed {seed}, placement #{p}, priority #{q}")


def test_random_cases_cover_every_rule():
    """The random cases above are only worth as much as what they reach: they must
    include OOM and valid runs, invalid runs, transfers on shared channels that
    wait, zero-time kernels and transfers, and priority ties."""
    seen = {"oom": 0, "fits": 0, "invalid": 0, "queued transfer": 0, "zero-time kernel": 0,
            "zero-time transfer": 0, "op gap": 0}
    for seed in range(0, NUM_RANDOM_GRAPHS, 4):
        rng = random.Random(seed)
        graph = random_graph(rng)
        if rng.random() < 0.2:
            graph = with_allowed_kinds(graph, [rng.choice([0, 0, 0, 1, 2, 3, 4, 6]) for _ in range(graph.num_nodes)])
        for cluster in CLUSTERS:
            for placement in random_placements(rng, graph, cluster.num_devices)[2:]:
                r = goenv.simulate(graph, cluster, placement=np.asarray(placement))
                seen["oom" if r.oom else "fits"] += 1
                seen["invalid"] += r.invalid
                t = r.transfers
                seen["queued transfer"] += bool(np.any(t["start"] > r.finish[t["node"]]))
                seen["zero-time transfer"] += bool(np.any(t["start"] == t["end"]))
                seen["zero-time kernel"] += bool(np.any(r.start == r.finish))
                seen["op gap"] += any(d.op_gap > 0 for d in cluster.devices)
    assert all(count > 0 for count in seen.values()), seen


def test_large_graph_matches_reference():
    """A few hundred nodes: many events per instant and long transfer queues."""
    rng = random.Random(12345)
    arrays = random_graph_arrays(rng, num_nodes=300)
    graph = goenv.Graph.from_arrays(**arrays)
    reference_graph = ReferenceGraph.from_goenv(graph)
    for cluster_index, cluster in enumerate(CLUSTERS):
        placement = [rng.randrange(cluster.num_devices) for _ in range(graph.num_nodes)]
        priority = [float(rng.randrange(4)) for _ in range(graph.num_nodes)]
        compare(graph, reference_graph, cluster_index, placement, priority, "300 nodes")


def test_same_simulator_twice_is_identical():
    """The env reuses one Simulator workspace; results must not depend on the previous run."""
    rng = random.Random(7)
    graph = random_graph(rng, num_nodes=40)
    env = goenv.GraphEnv.from_graph("placement", graph, CLUSTERS[-1])
    env.reset(seed=0)
    reference_graph = ReferenceGraph.from_goenv(graph)
    for _ in range(5):
        action = env.action_space.sample()
        env.step(action)
        env.reset(seed=0)
        # The reset re-simulates the initial decision in the same workspace.
        expected = reference_simulate(reference_graph, REFERENCE_CLUSTERS[-1], env.core.placement.tolist(),
                                      env.core.priority.tolist())
        assert_same_result(env.core.last_result, expected, "after reset")


# Hand-checked cases: the reference itself against numbers worked out on paper.


def test_reference_chain_with_op_gap_and_transfer():
    # placeto-k80: 2.18e12 FLOP/s, 240e9 bytes/s, no launch overhead, 5.7 us gap,
    # links of 7600e6 bytes/s plus 25 us on one outgoing bus per device.
    graph = goenv.Graph.from_arrays(np.array([[0, 0], [1, 2]]), flops=[2.18e6, 2.18e6, 0.0],
                                    output_bytes=[7600, 0, 0])
    cluster = goenv.clusters.get("placeto-k80")
    expected = reference_simulate(ReferenceGraph.from_goenv(graph), ReferenceCluster.from_goenv(cluster),
                                  placement=[0, 0, 1])
    # Node 0: max(1e-6 s of flops, 7600 / 240e9 s of memory) = 1 us. Then the gap.
    assert expected.finish[0] == 2.18e6 / 2.18e12
    assert expected.start[1] == expected.finish[0] + 5.7e-6
    # The transfer to device 1 starts when node 0 finishes: 25 us + 1 us.
    assert expected.transfers[0].start == expected.finish[0]
    assert math.isclose(expected.start[2], expected.finish[0] + 26e-6, rel_tol=1e-12)
    # Node 2 does no flops but reads its 7600-byte input (no launch overhead on a K80).
    assert expected.finish[2] == expected.start[2] + 7600 / 240e9
    assert expected.bytes_moved == 7600


def test_reference_memory_is_half_open():
    # a -> b -> c on one device: a's output dies when b finishes, as c's is born.
    graph = goenv.Graph.from_arrays(np.array([[0, 1], [1, 2]]), flops=[1e9, 1e9, 1e9],
                                    output_bytes=[100, 1000, 10], param_bytes=[1, 2, 4])
    cluster = goenv.clusters.get("2xgpu-pcie")
    expected = reference_simulate(ReferenceGraph.from_goenv(graph), ReferenceCluster.from_goenv(cluster))
    assert expected.peak_memory == [7 + 1100, 0]
    actual = goenv.simulate(graph, cluster)
    assert actual.peak_memory.tolist() == expected.peak_memory


def test_reference_priority_ties():
    # Four independent ops on one device: higher priority first, then lower id.
    graph = goenv.Graph.from_arrays(np.zeros((2, 0), dtype=np.int64), flops=[1e9] * 4)
    cluster = goenv.clusters.get("2xgpu-pcie")
    expected = reference_simulate(ReferenceGraph.from_goenv(graph), ReferenceCluster.from_goenv(cluster),
                                  priority=[1.0, 2.0, 1.0, 0.0])
    order = sorted(range(4), key=lambda v: expected.start[v])
    assert order == [1, 0, 2, 3]


def test_op_gap_follows_a_tiny_nonzero_cost():
    graph = goenv.Graph.from_arrays(np.array([[0, 1], [1, 2]]), flops=[0.0, 0.0, 0.0], cost_us=[1.0, 1e-17, 1.0])
    cluster = goenv.clusters.get("placeto-k80")
    actual = goenv.simulate(graph, cluster)
    expected = reference_simulate(ReferenceGraph.from_goenv(graph), ReferenceCluster.from_goenv(cluster))
    assert expected.start[2] == expected.finish[1] + 5.7e-6
    assert actual.start.tolist() == expected.start


# Input checks of goenv.simulate.


def test_simulate_rejects_bad_decisions():
    graph = goenv.Graph.from_arrays(np.array([[0], [1]]), flops=[1.0, 1.0])
    with pytest.raises(goenv.InvalidAction):
        goenv.simulate(graph, "2xgpu-pcie", placement=np.array([0, 2]))
    with pytest.raises(goenv.InvalidAction):
        goenv.simulate(graph, "2xgpu-pcie", placement=np.array([0, -1]))
    with pytest.raises(ValueError):
        goenv.simulate(graph, "2xgpu-pcie", placement=np.array([0, 1, 0]))
    with pytest.raises(ValueError):
        goenv.simulate(graph, "2xgpu-pcie", placement=np.array([0.5, 1.0]))
    with pytest.raises(goenv.InvalidAction):
        goenv.simulate(graph, "2xgpu-pcie", priority=np.array([0.0, math.nan]))
    with pytest.raises(goenv.InvalidAction):
        goenv.simulate(graph, "2xgpu-pcie", priority=np.array([math.inf, 0.0]))
    with pytest.raises(ValueError):
        goenv.simulate(graph, "2xgpu-pcie", priority=np.array([0.0]))
    with pytest.raises(goenv.NotFound):
        goenv.simulate(graph, "no-such-cluster")


def test_oom_means_strictly_above_capacity():
    """OOM = the peak exceeds the device's capacity: a peak equal to it fits."""
    graph = goenv.Graph.from_arrays(np.array([[0], [1]]), flops=[1e6, 1e6], output_bytes=[300, 100],
                                    param_bytes=[500, 100])
    for capacity, oom in ((1000.0, False), (999.0, True)):  # peak = 600 params + 300 + 100 live at once
        device = goenv.Device("d", "gpu", peak_flops=1e12, memory_bandwidth=1e11, memory_bytes=capacity)
        cluster = goenv.Cluster("one", [device], [])
        actual = goenv.simulate(graph, cluster)
        expected = reference_simulate(ReferenceGraph.from_goenv(graph), ReferenceCluster.from_goenv(cluster))
        assert expected.peak_memory == [1000.0] and expected.oom == oom
        assert_same_result(actual, expected, f"capacity {capacity}")


# Fusion: the reference does not model fused kernels, but two properties need none.


def test_fusion_priority_zero_is_no_fusion():
    graph = goenv.Graph.from_arrays(np.zeros((2, 0), dtype=np.int64), flops=[1e9, 2e9])  # two independent ops
    unfused = goenv.simulate(graph, "2xgpu-pcie")
    zero = goenv.simulate(graph, "2xgpu-pcie", fusion=np.zeros(2, dtype=np.int32))
    assert unfused.start.tolist() == [0.0, unfused.finish[0]]  # node 0 first: the lower id
    assert zero.start.tolist() == unfused.start.tolist()


def test_fusion_priority_zero_keeps_a_node_alone_also_as_a_producer():
    """docs/simulator.md "priority 0 = do not fuse": a consumer of priority > 0 joins no group of a
    priority-0 producer; nodes of priority > 0 fuse as before."""
    chain = goenv.Graph.from_arrays(np.array([[0, 1], [1, 2]]), flops=[1e9] * 3, op_type=["Add", "Relu", "Mul"])
    for fusion, kernels in (([0, 1, 0], [0, 1, 2]), ([0, 1, 1], [0, 1, 1]), ([1, 1, 0], [0, 0, 1]),
                            ([1, 1, 1], [0, 0, 0])):
        r = goenv.simulate(chain, "1xgpu", fusion=np.array(fusion, dtype=np.int32))
        assert r.kernel.tolist() == kernels, fusion


def test_fusion_never_makes_a_cyclic_kernel_graph():
    """Regression: two groups, each convex on its own, must not reach each other both
    ways ({0,4} -> 1 -> {2,3} -> {0,4} here), or the kernel graph has a cycle."""
    edges = np.array([[0, 0, 1, 2, 2], [1, 4, 3, 3, 4]])
    graph = goenv.Graph.from_arrays(edges, flops=[1e6] * 5, output_bytes=[1000] * 5,
                                    op_type=["Relu", "MatMul", "Add", "Sum", "Sum"])
    r = goenv.simulate(graph, "2xgpu-pcie", fusion=np.full(5, 2, dtype=np.int32))
    assert_kernels_are_consistent(graph, r)


def assert_kernels_are_consistent(graph, r, context=""):
    """Fused nodes share one kernel: one device, one start and finish; kernels run after
    the kernels they consume from, and no two kernels of a device overlap."""
    kernel, start, finish, device = r.kernel.tolist(), r.start.tolist(), r.finish.tolist(), r.device.tolist()
    first = {}
    for v, k in enumerate(kernel):
        u = first.setdefault(k, v)
        assert (device[u], start[u], finish[u]) == (device[v], start[v], finish[v]), f"{context}: kernel {k}"
    for u, v in graph.edge_index.T.tolist():
        if kernel[u] != kernel[v]:
            assert start[v] >= finish[u], f"{context}: edge {u} -> {v}"
    for d in set(device):
        spans = sorted((start[first[k]], finish[first[k]]) for k in first if device[first[k]] == d)
        assert all(a[1] <= b[0] for a, b in zip(spans, spans[1:])), f"{context}: overlap on device {d}"


@pytest.mark.parametrize("seed", range(40))
def test_random_fusion_decisions_give_consistent_kernels(seed):
    rng = random.Random(10_000 + seed)
    graph = random_graph(rng)
    n = graph.num_nodes
    for cluster in CLUSTERS:
        placement = [rng.randrange(cluster.num_devices) for _ in range(n)]
        fusion = np.array([rng.randrange(4) for _ in range(n)], dtype=np.int32)
        for max_fusion_size in (1, 3, 16):
            r = goenv.simulate(graph, cluster, placement=placement, fusion=fusion, max_fusion_size=max_fusion_size)
            assert_kernels_are_consistent(graph, r, f"seed {seed} on {cluster.name}")
            sizes = np.bincount(r.kernel)
            assert sizes.max() <= max_fusion_size
        none = goenv.simulate(graph, cluster, placement=placement, fusion=np.zeros(n, dtype=np.int32))
        assert sorted(none.kernel.tolist()) == list(range(n))  # priority 0: every op alone
