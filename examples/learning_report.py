"""What the library examples (sb3_ppo.py, sb3_maskable_ppo.py, rllib_ppo.py,
cleanrl_gnn_ppo.py) report: the best runtime the agent found next to the compiler
default and HEFT, and whether it learned (the mean runtime of its first quarter of
episodes against its last quarter's). `--json PATH` writes the same numbers, in ms:

    {"env", "default_ms", "heft_ms", "first_quarter_ms", "last_quarter_ms", "best_ms", "episodes", "seconds",
     "seed", "flags", "commit", "dirty"}

"flags" are the options the run changed from the example's defaults (besides --env, --seed and
--json), so runs of one configuration with several seeds are grouped (experiments/readme_tables.py
turns these files into the library-results table of docs/rl-libraries.md: median and range over seeds).
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import numpy as np

import goenv
from goenv.files import checked_output_path, write_atomic
from goenv.provenance import source_commit


def reference_runtimes(env_id: str, **options) -> dict[str, float]:
    """The compiler default's and HEFT's simulated runtimes on `env_id`, seconds."""
    env = goenv.make(env_id, **options)
    _, info = env.reset(seed=0)
    return {"default": info["initial_runtime"], "heft": goenv.baselines.solve(env, "heft")["runtime"]}


def add_report_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--json", type=_output_path, default=None,
                        help="write the summary there (JSON, runtimes in ms)")


def _output_path(text: str) -> Path:
    """A path the summary may be written to, checked when the arguments are read, not after training."""
    try:
        return Path(checked_output_path(text, "--json"))
    except goenv.InvalidArgument as error:
        raise argparse.ArgumentTypeError(str(error)) from None


MIN_EPISODES = 8  # report() compares a first and a last quarter of the episodes


def check_arguments(parser: argparse.ArgumentParser, args: argparse.Namespace, counts: tuple[str, ...],
                    make_env, episodes) -> None:
    """Bad options end the run before training (parser.error: one line), not in a traceback or
    in report() after it: `counts` (dests) >= 1, a positive learning rate, a seed >= 0, an env
    that make_env() builds, and episodes(that env), the episodes training will give, enough to
    report on."""
    for dest in counts:
        if getattr(args, dest) is not None and getattr(args, dest) < 1:
            parser.error(f"--{dest.replace('_', '-')} must be >= 1, got {getattr(args, dest)}")
    if not args.learning_rate > 0:
        parser.error(f"--learning-rate must be > 0, got {args.learning_rate}")
    if args.seed < 0:
        parser.error(f"--seed must be >= 0, got {args.seed}")
    try:
        env = make_env()
    except goenv.Error as error:  # NotFound is a KeyError too: its str() would be quoted
        parser.error(str(error.args[0] if error.args else error).splitlines()[0])
    if episodes(env) < MIN_EPISODES:
        parser.error(f"these options train for {episodes(env)} episode(s); the report needs at least "
                     f"{MIN_EPISODES} (train for more steps)")


def describe_run(parser: argparse.ArgumentParser, args: argparse.Namespace) -> dict:
    """{"seed", "flags"}: the run's seed and the options it changed from the parser's defaults
    (--env, --seed and --json left out), as one command-line string."""
    flags = []
    for action in parser._actions:  # argparse keeps no public list of them
        if action.dest in ("help", "env", "seed", "json") or not action.option_strings:
            continue
        value = getattr(args, action.dest)
        if value == action.default:
            continue
        name = action.option_strings[-1]
        if isinstance(value, bool):
            flags.append(name if value else "--no-" + name.removeprefix("--"))
        else:
            flags.append(f"{name} {value}")
    return {"seed": args.seed, "flags": " ".join(flags)}


def report(title: str, env_id: str, runtimes: list[float], seconds: float, json_path: Path | None = None,
           run: dict | None = None, **options) -> dict:
    """Prints, returns and (with `json_path`) writes the summary of one training run.
    `runtimes`: the simulated runtime (seconds) of every episode's final decisions, in
    order; `seconds`: the training's wall time; `run`: describe_run's seed and flags;
    `options`: the env's (a cluster)."""
    if len(runtimes) < MIN_EPISODES:
        raise ValueError(f"{len(runtimes)} episodes are too few to compare a first and a last quarter; "
                         "train for more steps")
    reference = reference_runtimes(env_id, **options)
    quarter = len(runtimes) // 4
    ms = 1e3
    result = {"env": env_id, "default_ms": reference["default"] * ms, "heft_ms": reference["heft"] * ms,
              "first_quarter_ms": float(np.mean(runtimes[:quarter])) * ms,
              "last_quarter_ms": float(np.mean(runtimes[-quarter:])) * ms,
              "best_ms": float(min(runtimes)) * ms, "episodes": len(runtimes), "seconds": round(seconds, 1),
              **(run or {})}
    print(f"{title} on {env_id}, {len(runtimes):,} episodes in {seconds:.0f} s")
    print(f"  compiler default   {result['default_ms']:8.2f} ms")
    print(f"  HEFT               {result['heft_ms']:8.2f} ms")
    print(f"  best found         {result['best_ms']:8.2f} ms")
    learned = result["last_quarter_ms"] < result["first_quarter_ms"]
    print(f"  mean runtime, first quarter {result['first_quarter_ms']:8.2f} ms -> last quarter "
          f"{result['last_quarter_ms']:8.2f} ms ({'learned' if learned else 'did not improve'})")
    if json_path is not None:
        # The commit the run was made at, and whether the code differed from it (docs/ left out).
        result.update(source_commit(Path(__file__).resolve().parent.parent, exclude=("docs",)))
        write_atomic(json_path, (json.dumps(result, indent=1) + "\n").encode())
    return result
