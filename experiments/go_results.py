"""The GO agent's results on the go-placement suite, as on the docs' Reference agents page (GO paper,
Table 1 style).

    python experiments/go_results.py per-graph    # GO per graph vs the heuristics and local search
    python experiments/go_results.py transfer     # the shipped pretrained placer: zero-shot, fine-tuned
    python experiments/go_results.py joint        # one joint policy vs the three tasks one after another
    python experiments/go_results.py search       # the honest protocol: searches at equal budget, 5 seeds
    python experiments/go_results.py search --reference-calls 200000   # ... and local search's long reference
    python experiments/go_results.py search --efficiency-budget 16384  # GO search's calls to reach it (added)
    python experiments/go_results.py readme       # tables + figures from the saved results into the docs page
                                                  # holding <!-- go-results:begin/end --> (docs/agents.md)

Each experiment part writes docs/results/go_<part>.json (atomically) and can run in
its own process (--graphs splits a part over processes; per-graph and joint also spread
their (graph, seed) runs over --jobs processes); `readme` only reads them.

Budgets are simulator calls and every method is charged every call it makes:
GO = its teacher (the best of expert, METIS, m-ETF and HEFT: 4 calls + 1 to step
it) + PPO steps (one env step of the one-shot envs is one simulated decision);
local search = the same 4 heuristic starts + the env's default + its moves. GO's
answer is the best decision it simulated (its teacher's included, as local
search's includes its start), so a win is only a decision better than both.
"GO + local search" spends half the budget on GO and half on local search from
GO's best. The equal-wall-time column gives local search as many calls as fit
in GO's wall time. Large graphs get a smaller budget (at most --node-steps /
nodes steps) so the run fits a 2-core CPU; the tables say which budget each got.
"""

from __future__ import annotations

import argparse
import concurrent.futures
import json
import multiprocessing
import os
import sys
import time
from pathlib import Path

import numpy as np

import goenv
import goenv.agents

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "examples"))  # place_your_model.py's model, measured in `transfer`
sys.path.insert(0, str(Path(__file__).resolve().parent))
from doc_sections import section_file, write_section  # noqa: E402
from readme_tables import markdown_table, results_commit  # noqa: E402

HEURISTICS = ["expert", "metis", "m-etf", "heft"]


# -- helpers --------------------------------------------------------------------------------------

def write_json(path: Path, data) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(f".tmp{os.getpid()}")
    tmp.write_text(json.dumps(data, indent=1))
    tmp.replace(path)


def read_json(path: Path):
    return json.loads(path.read_text()) if path.exists() else None


def label(entry) -> str:
    return entry.graph + "".join(f" {k}={v:g}" for k, v in entry.params.items())


def budget_for(num_nodes: int, args) -> int:
    """Simulator calls for a graph: --budget, fewer on graphs too big to train that long here."""
    return max(2 * args.envs_per_graph, min(args.budget, int(args.node_steps // num_nodes)))


def imitation_steps_for(num_nodes: int, args) -> int:
    return int(np.clip(args.imitation_node_steps // num_nodes, 20, args.imitation_steps))


def go_agent(args, **options) -> goenv.agents.GO:
    return goenv.agents.GO(seed=args.seed, learning_rate=args.learning_rate, envs_per_graph=args.envs_per_graph,
                           num_threads=args.threads, **options)


def go_run(env, budget: int, args, polish: bool = False, **options):
    """Imitation + PPO within `budget` simulator calls (teacher included): (agent, curve, seconds,
    polished). curve: [simulator calls, best runtime in ms] after the teacher and after each update.
    With `polish`, GO + local search is measured on the way: after half the budget, local search
    from GO's best with the other half (optimize() on the side: greedy acting draws no randomness,
    so the GO run goes on unchanged); polished is its runtime in ms."""
    start = time.perf_counter()
    agent = go_agent(args, **options)
    imitation = agent.imitate(env, steps=imitation_steps_for(env.unwrapped.graph.num_nodes, args), progress=False)
    calls = imitation[-1]["simulator_calls"]
    curve = [[calls, agent.teacher(env)["runtime"] * 1e3]]
    seconds, polished = 0.0, None
    for part_budget in ((budget // 2, budget) if polish else (budget,)):
        steps = (part_budget - calls) // args.envs_per_graph * args.envs_per_graph
        if steps > 0:
            history = agent.train(env, steps, progress=args.progress)
            curve += [[calls + m["step"], m["best_runtime"] * 1e3] for m in history]
            calls += history[-1]["step"]
        if polish and polished is None:
            seconds -= time.perf_counter()
            result = agent.optimize(env, budget=1, local_search_budget=max(8, budget - calls - 1))
            polished = result["runtime"] * 1e3
            seconds += time.perf_counter()
    return agent, curve, time.perf_counter() - start - seconds, polished


def calls_to_reach(curve: list[list[float]], target_ms: float) -> int | None:
    return next((int(step) for step, ms in curve if ms <= target_ms * (1 + 1e-9)), None)


def search_calls_to_reach(curve: list[float], target_ms: float) -> int | None:
    """calls_to_reach for a search's curve (its best runtime after each call)."""
    return calls_to_reach([(k + 1, ms) for k, ms in enumerate(curve)], target_ms)


def local_search(env, budget: int, seed: int) -> tuple[float, float]:
    """(runtime in ms, wall seconds) of local search from the best heuristic with `budget` calls."""
    start = time.perf_counter()
    result = goenv.baselines.solve(env, "local-search", budget=budget, seed=seed)
    return result["runtime"] * 1e3, time.perf_counter() - start


def suite_envs(args, done: dict):
    """(label, reset placement env) of the go-placement graphs --graphs selects, in suite order,
    without those already `done` when --resume."""
    for entry in goenv.datasets.suite("go-placement"):
        name = label(entry)
        if (args.graphs and name not in args.graphs and entry.graph not in args.graphs) or \
                (args.resume and name in done):
            continue
        env = entry.make("placement")
        env.reset(seed=0)
        yield name, env


def suite_order() -> list[str]:
    return [label(e) for e in goenv.datasets.suite("go-placement")]


# -- part 1: GO per graph -------------------------------------------------------------------------

def per_graph_one(args, name: str, seed: int) -> dict:
    """One seed of GO trained on one graph, against the heuristics and local search (ms), all
    from the same seed (METIS's, local search's, GO's)."""
    args = argparse.Namespace(**{**vars(args), "seed": seed, "graphs": [name], "resume": False})
    env = next(env for label_, env in suite_envs(args, {}) if label_ == name)
    n = env.unwrapped.graph.num_nodes
    budget = budget_for(n, args)
    row = {"label": name, "nodes": n, "devices": env.unwrapped.cluster.num_devices, "budget": budget,
           "default": env.unwrapped.core.initial_runtime * 1e3, "lower_bound": goenv.baselines.lower_bound(env) * 1e3,
           "imitation_steps": imitation_steps_for(n, args)}
    row["heuristics"] = {m: goenv.baselines.solve(env, m, seed=seed)["runtime"] * 1e3 for m in HEURISTICS}
    # Local search's quality as a function of its budget (each budget a fresh run).
    ls_budgets = sorted({max(8, budget >> k) for k in range(6)})
    row["local_search_curve"] = [[b, local_search(env, b, seed)[0]] for b in ls_budgets]
    row["local_search"], ls_seconds = local_search(env, budget, seed)
    row["local_search_seconds"] = ls_seconds
    agent, curve, seconds, row["go_local_search"] = go_run(env, budget, args, polish=True)
    row["go_seconds"], row["go_curve"] = seconds, curve
    row["go"] = curve[-1][1]
    row["teacher"] = curve[0][1]
    row["go_greedy"] = agent.optimize(env, budget=1)["greedy_runtime"] * 1e3
    row["go_calls_to_local_search"] = calls_to_reach(curve, row["local_search"])
    # Equal wall time: local search gets the calls that fit in GO's seconds.
    per_call = ls_seconds / budget
    row["local_search_wall_budget"] = int(min(args.max_wall_calls, max(budget, seconds / per_call)))
    row["local_search_wall"], row["local_search_wall_seconds"] = local_search(env, row["local_search_wall_budget"],
                                                                              seed)
    return row


# Per-seed values of a per-graph row: the row holds their median, and NAME_runs holds them all.
PER_SEED = ("go", "go_greedy", "go_local_search", "teacher", "local_search", "local_search_seconds",
            "local_search_wall", "local_search_wall_budget", "go_seconds")


def per_graph_row(runs: list[dict], seeds: list[int], made_at: dict) -> dict:
    """One graph's row from its seeds' runs: medians (and every run) of what varies by seed."""
    first = runs[0]
    row = {key: first[key] for key in ("label", "nodes", "devices", "budget", "default", "lower_bound",
                                       "imitation_steps")}
    row["seeds"] = list(seeds)
    row["heuristics_runs"] = {m: [r["heuristics"][m] for r in runs] for m in HEURISTICS}  # METIS's varies by seed
    row["heuristics"] = {m: float(np.median(values)) for m, values in row["heuristics_runs"].items()}
    for key in PER_SEED:
        row[key] = float(np.median([r[key] for r in runs]))
        row[key + "_runs"] = [r[key] for r in runs]
    row["local_search_wall_budget"] = int(row["local_search_wall_budget"])
    row["go_calls_to_local_search"] = [r["go_calls_to_local_search"] for r in runs]  # per seed (None: not reached)
    row["go_curve"], row["local_search_curve"] = first["go_curve"], first["local_search_curve"]  # the first seed's
    return {**row, **made_at}


def per_graph(args) -> None:
    """GO trained on each graph, --seeds seeds each (median [range]), the (graph, seed) runs spread
    over --jobs processes; a graph's row is written once its seeds are done (--resume skips it)."""
    path = ROOT / args.out / "go_per_graph.json"
    rows = {row["label"]: row for row in (read_json(path) or [])}
    order = suite_order()
    made_at = results_commit()  # the code this run uses: taken once, at its start
    names = [name for name, _ in suite_envs(args, rows)]
    with concurrent.futures.ProcessPoolExecutor(args.jobs, mp_context=multiprocessing.get_context("spawn")) as pool:
        futures = {(name, seed): pool.submit(per_graph_one, args, name, seed) for name in names for seed in args.seeds}
        for name in names:
            row = per_graph_row([futures[name, seed].result() for seed in args.seeds], args.seeds, made_at)
            rows[name] = row
            write_json(path, sorted(rows.values(), key=lambda r: order.index(r["label"])))
            best = min(min(row["heuristics"].values()), row["local_search"])
            print(f"{name}: {row['nodes']} nodes, budget {row['budget']}, medians of {len(args.seeds)} seed(s): GO "
                  f"{row['go']:.2f} ms (teacher {row['teacher']:.2f}, greedy {row['go_greedy']:.2f}), GO+LS "
                  f"{row['go_local_search']:.2f}, best heuristic {min(row['heuristics'].values()):.2f}, local search "
                  f"{row['local_search']:.2f}: {verdict(row['go'], best)}; equal wall time ({row['go_seconds']:.0f} s, "
                  f"{row['local_search_wall_budget']} calls): local search {row['local_search_wall']:.2f}", flush=True)


# -- part 2: transfer -----------------------------------------------------------------------------

def own_models() -> list[tuple[str, object, int, bool]]:
    """"Your own model": place_your_model.py's GPT-2-style decoder imported with from_torch, on 2 and 4 devices."""
    import torch
    from place_your_model import TinyGPT

    torch.manual_seed(0)
    graph = goenv.datasets.from_torch(TinyGPT(layers=6), torch.randint(0, 8192, (8, 256)))
    return [(f"TinyGPT-6 (from_torch) {d}xgpu", goenv.make("placement", graph=graph, cluster=f"{d}xgpu-nvlink"), d,
             True) for d in (2, 4)]


def placer_of(args, num_devices: int | None = None):
    """The placer the results are about: --agent's checkpoint, else the shipped one."""
    return goenv.agents.load(args.agent) if args.agent else goenv.agents.pretrained("go-placement",
                                                                                     num_devices=num_devices)


def transfer(args) -> None:
    """The shipped placer (experiments/pretrain_placer.py) on the transfer suite's held-out graphs and on
    place_your_model.py's model."""
    path = ROOT / args.out / "go_transfer.json"
    test = [(label(e), e.make("placement"), e.num_devices, False) for e in goenv.datasets.suite("transfer")["test"]
            if not args.graphs or e.graph in args.graphs]
    if not args.graphs or "own-model" in args.graphs:
        test += own_models()
    order = [label(e) for e in goenv.datasets.suite("transfer")["test"]] + [name for name, *_ in test]
    kept = {row["label"]: row for row in (read_json(path) or [])}  # other graphs' rows stay
    made_at = results_commit()  # each row records the code it was made with
    for name, env, devices, own_model in test:
        env.reset(seed=0)
        best_heuristic = goenv.baselines.solve(env, "best-heuristic", seed=args.seed)["runtime"] * 1e3
        agent = placer_of(args, devices)
        greedy = agent.optimize(env, budget=1)
        # Zero-shot: policy-guided search from the best heuristic, one run per seed.
        searched = summary([agent.optimize(env, budget=args.zero_shot_samples, start="best-heuristic",
                                           seed=seed)["runtime"] * 1e3 for seed in args.seeds])
        start = time.perf_counter()
        tuned = placer_of(args, devices)
        tuned.imitate(env, steps=args.finetune_imitation_steps, teacher="best", progress=False)
        calls = tuned.teacher(env)["simulator_calls"]
        tuned.train(env, (args.finetune_steps - calls) // args.envs_per_graph * args.envs_per_graph or
                    args.envs_per_graph, progress=args.progress)
        finetuned = tuned.optimize(env, budget=1)["runtime"] * 1e3
        kept[name] = {"label": name, "own_model": own_model, "nodes": env.unwrapped.graph.num_nodes, "devices": devices,
                     "default": env.unwrapped.core.initial_runtime * 1e3, "best_heuristic": best_heuristic,
                     "zero_shot_greedy": greedy["greedy_runtime"] * 1e3, "zero_shot_samples": args.zero_shot_samples,
                     "zero_shot": searched["median"], "zero_shot_runs": searched,
                     "placer": args.agent or "pretrained", "finetune_steps": args.finetune_steps,
                     "finetuned": finetuned, "finetune_seconds": time.perf_counter() - start, **made_at}
        write_json(path, sorted(kept.values(), key=lambda row: order.index(row["label"])
                                if row["label"] in order else len(order)))
        r = kept[name]
        print(f"{r['label']}: best heuristic {best_heuristic:.2f}, zero-shot search {r['zero_shot']:.2f} ms "
              f"(greedy {r['zero_shot_greedy']:.2f}), fine-tuned {r['finetuned']:.2f}", flush=True)


# -- part 4: searches at equal budget, several seeds ----------------------------------------------

SEARCHES = ("go-search", "local-search", "genetic")
# The ablation: the same policy-guided search with the placer's network untrained (what the
# learned weights add to the search's own moves).
ABLATION = "untrained-search"
# Sample efficiency past the equal budget: GO search given --efficiency-budget calls, and the
# calls it needs to reach local search's --reference-calls result (None: not within them).
LONG = "go-search_long"
WIN, TIE = 0.01, 0.005  # a win: a median better by more than 1%; within 0.5%: a tie


def summary(values: list[float]) -> dict:
    return {"median": float(np.median(values)), "min": float(np.min(values)), "max": float(np.max(values)),
            "runs": [float(v) for v in values]}


def verdict(ours: float, theirs: float) -> str:
    """win / tie / loss of a median against another, by the protocol's thresholds."""
    if ours < theirs * (1 - WIN):
        return "win"
    if ours > theirs * (1 + TIE):
        return "loss"
    return "tie" if abs(ours / theirs - 1) <= TIE else "within noise"


def search_one(env, method: str, budget: int, seed: int, agent) -> dict:
    """One seeded run of a search from the best heuristic: runtime (ms), calls, seconds, curve."""
    start = time.perf_counter()
    if method == "go-search":
        result = agent.optimize(env, budget=budget, start="best-heuristic", seed=seed)
        calls, curve = result["simulator_calls"] - result["start_calls"], result["curve"]
    else:  # the baselines start from the env's current decisions: the best heuristic's
        env.reset(seed=0, options={"start": "best-heuristic"})
        result = goenv.baselines.solve(env, method, budget=budget, seed=seed)
        calls, curve = result["simulator_calls"], result["curve"]
    return {"runtime": result["runtime"] * 1e3, "calls": int(calls), "seconds": time.perf_counter() - start,
            "curve": [float(x) * 1e3 for x in curve]}


def searches(args) -> None:
    """Every search at the same budget and start (the best heuristic), --seeds seeds each: median
    and range; GO search's calls to reach local search's result at --reference-calls; local search
    at GO search's wall time. The results file records the commit it was made at."""
    path = ROOT / args.out / "go_search.json"
    made_at = results_commit()  # the code this run uses: taken once, at its start
    saved = read_json(path) or {}
    rows = {row["label"]: row for row in saved.get("rows", [])}
    order = suite_order()
    if args.untrained:  # only the ablation, into the rows made before
        placer = placer_of(args)
        untrained = goenv.agents.GO(**placer.config)  # the same architecture and options, freshly initialised
        for name, env in suite_envs(args, {}):
            if name in rows:
                budget = rows[name]["budget"]
                rows[name][ABLATION] = summary([search_one(env, "go-search", budget, seed, untrained)["runtime"]
                                                for seed in args.seeds])
                rows[name][ABLATION + "_commit"] = made_at["commit"]
                write_json(path, {**saved, "rows": sorted(rows.values(), key=lambda r: order.index(r["label"]))})
                print(f"{name}: untrained-policy search {rows[name][ABLATION]['median']:.2f} ms "
                      f"(GO search {rows[name]['go-search']['median']:.2f})", flush=True)
        return
    if args.efficiency_budget:  # only the long GO searches, into the rows with a reference
        for name, env in suite_envs(args, {}):
            if "local_search_reference" not in rows.get(name, {}):
                continue
            row, reference = rows[name], rows[name]["local_search_reference"]
            agent = placer_of(args, env.unwrapped.cluster.num_devices)
            runs = [search_one(env, "go-search", args.efficiency_budget, seed, agent) for seed in args.seeds]
            row[LONG] = {"budget": args.efficiency_budget, "seeds": list(args.seeds),
                         "runtime": summary([r["runtime"] for r in runs]),
                         "calls_to_reference": [search_calls_to_reach(r["curve"], reference) for r in runs],
                         "commit": made_at["commit"], "dirty": made_at["dirty"]}
            write_json(path, {**saved, "rows": sorted(rows.values(), key=lambda r: order.index(r["label"]))})
            print(f"{name}: GO search with {args.efficiency_budget:,} calls {row[LONG]['runtime']['median']:.2f} ms "
                  f"(local search's reference {reference:.2f}); calls to reach it per seed: "
                  f"{row[LONG]['calls_to_reference']}", flush=True)
        return
    for name, env in suite_envs(args, rows):
        devices = env.unwrapped.cluster.num_devices
        agent = placer_of(args, devices)
        budget = min(args.search_budget, budget_for(env.unwrapped.graph.num_nodes, args))
        best = goenv.baselines.solve(env, "best-heuristic")
        row = {"label": name, "nodes": env.unwrapped.graph.num_nodes, "devices": devices, "budget": budget,
               "default": env.unwrapped.core.initial_runtime * 1e3, "best_heuristic": best["runtime"] * 1e3,
               "lower_bound": goenv.baselines.lower_bound(env) * 1e3, "seeds": list(args.seeds)}
        runs = {m: [search_one(env, m, budget, seed, agent) for seed in args.seeds] for m in SEARCHES}
        for m, results in runs.items():
            row[m] = summary([r["runtime"] for r in results])
            row[m + "_seconds"] = summary([r["seconds"] for r in results])
        row["go-search_curve"] = runs["go-search"][0]["curve"]
        # Equal wall time: local search with the calls that fit in GO search's seconds (per seed).
        per_call = np.median([r["seconds"] / max(1, r["calls"]) for r in runs["local-search"]])
        row["local_search_wall_budget"] = int(min(args.max_wall_calls,
                                                  max(budget, row["go-search_seconds"]["median"] / per_call)))
        row["local-search_wall"] = summary([search_one(env, "local-search", row["local_search_wall_budget"], seed,
                                                       agent)["runtime"] for seed in args.seeds])
        kept = rows.get(name, {})
        if args.reference_calls:
            reference = search_one(env, "local-search", args.reference_calls, args.seeds[0], agent)["runtime"]
            row["reference_calls"], row["local_search_reference"] = args.reference_calls, reference
        elif "local_search_reference" in kept:
            # local search's long run does not depend on GO's code: kept, with the commit it was made at
            row.update(reference_calls=kept["reference_calls"], local_search_reference=kept["local_search_reference"],
                       reference_commit=kept.get("reference_commit", saved.get("commit")))
        if "local_search_reference" in row:  # per seed, like the long searches' (None: not within the budget)
            row["go_calls_to_reference"] = [search_calls_to_reach(r["curve"], row["local_search_reference"])
                                            for r in runs["go-search"]]
        for key in (ABLATION, ABLATION + "_commit", LONG):  # measured by their own runs, each with its commit
            if key in kept:
                row[key] = kept[key]
        rows[name] = row
        write_json(path, {**made_at, "protocol": {"win": WIN, "tie": TIE, "start": "best-heuristic"},
                          "rows": sorted(rows.values(), key=lambda r: order.index(r["label"]))})
        others = min(row["local-search"]["median"], row["genetic"]["median"])
        print(f"{name}: budget {budget}, best heuristic {row['best_heuristic']:.2f} ms; GO search "
              f"{row['go-search']['median']:.2f} [{row['go-search']['min']:.2f}-{row['go-search']['max']:.2f}], "
              f"local search {row['local-search']['median']:.2f}, genetic {row['genetic']['median']:.2f}: "
              f"{verdict(row['go-search']['median'], others)}", flush=True)


# -- part 3: joint vs sequential ------------------------------------------------------------------

def joint_one(args, graph: str, seed: int) -> dict:
    """One seed on one graph: the joint policy's best runtime and the sequential one's (ms)."""
    args = argparse.Namespace(**{**vars(args), "seed": seed})
    reference = goenv.make(f"joint-{graph}")
    reference.reset(seed=0)
    # One policy deciding placement, priority and fusion together.
    _, curve, _, _ = go_run(reference, args.joint_budget, args)
    # The same budget split over the three tasks in turn, each starting from the last one's decisions.
    stage = args.joint_budget // 3
    decisions = {}
    for task in ("placement", "scheduling", "fusion"):
        given = {"placement": decisions.get("placement"),
                 "priority": decisions["priority"].astype(np.float64) if "priority" in decisions else None}
        env = goenv.make(f"{task}-{graph}", **{k: v for k, v in given.items() if v is not None})
        agent, _, _, _ = go_run(env, stage, args)
        decisions.update(agent.optimize(env, budget=1)["decisions"])
    reference.reset(seed=0)
    info = reference.step(decisions)[4]
    sequential = info["runtime"] * 1e3 if not (info["oom"] or info["invalid"]) else float("inf")
    return {"joint": curve[-1][1], "sequential": sequential}


def joint(args) -> None:
    """Joint vs sequential on each graph, --seeds seeds each (median [range]), the (graph, seed)
    runs spread over --jobs processes (each run is independent and single-threaded)."""
    path = ROOT / args.out / "go_joint.json"
    made_at = results_commit()  # each row records the code it was made with
    runs = [(graph, seed) for graph in args.joint_graphs for seed in args.seeds]
    with concurrent.futures.ProcessPoolExecutor(args.jobs, mp_context=multiprocessing.get_context("spawn")) as pool:
        done = dict(zip(runs, pool.map(joint_one, [args] * len(runs), *zip(*runs))))
    rows = []
    for graph in args.joint_graphs:
        reference = goenv.make(f"joint-{graph}")
        reference.reset(seed=0)
        per_seed = [done[graph, seed] for seed in args.seeds]
        row = {"label": graph, "nodes": reference.unwrapped.graph.num_nodes, "budget": args.joint_budget,
               "default": reference.unwrapped.core.initial_runtime * 1e3, "seeds": list(args.seeds),
               "sequential_stages": args.joint_budget // 3}
        for method in ("joint", "sequential"):
            values = [run[method] for run in per_seed]
            row[method] = float(np.median(values))
            row[f"{method}_runs"] = values
        rows.append({**row, **made_at})
        print(f"{graph}: joint {row['joint']:.2f} ms, sequential {row['sequential']:.2f} ms (medians of "
              f"{len(per_seed)} seeds; default {row['default']:.2f})", flush=True)
    write_json(path, rows)


# -- the results section of the docs --------------------------------------------------------------

def fmt(ms) -> str:
    return "—" if ms is None or not np.isfinite(ms) else f"{ms:,.1f}"


def commit_label(record: dict) -> str:
    """A results record's commit, short, marked when the code had uncommitted changes ("" without one)."""
    return (record.get("commit") or "")[:10] + (" (uncommitted changes)" if record.get("dirty") else "")


def made_by(rows: list[dict], part: str) -> str:
    """Which code a table's rows were made with (rows older than the commit field say so)."""
    commits = sorted({commit_label(r) for r in rows})
    if commits == [""]:
        return (f"Made by `python experiments/go_results.py {part}` before results recorded their commit "
                f"(an earlier placer and agents; not re-run since).")
    older = [f"`{r['label']}`" for r in rows if not commit_label(r)]
    return (f"Made at commit {', '.join(f'`{c}`' for c in commits if c)} by `python experiments/go_results.py {part}`"
            + (f"; the rows of {', '.join(older)} before results recorded their commit (an earlier placer and "
               f"agents; not re-run since)." if older else "."))


def readme(args) -> None:

    out = ROOT / args.out
    per = read_json(out / "go_per_graph.json") or []
    tra = read_json(out / "go_transfer.json") or []
    joi = read_json(out / "go_joint.json") or []
    sea = read_json(out / "go_search.json") or {}
    parts = []
    if sea.get("rows"):
        parts.append(search_table(sea))
    if per:
        parts.append(per_graph_table(per))
        plot_curves(per, ROOT / args.figure)
    if tra:
        per_by_label = {r["label"]: r for r in per}
        rows, gaps = [], []
        for r in tra:
            trained = per_by_label.get(r["label"], {}).get("go")
            gap = r["finetuned"] / trained - 1 if trained else None
            if gap is not None:
                gaps.append(gap)
            runs = r.get("zero_shot_runs")
            zero_shot = fmt(r["zero_shot"]) + (f" [{fmt(runs['min'])}–{fmt(runs['max'])}]" if runs else "")
            rows.append([f"`{r['label']}`", str(r["devices"]), fmt(r["default"]), fmt(r["best_heuristic"]),
                         fmt(r["zero_shot_greedy"]), zero_shot, fmt(r["finetuned"]), fmt(trained),
                         "—" if gap is None else f"{gap:+.1%}"])
        searched = "zero_shot_runs" in tra[0]
        parts.append("\n" + markdown_table(
            ["held-out graph", "devices", "default", "best heuristic", "zero-shot (greedy)",
             (f"zero-shot ({tra[0]['zero_shot_samples']}-call search from the best heuristic, median [range])"
              if searched else f"zero-shot (best of {tra[0]['zero_shot_samples']})"),
             f"fine-tuned ({tra[0]['finetune_steps']} sim. calls)", "per-graph GO", "fine-tuned vs per-graph"], rows))
        own = [r for r in tra if r.get("own_model")]
        tra = [r for r in tra if not r.get("own_model")]
        beat_greedy = sum(r["zero_shot_greedy"] < r["best_heuristic"] * (1 - 1e-9) for r in tra)
        beat = sum(r["zero_shot"] < r["best_heuristic"] * (1 - WIN) for r in tra)
        worse = sum(r["zero_shot"] > r["best_heuristic"] * (1 + 1e-9) for r in tra)
        within = sum(g <= 0.02 for g in gaps)
        how = (f"{tra[0]['zero_shot_samples']} calls of policy-guided search from the best heuristic "
               f"(median of {len(tra[0]['zero_shot_runs']['runs'])} seeds; never worse than the start by "
               f"construction)" if searched else f"the best of {tra[0]['zero_shot_samples']}")
        parts.append(f"\n{made_by(tra + own, 'transfer')} The shipped placer (`goenv.agents.pretrained(\"go-placement\")`) zero-shot beats the best "
                     f"heuristic on **{beat_greedy} of {len(tra)}** held-out graphs with one greedy decision and "
                     f"by more than {WIN:.0%} on **{beat} of {len(tra)}** with {how}; fine-tuned for "
                     f"{tra[0]['finetune_steps']} simulator calls it is within 2% of per-graph GO on "
                     f"**{within} of {len(gaps)}**; it is worse than the best heuristic on {worse}."
                     + (f" On place_your_model.py's GPT-2-style model (from_torch) the search is better "
                        f"than the best heuristic by more than {WIN:.0%} on "
                        f"**{sum(r['zero_shot'] < r['best_heuristic'] * (1 - WIN) for r in own)} of {len(own)}** "
                        f"clusters." if own else ""))
    if joi:
        parts.append(joint_table(joi))
    write_section(Path(args.readme), "go-results", "\n".join(parts) if parts else "(no results yet)")


def seeded_cell(r: dict, key: str) -> str:
    """A results row's median with its [range] where it holds several seeds' runs (NAME_runs)."""
    runs = r.get(f"{key}_runs", [r[key]])
    return fmt(r[key]) + (f" [{fmt(min(runs))}–{fmt(max(runs))}]" if len(runs) > 1 else "")


def seeded_part(rows: list[dict], part: str) -> tuple[list[tuple], str]:
    """The rows' seed lists (rows older than --seeds had one) and the command part that made
    them, with its --seeds when all rows share several."""
    seeds = sorted({tuple(r.get("seeds", [0])) for r in rows})
    return seeds, part + (f" --seeds {' '.join(map(str, seeds[0]))}" if len(seeds) == 1 and len(seeds[0]) > 1 else "")


def per_graph_table(rows: list[dict]) -> str:
    """GO trained per graph: median [range] over seeds where the rows have them; a win is a median
    better than the best heuristic and local search by more than WIN (the search table's rule)."""
    table, wins, wins_ls, wins_wall = [], 0, 0, 0
    for r in rows:
        best = min(min(r["heuristics"].values()), r["local_search"])
        won = verdict(r["go"], best) == "win"
        wins += won
        wins_ls += verdict(r["go_local_search"], best) == "win"
        wins_wall += verdict(r["go"], min(best, r["local_search_wall"])) == "win"
        calls = r["go_calls_to_local_search"]
        calls = calls if isinstance(calls, list) else [calls]  # (rows of one seed, before --seeds: a number)
        reached = ", ".join(f"{c:,}" if c else "not reached" for c in calls) if any(calls) else "not reached"
        go = seeded_cell(r, "go")
        table.append([f"`{r['label']}`", str(r["devices"]), f"{r['budget']:,}", fmt(r["default"])]
                     + [fmt(r["heuristics"][m]) for m in HEURISTICS]
                     + [seeded_cell(r, "local_search"), f"**{go}**" if won else go, seeded_cell(r, "go_greedy"),
                        seeded_cell(r, "go_local_search"), reached,
                        f"{seeded_cell(r, 'local_search_wall')} ({r['local_search_wall_budget']:,} calls, "
                        f"{r['go_seconds']:.0f} s)", fmt(r["lower_bound"])])
    header = (["graph", "devices", "budget (sim. calls)", "default"] + HEURISTICS
              + ["local search", "GO (best found)", "GO (greedy)", "GO + local search",
                 "GO calls to reach local search", "local search at GO's wall time", "lower bound"])
    seeds, part = seeded_part(rows, "per-graph")
    n = len(rows)
    return (f"{markdown_table(header, table)}\n\n{made_by(rows, part)} "
            + (f"Median [range] over {' / '.join(str(len(s)) for s in seeds)} seed(s), ms. " if len(seeds[-1]) > 1 else "")
            + f"At an equal simulator budget (teacher charged), GO (imitation + PPO, no local-search polish) beats "
              f"the best of the heuristics and local search by more than {WIN:.0%} on **{wins} of {n}** graphs, "
              f"GO + local search on {wins_ls} of {n}. At equal wall time local search gets "
              f"{np.median([r['local_search_wall_budget'] / r['budget'] for r in rows]):.0f}x (median) more calls, "
              f"and GO beats it by more than {WIN:.0%} on {wins_wall} of {n}.")


def joint_table(rows: list[dict]) -> str:
    """Joint vs sequential: median [range] over seeds where the rows have them, with the verdicts."""

    verdicts = [verdict(r["joint"], r["sequential"]) for r in rows]
    table = markdown_table(["graph (joint task)", "budget", "default", "sequential (placement → scheduling → fusion)",
                            "joint policy", "joint vs sequential"],
                           [[f"`{r['label']}`", f"{r['budget']:,}", fmt(r["default"]), seeded_cell(r, "sequential"),
                             seeded_cell(r, "joint"), v] for r, v in zip(rows, verdicts)])
    seeds, part = seeded_part(rows, "joint")
    apart = sum(max(r.get("joint_runs", [r["joint"]])) < min(r.get("sequential_runs", [r["sequential"]])) for r in rows)
    return (f"\n{table}\n\n{made_by(rows, part)} Median [range] over "
            f"{' / '.join(str(len(s)) for s in seeds)} seed(s), ms, the same total budget each way. The joint policy "
            f"beats the three tasks optimized in turn by more than {WIN:.0%} on **{verdicts.count('win')} of "
            f"{len(rows)}** graphs and loses on {verdicts.count('loss')}; its worst seed beats sequential's best on "
            f"{apart} of {len(rows)}.")


def search_table(results: dict) -> str:
    """The equal-budget search table: median [range] over seeds, with the verdicts."""

    def cell(s: dict) -> str:
        return f"{fmt(s['median'])} [{fmt(s['min'])}–{fmt(s['max'])}]"

    rows, verdicts = [], []
    for r in results["rows"]:
        others = min(r["local-search"]["median"], r["genetic"]["median"])
        v = verdict(r["go-search"]["median"], others)
        verdicts.append(v)
        rows.append([f"`{r['label']}`", str(r["devices"]), f"{r['budget']:,}", fmt(r["default"]),
                     fmt(r["best_heuristic"]), cell(r["go-search"]), cell(r["local-search"]), cell(r["genetic"]), v,
                     f"{cell(r['local-search_wall'])} ({r['local_search_wall_budget']:,} calls)",
                     "—" if "reference_calls" not in r else reach_cell(r) + long_cell(r),
                     cell(r[ABLATION]) if ABLATION in r else "—"])
    seeds = len(results["rows"][0]["seeds"])
    commit = commit_label(results) or "unknown"
    table = markdown_table(["graph", "devices", "budget (calls)", "default", "best heuristic",
                            "GO search", "local search", "genetic", "GO search vs the better search",
                            "local search at GO search's wall time", "GO calls to local search's reference",
                            "the same search, untrained policy"], rows)
    counts = {k: verdicts.count(k) for k in ("win", "tie", "within noise", "loss")}
    at_wall = [verdict(r["go-search"]["median"], r["local-search_wall"]["median"]) for r in results["rows"]]
    referenced = [r for r in results["rows"] if "reference_calls" in r]
    reached = [r["label"] for r in referenced if reached_by_most(per_seed_reach(r))]
    reference = (f" Sample efficiency: GO search reaches local search's {referenced[0]['reference_calls']:,}-call "
                 f"result within its budget on more than half the seeds on {len(reached)} of {len(referenced)} "
                 f"graphs ({', '.join(f'`{x}`' for x in reached) or 'none'})." if referenced else "")
    longer = [r for r in referenced if LONG in r]
    if longer:
        budgets = sorted({r[LONG]["budget"] for r in longer})
        half = [r["label"] for r in longer if reached_by_most(r[LONG]["calls_to_reference"])]
        reference += (f" Given {' or '.join(f'{b:,}' for b in budgets)} calls (the last part of that column; its "
                      f"seeds, commit `{commit_label(longer[0][LONG])}`), it reaches it on more than half the seeds "
                      f"on {len(half)} of {len(longer)} ({', '.join(f'`{x}`' for x in half) or 'none'}).")
    ablated = [r for r in results["rows"] if ABLATION in r]
    # The ablation has its own runs (search --untrained): named where they were made at another commit.
    ablation_commits = sorted({commit_label({"commit": r.get(ABLATION + "_commit")}) for r in ablated} - {""})
    ablation_made = (f" (commit {', '.join(f'`{c}`' for c in ablation_commits)})"
                     if ablation_commits and ablation_commits != [commit_label({"commit": results.get("commit")})]
                     else "")
    same = sum(abs(r[ABLATION]["median"] / r["go-search"]["median"] - 1) <= TIE for r in ablated)
    better = sum(verdict(r["go-search"]["median"], r[ABLATION]["median"]) == "win" for r in ablated)
    reference += (f" Ablation{ablation_made}: with the placer's network untrained (the same architecture, freshly "
                  f"initialised) the same search is within {TIE:.1%} of GO search on {same} of {len(ablated)} graphs and GO "
                  f"search is better by more than {WIN:.0%} on {better}: the learned weights add little, the "
                  f"search's critical-path moves on the schedule it observes do the work."
                  if ablated and better * 3 < len(ablated) else
                  f" Ablation{ablation_made}: with the placer's network untrained the same search is within {TIE:.1%} of GO "
                  f"search on {same} of {len(ablated)} graphs, and GO search is better by more than {WIN:.0%} on "
                  f"{better}." if ablated else "")
    return (table + f"\n\nMedian [range] over {seeds} seeds, ms; every search starts from the best heuristic and "
            f"spends the same simulator calls. A win is a median better than the better of local search and "
            f"genetic by more than {WIN:.0%}, a tie within {TIE:.1%}: GO search wins {counts['win']}, ties "
            f"{counts['tie']}, is within noise on {counts['within noise']} and loses {counts['loss']} of "
            f"{len(verdicts)}. At equal wall time (local search with the calls that fit in GO search's seconds on "
            f"this CPU) GO search wins {at_wall.count('win')} and loses {at_wall.count('loss')} of "
            f"{len(at_wall)}.{reference} Made at commit `{commit}` by `python experiments/go_results.py search "
            f"readme`.\n")


def reached_by_most(calls: list) -> bool:
    """The sample-efficiency verdict: more than half the seeds reach the reference (None: a seed that did not)."""
    return sum(c is not None for c in calls) * 2 > len(calls)


def seed_calls(calls: list, median_ms: float) -> str:
    """The calls each seed needed to reach the reference, and how many seeds did not (their median)."""
    reached = sorted(c for c in calls if c is not None)
    missed = len(calls) - len(reached)
    return (f"{', '.join(f'{c:,}' for c in reached)} calls" if reached else "") + \
        (f"{'; ' if reached else ''}not reached on {missed} of {len(calls)} seeds ({fmt(median_ms)} ms median)"
         if missed else "")


def per_seed_reach(row: dict) -> list:
    """GO search's calls to the reference per seed (rows made before it was per seed hold seed 0's alone)."""
    calls = row.get("go_calls_to_reference")
    return calls if isinstance(calls, list) else [calls]


def reach_cell(row: dict) -> str:
    """Within the equal budget: the calls each seed needed to reach local search's reference."""
    return f"within {row['budget']:,}: " + seed_calls(per_seed_reach(row), row["go-search"]["median"])


def long_cell(row: dict) -> str:
    """GO search given more calls: the calls each seed needed to reach the reference, or its result."""
    if LONG not in row:
        return ""
    long = row[LONG]
    return f"; given {long['budget']:,}: " + seed_calls(long["calls_to_reference"], long["runtime"]["median"])


def plot_curves(rows: list[dict], path: Path) -> None:
    """Best runtime found vs simulator calls, GO against local search, one panel per graph."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    cols = 5
    figure = Figure(figsize=(3.2 * cols, 2.6 * ((len(rows) + cols - 1) // cols)), dpi=90)
    FigureCanvasAgg(figure)
    for i, r in enumerate(rows):
        ax = figure.add_subplot((len(rows) + cols - 1) // cols, cols, i + 1)
        steps, ms = zip(*r["go_curve"])
        ax.plot(steps, ms, label="GO (best so far, teacher first)")
        calls, ms = zip(*r["local_search_curve"])
        ax.plot(calls, ms, "o--", markersize=3, label="local search")
        ax.axhline(min(r["heuristics"].values()), color="gray", linewidth=0.8, label="best heuristic")
        ax.set_title(r["label"], fontsize=9)
        ax.set_xlabel("simulator calls", fontsize=8)
        ax.set_ylabel("ms", fontsize=8)
        ax.tick_params(labelsize=7)
        if i == 0:
            ax.legend(fontsize=7)
    figure.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.stem + f".tmp{os.getpid()}.png")
    figure.savefig(tmp)
    tmp.replace(path)


def check_arguments(parser: argparse.ArgumentParser, args) -> None:
    """Bad values end the run at once (parser.error), not as a traceback or a silent change later."""
    for name in ("budget", "imitation_steps", "envs_per_graph", "threads", "max_wall_calls", "zero_shot_samples",
                 "joint_budget", "jobs", "search_budget"):
        if getattr(args, name) < 1:
            parser.error(f"--{name.replace('_', '-')} must be >= 1, got {getattr(args, name)}")
    for name in ("seed", "finetune_steps", "finetune_imitation_steps", "reference_calls", "efficiency_budget"):
        if getattr(args, name) < 0:
            parser.error(f"--{name.replace('_', '-')} must be >= 0, got {getattr(args, name)}")
    if any(seed < 0 for seed in args.seeds):
        parser.error(f"--seeds must be >= 0, got {args.seeds}")
    if not (args.node_steps > 0 and args.imitation_node_steps > 0 and args.learning_rate > 0):
        parser.error("--node-steps, --imitation-node-steps and --learning-rate must be > 0")
    known = {name for entry in goenv.datasets.suite("go-placement") for name in (label(entry), entry.graph)}
    known |= {entry.graph for entry in goenv.datasets.suite("transfer")["test"]} | {"own-model"}  # transfer's
    unknown = sorted(set(args.graphs) - known)
    if unknown:
        parser.error(f"--graphs: unknown {', '.join(unknown)}; the graphs of the go-placement and transfer "
                     f"suites: {', '.join(sorted(known))}")
    families = set(goenv.datasets.list())
    unknown = sorted(set(args.joint_graphs) - families)
    if unknown:
        parser.error(f"--joint-graphs: unknown {', '.join(unknown)} (goenv.datasets.list())")


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("parts", nargs="+", choices=["per-graph", "transfer", "joint", "search", "readme"])
    parser.add_argument("--out", default="docs/results", help="results folder, relative to the repository")
    parser.add_argument("--graphs", nargs="*", default=[], help="only these graph families or labels")
    parser.add_argument("--budget", type=int, default=1024, help="simulator calls per graph")
    parser.add_argument("--node-steps", type=float, default=8e6, help="at most this many nodes x steps per graph")
    parser.add_argument("--imitation-steps", type=int, default=200, help="imitation Adam steps (small graphs)")
    parser.add_argument("--imitation-node-steps", type=float, default=4e5,
                        help="imitation steps x nodes per graph at most (at least 20 steps)")
    parser.add_argument("--envs-per-graph", type=int, default=32)
    parser.add_argument("--learning-rate", type=float, default=3e-3)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--threads", type=int, default=1, help="torch threads per process")
    parser.add_argument("--max-wall-calls", type=int, default=200_000, help="cap on local search's equal-time budget")
    parser.add_argument("--zero-shot-samples", type=int, default=16)
    parser.add_argument("--finetune-steps", type=int, default=256, help="fine-tuning simulator calls")
    parser.add_argument("--finetune-imitation-steps", type=int, default=50)
    parser.add_argument("--joint-graphs", nargs="*", default=["transformer-xl-2", "wavenet-2", "inception"])
    parser.add_argument("--joint-budget", type=int, default=1536)
    parser.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2, 3, 4], help="per-graph, search, joint: seeds per method")
    parser.add_argument("--jobs", type=int, default=1, help="per-graph, joint: processes running the (graph, seed) runs")
    parser.add_argument("--search-budget", type=int, default=1024, help="search: simulator calls per method")
    parser.add_argument("--reference-calls", type=int, default=0,
                        help="search: local search's reference budget (the paper's 200,000; 0 = skip)")
    parser.add_argument("--agent", default=None, help="search: a checkpoint (default: the shipped placer)")
    parser.add_argument("--untrained", action="store_true",
                        help="search: run only the ablation (the same search, the placer's network untrained) "
                             "and add it to the saved rows")
    parser.add_argument("--efficiency-budget", type=int, default=0,
                        help="search: run only GO search with this many calls on the graphs with local search's "
                             "reference, and add the calls it needs to reach it to the saved rows")
    parser.add_argument("--resume", action="store_true", help="per-graph, search: skip graphs already in the results")
    parser.add_argument("--progress", action="store_true", help="progress bars")
    parser.add_argument("--readme", default="README.md",
                        help="readme: the file whose <!-- go-results:begin/end --> section is rewritten; README.md "
                             "(the default): the page of the README or docs/ that holds it (docs/agents.md)")
    parser.add_argument("--figure", default="docs/go_training_curves.png", help="readme: where the curves go")
    args = parser.parse_args(argv)
    check_arguments(parser, args)
    if "readme" in args.parts:  # before hours of runs, not after them
        args.readme = str(section_file("go-results", ROOT / args.readme))
    for part in args.parts:
        {"per-graph": per_graph, "transfer": transfer, "joint": joint, "search": searches, "readme": readme}[part](args)


if __name__ == "__main__":
    main()
