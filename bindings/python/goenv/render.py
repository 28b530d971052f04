"""Gantt charts of one simulated schedule (matplotlib, Agg; no display needed).

Top panel: one row per device with its kernels colored by op type, then one row
per link (src -> dst) that carried transfers. Bottom panel: live memory per
device over time with each device's capacity dashed. Time in milliseconds.
Each panel is drawn with one PolyCollection, so 80k-node graphs stay fast.
"""

from __future__ import annotations

import os

import matplotlib
import numpy as np
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.collections import PolyCollection
from matplotlib.figure import Figure
from matplotlib.patches import Patch

from goenv._core import Cluster, Graph, InvalidArgument, SimulationResult, op_type_names
from goenv.files import new_output_path, write_atomic

LEGEND_OP_TYPES = 10  # op types named in the legend, by total kernel time
TRANSFER_COLOR = "#555555"
GIB = float(2**30)
MS = 1e3  # the time axis is in milliseconds

# One fixed color per op-type id, the same in every chart: 60 colors from tab20,
# tab20b and tab20c, strided so that neighbouring ids get different hues.
_PALETTE = np.concatenate([np.asarray(matplotlib.colormaps[name].colors)[start::stride]
                           for name, stride in (("tab20", 2), ("tab20b", 4), ("tab20c", 4))
                           for start in range(stride)])


def op_type_color(op_type: int) -> np.ndarray:
    """RGB color of an op-type id (an index into goenv.op_type_names())."""
    return _PALETTE[op_type % len(_PALETTE)]


def memory_timeline(graph: Graph, result: SimulationResult, num_devices: int) -> list[tuple[np.ndarray, np.ndarray]]:
    """Per device, (times s, live bytes) as a step function (each value holds until the next time).

    Rebuilt from the result by the rules in core/simulator.h, on kernels (fused
    nodes share one; only outputs that leave a kernel are materialized): params
    stay resident the whole run; a kernel's output lives from its start until its
    last local consumer and its last outgoing transfer have finished (its own
    finish if neither); a received copy from the transfer's start until its last
    consumer on the destination finishes. Intervals are half-open. The maximum of
    each curve is result.peak_memory.
    """
    kernel = result.kernel
    num_kernels = int(kernel.max()) + 1 if len(kernel) else 0
    device, start, finish = (np.zeros(num_kernels, column.dtype)
                             for column in (result.device, result.start, result.finish))
    device[kernel], start[kernel], finish[kernel] = result.device, result.start, result.finish
    node_src, node_dst = graph.edge_index
    crossing = kernel[node_src] != kernel[node_dst]
    src, dst = kernel[node_src[crossing]], kernel[node_dst[crossing]]
    leaves = np.ones(graph.num_nodes, bool)  # outputs of a kernel: nodes without edges inside it
    leaves[node_src[~crossing]] = False
    leaves[node_src[crossing]] = True
    output_bytes = np.bincount(kernel, weights=np.where(leaves, graph.output_bytes, 0), minlength=num_kernels)

    transfers = result.transfers
    producer = kernel[transfers["node"]]
    local = device[src] == device[dst]
    last_use = finish.copy()
    np.maximum.at(last_use, src[local], finish[dst[local]])
    np.maximum.at(last_use, producer, transfers["end"])
    # A received copy: until the latest finish among its consumers on the destination device.
    copy_free = transfers["end"].copy()
    if len(copy_free):
        key = producer * num_devices + transfers["dst"]  # unique: one copy per (kernel, device)
        by_key = np.argsort(key)
        remote = ~local
        copy = by_key[np.searchsorted(key[by_key], src[remote] * num_devices + device[dst[remote]])]
        np.maximum.at(copy_free, copy, finish[dst[remote]])

    owner = np.concatenate([device, transfers["dst"]]).astype(np.int64)
    alloc = np.concatenate([start, transfers["start"]])
    free = np.concatenate([last_use, copy_free])
    size = np.concatenate([output_bytes, transfers["bytes"]])
    held = (size > 0) & (free > alloc)
    params = np.bincount(result.device, weights=graph.param_bytes, minlength=num_devices)
    curves = []
    for d in range(num_devices):
        mine = held & (owner == d)
        times = np.concatenate([[0.0], free[mine], alloc[mine]])
        deltas = np.concatenate([[0.0], -size[mine], size[mine]])
        order = np.lexsort((deltas > 0, times))  # at one time, frees before allocations
        times, live = times[order], np.cumsum(deltas[order])
        last_of_time = np.append(times[1:] != times[:-1], True)
        times = np.append(times[last_of_time], max(result.runtime, times[-1]))
        live = live[last_of_time]
        curves.append((times, params[d] + np.append(live, live[-1])))
    return curves


def _literal(name: str) -> str:
    """A user's name as matplotlib text: a "$" is a dollar sign, not the start of math."""
    return name.replace("$", r"\$")


def _bars(rows: np.ndarray, starts: np.ndarray, ends: np.ndarray, height: float = 0.8) -> np.ndarray:
    """(K, 4, 2) rectangle corners for bars in row `rows` spanning [starts, ends] (ms)."""
    top, bottom = rows - height / 2, rows + height / 2
    return np.stack([np.stack([starts, top], 1), np.stack([ends, top], 1),
                     np.stack([ends, bottom], 1), np.stack([starts, bottom], 1)], 1)


def gantt_figure(graph: Graph, cluster: Cluster, result: SimulationResult, title: str | None = None) -> Figure:
    """A Figure (not attached to pyplot) of the schedule in `result` of `graph` on `cluster`."""
    if len(result.start) != graph.num_nodes or len(result.peak_memory) != cluster.num_devices:
        raise InvalidArgument(f"the result covers {len(result.start)} nodes on {len(result.peak_memory)} devices, "
                              f"not this graph's {graph.num_nodes} on {cluster.num_devices}; "
                              "was it simulated (env.reset()) on this graph and cluster?")
    num_devices = cluster.num_devices
    device_names = [_literal(dev.name) for dev in cluster.devices]
    links, link_of_transfer, link_names = _link_rows(result.transfers, device_names)
    row_names = device_names + link_names
    num_rows = len(row_names)

    row_height = min(0.45, 10.0 / num_rows)  # inches; 8 fully linked devices still fit one screen
    fig = Figure(figsize=(12, 0.8 + row_height * num_rows + 2.8), dpi=100, layout="constrained")
    FigureCanvasAgg(fig)
    timeline, memory = fig.subplots(2, 1, sharex=True, height_ratios=[0.3 + row_height * num_rows, 2.6])
    op_types, durations = _draw_kernels(timeline, graph, result)
    if len(links):
        _draw_transfers(timeline, result.transfers, link_of_transfer, num_devices)
    timeline.set_xlim(0, max(result.runtime * MS, 1e-9) * 1.01)
    timeline.set_ylim(num_rows - 0.5, -0.5)
    timeline.set_yticks(range(num_rows), row_names, fontsize=9 if row_height >= 0.3 else 6)
    timeline.grid(axis="x", color="0.9")
    timeline.set_axisbelow(True)
    _draw_legend(timeline, op_types, durations, transfers=bool(len(links)))
    _draw_title(fig, graph, cluster, result, title, num_kernels=len(op_types))
    _draw_memory(memory, graph, cluster, result, device_names)
    return fig


def _link_rows(transfers: dict, device_names: list[str]) -> tuple[np.ndarray, np.ndarray, list[str]]:
    """The timeline's rows of transfers: the links (src * D + dst) or senders they stand for, each
    transfer's row among them, and the rows' names."""
    num_devices = len(device_names)
    links, link_of_transfer = np.unique(transfers["src"] * num_devices + transfers["dst"], return_inverse=True)
    if len(links) <= num_devices:  # a row per link used
        link_names = [f"{device_names[link // num_devices]} → {device_names[link % num_devices]}" for link in links]
    else:  # many pairs (up to D(D-1)): a row per sending device, so rows stay readable
        links, link_of_transfer = np.unique(transfers["src"], return_inverse=True)
        link_names = [f"{device_names[sender]} → others" for sender in links]
    return links, link_of_transfer, link_names


def _draw_kernels(timeline, graph: Graph, result: SimulationResult) -> tuple[np.ndarray, np.ndarray]:
    """One bar per kernel in its device's row; returns each kernel's op type and duration (s).

    A fused kernel takes the op type of its heaviest member; a thin edge in the bar's own color
    keeps sub-pixel kernels visible."""
    kernel = result.kernel
    by_kernel = np.lexsort((-np.asarray(graph.flops), kernel))
    heaviest = by_kernel[np.diff(kernel[by_kernel], prepend=-1) != 0]  # the first of each kernel's run
    op_types = np.asarray(graph.op_types)[heaviest]
    colors = _PALETTE[op_types % len(_PALETTE)]
    starts, finishes = result.start[heaviest], result.finish[heaviest]
    kernel_bars = _bars(result.device[heaviest].astype(np.float64), starts * MS, finishes * MS)
    timeline.add_collection(PolyCollection(kernel_bars, facecolors=colors, edgecolors=colors, linewidths=0.3))
    return op_types, finishes - starts


def _draw_transfers(timeline, transfers: dict, link_of_transfer: np.ndarray, num_devices: int) -> None:
    """The transfers in their link rows, below the devices' rows and a rule."""
    rows = (num_devices + link_of_transfer.ravel()).astype(np.float64)
    timeline.add_collection(PolyCollection(_bars(rows, transfers["start"] * MS, transfers["end"] * MS, 0.6),
                                           facecolors=TRANSFER_COLOR, edgecolors=TRANSFER_COLOR, linewidths=0.3))
    timeline.axhline(num_devices - 0.5, color="0.7", linewidth=0.8)


def _draw_legend(timeline, op_types: np.ndarray, durations: np.ndarray, transfers: bool) -> None:
    """Above the chart: the op types with the most kernel time, then the transfers."""
    time_per_type = np.bincount(op_types, weights=durations, minlength=len(op_type_names()))
    shown = [t for t in np.argsort(-time_per_type, kind="stable")[:LEGEND_OP_TYPES] if time_per_type[t] > 0]
    names = op_type_names()
    handles = [Patch(color=op_type_color(t), label=names[t]) for t in shown]
    if transfers:
        handles.append(Patch(color=TRANSFER_COLOR, label="transfer"))
    timeline.legend(handles=handles, loc="lower left", bbox_to_anchor=(0, 1.0), ncols=6, fontsize=8,
                    frameon=False, borderaxespad=0.2)


def _draw_title(fig: Figure, graph: Graph, cluster: Cluster, result: SimulationResult, title: str | None,
                num_kernels: int) -> None:
    fused = f", {num_kernels} kernels" if num_kernels < graph.num_nodes else ""
    flags = "".join(f"  [{flag}]" for flag, on in (("OOM", result.oom), ("INVALID", result.invalid)) if on)
    fig.suptitle(f"{_literal(title) + ': ' if title else ''}{_literal(graph.name)} ({graph.num_nodes} ops{fused}) "
                 f"on {_literal(cluster.name)}, "
                 f"{result.runtime * MS:.3f} ms{flags}", x=0.01, ha="left", fontsize=11)


def _draw_memory(memory, graph: Graph, cluster: Cluster, result: SimulationResult, device_names: list[str]) -> None:
    """Live bytes per device, capacity dashed in the same color.

    The axis stops a little above the peak or the smallest capacity, whichever is higher, so a
    large host memory does not flatten the curves; a peak under a tenth of every capacity gets
    the axis to itself. A capacity off the axis is in the legend."""
    devices, num_devices = cluster.devices, cluster.num_devices
    curves = memory_timeline(graph, result, num_devices)
    peak, smallest = max(live.max() for _, live in curves), min(dev.memory_bytes for dev in devices)
    ceiling = max(1.1 * peak if peak < 0.1 * smallest else max(1.1 * peak, 1.05 * smallest), 1.0)
    above = [dev.memory_bytes > ceiling for dev in devices]
    palette = matplotlib.colormaps["tab20"] if num_devices > 10 else None  # ten colors repeat past ten devices
    for d, (times, live) in enumerate(curves):
        color = palette(d % 20) if palette else f"C{d}"
        memory.step(times * MS, live / GIB, where="post", color=color, linewidth=1.2,
                    label=f"{device_names[d]}: peak {result.peak_memory[d] / GIB:.2f} of "
                          f"{devices[d].memory_bytes / GIB:.2f} GiB")
        memory.axhline(devices[d].memory_bytes / GIB, color=color, linestyle="--", linewidth=1.0)
    memory.plot([], [], color="0.3", linestyle="--", linewidth=1.0,
                label="capacity (above the axis)" if all(above)
                else "capacity (some above the axis)" if any(above) else "capacity")
    memory.set_ylim(0, ceiling / GIB)
    memory.set_ylabel("memory (GiB)")
    memory.set_xlabel("time (ms)")
    memory.grid(color="0.9")
    memory.legend(loc="upper left", bbox_to_anchor=(1.005, 1.0), fontsize=8, frameon=False)


def gantt_rgb(graph: Graph, cluster: Cluster, result: SimulationResult, title: str | None = None) -> np.ndarray:
    """The Gantt chart as an (H, W, 3) uint8 RGB array (what GraphEnv.render() returns)."""
    fig = gantt_figure(graph, cluster, result, title=title)
    fig.canvas.draw()
    return np.asarray(fig.canvas.buffer_rgba())[..., :3].copy()


def save_gantt(path: str | os.PathLike, graph: Graph, cluster: Cluster, result: SimulationResult,
               title: str | None = None, overwrite: bool = False) -> str:
    """Writes the Gantt chart to `path` (format from its extension, e.g. .png, .svg, .pdf) atomically.

    The figure goes to a temporary file beside `path` first, then replaces it, so a
    reader never sees a half-written file; only a regular file or a new path is
    replaced (goenv.files.write_atomic), and a file already there only with
    overwrite=True (goenv.InvalidArgument otherwise). Returns the path written.
    """
    path = os.fspath(path)
    new_output_path(path, "chart", overwrite)
    fig = gantt_figure(graph, cluster, result, title=title)
    form = os.path.splitext(path)[1][1:] or "png"
    write_atomic(path, lambda file: fig.savefig(file, format=form), what="chart")
    return path
