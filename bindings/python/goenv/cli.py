"""The `goenv` command line: list, info, render, demo, dataset.

    goenv list
    goenv info placement-inception
    goenv render placement-inception --placement expert -o out/inception.png
    goenv demo --out out
    goenv dataset generate random-layered --count 1000 --out data/layered

Errors from goenv (unknown ids, bad options) end the command with exit status 2
and one line on stderr, never a traceback.
"""

from __future__ import annotations

import argparse
import os
import re
import sys
from typing import Callable, Sequence

import numpy as np
from tqdm import tqdm

import goenv
from goenv import _core
from goenv.render import save_gantt

MS = 1e3
GIB = float(2**30)
DEMO_ENV = "placement-inception"


# ---------------------------------------------------------------------------
# Simple placements for the demo: each maps (env after reset, rng) to a device per node.

def _repair_colocation(graph: goenv.Graph, placement: np.ndarray) -> np.ndarray:
    """Puts every colocation group on the device of its first member (lowest node id)."""
    colocation = np.asarray(graph.colocation)
    grouped = colocation >= 0
    groups, first = np.unique(colocation[grouped], return_index=True)
    first_member = np.flatnonzero(grouped)[first]
    placement = placement.copy()
    placement[grouped] = placement[first_member][np.searchsorted(groups, colocation[grouped])]
    return placement


def _by_topological_rank(env: goenv.GraphEnv, device_of_rank: np.ndarray) -> np.ndarray:
    placement = np.empty(env.graph.num_nodes, np.int32)
    placement[np.asarray(env.graph.topological_order)] = device_of_rank
    return _repair_colocation(env.graph, placement)


def _expert(env: goenv.GraphEnv, rng: np.random.Generator) -> np.ndarray:
    expert = goenv.GraphEnv.from_graph("placement", env.graph, env.cluster, placement="expert")
    expert.reset(seed=0)
    return np.array(expert.core.placement)


def _round_robin(env: goenv.GraphEnv, rng: np.random.Generator) -> np.ndarray:
    return _by_topological_rank(env, np.arange(env.graph.num_nodes) % env.cluster.num_devices)


def _balanced_split(env: goenv.GraphEnv, rng: np.random.Generator) -> np.ndarray:
    """Contiguous runs of the topological order with equal FLOPs, one run per device."""
    flops = np.asarray(env.graph.flops)[np.asarray(env.graph.topological_order)]
    total, num_devices = flops.sum(), env.cluster.num_devices
    middle = np.cumsum(flops) - flops / 2  # a node goes where its middle falls
    run = np.minimum(num_devices - 1, (middle / total * num_devices).astype(np.int32)) if total > 0 else 0
    return _by_topological_rank(env, run)


def _random(env: goenv.GraphEnv, rng: np.random.Generator) -> np.ndarray:
    return _repair_colocation(env.graph, rng.integers(0, env.cluster.num_devices, env.graph.num_nodes))


DEMO_PLACEMENTS: dict[str, Callable[[goenv.GraphEnv, np.random.Generator], np.ndarray]] = {
    "default": lambda env, rng: np.array(env.core.placement),  # the env's initial decision
    "single": lambda env, rng: np.zeros(env.graph.num_nodes, np.int32),
    "expert": _expert,
    "round-robin": _round_robin,
    "balanced-split": _balanced_split,
    "random": _random,
}


# ---------------------------------------------------------------------------
# Output.

def _print_table(header: Sequence[str], rows: Sequence[Sequence[object]], align: str | None = None) -> None:
    """Prints rows under a header; align has one "l" or "r" per column (default: first left, others right)."""
    align = align or "l" + "r" * (len(header) - 1)
    cells = [[str(cell) for cell in row] for row in [header, *rows]]
    widths = [max(len(row[i]) for row in cells) for i in range(len(header))]
    lines = [[cell.ljust(width) if side == "l" else cell.rjust(width) for cell, width, side in zip(row, widths, align)]
             for row in cells]
    lines.insert(1, ["-" * width for width in widths])
    print("\n".join("  ".join(line).rstrip() for line in lines))


def _one_line(error: BaseException) -> str:
    """An error's message without the C++ source location goenv appends ("[core/x.cc:12]")."""
    message = str(error.args[0]) if error.args else type(error).__name__
    if isinstance(error, OSError) and error.strerror:
        message = f"{error.strerror}: {error.filename}" if error.filename else error.strerror
    return re.sub(r"\s*\[[^\]\s]+:\d+\]$", "", message.splitlines()[0] if message else message)


def _make(env_id: str, cluster: str | None, placement: str | None = None) -> goenv.GraphEnv:
    """The env after reset; `placement` ("single" | "expert") overrides its initial placement rule."""
    options = {"cluster": cluster, "placement": placement}
    env = goenv.make(env_id, render_mode=None, **{key: value for key, value in options.items() if value})
    env.reset(seed=0)
    return env


def _graph_name(env_id: str) -> str:
    return env_id.split("-", 1)[1]  # ids are <task>-<graph>; task names have no dash


def _flag(on: bool) -> str:
    return "yes" if on else "-"


# ---------------------------------------------------------------------------
# Subcommands.

def _list(args: argparse.Namespace) -> None:
    ids = goenv.list_envs()
    graphs = {}  # every task shares its graph: build each once
    for name in tqdm(sorted({_graph_name(env_id) for env_id in ids}), desc="building graphs", leave=False,
                     disable=None):
        graph, cluster = goenv.datasets.load(name), goenv.clusters.get(goenv.datasets.info(name)["default_cluster"])
        graphs[name] = [graph.num_nodes, graph.num_edges, cluster.name, cluster.num_devices]
    _print_table(["id", "nodes", "edges", "default cluster", "devices"],
                 [[env_id, *graphs[_graph_name(env_id)]] for env_id in ids])


def _info(args: argparse.Namespace) -> None:
    env = _make(args.id, args.cluster)
    graph, cluster, result = env.graph, env.cluster, env.core.last_result
    family = goenv.datasets.info(_graph_name(args.id))
    bound = _core.lower_bound(graph, cluster)
    op_names, counts = np.unique(graph.op_type_names, return_counts=True)
    common = ", ".join(f"{op_names[i]} {counts[i]}" for i in np.argsort(-counts, kind="stable")[:5])
    default = "everything on device 0" if not np.any(env.core.placement) else "expert split"
    print(f"{args.id}: {family['description']}\n")
    _print_table(["graph", graph.name], [
        ["nodes", graph.num_nodes],
        ["edges", graph.num_edges],
        ["op types", f"{len(op_names)} (most: {common})"],
        ["compute", f"{graph.total_flops / 1e9:.1f} GFLOP"],
        ["parameters", f"{graph.total_param_bytes / 2**20:.1f} MiB"],
        ["builder params", ", ".join(f"{k}={v:g}" for k, v in family["params"].items()) or "-"],
    ], align="ll")
    print()
    _print_table(["device", "kind", "TFLOP/s", "GB/s", "memory GiB"], [
        [d.name, d.kind, f"{d.peak_flops / 1e12:.1f}", f"{d.memory_bandwidth / 1e9:.0f}", f"{d.memory_bytes / GIB:.1f}"]
        for d in cluster.devices])
    print(f"cluster {cluster.name}: {cluster.num_devices} devices, {len(cluster.links)} links\n")
    peak = ", ".join(f"{d.name} {p / GIB:.2f} GiB" for d, p in zip(cluster.devices, result.peak_memory) if p > 0)
    _print_table(["default decision", default], [
        ["runtime", f"{result.runtime * MS:.3f} ms"],
        ["peak memory", peak or "-"],
        ["lower bound", f"{bound['value'] * MS:.3f} ms (critical path {bound['critical_path'] * MS:.3f} ms, "
                        f"work / devices {bound['work'] * MS:.3f} ms)"],
        ["runtime / bound", f"{result.runtime / bound['value']:.2f}x" if bound["value"] > 0 else "-"],
    ], align="ll")


def _render(args: argparse.Namespace) -> None:
    env = _make(args.id, args.cluster, placement=None if args.placement == "current" else args.placement)
    result = env.core.last_result
    path = args.output or os.path.join("out", f"{args.id}-{args.placement}.png")
    os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
    save_gantt(path, env.graph, env.cluster, result, title=f"{args.id} ({args.placement} placement)")
    print(f"wrote {path}: {args.placement} placement, runtime {result.runtime * MS:.3f} ms"
          f"{' [OOM]' if result.oom else ''}{' [INVALID]' if result.invalid else ''}")


def _demo(args: argparse.Namespace) -> None:
    env = _make(DEMO_ENV, args.cluster)
    graph, cluster = env.graph, env.cluster
    default_runtime = env.core.initial_runtime
    bound = goenv.lower_bound(graph, cluster)
    print(f"{DEMO_ENV}: {graph.num_nodes} nodes, {graph.num_edges} edges on {cluster.name} "
          f"({cluster.num_devices} devices); lower bound {bound * MS:.3f} ms\n")
    rng = np.random.default_rng(args.seed)
    results = {}
    for method, place in tqdm(DEMO_PLACEMENTS.items(), desc="simulating placements", leave=False, disable=None):
        results[method] = goenv.simulate(graph, cluster, placement=place(env, rng))
    _print_table(["placement", "runtime ms", "speedup", "x lower bound", "OOM", "invalid"], [
        [method, f"{r.runtime * MS:.3f}", f"{default_runtime / r.runtime:.2f}x", f"{r.runtime / bound:.2f}",
         _flag(r.oom), _flag(r.invalid)]
        for method, r in results.items()])
    print("speedup: default runtime / runtime; x lower bound: runtime / lower bound")
    valid = [m for m, r in results.items() if not (r.oom or r.invalid)]
    if not valid:
        print("\nno placement was valid; no chart written")
        return
    best = min(valid, key=lambda m: results[m].runtime)
    os.makedirs(args.out, exist_ok=True)
    path = save_gantt(os.path.join(args.out, "demo_gantt.png"), graph, cluster, results[best],
                      title=f"{DEMO_ENV} (best: {best} placement)")
    print(f"\nbest valid placement: {best} ({results[best].runtime * MS:.3f} ms, "
          f"{default_runtime / results[best].runtime:.2f}x the default)")
    print(f"Gantt chart: {path}")


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="goenv", description="RL environments for ML-compiler graph optimization.")
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    options = argparse.ArgumentParser(add_help=False)
    options.add_argument("--cluster", help="cluster preset instead of the graph's default (goenv.clusters.list())")

    commands.add_parser("list", help="env ids with their graph size and default cluster").set_defaults(run=_list)
    info = commands.add_parser("info", parents=[options], help="graph, cluster, default runtime and lower bound")
    info.add_argument("id", help="env id, e.g. placement-inception")
    info.set_defaults(run=_info)
    render = commands.add_parser("render", parents=[options], help="Gantt chart PNG of one placement's schedule")
    render.add_argument("id", help="env id, e.g. placement-inception")
    render.add_argument("--placement", choices=["current", "single", "expert"], default="current",
                        help="current: the env's initial decision; single: all on device 0; expert: balanced "
                             "layer split (default: %(default)s)")
    render.add_argument("-o", "--output", help="image path, .png/.svg/.pdf (default: out/ID-PLACEMENT.png)")
    render.set_defaults(run=_render)
    demo = commands.add_parser("demo", parents=[options],
                               help=f"simple placements of {DEMO_ENV} compared, best one charted")
    demo.add_argument("--out", default="out", help="folder for demo_gantt.png (default: %(default)s)")
    demo.add_argument("--seed", type=int, default=0, help="seed of the random placement")
    demo.set_defaults(run=_demo)

    from goenv import dataset_files

    dataset = commands.add_parser("dataset", help="graph datasets: sharded, checksummed, resumable")
    dataset_commands = dataset.add_subparsers(dest="dataset_command", required=True, metavar="COMMAND")
    generate = dataset_commands.add_parser("generate", help="write COUNT graphs of FAMILY to a dataset directory")
    dataset_files.add_generate_arguments(generate).set_defaults(run=dataset_files.run_generate)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Runs the command line; returns the exit status (2 with a one-line message on errors)."""
    args = _parser().parse_args(argv)
    try:
        args.run(args)
    except BrokenPipeError:  # e.g. `goenv list | head`: the reader left; stay quiet
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 1
    except (goenv.Error, KeyError, OSError) as error:
        print(f"goenv: error: {_one_line(error)}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
