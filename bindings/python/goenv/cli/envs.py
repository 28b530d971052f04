"""`goenv list`, `goenv info`, `goenv render` and `goenv baselines`: the commands that look at envs."""

from __future__ import annotations

import argparse
import json
import os
from typing import Sequence

import numpy as np

import goenv
from goenv.files import checked_output_path
from goenv.progress import progress_bar
from goenv.render import save_gantt
from goenv.cli.common import (GIB, ID_HELP, MS, bars, graph_name, is_graph_file, make_env, new_output, print_table,
                              split_names)


def _description(env_id: str) -> tuple[str, dict]:
    """One line about the graph, and its builder parameters (none for a file)."""
    if is_graph_file(env_id):
        return f"graph file {env_id}", {}
    family = goenv.datasets.info(graph_name(env_id))
    return family["description"], family["params"]


def _list(args: argparse.Namespace) -> None:
    ids = goenv.list_envs()
    graphs = {}  # every task shares its graph: build each once
    for name in progress_bar(bars(), sorted({graph_name(env_id) for env_id in ids}), desc="building graphs",
                             leave=False):
        graph, cluster = goenv.datasets.load(name), goenv.clusters.get(goenv.datasets.info(name)["default_cluster"])
        graphs[name] = [graph.num_nodes, graph.num_edges, cluster.name, cluster.num_devices]
    print_table(["id", "nodes", "edges", "default cluster", "devices"],
                 [[env_id, *graphs[graph_name(env_id)]] for env_id in ids])


def _info(args: argparse.Namespace) -> None:
    env = make_env(args.id, args.cluster, args.task)
    graph, cluster, result = env.graph, env.cluster, env.core.last_result
    description, params = _description(args.id)
    bound = env.core.lower_bound
    op_names, counts = np.unique(graph.op_type_names, return_counts=True)
    common = ", ".join(f"{op_names[i]} {counts[i]}" for i in np.argsort(-counts, kind="stable")[:5])
    default = "everything on device 0" if not np.any(env.core.placement) else "expert split"
    print(f"{args.id}: {description}\n")
    print_table(["graph", graph.name], [
        ["nodes", graph.num_nodes],
        ["edges", graph.num_edges],
        ["op types", f"{len(op_names)} (most: {common})"],
        ["compute", f"{graph.total_flops / 1e9:.1f} GFLOP"],
        ["parameters", f"{graph.total_param_bytes / 2**20:.1f} MiB"],
        ["builder params", ", ".join(f"{k}={v:g}" for k, v in params.items()) or "-"],
    ], align="ll")
    print()
    print_table(["device", "kind", "TFLOP/s", "GB/s", "memory GiB"], [
        [d.name, d.kind, f"{d.peak_flops / 1e12:.1f}", f"{d.memory_bandwidth / 1e9:.0f}", f"{d.memory_bytes / GIB:.1f}"]
        for d in cluster.devices])
    print(f"cluster {cluster.name}: {cluster.num_devices} devices, {len(cluster.links)} links\n")
    peak = ", ".join(f"{d.name} {p / GIB:.2f} GiB" for d, p in zip(cluster.devices, result.peak_memory) if p > 0)
    print_table(["default decision", default], [
        ["runtime", f"{result.runtime * MS:.3f} ms"],
        ["peak memory", peak or "-"],
        ["lower bound", f"{bound['value'] * MS:.3f} ms (critical path {bound['critical_path'] * MS:.3f} ms, "
                        f"work / devices {bound['work'] * MS:.3f} ms)"],
        ["runtime / bound", f"{result.runtime / bound['value']:.2f}x" if bound["value"] > 0 else "-"],
    ], align="ll")


def decided(env: goenv.GraphEnv, method: str, budget: int, seed: int) -> goenv.SimulationResult:
    """The schedule of `method`'s decisions ("current": the env's own); the env's episode is untouched."""
    if method == "current":
        return env.core.last_result
    solved = goenv.baselines.solve(env, method, budget=budget, seed=seed)
    fusion = solved["fusion"] if "fusion" in env.core.heads else None
    return goenv.simulate(env.graph, env.cluster, placement=solved["placement"], priority=solved["priority"],
                          fusion=fusion, max_fusion_size=env.core.config["max_fusion_size"])


def _render(args: argparse.Namespace) -> None:
    if args.output == "":
        raise goenv.InvalidArgument("-o: an empty path (leave -o out for out/ID-METHOD.png)")
    # out/ID-METHOD.png is goenv's own name, replaced on each run; a path the user gave is kept
    path = new_output(args.output, "-o", args.overwrite) if args.output else \
        checked_output_path(os.path.join("out", f"{args.id}-{args.method}.png"), "-o")
    from matplotlib.backend_bases import FigureCanvasBase

    formats = FigureCanvasBase.get_supported_filetypes()
    suffix = os.path.splitext(path)[1].lstrip(".").lower()
    if suffix not in formats:
        raise goenv.InvalidArgument(f"-o {path}: the image format comes from the file's suffix; one of "
                                    f"{', '.join('.' + f for f in sorted(formats))}, got {'.' + suffix if suffix else 'none'}")
    env = make_env(args.id, args.cluster, args.task)
    result = decided(env, args.method, args.budget, args.seed)
    os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
    save_gantt(path, env.graph, env.cluster, result, title=f"{args.id} ({args.method})", overwrite=True)  # checked above
    print(f"wrote {path}: {args.method}, runtime {result.runtime * MS:.3f} ms"
          f"{' [OOM]' if result.oom else ''}{' [INVALID]' if result.invalid else ''}")


def _baselines(args: argparse.Namespace) -> None:
    env = make_env(args.id, args.cluster, args.task)
    methods = _baseline_names(args.methods, env.core.task) if args.methods else None
    rows = goenv.baselines.table(env, methods, budget=args.budget, seed=args.seed, progress=not args.json and bars())
    if args.json:
        print(json.dumps({"id": args.id, "cluster": env.cluster.name, "lower_bound_ms": goenv.baselines.lower_bound(env) * MS,
                          "initial_runtime_ms": env.core.initial_runtime * MS, "rows": rows}, indent=2))
        return
    print(f"{args.id} on {env.cluster.name}: default {env.core.initial_runtime * MS:.3f} ms, "
          f"lower bound {goenv.baselines.lower_bound(env) * MS:.3f} ms\n")
    print(goenv.baselines.format_table(rows))


def _baseline_names(values: Sequence[str], task: str) -> list[str]:
    """--methods as baseline names, every one checked before any runs; an unknown one is refused
    with the names that fit the task."""
    names = split_names(values)
    choices = goenv.baselines.list(task)
    if not names:
        raise goenv.InvalidArgument(f"--methods: no name given; choose from {', '.join(choices)}")
    for name in names:
        if name not in choices:
            known = name in goenv.baselines.list()
            raise goenv.InvalidArgument(f"--methods {name}: {'does not run on ' + task if known else 'unknown baseline'}"
                                        f"; choose from {', '.join(choices)}")
    return names


def add_env_commands(commands: argparse._SubParsersAction, options: argparse.ArgumentParser) -> None:
    """list, and the commands that look at one env: info, render, baselines."""
    commands.add_parser("list", help="env ids with their graph size and default cluster").set_defaults(run=_list)
    info = commands.add_parser("info", parents=[options], help="graph, cluster, default runtime and lower bound")
    info.add_argument("id", help=ID_HELP)
    info.set_defaults(run=_info)
    render = commands.add_parser("render", parents=[options], help="Gantt chart PNG of one placement's schedule")
    render.add_argument("id", help=ID_HELP)
    render.add_argument("--method", default="current",
                        help="a baseline (goenv.baselines.list()) or current: the env's initial decisions "
                             "(default: %(default)s)")
    render.add_argument("-o", "--output", help="image path, .png/.svg/.pdf (default: out/ID-METHOD.png, replaced "
                                               "on each run)")
    render.add_argument("--overwrite", action="store_true", help="replace the -o file if it exists")
    render.set_defaults(run=_render)
    baselines = commands.add_parser("baselines", parents=[options],
                                    help="every baseline (or --methods) on an env: runtime, speedup, / lower bound")
    baselines.add_argument("id", help=ID_HELP)
    baselines.add_argument("--methods", nargs="+", metavar="METHOD",
                           help="baselines to run, space- or comma-separated (default: all that fit the task)")
    baselines.add_argument("--json", action="store_true", help="machine-readable output")
    baselines.set_defaults(run=_baselines)
