"""The `goenv` command line: list, info, baselines, render, train, bench, demo, dataset.

    goenv list
    goenv info placement-inception
    goenv render placement-inception --method heft -o out/inception.png
    goenv baselines placement-inception --methods heft metis --budget 500
    goenv train placement-inception --agent go --steps 2000 --log-dir runs/go
    goenv demo --out out
    goenv dataset generate random-layered --count 1000 --out data/layered
    goenv dataset label data/layered --out data/layered-labels -k 64

Errors from goenv (unknown ids, bad options) end the command with exit status 2
and one line on stderr, never a traceback.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import os
import re
import signal
import subprocess
import sys
import threading
from typing import Callable, Sequence

import numpy as np
import goenv
import goenv._core as _core
from goenv import dataset_files, text
from goenv.benchmark import command as benchmark_command
from goenv.datasets.zoo import command as zoo_command
from goenv.files import checked_output_path, new_output_path, output_folder, write_atomic
from goenv.labels import command as labels_command
from goenv.progress import progress_bar
from goenv.envs import parse_gym_id
from goenv.render import save_gantt

ID_HELP = "env id (e.g. placement-inception) or a graph file (.goenv/.json; see --task)"
MS = 1e3
GIB = float(2**30)
DEMO_ENV = "placement-inception"
DEMO_IMITATION_STEPS = 100  # the demo agent copies the best heuristic first
DEMO_METHODS = ["single", "expert", "round-robin", "metis", "m-etf", "heft", "local-search"]


# ---------------------------------------------------------------------------
# Output.

def _print_table(header: Sequence[str], rows: Sequence[Sequence[object]], align: str | None = None) -> None:
    print(text.table(header, rows, align))


def _one_line(error: BaseException) -> str:
    """An error's message without the C++ source location goenv appends ("[core/x.cc:12]")."""
    message = str(error.args[0]) if error.args else type(error).__name__
    if isinstance(error, OSError) and error.strerror:
        message = f"{error.strerror}: {error.filename}" if error.filename else error.strerror
    return re.sub(r"\s*\[[^\]\s]+:\d+\]$", "", message.splitlines()[0] if message else message)


GRAPH_FILE_SUFFIXES = (".goenv", ".json")


def _is_graph_file(env_id: str) -> bool:
    """A graph file stands wherever an env id does: `goenv info model.goenv --task scheduling`."""
    return env_id.endswith(GRAPH_FILE_SUFFIXES) or os.sep in env_id or os.path.isfile(env_id)


def _make(env_id: str, cluster: str | None, task: str | None = None) -> goenv.GraphEnv:
    """The env after reset, on `cluster` when one is named; `env_id` may be a graph file (its
    task: --task, default placement). An id names its own task: another --task is refused."""
    options = {"cluster": cluster} if cluster else {}
    if _is_graph_file(env_id):
        env = goenv.make(task or "placement", graph=env_id, render_mode=None, **options)
    else:
        plain_id = parse_gym_id(env_id)[0]  # "goenv/placement-inception-v2" too
        own = plain_id.split("-", 1)[0]
        if task is not None and task != own:
            raise goenv.InvalidArgument(f"--task {task}: {env_id} is already a {own} env (--task is for graph "
                                        f"files); use {task}-{_graph_name(plain_id)}")
        env = goenv.make(env_id, render_mode=None, **options)
    env.reset(seed=0)
    return env


def _graph_name(env_id: str) -> str:
    return env_id.split("-", 1)[1]  # ids are <task>-<graph>; task names have no dash


def _description(env_id: str) -> tuple[str, dict]:
    """One line about the graph, and its builder parameters (none for a file)."""
    if _is_graph_file(env_id):
        return f"graph file {env_id}", {}
    family = goenv.datasets.info(_graph_name(env_id))
    return family["description"], family["params"]


# ---------------------------------------------------------------------------
# Subcommands.

def _list(args: argparse.Namespace) -> None:
    ids = goenv.list_envs()
    graphs = {}  # every task shares its graph: build each once
    for name in progress_bar(_bars(), sorted({_graph_name(env_id) for env_id in ids}), desc="building graphs",
                             leave=False):
        graph, cluster = goenv.datasets.load(name), goenv.clusters.get(goenv.datasets.info(name)["default_cluster"])
        graphs[name] = [graph.num_nodes, graph.num_edges, cluster.name, cluster.num_devices]
    _print_table(["id", "nodes", "edges", "default cluster", "devices"],
                 [[env_id, *graphs[_graph_name(env_id)]] for env_id in ids])


def _info(args: argparse.Namespace) -> None:
    env = _make(args.id, args.cluster, args.task)
    graph, cluster, result = env.graph, env.cluster, env.core.last_result
    description, params = _description(args.id)
    bound = env.core.lower_bound
    op_names, counts = np.unique(graph.op_type_names, return_counts=True)
    common = ", ".join(f"{op_names[i]} {counts[i]}" for i in np.argsort(-counts, kind="stable")[:5])
    default = "everything on device 0" if not np.any(env.core.placement) else "expert split"
    print(f"{args.id}: {description}\n")
    _print_table(["graph", graph.name], [
        ["nodes", graph.num_nodes],
        ["edges", graph.num_edges],
        ["op types", f"{len(op_names)} (most: {common})"],
        ["compute", f"{graph.total_flops / 1e9:.1f} GFLOP"],
        ["parameters", f"{graph.total_param_bytes / 2**20:.1f} MiB"],
        ["builder params", ", ".join(f"{k}={v:g}" for k, v in params.items()) or "-"],
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


def _decided(env: goenv.GraphEnv, method: str, budget: int, seed: int) -> goenv.SimulationResult:
    """The schedule of `method`'s decisions ("current": the env's own); the env's episode is untouched."""
    if method == "current":
        return env.core.last_result
    solved = goenv.baselines.solve(env, method, budget=budget, seed=seed)
    fusion = solved["fusion"] if "fusion" in env.core.heads else None
    return goenv.simulate(env.graph, env.cluster, placement=solved["placement"], priority=solved["priority"],
                          fusion=fusion, max_fusion_size=env.core.config["max_fusion_size"])


def _new_output(path: str, flag: str, overwrite: bool, folder_must_exist: bool = False) -> str:
    """A file already at `path` refused unless --overwrite: a command replaces nothing of the
    user's without the flag (checked before the work, nothing written)."""
    return new_output_path(path, flag, overwrite, flag="--overwrite", folder_must_exist=folder_must_exist)


def _render(args: argparse.Namespace) -> None:
    if args.output == "":
        raise goenv.InvalidArgument("-o: an empty path (leave -o out for out/ID-METHOD.png)")
    # out/ID-METHOD.png is goenv's own name, replaced on each run; a path the user gave is kept
    path = _new_output(args.output, "-o", args.overwrite) if args.output else \
        checked_output_path(os.path.join("out", f"{args.id}-{args.method}.png"), "-o")
    from matplotlib.backend_bases import FigureCanvasBase

    formats = FigureCanvasBase.get_supported_filetypes()
    suffix = os.path.splitext(path)[1].lstrip(".").lower()
    if suffix not in formats:
        raise goenv.InvalidArgument(f"-o {path}: the image format comes from the file's suffix; one of "
                                    f"{', '.join('.' + f for f in sorted(formats))}, got {'.' + suffix if suffix else 'none'}")
    env = _make(args.id, args.cluster, args.task)
    result = _decided(env, args.method, args.budget, args.seed)
    os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
    save_gantt(path, env.graph, env.cluster, result, title=f"{args.id} ({args.method})", overwrite=True)  # checked above
    print(f"wrote {path}: {args.method}, runtime {result.runtime * MS:.3f} ms"
          f"{' [OOM]' if result.oom else ''}{' [INVALID]' if result.invalid else ''}")


def _baselines(args: argparse.Namespace) -> None:
    env = _make(args.id, args.cluster, args.task)
    methods = _baseline_names(args.methods, env.core.task) if args.methods else None
    rows = goenv.baselines.table(env, methods, budget=args.budget, seed=args.seed, progress=not args.json and _bars())
    if args.json:
        print(json.dumps({"id": args.id, "cluster": env.cluster.name, "lower_bound_ms": goenv.baselines.lower_bound(env) * MS,
                          "initial_runtime_ms": env.core.initial_runtime * MS, "rows": rows}, indent=2))
        return
    print(f"{args.id} on {env.cluster.name}: default {env.core.initial_runtime * MS:.3f} ms, "
          f"lower bound {goenv.baselines.lower_bound(env) * MS:.3f} ms\n")
    print(goenv.baselines.format_table(rows))


def split_names(values: Sequence[str]) -> list[str]:
    """A list-valued flag's names, given space- or comma-separated (`--methods heft local-search`,
    `--methods heft,local-search`, or both), in order, each once."""
    names = [name.strip() for value in values for name in value.split(",")]
    return list(dict.fromkeys(name for name in names if name))


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


def _agent_options(items: Sequence[str]) -> dict:
    """--option KEY=VALUE pairs, each value read as its option's type: an integer, a number,
    true/false/1/0 for a bool, text for a string (the agent checks the ranges, agents/config.cc)."""
    import goenv.agents

    types = {name: kind for name, kind, *_ in goenv.agents.options()}
    readers = {"i": int, "d": float, "b": lambda text: {"true": True, "1": True, "false": False, "0": False}[text.lower()],
               "s": str}
    options = {}
    for item in items:
        key, sep, value = item.partition("=")
        key, value = key.strip().replace("-", "_"), value.strip()
        if not sep or key not in types:
            raise goenv.InvalidArgument(f"--option takes KEY=VALUE with KEY one of {', '.join(sorted(types))}; "
                                        f"got {item!r}")
        try:
            options[key] = readers[types[key]](value)
        except (KeyError, ValueError):
            kind = {"i": "an integer", "d": "a number", "b": "true or false", "s": "text"}[types[key]]
            raise goenv.InvalidArgument(f"--option {key} takes {kind}, got {value!r}") from None
    return options


def _agent_options_help() -> str:
    """The agent options, for `goenv train --help` (made only when help is shown: it loads torch)."""
    try:
        import goenv.agents

        fields = goenv.agents.options()
    except ImportError as error:
        return f"\nagent options: unavailable ({error})\n"
    width = max(len(name) for name, *_ in fields)
    lines = [f"  {name:<{width}}  {default!s:>8}  {meaning}" for name, _, default, meaning in fields]
    return "\nagent options (--option KEY=VALUE, repeatable; default, meaning):\n" + "\n".join(lines) + "\n"


def _bars() -> bool:
    """Progress bars on a terminal only: redirected to a file, their redraws are noise."""
    return sys.stderr.isatty()


class _StopOnInterrupt:
    """While training: the first Ctrl-C asks it to stop after the update under way (the agent
    then gets its search and --save as after a full run: hours of training are not lost to one
    key), a second one interrupts at once. Signals reach only the main thread: elsewhere
    (a test calling main() on a thread) Ctrl-C keeps its usual meaning."""

    def __init__(self) -> None:
        self.requested = False
        self._previous = None

    def __enter__(self) -> "_StopOnInterrupt":
        if threading.current_thread() is threading.main_thread():
            self._previous = signal.signal(signal.SIGINT, self._handle)
        return self

    def __exit__(self, *exc) -> None:
        if self._previous is not None:
            signal.signal(signal.SIGINT, self._previous)

    def _handle(self, signum, frame) -> None:
        if self.requested:
            raise KeyboardInterrupt
        self.requested = True
        print("\ngoenv: Ctrl-C: training stops after this update, then saves and searches as usual "
              "(Ctrl-C again to stop at once)", file=sys.stderr, flush=True)

    def go_on(self, metrics: dict) -> bool:
        """The training callback: False (stop) once Ctrl-C was pressed."""
        return not self.requested


@contextlib.contextmanager
def _saved_when_interrupted(agent, path: str | None, trained: Callable[[], bool]):
    """A second Ctrl-C stops training at once; what it trained is still saved to `path` (the
    update under way is either done or not begun: the agent is whole), if it trained at all
    (`trained()`: an untrained agent replaces no file)."""
    try:
        yield
    except KeyboardInterrupt:
        if path and trained():
            agent.save(path, overwrite=True)  # checked before training (--overwrite)
            print(f"goenv: agent saved to {path} ({agent.steps_trained} steps trained)", file=sys.stderr)
        raise


def _train(args: argparse.Namespace) -> None:
    import goenv.agents

    env, options = _train_setup(args)
    agent = goenv.agents.make_agent(args.agent, **{"seed": args.seed, **options})
    history, saved, stopped = _trained(args, env, agent)
    steps_done = args.steps
    if stopped:
        steps_done = history[-1]["step"] if history else 0
        print(f"training stopped by Ctrl-C after {steps_done} of {args.steps} steps")
    if args.save:  # before the search: the trained agent is kept whatever happens next
        if not saved:
            agent.save(args.save, overwrite=True)  # checked before training (--overwrite)
        print(f"agent saved to {args.save}")
    final = _search_result(args, env, agent, steps_done)
    if args.decision:
        core = env.core
        npz = io.BytesIO()  # the path as given: np.savez would add .npz (DIR -> DIR.npz beside DIR)
        np.savez(npz, placement=core.placement, priority=core.priority, fusion=core.fusion, runtime=final)
        write_atomic(args.decision, npz.getvalue(), what="--decision")
        print(f"decision saved to {args.decision} (placement, priority, fusion per node)")
    if args.log_dir:
        print(f"metrics{'' if args.workers or args.address else ' and training curve'}: {args.log_dir}")


def _train_setup(args: argparse.Namespace) -> tuple[goenv.GraphEnv, dict]:
    """The env and the agent options, every flag checked before any training."""
    for flag, path in (("--save", args.save), ("--decision", args.decision)):
        if path is not None:  # refused now, not after training
            _new_output(path, flag, args.overwrite, folder_must_exist=True)
    for flag, count in (("--steps", args.steps), ("--samples", args.samples)):
        if count < 1:  # refused now, not after training
            raise goenv.InvalidArgument(f"{flag} must be a positive integer, got {count}")
    env = _make(args.id, args.cluster, args.task)
    options = _agent_options(args.option)
    if args.workers < 0:
        raise goenv.InvalidArgument(f"--workers must be >= 0, got {args.workers}")
    if args.imitate < 0:
        raise goenv.InvalidArgument(f"--imitate takes a number of steps >= 0, got {args.imitate}")
    if args.teacher != "best" and not args.imitate:
        raise goenv.InvalidArgument(f"--teacher {args.teacher} is what --imitate copies; add --imitate [STEPS]")
    return env, options


def _trained(args: argparse.Namespace, env: goenv.GraphEnv, agent) -> tuple[list[dict], bool, bool]:
    """Imitation (--imitate), then PPO here or on Ray workers, until done or Ctrl-C. Returns the
    training history, whether the agent was already saved to --save, and whether Ctrl-C stopped it."""
    imitated = []
    saved = False  # by the distributed trainer, which writes checkpoint= when it ends after an update
    with _StopOnInterrupt() as stop, _saved_when_interrupted(agent, args.save,
                                                             lambda: bool(imitated) or agent.steps_trained > 0):
        if args.imitate:  # in this process; PPO then continues from the imitated policy, here or on the workers
            history = agent.imitate([env], steps=args.imitate, teacher=args.teacher, progress=_bars(),
                                    callback=lambda metrics: imitated.append(metrics) or stop.go_on(metrics))
            print(f"imitation of {agent.teacher(env)['method']}: {history[-1]['accuracy']:.1%} of the decisions "
                  f"equal the teacher's after {len(history)} steps")
        if stop.requested:
            history = []
        elif args.workers > 0 or args.address:
            history = _trained_on_ray(args, env, agent, stop)
            saved = bool(args.save and history)
        else:
            history = agent.train([env], total_steps=args.steps, log_dir=args.log_dir, callback=stop.go_on,
                                  progress=_bars())
    return history, saved, stop.requested


def _trained_on_ray(args: argparse.Namespace, env: goenv.GraphEnv, agent, stop: _StopOnInterrupt) -> list[dict]:
    """PPO on --workers Ray rollout workers; the history of its updates."""
    import goenv.distributed

    try:
        result = goenv.distributed.train([env], num_workers=max(1, args.workers), total_steps=args.steps,
                                         address=args.address, log_dir=args.log_dir, agent=agent,
                                         callback=stop.go_on, checkpoint=args.save, progress=_bars(),
                                         overwrite=True)  # --save was checked before training
    except ValueError as error:  # a malformed address: one line, like other bad input
        raise goenv.InvalidArgument(str(error)) from error
    print(f"{len(result.history)} updates with {max(1, args.workers)} rollout workers: "
          f"{result.samples_per_second:.0f} samples/s, {result.worker_restarts} worker restarts, "
          f"{result.dropped_rollouts} stale rollouts dropped")
    return result.history


def _search_result(args: argparse.Namespace, env: goenv.GraphEnv, agent, steps_done: int) -> float:
    """The trained agent's result, put in force in `env` and printed beside the references;
    returns its runtime (the default's when the policy's decision is not better)."""
    from goenv.agents.training_log import reference_runtimes

    # Policy-guided search from the default with --samples simulator calls (the greedy
    # decision, the policy's moves and samples, the best decisions training found): never worse
    # than any of them, nor than the default it starts from.
    found = agent.optimize(env, budget=args.samples)
    how = {"start": "no proposal beat the default", "greedy": "greedy",
           "policy": f"policy-guided search, {args.samples} calls",
           "training": "best found in training"}.get(found["source"], found["source"])
    references = reference_runtimes(env)
    env.reset(seed=0)
    kept_default = not found["runtime"] <= references["default"]  # also when nothing was valid (inf)
    if not kept_default:  # put the decisions in force (the default's are after reset)
        decisions = found["decisions"]
        env.step(decisions if len(decisions) > 1 else next(iter(decisions.values())))
    final = references["default"] if kept_default else found["runtime"]
    rows = [[label, f"{seconds * MS:.3f}"] for label, seconds in references.items()]
    rows.append([f"{args.agent} ({how})", f"{found['runtime'] * MS:.3f}" if np.isfinite(found["runtime"])
                 else "— (invalid)"])
    print(f"\n{args.agent} after {steps_done} steps on {args.id}:\n")
    _print_table(["decisions", "runtime ms"], rows, align="lr")
    print(f"\nresult: {final * MS:.3f} ms, " + ("the compiler default (the policy's decision is not better)"
                                                  if kept_default else
                                                  f"the policy's decision ({references['default'] / final:.3f}x "
                                                  f"the default)"))
    return final


def _bench(args: argparse.Namespace) -> None:
    """Runs the repository's benchmark script (tests/benchmarks/python_bench.py) with these arguments."""
    script = os.path.join(os.path.dirname(__file__), "..", "..", "..", "tests", "benchmarks", "python_bench.py")
    if not os.path.exists(script):
        raise OSError(2, "the benchmarks live in a source checkout (pip install -e .)", os.path.abspath(script))
    if args.distributed:  # Ray scale-out: samples/s per worker count, weight distribution cost
        script = os.path.join(os.path.dirname(script), "distributed_bench.py")
        forwarded = ["--json", args.json] if args.json else []
    else:
        forwarded = (["--quick"] if args.quick else []) + (["--json", args.json] if args.json else []) + \
                    (["--markdown", args.markdown] if args.markdown else []) + \
                    (["--simulator-floor"] if args.simulator_floor else []) + \
                    (["--ratios-only"] if args.ratios else []) + (["--readme", args.readme] if args.readme else [])
    done = subprocess.run([sys.executable, os.path.abspath(script), *forwarded])
    if done.returncode:
        raise goenv.Error(f"benchmark failed with exit status {done.returncode}")


def _demo_training(env: goenv.GraphEnv, steps: int, seed: int, out: str) -> str:
    """The reference agent beside the baselines: imitation of the best heuristic first (so it starts
    where the heuristics end), then PPO, then its best decision (the agents need torch; say so if
    it is missing)."""
    try:
        import goenv.agents

        agent = goenv.agents.PPO(seed=seed)
    except ImportError as error:
        return f"PPO agent skipped: {error}"
    imitation = agent.imitate([env], steps=DEMO_IMITATION_STEPS, progress=False)
    agent.train([env], total_steps=steps, log_dir=os.path.join(out, "demo_training"), progress=_bars())
    found = agent.optimize(env, budget=16, start="best-heuristic")
    teacher = agent.teacher(env)
    calls = imitation[-1]["simulator_calls"] + agent.steps_trained + found["simulator_calls"]
    return (f"PPO: {DEMO_IMITATION_STEPS} imitation steps toward {teacher['method']} "
            f"({imitation[-1]['accuracy']:.0%} of its decisions), then {steps} simulated PPO steps, then 16 "
            f"calls of policy-guided search from the best heuristic ({found['start_runtime'] * MS:.3f} ms); its best "
            f"decision ({found['source']}; greedy {found['greedy_runtime'] * MS:.3f} ms): "
            f"{found['runtime'] * MS:.3f} ms, speedup {found['initial_runtime'] / found['runtime']:.3f}x, "
            f"{calls} simulator calls in all (training curve: "
            f"{os.path.join(out, 'demo_training', 'training_curve.png')})")


def _demo(args: argparse.Namespace) -> None:
    if args.train_steps < 0:
        raise goenv.InvalidArgument(f"--train-steps must be >= 0 (0 skips training), got {args.train_steps}")
    output_folder(args.out, "--out")  # before the work, not after it
    env = _make(DEMO_ENV, args.cluster)
    graph, cluster = env.graph, env.cluster
    print(f"{DEMO_ENV}: {graph.num_nodes} nodes, {graph.num_edges} edges on {cluster.name} "
          f"({cluster.num_devices} devices); default {env.core.initial_runtime * MS:.3f} ms, "
          f"lower bound {goenv.baselines.lower_bound(env) * MS:.3f} ms\n")
    rows = goenv.baselines.table(env, DEMO_METHODS, budget=args.budget, seed=args.seed, progress=_bars())
    print(goenv.baselines.format_table(rows))
    print("speedup: default runtime / runtime; / lower bound: runtime / lower bound")
    if args.train_steps > 0:
        print(f"\n{_demo_training(env, args.train_steps, args.seed, args.out)}")
    valid = [row for row in rows if not (row["oom"] or row["invalid"])]
    if not valid:
        print("\nno placement was valid; no chart written")
        return
    best = min(valid, key=lambda row: row["runtime_ms"])["method"]
    os.makedirs(args.out, exist_ok=True)
    path = save_gantt(os.path.join(args.out, "demo_gantt.png"), graph, cluster, _decided(env, best, args.budget, args.seed),
                      title=f"{DEMO_ENV} (best: {best})", overwrite=True)  # the demo's own chart, replaced each run
    print(f"\nbest valid placement: {best}; Gantt chart: {path}")


class _Parser(argparse.ArgumentParser):
    """A subcommand parser whose help may end with text made only when help is shown."""

    def __init__(self, *args, extra_help: Callable[[], str] | None = None, **kwargs):
        super().__init__(*args, **kwargs)
        self.extra_help = extra_help

    def format_help(self) -> str:
        return super().format_help() + (self.extra_help() if self.extra_help else "")


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="goenv", description="RL environments for ML-compiler graph optimization.")
    parser.add_argument("--version", action="version", version=f"goenv {goenv.__version__}")
    # Not required: `goenv` alone shows this help (main()).
    commands = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=_Parser)
    common = argparse.ArgumentParser(add_help=False)
    common.add_argument("--cluster", help="cluster preset instead of the graph's default (goenv.clusters.list())")
    common.add_argument("--budget", type=int, default=1000, help="simulator calls for search baselines")
    common.add_argument("--seed", type=int, default=0, help="seed of randomized baselines")
    options = argparse.ArgumentParser(add_help=False, parents=[common])  # for commands that take an ID
    options.add_argument("--task", default=None, choices=_core.task_names(),
                         help="the task when ID is a graph file (.goenv or .json) (default: placement)")

    # In this order in `goenv --help`.
    _add_env_commands(commands, options)
    _add_demo_command(commands, common)
    _add_bench_command(commands)
    _add_train_command(commands, options)
    benchmark_command.add_arguments(commands.add_parser(
        "benchmark", help="score an algorithm on a named benchmark; validate results; the leaderboard"))
    _add_dataset_commands(commands)
    return parser


def _add_env_commands(commands: argparse._SubParsersAction, options: argparse.ArgumentParser) -> None:
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


def _add_demo_command(commands: argparse._SubParsersAction, common: argparse.ArgumentParser) -> None:
    demo = commands.add_parser("demo", parents=[common],
                               help=f"simple placements of {DEMO_ENV} compared, best one charted")
    demo.add_argument("--out", default="out", help="folder for demo_gantt.png (default: %(default)s)")
    demo.add_argument("--train-steps", type=int, default=256,
                      help="simulated steps of a short PPO run beside the baselines; 0 skips it (default: %(default)s)")
    demo.set_defaults(run=_demo)


def _add_bench_command(commands: argparse._SubParsersAction) -> None:
    bench = commands.add_parser("bench", help="speed and memory benchmarks (tests/benchmarks/python_bench.py)")
    bench.add_argument("--quick", action="store_true", help="a smoke run: small sizes, few repeats")
    bench.add_argument("--json", metavar="FILE", help="also write the numbers as JSON")
    bench.add_argument("--markdown", metavar="FILE", help="also write the README tables as Markdown")
    bench.add_argument("--simulator-floor", action="store_true",
                       help="the simulator against a bare list scheduler: wall time and callgrind instructions")
    bench.add_argument("--ratios", action="store_true",
                       help="only the step-cost ratios (fusion/joint vs placement step, fused vs floor, cold start, "
                            "make_vec 2 vs 1 threads, GO vs a plain-PyTorch policy): a few minutes")
    bench.add_argument("--readme", metavar="FILE",
                       help="write the ratio table between FILE's <!-- ratios:begin/end --> markers; README.md: "
                            "the page of the README or docs/ that holds them (docs/performance.md)")
    bench.add_argument("--distributed", action="store_true",
                       help="Ray scale-out: samples/s against workers, weight distribution cost (needs ray)")
    bench.set_defaults(run=_bench)


def _add_train_command(commands: argparse._SubParsersAction, options: argparse.ArgumentParser) -> None:
    train = commands.add_parser("train", parents=[options], help="train a reference agent (LibTorch) on an env",
                                extra_help=_agent_options_help)
    train.add_argument("id", help=ID_HELP)
    train.add_argument("--agent", choices=goenv.agents.algorithms(), default="go",
                       help="GO policy or the PPO baseline policy")
    train.add_argument("--steps", type=int, default=2000, help="simulated environment steps (default: %(default)s)")
    train.add_argument("--log-dir", help="folder for metrics.csv and training_curve.png (with --workers: "
                                         "distributed_metrics.csv)")
    train.add_argument("--save", help="checkpoint path, written when training ends (also when Ctrl-C stops it: "
                                      "the first Ctrl-C ends training after the update under way, a second "
                                      "one stops at once)")
    train.add_argument("--option", action="append", default=[], metavar="KEY=VALUE",
                       help="an agent option, repeatable (listed below)")
    train.add_argument("--decision", metavar="FILE",
                       help="save the result's decisions to FILE, as given (.npz data: placement, priority, "
                            "fusion per node)")
    train.add_argument("--overwrite", action="store_true", help="replace the --save and --decision files if they exist")
    train.add_argument("--imitate", type=int, nargs="?", const=200, default=0, metavar="STEPS",
                       help="first imitate the teacher for STEPS Adam steps (default when given: %(const)s); "
                            "with --workers the learner imitates, then PPO on the workers goes on from it")
    train.add_argument("--teacher", default="best",
                       help="what --imitate copies: a baseline name or 'best', the best heuristic (default)")
    train.add_argument("--samples", type=int, default=1,
                       help="simulator calls of the policy-guided search that gives the result (agent.optimize "
                            "from the default: the greedy decision first, then the policy's moves; default 1)")
    train.add_argument("--workers", type=int, default=0,
                       help="Ray rollout workers (goenv.distributed; needs ray); 0 trains in this process "
                            "(default: %(default)s)")
    train.add_argument("--address", help="join the Ray cluster at ADDR (`ray start --head` prints it) "
                                         "instead of starting a local Ray")
    train.set_defaults(run=_train)


def _add_dataset_commands(commands: argparse._SubParsersAction) -> None:
    dataset = commands.add_parser("dataset", help="graph datasets and labelled ones: sharded, checksummed, resumable")
    dataset_commands = dataset.add_subparsers(dest="dataset_command", required=True, metavar="COMMAND")
    generate = dataset_commands.add_parser("generate", help="write COUNT graphs of FAMILY to a dataset directory")
    dataset_files.add_generate_arguments(generate).set_defaults(run=dataset_files.run_generate)
    label = dataset_commands.add_parser("label", help="label graphs with K simulated decisions each (Parquet)")
    labels_command.add_label_arguments(label).set_defaults(run=labels_command.run_label)
    zoo_command.add_zoo_arguments(dataset_commands.add_parser(
        "zoo", help="build real architectures (transformers) into a dataset, with a coverage report"
    )).set_defaults(run=zoo_command.run_zoo)
    export = dataset_commands.add_parser("export-tpugraphs", help="a labelled dataset as TpuGraphs-layout .npz files")
    labels_command.add_export_arguments(export).set_defaults(run=labels_command.run_export)
    for name, run, what in (("info", labels_command.run_info, "what a dataset directory holds (its manifest)"),
                            ("verify", labels_command.run_verify, "check every shard's checksum (and every graph)")):
        sub = dataset_commands.add_parser(name, help=what)
        sub.add_argument("path", help="dataset directory")
        sub.set_defaults(run=run)


def main(argv: Sequence[str] | None = None) -> int:
    """Runs the command line; returns the exit status (2 with a one-line message on errors)."""
    parser = _parser()
    args = parser.parse_args(argv)
    if args.command is None:  # `goenv` alone: what it can do
        parser.print_help()
        return 0
    try:
        for name, check in (("budget", goenv.baselines.checked_budget), ("seed", goenv.baselines.checked_seed)):
            if getattr(args, name, None) is not None:  # every command's, before it does any work
                try:
                    check(getattr(args, name))
                except goenv.InvalidArgument as error:
                    raise goenv.InvalidArgument(f"--{error}") from error
        args.run(args)
    except BrokenPipeError:  # e.g. `goenv list | head`: the reader left; stay quiet
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 1
    except KeyboardInterrupt:  # Ctrl-C: one line, the shell's status for SIGINT (outputs are atomic)
        print("goenv: interrupted", file=sys.stderr)
        return 130
    except (goenv.Error, KeyError, OSError) as error:
        print(f"goenv: error: {_one_line(error)}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
