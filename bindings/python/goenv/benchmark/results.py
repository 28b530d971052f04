"""Results files: every case and seed's decision, runtime and calls, the benchmark's version, the
goenv version and commit, and a summary; `validate` re-simulates every decision and refuses a
file whose runtimes, calls or cases do not hold (docs/benchmark.md#results-files)."""

from __future__ import annotations

import json
import math
import os
import statistics
from dataclasses import dataclass, field

import numpy as np

import goenv._core as _core
from goenv._core import InvalidArgument
from goenv.benchmark import catalog, decisions, references, scores
from goenv.files import new_output_path, read_json_file, write_atomic

FORMAT = 1
MAX_FILE_BYTES = 256 << 20
TOLERANCE = 1e-9  # relative: the simulator is deterministic, so a replay gives the same runtime


@dataclass
class Results:
    """One method's run of one benchmark at one budget. records: one dict per (case, seed):
    case, seed, runtime (s), score, simulator_calls, policy_seconds, wall_seconds, decisions
    (encoded), failed (None or why)."""

    benchmark: str
    method: str
    budget: int
    records: list[dict]
    made_by: dict
    summary: dict = field(default_factory=dict)

    def save(self, path: str | os.PathLike, overwrite: bool = False) -> None:
        """Writes the JSON file atomically; an existing file only with overwrite=True."""
        new_output_path(path, "results file", overwrite, folder_must_exist=True)
        document = {"format": FORMAT, "benchmark": self.benchmark, "method": self.method, "budget": self.budget,
                    "made_by": self.made_by, "summary": self.summary, "records": self.records}
        write_atomic(path, (json.dumps(document, indent=1) + "\n").encode(), what="results file")

    def table(self) -> str:
        """Per case: median score and runtime over seeds, as a Markdown table."""
        lines = ["| case | score (median) | runtime ms (median) | failed |", "|---|---|---|---|"]
        for case_id, rows in _by_case(self.records).items():
            lines.append(f"| {case_id} | {statistics.median(r['score'] for r in rows):.3f} | "
                         f"{statistics.median(r['runtime'] for r in rows) * 1e3:.2f} | "
                         f"{sum(1 for r in rows if r['failed'])} |")
        return "\n".join(lines)


def _by_case(records: list[dict]) -> dict[str, list[dict]]:
    out: dict[str, list[dict]] = {}
    for record in records:
        out.setdefault(record["case"], []).append(record)
    return out


def summarize(benchmark: catalog.Benchmark, records: list[dict]) -> dict:
    """IQM and mean of the scores with 95% stratified-bootstrap intervals over cases x seeds, the
    geometric mean of runtime over the best heuristic's, failures, calls and time."""
    grouped = _by_case(records)
    matrix = np.array([[r["score"] for r in sorted(grouped[case.id], key=lambda r: r["seed"])]
                       for case in benchmark.cases])
    ratios = [r["runtime"] / references.of(benchmark.case(r["case"]))["best_heuristic"] for r in records]
    return {**scores.aggregate(matrix), "runtime_over_best_heuristic": scores.geometric_mean(ratios),
            "failed": sum(1 for r in records if r["failed"]), "runs": len(records),
            "simulator_calls": sum(r["simulator_calls"] for r in records),
            "policy_seconds": sum(r["policy_seconds"] for r in records),
            "wall_seconds": sum(r["wall_seconds"] for r in records)}


def load(path: str | os.PathLike) -> Results:
    """A results file as Results, its structure checked (validate() also re-simulates)."""
    document = read_json_file(path, MAX_FILE_BYTES, "results file")
    where = os.fspath(path)
    if not isinstance(document, dict) or document.get("format") != FORMAT:
        raise InvalidArgument(f"{where}: not a goenv benchmark results file of format {FORMAT}")
    for key, kind in (("benchmark", str), ("method", str), ("budget", int), ("records", list), ("made_by", dict),
                      ("summary", dict)):
        if not isinstance(document.get(key), kind):
            raise InvalidArgument(f"{where}: field {key!r} must be a {kind.__name__}")
    return Results(document["benchmark"], document["method"], document["budget"], document["records"],
                   document["made_by"], document["summary"])


def validate(results: Results | str | os.PathLike) -> Results:
    """Re-simulates every decision: the runtimes, the calls (within the budget), every case x seed
    of the benchmark present once, the scores. Returns the Results with the summary recomputed;
    goenv.InvalidArgument naming the file and the case otherwise."""
    where = "results" if isinstance(results, Results) else os.fspath(results)
    if not isinstance(results, Results):
        results = load(results)
    benchmark = catalog.get(results.benchmark)
    if results.budget not in benchmark.budgets:
        raise InvalidArgument(f"{where}: budget {results.budget} is not one of {benchmark.name}'s {benchmark.budgets}")
    expected = {(case.id, seed) for case in benchmark.cases for seed in benchmark.seeds}
    seen, by_case = set(), {}
    for record in results.records:
        key = _key(record, where)
        if key not in expected or key in seen:
            raise InvalidArgument(f"{where}: {key[0]} seed {key[1]}: {'repeated' if key in seen else 'not a run of ' + benchmark.name}")
        seen.add(key)
        by_case.setdefault(key[0], []).append(record)
    if seen != expected:
        missing = sorted(expected - seen)[0]
        raise InvalidArgument(f"{where}: {missing[0]} seed {missing[1]}: missing ({len(expected - seen)} runs missing)")
    for case_id, records in by_case.items():
        _check_case(benchmark.case(case_id), records, results.budget, where)
    results.summary = summarize(benchmark, results.records)
    return results


def _key(record, where: str) -> tuple[str, int]:
    if not isinstance(record, dict) or not isinstance(record.get("case"), str) or type(record.get("seed")) is not int:
        raise InvalidArgument(f"{where}: every record needs a case (text) and a seed (integer)")
    return record["case"], record["seed"]


def _check_case(case: catalog.Case, records: list[dict], budget: int, where: str) -> None:
    """Every record of one case: its calls, its decision re-simulated (all in one batch), its score."""
    anchors = references.of(case)
    env = case.make()
    env.reset(seed=0)
    core = env.unwrapped.core
    fixed = {head: np.asarray(getattr(core, head)) for head in decisions.HEADS}  # what the task does not decide
    decided, replayed = [], {}
    for index, record in enumerate(records):
        at = f"{where}: {record['case']} seed {record['seed']}"
        calls, runtime = record.get("simulator_calls"), record.get("runtime")
        if type(calls) is not int or not 0 <= calls <= budget:
            raise InvalidArgument(f"{at}: simulator_calls {calls!r} is not within the budget of {budget}")
        if not isinstance(runtime, (int, float)) or not math.isfinite(runtime):
            raise InvalidArgument(f"{at}: runtime {runtime!r} is not a number")
        if record.get("decisions") is None:  # nothing feasible, or failed: the default stands
            replayed[index] = anchors["default"]
        else:
            heads = decisions.decode(record["decisions"], core.num_nodes, at)
            if set(heads) != set(decisions.heads_of(case.task)):
                raise InvalidArgument(f"{at}: decisions of {sorted(heads)}, but {case.task} decides "
                                      f"{list(decisions.heads_of(case.task))}")
            decided.append((index, {**fixed, **heads}))
    if decided:
        stacked = {head: np.stack([d[head] for _, d in decided]) for head in decisions.HEADS}
        out = _core.simulate_batch(env.unwrapped.graph, env.unwrapped.cluster, stacked["placement"],
                                   stacked["priority"] if stacked["priority"].any() else None,
                                   stacked["fusion"] if stacked["fusion"].any() else None,
                                   int(core.config["max_fusion_size"]))
        for row, (index, _) in enumerate(decided):
            if out["oom"][row] or out["invalid"][row]:
                raise InvalidArgument(f"{where}: {records[index]['case']} seed {records[index]['seed']}: "
                                      f"the decision is infeasible when simulated")
            replayed[index] = float(out["runtime"][row])
    for index, record in enumerate(records):
        at = f"{where}: {record['case']} seed {record['seed']}"
        if not math.isclose(record["runtime"], replayed[index], rel_tol=TOLERANCE):
            raise InvalidArgument(f"{at}: runtime {record['runtime']!r} s, but its decision simulates to "
                                  f"{replayed[index]!r} s")
        score = scores.normalized(replayed[index], anchors["default"], anchors["best"]["runtime"])
        if not math.isclose(record.get("score", math.nan), score, rel_tol=1e-9, abs_tol=1e-12):
            raise InvalidArgument(f"{at}: score {record.get('score')!r}, but the runtime scores {score!r}")


def measure(env, heads: dict, task: str, seed: int) -> float | None:
    """The simulated runtime of a decision (None when infeasible): the harness's own call."""
    env.reset(seed=seed)
    try:
        _, _, _, _, info = env.step(decisions.as_action(heads, task))
    except InvalidArgument as problem:
        raise InvalidArgument(f"the decision is not an action of this env: {problem}") from None
    return None if info["invalid"] or info["oom"] else float(info["runtime"])
