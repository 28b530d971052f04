"""The committed anchors of every benchmark case: the compiler default's runtime, the best
heuristic's, and the best decision known (with how it was found), from which scores are made.

    goenv benchmark references --write     # regenerate (minutes on 2 cores)
    goenv benchmark references --write --benchmark placement-zoo-v0   # one benchmark's cases

Regenerating runs long local searches and a genetic run per case and keeps, case by case, the
better of what it finds and the committed best, so a reference never gets worse; `--fresh`
forgets the committed ones. A better decision found by any method can be added with `--add FILE`
(a validated results file)."""

from __future__ import annotations

import json
import math
import sys
from functools import lru_cache
from pathlib import Path

from goenv import baselines
from goenv._core import InvalidArgument, NotFound
from goenv.benchmark import catalog, decisions
from goenv.files import read_json_file, write_atomic
from goenv.provenance import made_by

PATH = Path(__file__).with_name("references.json")
FORMAT = 1
SEARCHES = (("local-search", 10_000, (0, 1)), ("genetic", 2_000, (0,)))  # (method, budget, seeds)


@lru_cache(maxsize=1)
def load() -> dict:
    """{case id: {default, best_heuristic, best: {runtime, method, budget, seed, decisions}}}."""
    document = read_json_file(PATH, 64 << 20, "benchmark references")
    if document.get("format") != FORMAT:
        raise InvalidArgument(f"{PATH}: format {document.get('format')!r}, expected {FORMAT}")
    return document["cases"]


def of(case: catalog.Case) -> dict:
    """The references of one case; goenv.NotFound if none were made for it."""
    references = load()
    if case.id not in references:
        raise NotFound(f"no reference for {case.id}; regenerate with goenv benchmark references --write")
    return references[case.id]


def _search(case: catalog.Case, progress: bool) -> dict:
    env = case.make()
    env.reset(seed=0)
    heuristic = baselines.solve(env, "best-heuristic")
    found = []
    for method, budget, seeds in SEARCHES:
        for seed in seeds:
            result = baselines.solve(env, method, budget=budget, seed=seed)
            if not (result["invalid"] or result["oom"]):
                found.append((result["runtime"], method, budget, seed, result["action"]))
            if progress:
                print(f"  {case.id}: {method} {budget} seed {seed}: {result['runtime'] * 1e3:.3f} ms", file=sys.stderr)
    runtime, method, budget, seed, action = min(found, key=lambda item: item[0])
    return {"default": env.unwrapped.core.initial_runtime,
            "best_heuristic": heuristic["runtime"],
            "best": {"runtime": runtime, "method": method, "budget": budget, "seed": seed,
                     "decisions": decisions.encode(decisions.as_heads(action, case.task))}}


def _cases() -> dict[str, catalog.Case]:
    return {case.id: case for name in catalog.names() for case in catalog.get(name).cases}


def regenerate(fresh: bool = False, progress: bool = True, task: str | None = None,
               benchmark: str | None = None) -> dict:
    """The references of every case (of `task`'s, or of `benchmark`'s, only, when given), never
    worse than the committed."""
    old = {} if fresh or not PATH.exists() else load()
    chosen = None if benchmark is None else {case.id for case in catalog.get(benchmark).cases}
    cases = {}
    for case_id, case in _cases().items():
        if (task is not None and case.task != task) or (chosen is not None and case_id not in chosen):
            continue
        made = _search(case, progress)
        if case_id in old and old[case_id]["best"]["runtime"] < made["best"]["runtime"]:
            made["best"] = old[case_id]["best"]
        cases[case_id] = made
    return cases


def add(cases: dict, results) -> list[str]:
    """Takes the better decisions of a validated results file into `cases`; the ids it improved."""
    improved = []
    for record in results.records:
        reference = cases.get(record["case"])
        if reference is None or record.get("failed") or record["runtime"] >= reference["best"]["runtime"]:
            continue
        reference["best"] = {"runtime": record["runtime"], "method": results.method, "budget": results.budget,
                             "seed": record["seed"], "decisions": record["decisions"]}
        improved.append(record["case"])
    return improved


def save(cases: dict) -> None:
    for case_id, reference in cases.items():
        if not (math.isfinite(reference["default"]) and reference["best"]["runtime"] < reference["default"]):
            raise InvalidArgument(f"{case_id}: the best known runtime must be below the default's")
    document = {"format": FORMAT, "made_by": made_by(), "cases": cases}
    write_atomic(PATH, (json.dumps(document, indent=1, sort_keys=True) + "\n").encode(), what="benchmark references")
    load.cache_clear()
