"""Baselines: the classic heuristics and searches a learned policy is compared against.

    import goenv
    env = goenv.make("placement-inception")
    goenv.baselines.list()                       # every method; list("scheduling") those for a task
    res = goenv.baselines.solve(env, "heft")     # dict: decisions (numpy), runtime, oom, ...
    print(goenv.baselines.format_table(goenv.baselines.table(env)))

Methods run in C++ (envs/baselines/) with the GIL released and never touch the
env's episode. Decisions for the heads a method does not make are the env's
current ones (its initial ones before reset). Searches spend at most `budget`
simulator calls and start from those decisions, so they never return worse;
heuristics spend none. Same seed, same result. `local-search` with a larger
budget is never worse than with a smaller one (same seed): its first K calls
are the K-call run.

Priorities come back as floats (the simulator orders by them as they are);
the env's priority head takes integer levels: `result["action"]` is the
decision ready for `env.step` (priorities quantized with `quantize_priorities`,
which can merge close values, so the stepped runtime may differ slightly).
"""

from __future__ import annotations

import builtins
from typing import Any, Iterable

import numpy as np

import goenv._core as _core
from goenv._core import InvalidArgument
from goenv import text
from goenv.arguments import checked_int
from goenv.envs import GraphEnv
from goenv.progress import progress_bar

__all__ = ["format_table", "info", "list", "lower_bound", "quantize_priorities", "solve", "table"]


def _core_env(env: Any) -> _core.Env:
    if isinstance(env, str):  # an env id, as the agents' methods take: a fresh env of it
        return GraphEnv(env).core
    core = getattr(getattr(env, "unwrapped", env), "core", env)  # GraphEnv, a gymnasium wrapper, or the core
    if not isinstance(core, _core.Env):
        raise TypeError(f"expected a goenv env (an env id, a GraphEnv or its core), got {type(env).__name__}")
    return core


def _checked_name(name: Any) -> str:
    if not isinstance(name, str):
        raise InvalidArgument(f"a baseline's name must be a string (goenv.baselines.list()), got "
                              f"{type(name).__name__}")
    return name


def list(task: str | None = None) -> builtins.list[str]:  # noqa: A001 - mirrors goenv.datasets.list
    """Registered baseline names, sorted; with a task ("placement", ...) only those that run on it."""
    return _core.baseline_names(task or "")


def info(name: str) -> dict:
    """A baseline's descriptor: name, heads (the decisions it makes) and a one-line description."""
    return _core.baseline_info(name)


def quantize_priorities(values, levels: int) -> np.ndarray:
    """Order-preserving integer levels in [0, levels) for the env's priority head (int64 array)."""
    levels = checked_int("levels", levels, 1, 2**31 - 1)  # 2.5 was 2, silently
    return _core.quantize_priorities(np.asarray(values, dtype=np.float64), levels)


def lower_bound(env: Any) -> float:
    """Seconds no decision of the env's task can beat on its graph and cluster (docs/simulator.md; with
    fusion for the tasks that decide it)."""
    return _core_env(env).lower_bound["value"]


def solve(env: Any, name: str, *, budget: int = 1000, seed: int = 0) -> dict:
    """Runs baseline `name` on `env` (an env id, a GraphEnv or its core) without touching its episode.

    Returns a dict: method, placement / priority / fusion (numpy, one value per
    node), action (the env's heads, ready for env.step), runtime (seconds),
    oom, invalid, invalid_reason, simulator_calls, curve, seconds (wall time of
    the method), lower_bound, initial_runtime and speedup (initial_runtime / runtime).
    Infeasible results are returned flagged, never hidden.

    curve is the anytime budget curve, a float64 array of length simulator_calls:
    entry k is the best feasible runtime (seconds) within the first k + 1 calls
    (inf while none was feasible); empty for heuristics, which simulate nothing.

    Raises goenv.NotFound for an unknown name and goenv.InvalidArgument (a ValueError)
    when the env's task has none of the method's heads, or the budget or seed is not a
    non-negative integer (a seed below 2**64).
    """
    core = _core_env(env)
    budget, seed = checked_budget(budget), checked_seed(seed)
    result = _core.solve_baseline(core, _checked_name(name), budget, seed)
    result["speedup"] = result["initial_runtime"] / result["runtime"] if result["runtime"] > 0 else 1.0
    result["action"] = _action(core, result)
    return result


def checked_budget(budget: Any) -> int:
    """`budget` as an int, or goenv.InvalidArgument: an integer in [0, 2**63) (not a bool, float or string)."""
    return checked_int("budget", budget, 0, 2**63 - 1)


def checked_seed(seed: Any) -> int:
    """`seed` as an int, or goenv.InvalidArgument: an integer in [0, 2**64)."""
    return checked_int("seed", seed, 0, 2**64 - 1)


def _action(core: _core.Env, result: dict):
    parts = {}
    for head, choices in zip(core.heads, core.head_choices):
        if head == "priority":
            parts[head] = quantize_priorities(result["priority"], choices)
        else:
            parts[head] = result[head].astype(np.int64)
    return next(iter(parts.values())) if len(parts) == 1 else parts


def table(env: Any, methods: Iterable[str] | None = None, budget: int = 1000, progress: bool = True,
          seed: int = 0) -> builtins.list[dict]:
    """Runs each method (default: every one that fits the env's task) and returns one row per method:
    method, runtime_ms, speedup (over the env's initial decisions), lower_bound_ratio
    (runtime / lower bound), oom, invalid, simulator_calls, seconds."""
    core = _core_env(env)
    if isinstance(methods, str):  # one method, not its letters
        methods = [methods]
    names = builtins.list(methods) if methods is not None else _core.baseline_names(core.task)
    checked_budget(budget), checked_seed(seed)
    for name in names:  # every name known before any runs: a typo costs no baseline's time
        info(_checked_name(name))
    rows = []
    iterator = progress_bar(progress, names, desc=f"baselines on {core.id}", unit="method")
    for name in iterator:
        iterator.set_postfix_str(name)
        r = solve(core, name, budget=budget, seed=seed)
        rows.append({
            "method": name,
            "runtime_ms": r["runtime"] * 1e3,
            "speedup": r["speedup"],
            "lower_bound_ratio": r["runtime"] / r["lower_bound"] if r["lower_bound"] > 0 else float("inf"),
            "oom": r["oom"],
            "invalid": r["invalid"],
            "simulator_calls": r["simulator_calls"],
            "seconds": r["seconds"],
        })
    return rows


_COLUMNS = (("method", "method", "{}"), ("runtime_ms", "runtime (ms)", "{:.3f}"), ("speedup", "speedup", "{:.3f}x"),
            ("lower_bound_ratio", "/ lower bound", "{:.3f}"), ("simulator_calls", "sim calls", "{}"),
            ("seconds", "time (s)", "{:.3f}"))


def format_table(rows: Iterable[dict]) -> str:
    """The rows of table() as an aligned text table; infeasible rows are marked OOM / INVALID."""
    body = []
    for row in rows:
        note = " ".join(flag for key, flag in (("oom", "OOM"), ("invalid", "INVALID")) if row.get(key))
        body.append([fmt.format(row[key]) for key, _, fmt in _COLUMNS] + [note])
    return text.table([title for _, title, _ in _COLUMNS] + ["note"], body, align="l" + "r" * len(_COLUMNS))
