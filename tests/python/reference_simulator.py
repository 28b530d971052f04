"""A slow, plain-Python reference of goenv's simulator: the rules of
core/simulator.h (and the cost model of core/cost_model.h) written as code.

Readability over speed: lists and dicts, linear scans, no numpy. Every rule of
the header comment appears below as its own commented block, in the same words,
so a reader can check one against the other. test_differential.py compares the
C++ simulator with this one on hundreds of random graphs, exactly.

Floating-point expressions are written in the same form as the rules state them
(`finish = start + cost`, `end = start + (latency + bytes / bandwidth)`, ...);
byte counts are integers, so their sums are exact in any order.

Entry points:
    graph = ReferenceGraph.from_goenv(goenv_graph)
    cluster = ReferenceCluster.from_goenv(goenv_cluster)
    result = simulate(graph, cluster, placement=None, priority=None)
"""

from __future__ import annotations

import json
import math
import os
import tempfile
from dataclasses import dataclass, field

DEVICE_KINDS = ("cpu", "gpu", "tpu")  # index = the kind's bit in allowed_kinds and column in cost

EVENT_FINISH, EVENT_ARRIVAL, EVENT_DEVICE_FREE = 0, 1, 2


# ---------------------------------------------------------------- the inputs


@dataclass
class ReferenceGraph:
    num_nodes: int
    edges: list  # (src, dst, bytes) tuples
    flops: list  # float per node
    output_bytes: list  # int per node
    param_bytes: list  # int per node
    colocation: list  # int per node, -1 = none
    allowed_kinds: list  # bitmask per node over DEVICE_KINDS, 0 = any
    cost: list  # per node: [cpu, gpu, tpu] measured seconds, None = roofline

    @staticmethod
    def from_goenv(graph) -> "ReferenceGraph":
        """Every column exactly as the C++ graph holds it, read from its JSON file
        (JSON doubles round-trip exactly; the file also carries allowed_kinds and
        the measured cost in seconds, which the numpy views do not)."""
        with tempfile.TemporaryDirectory() as tmp:
            path = os.path.join(tmp, "graph.json")
            graph.save(path)
            with open(path) as f:
                record = json.load(f)["graph"]
        n = len(record["names"])
        cost = []
        for v in range(n):
            row = record["cost"][3 * v: 3 * v + 3]
            cost.append([None if math.isnan(x) else x for x in row])
        return ReferenceGraph(
            num_nodes=n,
            edges=list(zip(record["edge_src"], record["edge_dst"], record["edge_bytes"])),
            flops=[float(x) for x in record["flops"]],
            output_bytes=list(record["output_bytes"]),
            param_bytes=list(record["param_bytes"]),
            colocation=list(record["colocation"]),
            allowed_kinds=list(record["allowed_kinds"]),
            cost=cost,
        )

    def __post_init__(self):
        self._in = [[] for _ in range(self.num_nodes)]
        self._out = [[] for _ in range(self.num_nodes)]
        for edge in self.edges:
            self._out[edge[0]].append(edge)
            self._in[edge[1]].append(edge)

    def in_edges(self, v):
        """(src, v, bytes) for every edge into v."""
        return self._in[v]

    def out_edges(self, v):
        """(v, dst, bytes) for every edge out of v."""
        return self._out[v]

    def allows(self, v, kind_index):
        mask = self.allowed_kinds[v]
        return mask == 0 or (mask >> kind_index) & 1 == 1


@dataclass
class ReferenceDevice:
    name: str
    kind: int  # index into DEVICE_KINDS
    peak_flops: float
    memory_bandwidth: float
    memory_bytes: float
    launch_overhead: float
    op_gap: float


@dataclass
class ReferenceLink:
    latency: float
    bandwidth: float
    channel: int


@dataclass
class ReferenceCluster:
    devices: list  # ReferenceDevice
    links: dict  # (src, dst) -> ReferenceLink

    @staticmethod
    def from_goenv(cluster) -> "ReferenceCluster":
        devices = [ReferenceDevice(d.name, DEVICE_KINDS.index(d.kind), d.peak_flops, d.memory_bandwidth,
                                   d.memory_bytes, d.launch_overhead, d.op_gap) for d in cluster.devices]
        links = {(l.src, l.dst): ReferenceLink(l.latency, l.bandwidth, l.channel) for l in cluster.links}
        return ReferenceCluster(devices, links)


# ---------------------------------------------------------------- the cost model


def bytes_touched(graph: ReferenceGraph, v: int) -> float:
    """bytes_touched = bytes of all input edges + output_bytes + param_bytes."""
    return float(sum(b for (_, _, b) in graph.in_edges(v)) + graph.output_bytes[v] + graph.param_bytes[v])


def op_cost(graph: ReferenceGraph, v: int, device: ReferenceDevice) -> float:
    """max(flops / peak_flops, bytes_touched / memory_bandwidth) + launch_overhead,
    unless the op carries a measured cost for the device's kind, which is used as is."""
    measured = graph.cost[v][device.kind]
    if measured is not None:
        return measured
    return max(graph.flops[v] / device.peak_flops, bytes_touched(graph, v) / device.memory_bandwidth) + \
        device.launch_overhead


# ---------------------------------------------------------------- the simulator


@dataclass
class ReferenceTransfer:
    node: int
    src: int
    dst: int
    bytes: float
    start: float
    end: float


@dataclass
class ReferenceResult:
    runtime: float = 0.0
    device_busy: list = field(default_factory=list)
    peak_memory: list = field(default_factory=list)
    oom: bool = False
    invalid: bool = False
    invalid_reason: str = ""
    bytes_moved: float = 0.0
    start: list = field(default_factory=list)
    finish: list = field(default_factory=list)
    device: list = field(default_factory=list)
    transfers: list = field(default_factory=list)  # ReferenceTransfer, in the order they were sent


def invalid_reason(graph: ReferenceGraph, cluster: ReferenceCluster, placement) -> str:
    """Invalid = a colocation group split over devices, or a node on a device kind it
    does not allow. Returns "" when valid."""
    for v in range(graph.num_nodes):
        kind = cluster.devices[placement[v]].kind
        if not graph.allows(v, kind):
            return f"node {v} may not run on a {DEVICE_KINDS[kind]} device"
    devices_of_group = {}
    for v in range(graph.num_nodes):
        if graph.colocation[v] != -1:
            devices_of_group.setdefault(graph.colocation[v], set()).add(placement[v])
    for group, devices in devices_of_group.items():
        if len(devices) > 1:
            return f"colocation group {group} is split over devices {sorted(devices)}"
    return ""


def simulate(graph: ReferenceGraph, cluster: ReferenceCluster, placement=None, priority=None) -> ReferenceResult:
    n = graph.num_nodes
    num_devices = len(cluster.devices)
    placement = [0] * n if placement is None else [int(p) for p in placement]
    priority = [0.0] * n if priority is None else [float(p) for p in priority]
    for v in range(n):
        assert 0 <= placement[v] < num_devices, "placement out of range"
        assert math.isfinite(priority[v]), "priorities must be finite"

    result = ReferenceResult()
    result.device = placement
    result.start = [0.0] * n
    result.finish = [0.0] * n
    result.device_busy = [0.0] * num_devices
    reason = invalid_reason(graph, cluster, placement)
    result.invalid = reason != ""
    result.invalid_reason = reason

    # State of the run.
    inputs_missing = [len(graph.in_edges(v)) for v in range(n)]
    ready = [[] for _ in range(num_devices)]  # per device: (node, ready_time)
    running = [False] * num_devices
    free_at = [0.0] * num_devices  # the device idles until then after an op_gap
    channel_free = {link.channel: 0.0 for link in cluster.links.values()}
    events = []  # (time, kind, id)
    cost_of = {}  # node -> the cost it ran with

    def make_ready(v, t):
        ready[placement[v]].append((v, t))

    def pick(d):
        # The ready kernel of highest priority; ties go to the earliest ready time,
        # then the lowest node id. With no priorities given that is FIFO.
        best = min(ready[d], key=lambda entry: (-priority[entry[0]], entry[1], entry[0]))
        ready[d].remove(best)
        return best[0]

    def dispatch(t):
        # Idle devices pick their next kernels in device order. A device runs one
        # kernel at a time, non-preemptively.
        for d in range(num_devices):
            if running[d] or free_at[d] > t or not ready[d]:
                continue
            v = pick(d)
            c = op_cost(graph, v, cluster.devices[d])
            cost_of[v] = c
            result.start[v] = t
            result.finish[v] = t + c
            result.device_busy[d] += c
            running[d] = True
            events.append((result.finish[v], EVENT_FINISH, v))

    def finish(v, t):
        d = placement[v]
        running[d] = False
        # After a kernel of nonzero cost the device idles `op_gap` seconds.
        if cost_of[v] != 0 and cluster.devices[d].op_gap > 0:
            free_at[d] = t + cluster.devices[d].op_gap
            events.append((free_at[d], EVENT_DEVICE_FREE, d))
        else:
            free_at[d] = t
        # Inputs from the same device are there when their producer finishes.
        bytes_to = {}  # remote device -> size of the transfer
        for (_, w, b) in graph.out_edges(v):
            if placement[w] == d:
                inputs_missing[w] -= 1
                if inputs_missing[w] == 0:
                    make_ready(w, t)
            else:
                # Size = the largest bytes of the edges to that device.
                bytes_to[placement[w]] = max(bytes_to.get(placement[w], 0), b)
        # The output is sent once to every other device that consumes it, destinations
        # in increasing order. Transfers on one link channel run one at a time, first
        # come first served; each takes latency + bytes / bandwidth.
        for dst in sorted(bytes_to):
            link = cluster.links[(d, dst)]
            size = float(bytes_to[dst])
            start = max(t, channel_free[link.channel])
            end = start + (link.latency + size / link.bandwidth)
            channel_free[link.channel] = end
            result.transfers.append(ReferenceTransfer(v, d, dst, size, start, end))
            result.bytes_moved += size
            events.append((end, EVENT_ARRIVAL, len(result.transfers) - 1))

    def arrive(transfer_id, t):
        # Inputs from other devices are there when their transfer arrives.
        tr = result.transfers[transfer_id]
        for (_, w, _) in graph.out_edges(tr.node):
            if placement[w] == tr.dst:
                inputs_missing[w] -= 1
                if inputs_missing[w] == 0:
                    make_ready(w, t)

    for v in range(n):
        if inputs_missing[v] == 0:
            make_ready(v, 0.0)
    dispatch(0.0)
    # Events at one time are handled together (finishes by node id; the order is
    # (time, kind, id)), then idle devices pick their next kernels. Handling an event
    # may add another at the same time (a zero-time transfer); it joins the batch.
    while events:
        t = min(events)[0]
        while events and min(events)[0] == t:
            event = min(events)
            events.remove(event)
            _, kind, ident = event
            if kind == EVENT_FINISH:
                finish(ident, t)
            elif kind == EVENT_ARRIVAL:
                arrive(ident, t)
            # EVENT_DEVICE_FREE: nothing to do but dispatch.
        dispatch(t)

    result.runtime = max(result.finish, default=0.0)
    result.peak_memory = peak_memory(graph, cluster, result)
    result.oom = any(result.peak_memory[d] > cluster.devices[d].memory_bytes for d in range(num_devices))
    return result


def peak_memory(graph: ReferenceGraph, cluster: ReferenceCluster, result: ReferenceResult) -> list:
    """Memory per device: params of the nodes placed there for the whole run; each
    output from its producer's start until its last local consumer and its last
    outgoing transfer have finished (or its own finish if neither exists); each
    received copy from its transfer's start until its last consumer there finishes.
    Intervals are half-open: memory freed at t is reusable at t."""
    num_devices = len(cluster.devices)
    intervals = []  # (device, alloc, free, bytes)
    for v in range(graph.num_nodes):
        d = result.device[v]
        ends = [result.finish[w] for (_, w, _) in graph.out_edges(v) if result.device[w] == d]
        ends += [tr.end for tr in result.transfers if tr.node == v]
        free = max(ends) if ends else result.finish[v]
        intervals.append((d, result.start[v], free, graph.output_bytes[v]))
    for tr in result.transfers:
        consumers = [w for (_, w, _) in graph.out_edges(tr.node) if result.device[w] == tr.dst]
        free = max(result.finish[w] for w in consumers)
        intervals.append((tr.dst, tr.start, free, tr.bytes))

    peaks = []
    for d in range(num_devices):
        params = sum(graph.param_bytes[v] for v in range(graph.num_nodes) if result.device[v] == d)
        mine = [(alloc, free, size) for (dev, alloc, free, size) in intervals if dev == d]
        # The live bytes only change at allocation times, so the peak is at one of them.
        live_peak = 0
        for (t, _, _) in mine:
            live = sum(size for (alloc, free, size) in mine if alloc <= t < free)
            live_peak = max(live_peak, live)
        peaks.append(float(params + live_peak))
    return peaks
