"""Regenerates the generated tables of the README and the docs/ pages, each between its
<!-- NAME:begin/end --> markers, in whichever page holds them (doc_sections.py finds it).
The reference tables (graph families, clusters, spaces) are made by the site's build instead
(docs/hooks/reference_tables.py), since they need no measurement.

    python experiments/readme_tables.py            # every table (a few minutes on 2 cores)
    python experiments/readme_tables.py search     # only the search-budget table (about a minute), also printed
    python experiments/readme_tables.py library-results   # the library examples' table, from their JSON

The library-results table reads what the library examples wrote with `--json` into
docs/results/library_<example>--<env>--seed<k>.json (the commands are on the docs' RL-libraries
page), one row per example, env and options, median and range over the seeds; it runs none.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
from pathlib import Path

import goenv

sys.path.insert(0, str(Path(__file__).resolve().parent))  # doc_sections beside it, also when imported by path
from doc_sections import ROOT, section_file, write_section  # noqa: E402

RESULTS = ROOT / "docs" / "results"
# example -> (its label in the table, what it is)
LIBRARY_EXAMPLES = {
    "sb3_ppo": ("Stable-Baselines3 `PPO`", "`goenv.integrations.sb3.GraphPolicy`"),
    "sb3_maskable_ppo": ("sb3-contrib `MaskablePPO`", "`goenv.integrations.sb3.MaskableGraphPolicy`"),
    "rllib_ppo": ("RLlib `PPO` (new API stack)", "`goenv.integrations.rllib.GraphModule`"),
    "cleanrl_gnn_ppo": ("CleanRL-style PPO, one file", "its own 60-line GNN"),
}


def markdown_table(header: list[str], rows: list[list[str]]) -> str:
    lines = ["| " + " | ".join(header) + " |", "|" + "|".join("---" for _ in header) + "|"]
    lines += ["| " + " | ".join(row) + " |" for row in rows]
    return "\n".join(lines)


def baselines_table(budget: int = 1000) -> str:
    methods = ["single", "expert", "metis", "m-etf", "heft", "local-search", "genetic"]
    rows = []
    for entry in goenv.datasets.suite("go-placement"):
        env = goenv.make(entry.env_id("placement"), cluster=entry.cluster, **entry.params)
        env.reset(seed=0)
        lower = goenv.baselines.lower_bound(env)
        cells = [f"`{entry.graph}`" + "".join(f" {k}={v:g}" for k, v in entry.params.items()),
                 str(env.cluster.num_devices)]
        for method in methods:
            result = goenv.baselines.solve(env, method, budget=budget, seed=0)
            flag = " (OOM)" if result["oom"] else " (invalid)" if result["invalid"] else ""
            cells.append(f"{result['runtime'] * 1e3:,.1f}{flag}")
        cells.append(f"{lower * 1e3:,.1f}")
        rows.append(cells)
    return markdown_table(["graph", "devices"] + methods + ["lower bound"], rows)


def library_runs() -> dict[tuple, list[dict]]:
    """The library examples' runs grouped by configuration: (example, env, flags) -> the results
    of its seeds. Files: docs/results/library_<example>[--<env>][--seed<k>].json; a file without
    "flags" (written before runs recorded them) is a group of its own."""
    groups: dict[tuple, list[dict]] = {}
    for path in sorted(RESULTS.glob("library_*.json")):
        example = path.stem.removeprefix("library_").split("--")[0]
        if example not in LIBRARY_EXAMPLES:
            raise SystemExit(f"{path}: {example!r} is none of the library examples {sorted(LIBRARY_EXAMPLES)}")
        result = json.loads(path.read_text())
        flags = result.get("flags", f"not recorded ({path.name})")
        groups.setdefault((example, result["env"], flags), []).append(result)
    missing = set(LIBRARY_EXAMPLES) - {example for example, _, _ in groups}
    if missing:
        raise SystemExit(f"no results of {sorted(missing)}: run python examples/<example>.py --json "
                         "docs/results/library_<example>--<env>--seed<k>.json")
    return groups


def median_and_range(values: list[float]) -> str:
    if len(values) == 1:
        return f"{values[0]:,.1f}"
    return f"{statistics.median(values):,.1f} [{min(values):,.1f}–{max(values):,.1f}]"


def library_results_table() -> str:
    """One row per configuration (example, env, flags): median [min–max] over its seeds."""
    groups = library_runs()
    order = list(LIBRARY_EXAMPLES)
    readme_env = "placement-transformer-xl-2"
    keys = sorted(groups, key=lambda key: (key[1] != readme_env, key[1], order.index(key[0]), key[2]))
    rows = []
    for example, env, flags in keys:
        runs = sorted(groups[(example, env, flags)], key=lambda r: r.get("seed", 0))
        r = runs[0]
        label, model = LIBRARY_EXAMPLES[example]
        seeds = ", ".join(str(run["seed"]) for run in runs) if "seed" in r else "0"
        rows.append([f"{label} (`examples/{example}.py`)", model,
                     f"`{env}` ({r['default_ms']:.1f} / {r['heft_ms']:.1f})",
                     "not recorded" if flags.startswith("not recorded") else f"`{flags}`" if flags else "—",
                     seeds, f"{r['episodes']:,}", f"{statistics.median(run['seconds'] for run in runs):,.0f}",
                     median_and_range([run["first_quarter_ms"] for run in runs]) + " → " +
                     median_and_range([run["last_quarter_ms"] for run in runs]),
                     median_and_range([run["best_ms"] for run in runs]), commits(runs)])
    intro = ("Each example at its default budget, runtimes in ms of one training step: median [min–max] over "
             "the seeds listed (runs two at a time on 2 shared CPU cores, one torch thread each; seconds: the "
             "median run's wall time). Written by `experiments/readme_tables.py library-results` from the examples' "
             "`--json` files:\n\n")
    return intro + markdown_table(["example", "model", "env (default / HEFT)", "options", "seeds", "episodes",
                                   "seconds", "mean runtime, first quarter → last quarter", "best found", "commit"],
                                  rows)


def commits(runs: list[dict]) -> str:
    """The commits the runs were made at (a + where the code differed from it; — before runs
    recorded it)."""
    made = sorted({run["commit"][:10] + ("+" if run.get("dirty") else "") if run.get("commit") else "—"
                   for run in runs})
    return ", ".join(f"`{c}`" if c != "—" else c for c in made)


SEARCH_ENVS = ["placement-rnnlm-2", "placement-transformer-xl-2", "placement-inception"]
LOCAL_SEARCH_BUDGETS = [128, 1024, 10000]


def search_table(seeds: tuple[int, ...] = (0, 1, 2), budget: int = 1024) -> str:
    """Searches at equal simulator budgets: median [min-max] over seeds of the runtime in ms."""
    def runs(env, method: str, calls: int) -> str:
        ms = [goenv.baselines.solve(env, method, budget=calls, seed=seed)["runtime"] * 1e3 for seed in seeds]
        return f"{statistics.median(ms):,.1f} [{min(ms):,.1f}-{max(ms):,.1f}]"

    rows = []
    for env_id in SEARCH_ENVS:
        env = goenv.make(env_id)
        best = goenv.baselines.solve(env, "best-heuristic")
        rows.append([f"`{env_id.removeprefix('placement-')}`", f"{best['runtime'] * 1e3:,.1f}"]
                    + [runs(env, "local-search", calls) for calls in LOCAL_SEARCH_BUDGETS]
                    + [runs(env, method, budget) for method in ("genetic", "random-search")])
    header = (["graph", "best heuristic"] + [f"local-search {calls:,}" for calls in LOCAL_SEARCH_BUDGETS]
              + [f"genetic {budget:,}", f"random-search {budget:,}"])
    return markdown_table(header, rows)


def gpu_table() -> str:
    """The agents on this machine's CPU, the lent GPU machine's CPU and its GPU, from the files
    tests/benchmarks/gpu_run.sh and agents_bench.py / pretrain_placer.py write in docs/results/gpu."""
    folder = RESULTS / "gpu"
    runs = {name: json.loads((folder / f"agents_bench_{name}.json").read_text())
            for name in ("this_cpu", "h100_host_cpu", "h100")}
    rows_by = {name: {row["nodes"]: row for row in run["rows"]} for name, run in runs.items()}
    names = {"this_cpu": f"{runs['this_cpu']['threads']}-thread CPU here",
             "h100_host_cpu": f"{runs['h100_host_cpu']['threads']}-thread CPU there",
             "h100": runs["h100"]["gpu"].replace("NVIDIA ", "")}

    def cell(nodes: int, key: str, form: str) -> str:
        return " / ".join(form.format(rows_by[name][nodes][key]) if nodes in rows_by[name] else "–" for name in names)

    header = ["graph nodes", "act s", "PPO training, env steps/s", "imitation step s", "GPU vs here: training",
              "simulator step ms"]
    rows = []
    for nodes in sorted(rows_by["h100"]):
        here, gpu = rows_by["this_cpu"].get(nodes), rows_by["h100"][nodes]
        gain = f"{gpu['train_steps_per_second'] / here['train_steps_per_second']:.1f}x" if here else "–"
        rows.append([f"{nodes:,}", cell(nodes, "act", "{:.3f}"), cell(nodes, "train_steps_per_second", "{:.1f}"),
                     cell(nodes, "imitate", "{:.3f}"), gain, f"{gpu['env_step'] * 1e3:.1f}"])
    pretrain = {name: json.loads((folder / f"pretrain_{name}.json").read_text()) for name in ("this_cpu", "h100")}
    commits = sorted({run["commit"][:7] for run in [*runs.values(), *pretrain.values()]})
    return (f"Columns: {' / '.join(names.values())} (median of {runs['h100']['repeats']}; GO hidden "
            f"{runs['h100']['hidden']}, segments of {runs['h100']['segment_length']}, "
            f"{runs['h100']['envs_per_graph']} envs per graph; torch {runs['h100']['torch']} there, "
            f"{runs['this_cpu']['torch']} here; commits {', '.join(commits)}).\n\n"
            + markdown_table(header, rows)
            + f"\n\nA short pretraining, the same command on both (`experiments/pretrain_placer.py --scale 0.25 "
              f"--imitation-steps 300 --ppo-steps 256 --workers 0 --threads 4`, {pretrain['h100']['graphs']} graphs): "
              f"{pretrain['this_cpu']['seconds']:.0f} s here, {pretrain['h100']['seconds']:.0f} s with the learner "
              f"on the GPU ({pretrain['this_cpu']['seconds'] / pretrain['h100']['seconds']:.1f}x).")


def results_commit() -> dict:
    """The commit the results are made at, and whether the code differed from it (tracked
    files outside docs/, where results and figures are written). $GOENV_COMMIT, where set, names
    it instead: a GPU machine's copy of a clean tree, whose .git may be stale (gpu_run.sh)."""
    from goenv.provenance import source_commit

    return source_commit(ROOT, exclude=("docs",))


TABLES = ("baselines", "search", "library-results", "gpu")


def main(argv: list[str]) -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("tables", nargs="*", metavar="TABLE",
                        help=f"the tables to write (default: all): {', '.join(TABLES)}")
    which = parser.parse_args(argv).tables or list(TABLES)
    unknown = [name for name in which if name not in TABLES]
    if unknown:  # (argparse's choices= refuses an empty list of positionals)
        parser.error(f"unknown table(s) {', '.join(unknown)}; the tables: {', '.join(TABLES)}")
    makers = {"baselines": baselines_table, "library-results": library_results_table,
              "gpu": gpu_table, "search": search_table}
    targets = {name: section_file(name) for name in which}  # every page found before any table is made
    for name in TABLES:
        if name in which:
            table = makers[name]()
            if name == "search":
                print(table)
            write_section(targets[name], name, table)


if __name__ == "__main__":
    main(sys.argv[1:])
