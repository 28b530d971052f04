"""Does the placer's learning transfer to architectures it never saw? On the zoo's unseen
lineages (docs/zoo.md), the same policy-guided search with the placer's trained weights, with
the same network untrained and with uniform proposals, beside local search and genetic at the
same calls, all from the best heuristic; and the one-shot decision (the policy's greedy
decision from the compiler default: one simulator call) beside the default and the best
heuristic. Writes docs/results/transfer_<split>.json (every run, the commit) and the
<!-- transfer-<split>:begin/end --> section of docs/agents.md.

    goenv dataset zoo --out data/zoo --sizes tiny --workers 2            # the graphs, once
    python experiments/transfer_results.py --zoo data/zoo --split validation  # every choice is made here
    python experiments/transfer_results.py --zoo data/zoo --split test        # once, at the end

The test split's results file is written once: running it again needs --overwrite, and the
file says how many times it was run.
"""

from __future__ import annotations

import argparse
import json
import math
import multiprocessing
import sys
import time
from pathlib import Path

import numpy as np

import goenv
from doc_sections import ROOT, section_file, write_section
from goenv.datasets.zoo.lineages import lineage, split as split_of
from goenv.provenance import made_by

PROPOSALS = ("learned", "untrained", "uniform")
SEARCHES = ("local-search", "genetic")
DEFAULT_CLUSTERS = ("2xgpu-nvlink", "4xgpu-nvlink", "8xgpu-nvlink", "cpu+2xgpu")
WIN = 0.01  # better or worse "by more than 1%"


def split_graphs(zoo: str, split: str, limit: int | None) -> list[tuple[str, int]]:
    """(model type, index in the zoo folder) of every imported graph of the split's lineages, in
    model-type order; with `limit`, the first graph of each lineage first, so a short run still
    spans the split's lineages."""
    dataset = goenv.datasets.open(zoo)
    graphs = sorted((dataset.provenance(i)["model_type"], i) for i in range(len(dataset))
                    if split_of(dataset.provenance(i)["model_type"]) == split)
    if not graphs:
        raise SystemExit(f"{zoo}: no graph of the {split} split (build the zoo first: goenv dataset zoo --out {zoo})")
    if limit is None:
        return graphs
    firsts, seen = [], set()
    for model_type, index in graphs:
        if lineage(model_type) not in seen:
            seen.add(lineage(model_type))
            firsts.append((model_type, index))
    rest = [g for g in graphs if g not in firsts]
    return (firsts + rest)[:limit]


_worker: dict = {}


def load_placer(checkpoint: str):
    return goenv.agents.load(checkpoint) if Path(checkpoint).exists() else goenv.agents.pretrained(checkpoint)


# The training summaries of shipped placers trained on zoo graphs (they keep no teacher).
TRAINED_ON = {"go-moves": ROOT / "docs" / "results" / "move_reading.json"}


def check_held_out(zoo: str, checkpoint: str, cases: list[tuple], trained_on: str | None = None) -> None:
    """Refuses a case whose graph the placer trained on: it kept decisions (a teacher) for it, or
    its lineage is among those its training summary (`trained_on`, a JSON with "model_types")
    lists."""
    summary = trained_on or TRAINED_ON.get(checkpoint)
    if summary is not None:
        trained = goenv.files.read_json_file(summary, 2**26, "training summary")
        seen = {lineage(t) for t in trained["model_types"]}
        for model_type, *_ in cases:
            if lineage(model_type) in seen:
                raise SystemExit(f"{model_type}: {checkpoint} trained on its lineage {lineage(model_type)!r} "
                                 f"({summary}); a held-out split cannot hold it")
    placer, dataset = load_placer(checkpoint), goenv.datasets.open(zoo)
    for model_type, index, cluster, *_ in cases:
        if placer.teacher(goenv.make("placement", graph=dataset[index], cluster=cluster)) is not None:
            raise SystemExit(f"{model_type} on {cluster}: {checkpoint} kept decisions for this graph, so it trained "
                             f"on it; a held-out split cannot hold it")


def _start_worker(zoo: str, checkpoint: str) -> None:
    import torch

    torch.set_num_threads(1)
    _worker["dataset"] = goenv.datasets.open(zoo)
    _worker["placer"] = load_placer(checkpoint)


def run_case(case: tuple) -> dict:
    """Every method on one (graph, cluster): runtimes in ms, per seed."""
    model_type, index, cluster, budgets, seeds = case
    placer = _worker["placer"]
    env = goenv.make("placement", graph=_worker["dataset"][index], cluster=cluster)
    began = time.perf_counter()
    _, info = env.reset(seed=0)
    best = goenv.baselines.solve(env, "best-heuristic")
    row = {"model_type": model_type, "lineage": lineage(model_type), "cluster": cluster,
           "nodes": env.unwrapped.graph.num_nodes, "default": info["initial_runtime"] * 1e3,
           "best_heuristic": best["runtime"] * 1e3, "one_shot": {}, "search": {}}
    for proposals in PROPOSALS[:2]:  # uniform has no greedy decision: its "argmax" is the first device
        result = placer.optimize(env, budget=1, start="default", seed=0, proposals=proposals)
        row["one_shot"][proposals] = result["greedy_runtime"] * 1e3
    for budget in budgets:
        runs = row["search"][str(budget)] = {}
        for proposals in PROPOSALS:
            runs[proposals] = [placer.optimize(env, budget=budget, start="best-heuristic", seed=seed,
                                               proposals=proposals)["runtime"] * 1e3 for seed in seeds]
        for method in SEARCHES:
            runs[method] = []
            for seed in seeds:  # the baselines start from the env's current decisions: the best heuristic's
                env.reset(seed=0, options={"start": "best-heuristic"})
                runs[method].append(goenv.baselines.solve(env, method, budget=budget, seed=seed)["runtime"] * 1e3)
    row["seconds"] = time.perf_counter() - began
    return row


def geometric_mean(values) -> float:
    return float(math.exp(np.mean(np.log(values))))


def summarize(rows: list[dict], budgets: list[int]) -> dict:
    """The protocol's readings: per budget, learned against untrained and uniform (geometric
    mean of median ratios, cases better or worse by more than 1%) and against the better of
    local search and genetic; the one-shot decision against the default and the best heuristic."""
    out: dict = {"cases": len(rows), "budgets": {}}
    for budget in budgets:
        med = [{m: float(np.median(v)) for m, v in row["search"][str(budget)].items()} for row in rows]
        reading = {}
        for other in ("untrained", "uniform"):
            ratio = [m["learned"] / m[other] for m in med]
            reading[other] = {"geomean": geometric_mean(ratio),
                              "better": sum(r < 1 - WIN for r in ratio), "worse": sum(r > 1 + WIN for r in ratio)}
        ratio = [m["learned"] / min(m["local-search"], m["genetic"]) for m in med]
        reading["best_search"] = {"geomean": geometric_mean(ratio), "better": sum(r < 1 - WIN for r in ratio),
                                  "worse": sum(r > 1 + WIN for r in ratio)}
        out["budgets"][str(budget)] = reading
    one_shot = [row["one_shot"]["learned"] for row in rows]
    out["one_shot"] = {
        "better_than_default": sum(o < row["default"] * (1 - 1e-9) for o, row in zip(one_shot, rows)),
        "equal_to_default": sum(abs(o - row["default"]) <= 1e-9 * row["default"] for o, row in zip(one_shot, rows)),
        "vs_best_heuristic": geometric_mean([o / row["best_heuristic"] for o, row in zip(one_shot, rows)]),
        "untrained_vs_best_heuristic": geometric_mean([row["one_shot"]["untrained"] / row["best_heuristic"]
                                                       for row in rows]),
    }
    return out


def table(results: dict) -> str:
    s, split = results["summary"], results["split"]
    lines = [f"Split `{split}` of the zoo ({s['cases']} cases: {len(results['graphs'])} graphs of "
             f"{len({g['lineage'] for g in results['graphs']})} lineages the placer `{results['checkpoint']}` never saw, on "
             f"{', '.join(results['clusters'])}); seeds {results['seeds']}; every search from the best heuristic "
             f"with the same calls. Ratios are the learned search's median over the other's: below 1, learning helps.",
             "", "| calls | learned / untrained | better, worse (of cases) | learned / uniform | better, worse | "
             "learned / best of local search and genetic | better, worse |", "|---:|---:|---:|---:|---:|---:|---:|"]
    for budget, r in s["budgets"].items():
        lines.append(f"| {budget} | {r['untrained']['geomean']:.4f} | {r['untrained']['better']}, "
                     f"{r['untrained']['worse']} | {r['uniform']['geomean']:.4f} | {r['uniform']['better']}, "
                     f"{r['uniform']['worse']} | {r['best_search']['geomean']:.4f} | {r['best_search']['better']}, "
                     f"{r['best_search']['worse']} |")
    o = s["one_shot"]
    lines += ["", f"One-shot (the greedy decision from the compiler default, one call): better than the default on "
                  f"{o['better_than_default']} of {s['cases']} cases, the default itself on {o['equal_to_default']}; "
                  f"geometric mean {o['vs_best_heuristic']:.3f}x the best heuristic's runtime (untrained network: "
                  f"{o['untrained_vs_best_heuristic']:.3f}x).",
              "", f"Made at commit `{(results['made_by'].get('commit') or 'unknown')[:10]}`"
                  f"{' with local changes' if results['made_by'].get('dirty') else ''} by "
                  f"`python experiments/transfer_results.py {' '.join(results['arguments'])}`"
                  + (f"; the test split has been run {results['test_runs']} time(s)." if split == "test" else ".")]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--zoo", required=True, help="a zoo folder made by `goenv dataset zoo`")
    parser.add_argument("--split", choices=("validation", "test"), required=True)
    parser.add_argument("--checkpoint", default="go-placement", help="a shipped agent's name or a checkpoint file")
    parser.add_argument("--clusters", default=",".join(DEFAULT_CLUSTERS))
    parser.add_argument("--budgets", default="16,256,1024", help="simulator calls per search, comma-separated")
    parser.add_argument("--seeds", type=int, default=5)
    parser.add_argument("--limit", type=int, default=None, help="at most this many graphs (every lineage first)")
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--out", default=None, help="results file (default docs/results/transfer_<split>.json)")
    parser.add_argument("--page", default=None, help="the page with the section's markers (default: found in docs/)")
    parser.add_argument("--trained-on", default=None,
                        help="the placer's training summary (a JSON with model_types) when it keeps no teachers")
    parser.add_argument("--section", default=None, help="the page's section to write (default transfer-<split>)")
    parser.add_argument("--overwrite", action="store_true", help="run the test split again over its results file")
    args = parser.parse_args(argv)
    budgets = [int(b) for b in args.budgets.split(",")]
    clusters = args.clusters.split(",")
    for name in clusters:
        goenv.clusters.get(name)  # an unknown name fails here, before any run
    if args.seeds < 3 or args.workers < 1 or min(budgets) < 1 or (args.limit is not None and args.limit < 1):
        parser.error("--seeds must be >= 3, --workers, --budgets and --limit >= 1")
    out = Path(args.out or ROOT / "docs" / "results" / f"transfer_{args.split}.json")
    section = args.section or f"transfer-{args.split}"
    page = section_file(section, args.page, "--page")  # checked before measuring
    earlier = goenv.files.read_json_file(out, 2**28, "results file") if out.exists() else None
    if args.split == "test" and earlier is not None and not args.overwrite:
        parser.error(f"{out}: the test split was run already ({earlier.get('test_runs', 1)} time(s)); it is run once, "
                     f"after every choice was made on validation (--overwrite runs it again, and the file counts it)")
    graphs = split_graphs(args.zoo, args.split, args.limit)
    seeds = list(range(args.seeds))
    cases = [(t, i, c, budgets, seeds) for t, i in graphs for c in clusters]
    check_held_out(args.zoo, args.checkpoint, cases, args.trained_on)
    made = made_by()  # the code this run measures: taken at its start, not after an hour of other commits
    began = time.perf_counter()
    with multiprocessing.get_context("forkserver").Pool(args.workers, _start_worker, (args.zoo, args.checkpoint)) as pool:
        rows = []
        for row in pool.imap(run_case, cases):
            rows.append(row)
            print(f"{row['model_type']:>28} {row['cluster']:>13}: default {row['default']:.3f} ms, best heuristic "
                  f"{row['best_heuristic']:.3f}, one-shot {row['one_shot']['learned']:.3f}, at {budgets[-1]} calls "
                  + ", ".join(f"{m} {np.median(v):.3f}" for m, v in row["search"][str(budgets[-1])].items()),
                  flush=True)
    results = {"split": args.split, "zoo": str(args.zoo), "checkpoint": args.checkpoint, "clusters": clusters,
               "budgets": budgets, "seeds": seeds, "arguments": list(argv if argv is not None else sys.argv[1:]),
               "graphs": [{"model_type": t, "lineage": lineage(t)} for t, _ in graphs], "rows": rows,
               "summary": summarize(rows, budgets), "wall_seconds": time.perf_counter() - began,
               "made_by": made, "test_runs": (earlier or {}).get("test_runs", 0) + 1}
    out.parent.mkdir(parents=True, exist_ok=True)
    goenv.files.write_atomic(out, json.dumps(results, indent=1).encode(), "results file")
    write_section(page, section, table(results))
    print(table(results))


if __name__ == "__main__":
    main()
