"""`goenv demo` (simple placements compared, the best charted, a short training run) and
`goenv bench` (speed and memory benchmarks)."""

from __future__ import annotations

import argparse
import os
import subprocess
import sys

import goenv
import goenv.agents
from goenv.files import output_folder
from goenv.render import save_gantt
from goenv.cli.common import MS, bars, make_env
from goenv.cli.envs import decided

DEMO_ENV = "placement-inception"

DEMO_IMITATION_STEPS = 100  # the demo agent copies the best heuristic first

DEMO_METHODS = ["single", "expert", "round-robin", "metis", "m-etf", "heft", "local-search"]


def _demo_training(env: goenv.GraphEnv, steps: int, seed: int, out: str) -> str:
    """The reference agent beside the baselines: imitation of the best heuristic first (so it starts
    where the heuristics end), then PPO, then its best decision (the agents need torch; say so if
    it is missing)."""
    try:
        agent = goenv.agents.PPO(seed=seed)
    except ImportError as error:
        return f"PPO agent skipped: {error}"
    imitation = agent.imitate([env], steps=DEMO_IMITATION_STEPS, progress=False)
    agent.train([env], total_steps=steps, log_dir=os.path.join(out, "demo_training"), progress=bars())
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
    env = make_env(DEMO_ENV, args.cluster)
    graph, cluster = env.graph, env.cluster
    print(f"{DEMO_ENV}: {graph.num_nodes} nodes, {graph.num_edges} edges on {cluster.name} "
          f"({cluster.num_devices} devices); default {env.core.initial_runtime * MS:.3f} ms, "
          f"lower bound {goenv.baselines.lower_bound(env) * MS:.3f} ms\n")
    rows = goenv.baselines.table(env, DEMO_METHODS, budget=args.budget, seed=args.seed, progress=bars())
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
    path = save_gantt(os.path.join(args.out, "demo_gantt.png"), graph, cluster, decided(env, best, args.budget, args.seed),
                      title=f"{DEMO_ENV} (best: {best})", overwrite=True)  # the demo's own chart, replaced each run
    print(f"\nbest valid placement: {best}; Gantt chart: {path}")


def add_demo_command(commands: argparse._SubParsersAction, common: argparse.ArgumentParser) -> None:
    demo = commands.add_parser("demo", parents=[common],
                               help=f"simple placements of {DEMO_ENV} compared, best one charted")
    demo.add_argument("--out", default="out", help="folder for demo_gantt.png (default: %(default)s)")
    demo.add_argument("--train-steps", type=int, default=256,
                      help="simulated steps of a short PPO run beside the baselines; 0 skips it (default: %(default)s)")
    demo.set_defaults(run=_demo)


def _bench(args: argparse.Namespace) -> None:
    """Runs the repository's benchmark script (tests/benchmarks/python_bench.py) with these arguments."""
    script = os.path.join(os.path.dirname(__file__), "..", "..", "..", "..", "tests", "benchmarks", "python_bench.py")
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


def add_bench_command(commands: argparse._SubParsersAction) -> None:
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
