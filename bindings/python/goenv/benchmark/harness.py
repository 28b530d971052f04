"""evaluate(): runs a method on every case and seed of a benchmark, charging every simulator
call, and scores what it found (docs/benchmark.md)."""

from __future__ import annotations

import time
import traceback
from typing import Any, Callable

from goenv._core import InvalidArgument
from goenv.arguments import checked_flag
from goenv.benchmark import catalog, decisions, references, scores
from goenv.benchmark.results import Results, measure, summarize
from goenv.benchmark.runners import runner_for
from goenv.progress import progress_bar
from goenv.provenance import made_by


def evaluate(method: Any, benchmark: str | catalog.Benchmark, *, budget: int | None = None, name: str | None = None,
             wrap: Callable | None = None, progress: bool = False) -> Results:
    """Runs `method` on every (case, seed) of `benchmark` with `budget` simulator calls each (default:
    the benchmark's default budget) and returns scored Results (save() them, validate() them).

    `method`: a callable obs -> action (stepped through an improvement episode of `budget` steps;
    the best feasible decision counts), a Search (a function (env, seed) that steps the case's env
    itself, stopped at the budget), a goenv agent (greedy at budget 1, else its search), a
    Stable-Baselines3 model (its policy, greedy), or a baseline's name ("local-search", "heft", ...).
    `wrap`: the env wrapper a policy was trained behind (e.g. goenv.wrappers.GroupedPlacement).
    A method that raises on a case marks that run failed (scored as the default) and the run goes
    on; a decision the env finds infeasible costs its call, as in the env."""
    benchmark = catalog.get(benchmark)
    budget = benchmark.default_budget if budget is None else budget
    if type(budget) is not int or budget not in benchmark.budgets:
        raise InvalidArgument(f"{benchmark.name}'s budgets are {', '.join(map(str, benchmark.budgets))}, "
                              f"not {budget!r}")
    run, name = runner_for(method, name, wrap)
    progress = checked_flag("progress", progress)
    records = []
    runs = [(case, seed) for case in benchmark.cases for seed in benchmark.seeds]
    measuring = {}
    for case, seed in progress_bar(progress, runs, desc=f"{name} on {benchmark.name}", unit="run"):
        anchors = references.of(case)
        started = time.perf_counter()
        record = {"case": case.id, "seed": seed, "failed": None, "decisions": None, "simulator_calls": 0,
                  "policy_seconds": 0.0, "invalid_steps": 0}
        runtime = anchors["default"]  # what stands when nothing feasible was found
        try:
            found = run(case, budget, seed)
            record.update(simulator_calls=found.simulator_calls, policy_seconds=found.policy_seconds,
                          invalid_steps=found.invalid_steps)
            if found.simulator_calls > budget:
                raise InvalidArgument(f"spent {found.simulator_calls} simulator calls, more than the budget of {budget}")
            env = measuring.setdefault(case.id, case.make())
            measured = None if found.heads is None else measure(env, found.heads, case.task, seed)
            if measured is not None:  # recorded as the env holds it, so validate can simulate it alone
                in_force = decisions.in_force(env.unwrapped.core, case.task)
                record["decisions"], runtime = decisions.encode(in_force), measured
        except Exception as problem:  # the case fails, the benchmark goes on
            record.update(failed=f"{type(problem).__name__}: {problem}"[:500], decisions=None,
                          simulator_calls=min(record["simulator_calls"], budget),
                          traceback=traceback.format_exc(limit=4)[-2000:])
            runtime = anchors["default"]
        record.update(runtime=runtime, score=scores.normalized(runtime, anchors["default"], anchors["best"]["runtime"]),
                      wall_seconds=time.perf_counter() - started)
        records.append(record)
    return Results(benchmark.name, name, budget, records, made_by(), summarize(benchmark, records))
