"""The GO agent's results on the go-placement suite, as in the README (GO paper, Table 1 style).

    python examples/go_results.py per-graph    # GO trained per graph vs heuristics and local search
    python examples/go_results.py transfer     # GO pretrained on the transfer suite: zero-shot, fine-tuned
    python examples/go_results.py joint        # one joint policy vs the three tasks one after another
    python examples/go_results.py readme       # tables + figures from the saved results into README.md

Each experiment part writes docs/results/go_<part>.json (atomically) and can run in
its own process; `readme` only reads them. Budgets are simulator calls: one env
step of the one-shot envs is one simulated decision, so GO trained for B steps
and local search with budget B have looked at the same number of candidates.
Large graphs get a smaller budget (at most --node-steps / nodes steps) so that
the whole run fits a 2-core CPU in about an hour; the tables say which budget
each graph got.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path

import numpy as np

import goenv

ROOT = Path(__file__).resolve().parent.parent
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
    cap = int(args.node_steps // num_nodes)
    steps = min(args.budget, cap) // args.envs_per_graph * args.envs_per_graph
    return max(args.envs_per_graph, steps)


def go_agent(args, **options) -> goenv.agents.GO:
    return goenv.agents.GO(seed=args.seed, learning_rate=args.learning_rate, envs_per_graph=args.envs_per_graph,
                           num_threads=args.threads, **options)


def best_curve(history: list[dict]) -> list[list[float]]:
    """(simulator calls, best valid runtime so far in ms) after each update."""
    return [[m["step"], m["best_runtime"] * 1e3] for m in history if np.isfinite(m["best_runtime"])]


def calls_to_reach(curve: list[list[float]], target_ms: float) -> int | None:
    return next((int(step) for step, ms in curve if ms <= target_ms * (1 + 1e-9)), None)


def best_decision(agent, env, samples: int):
    """The best of the greedy action and `samples` sampled ones (each one simulator call)."""
    colocation = env.unwrapped.graph.colocation if "placement" in env.unwrapped.core.heads else None
    obs, _ = env.reset(seed=0)
    best = None
    for i in range(samples + 1):
        action = agent.act(obs, deterministic=(i == 0), colocation=colocation)
        _, _, _, _, info = env.step(action)
        env.reset(seed=0)
        valid = not (info["oom"] or info.get("invalid", False))
        if valid and (best is None or info["runtime"] < best[1]):
            best = (action, info["runtime"])
    return best if best is not None else (action, float("inf"))


# -- part 1: GO per graph -------------------------------------------------------------------------

def per_graph(args) -> None:
    path = ROOT / args.out / "go_per_graph.json"
    rows = {row["label"]: row for row in (read_json(path) or [])} if args.resume else {}
    for entry in goenv.datasets.suite("go-placement"):
        name = label(entry)
        if (args.graphs and entry.graph not in args.graphs) or name in rows:
            continue
        env = entry.make("placement")
        env.reset(seed=0)
        n = env.graph.num_nodes
        budget = budget_for(n, args)
        row = {"label": name, "nodes": n, "devices": env.cluster.num_devices, "budget": budget,
               "default": env.core.initial_runtime * 1e3, "lower_bound": goenv.baselines.lower_bound(env) * 1e3}
        row["heuristics"] = {m: goenv.baselines.solve(env, m, seed=args.seed)["runtime"] * 1e3 for m in HEURISTICS}
        # Local search's quality as a function of its budget (each budget a fresh run).
        ls_budgets = sorted({max(1, budget >> k) for k in range(6)})
        row["local_search_curve"] = [
            [b, goenv.baselines.solve(env, "local-search", budget=b, seed=args.seed)["runtime"] * 1e3]
            for b in ls_budgets]
        row["local_search"] = row["local_search_curve"][-1][1]
        start = time.perf_counter()
        agent = go_agent(args)
        history = agent.train(env, budget, progress=args.progress,
                              log_dir=ROOT / args.out / "logs" / name.replace(" ", "_").replace("=", "") if args.logs
                              else None)
        row["go_seconds"] = time.perf_counter() - start
        row["go_curve"] = best_curve(history)
        greedy = next(iter(agent.evaluate(env).values()))
        row["go_greedy"] = greedy["runtime"] * 1e3 if greedy["invalid_fraction"] == 0 else float("inf")
        # GO's answer: the best decision it simulated while training, or its final greedy one.
        row["go"] = min(row["go_curve"][-1][1] if row["go_curve"] else float("inf"), row["go_greedy"])
        row["go_calls_to_local_search"] = calls_to_reach(row["go_curve"], row["local_search"])
        if args.checkpoints:
            agent.save(ROOT / args.out / f"go_{name.replace(' ', '_').replace('=', '')}.pt")
        rows[name] = row
        write_json(path, list(rows.values()))
        print(f"{name}: {n} nodes, budget {budget}: GO {row['go']:.1f} ms (greedy {row['go_greedy']:.1f}), "
              f"best heuristic {min(row['heuristics'].values()):.1f}, local search {row['local_search']:.1f}, "
              f"GO {row['go_seconds']:.0f} s", flush=True)


# -- part 2: transfer -----------------------------------------------------------------------------

def transfer(args) -> None:
    path = ROOT / args.out / "go_transfer.json"
    splits = goenv.datasets.suite("transfer")
    test = [e for e in splits["test"] if not args.graphs or e.graph in args.graphs]
    rows = []
    for devices in sorted({e.num_devices for e in test}):
        cluster = f"{devices}xgpu-nvlink"
        train_envs = []
        for entry in splits["train"]:
            env = goenv.make(entry.env_id("placement"), cluster=cluster, **entry.params)
            if env.graph.num_nodes <= args.max_train_nodes:
                train_envs.append(env)
        start = time.perf_counter()
        agent = go_agent(args, graphs_per_update=args.graphs_per_update)
        history = agent.train(train_envs, args.pretrain_steps, progress=args.progress)
        pretrain_seconds = time.perf_counter() - start
        checkpoint = ROOT / args.out / f"go_pretrained_{devices}dev.pt"
        agent.save(checkpoint)
        for entry in (e for e in test if e.num_devices == devices):
            env = entry.make("placement")
            env.reset(seed=0)
            zero_shot = next(iter(agent.evaluate(env, episodes=args.zero_shot_samples,
                                                 deterministic=False).values()))
            greedy = next(iter(agent.evaluate(env).values()))
            tuned = goenv.agents.load(checkpoint)
            tuned_history = tuned.train(env, args.finetune_steps, progress=args.progress)
            tuned_curve = best_curve(tuned_history)
            rows.append({"label": label(entry), "nodes": env.graph.num_nodes, "devices": devices,
                         "train_graphs": len(train_envs), "pretrain_steps": args.pretrain_steps,
                         "pretrain_seconds": pretrain_seconds,
                         "pretrain_final_speedup": history[-1]["mean_speedup"] if history else None,
                         "default": env.core.initial_runtime * 1e3,
                         "zero_shot_greedy": greedy["runtime"] * 1e3,
                         "zero_shot_samples": args.zero_shot_samples,
                         "zero_shot": min(zero_shot["best_runtime"], greedy["runtime"]) * 1e3,
                         "finetune_steps": args.finetune_steps,
                         "finetuned": min(tuned_curve[-1][1] if tuned_curve else float("inf"),
                                          zero_shot["best_runtime"] * 1e3, greedy["runtime"] * 1e3)})
            write_json(path, rows)
            r = rows[-1]
            print(f"{r['label']}: zero-shot {r['zero_shot']:.1f} ms (greedy {r['zero_shot_greedy']:.1f}), "
                  f"fine-tuned {r['finetuned']:.1f}", flush=True)


# -- part 3: joint vs sequential ------------------------------------------------------------------

def joint(args) -> None:
    path = ROOT / args.out / "go_joint.json"
    rows = []
    for graph in args.joint_graphs:
        reference = goenv.make(f"joint-{graph}")
        reference.reset(seed=0)
        row = {"label": graph, "nodes": reference.graph.num_nodes, "budget": args.joint_budget,
               "default": reference.core.initial_runtime * 1e3}
        # One policy deciding placement, priority and fusion together.
        agent = go_agent(args)
        history = agent.train(reference, args.joint_budget, progress=args.progress)
        row["joint"] = min(best_curve(history)[-1][1], best_decision(agent, reference, args.final_samples)[1] * 1e3)
        # The same budget split over the three tasks in turn, each starting from the last one's decisions.
        stage = args.joint_budget // 3 // args.envs_per_graph * args.envs_per_graph
        placement_env = goenv.make(f"placement-{graph}")
        agent = go_agent(args)
        agent.train(placement_env, stage, progress=args.progress)
        placement, _ = best_decision(agent, placement_env, args.final_samples)
        scheduling_env = goenv.make(f"scheduling-{graph}", placement=placement)
        agent = go_agent(args)
        agent.train(scheduling_env, stage, progress=args.progress)
        priority, _ = best_decision(agent, scheduling_env, args.final_samples)
        fusion_env = goenv.make(f"fusion-{graph}", placement=placement, priority=priority.astype(np.float64))
        agent = go_agent(args)
        agent.train(fusion_env, stage, progress=args.progress)
        fusion, _ = best_decision(agent, fusion_env, args.final_samples)
        reference.reset(seed=0)
        info = reference.step({"placement": placement, "priority": priority, "fusion": fusion})[4]
        row["sequential"] = info["runtime"] * 1e3 if not (info["oom"] or info["invalid"]) else float("inf")
        row["sequential_stages"] = stage
        rows.append(row)
        write_json(path, rows)
        print(f"{graph}: joint {row['joint']:.1f} ms, sequential {row['sequential']:.1f} ms "
              f"(default {row['default']:.1f})", flush=True)


# -- README ---------------------------------------------------------------------------------------

def fmt(ms) -> str:
    return "—" if ms is None or not np.isfinite(ms) else f"{ms:,.1f}"


def readme(args) -> None:
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    from readme_tables import markdown_table, replace_section

    out = ROOT / args.out
    per = read_json(out / "go_per_graph.json") or []
    tra = read_json(out / "go_transfer.json") or []
    joi = read_json(out / "go_joint.json") or []
    parts = []
    if per:
        rows, wins, fewer = [], 0, []
        for r in per:
            best_name = min(r["heuristics"], key=r["heuristics"].get)
            best = min(r["heuristics"][best_name], r["local_search"])
            wins += r["go"] < best * (1 - 1e-9)
            calls = r["go_calls_to_local_search"]
            if calls:
                fewer.append(r["budget"] / calls)
            rows.append([f"`{r['label']}`", str(r["devices"]), f"{r['budget']:,}", fmt(r["default"])]
                        + [fmt(r["heuristics"][m]) for m in HEURISTICS]
                        + [fmt(r["local_search"]), f"**{fmt(r['go'])}**" if r["go"] < best else fmt(r["go"]),
                           fmt(r["go_greedy"]), f"{calls:,}" if calls else "not reached", fmt(r["lower_bound"])])
        header = (["graph", "devices", "budget (sim. calls)", "default"] + HEURISTICS
                  + ["local search", "GO (best found)", "GO (greedy)", "GO calls to reach local search",
                     "lower bound"])
        parts.append(markdown_table(header, rows))
        ratio = f"median {np.median(fewer):.1f}x fewer calls where reached" if fewer else "never reached"
        parts.append(f"\nGO beats the best of the heuristics and local search on **{wins} of {len(per)}** graphs; "
                     f"it reaches local search's final runtime on {len(fewer)} of {len(per)} ({ratio}).")
        plot_curves(per, ROOT / args.figure)
    if tra:
        per_by_label = {r["label"]: r for r in per}
        rows, gaps = [], []
        for r in tra:
            trained = per_by_label.get(r["label"], {}).get("go")
            gap = r["zero_shot"] / trained - 1 if trained else None
            if gap is not None:
                gaps.append(gap)
            rows.append([f"`{r['label']}`", str(r["devices"]), fmt(r["default"]), fmt(r["zero_shot_greedy"]),
                         fmt(r["zero_shot"]), fmt(r["finetuned"]), fmt(trained),
                         "—" if gap is None else f"{gap:+.1%}"])
        parts.append("\n" + markdown_table(
            ["held-out graph", "devices", "default", "zero-shot (greedy)",
             f"zero-shot (best of {tra[0]['zero_shot_samples']} samples)",
             f"fine-tuned ({tra[0]['finetune_steps']} steps)", "GO trained on it", "zero-shot gap"], rows))
        within = sum(g <= 0.10 for g in gaps)
        better = sum(r["zero_shot"] < r["default"] * 0.99 for r in tra)
        parts.append(f"\nPretrained on {tra[0]['train_graphs']} transfer-suite training graphs per device count "
                     f"({tra[0]['pretrain_steps']:,} steps); zero-shot within 10% of per-graph GO on "
                     f"**{within} of {len(gaps)}** held-out graphs, and more than 1% faster than the default "
                     f"on {better} of {len(tra)} (a policy that keeps the default placement is within 10% "
                     "wherever per-graph GO gained little).")
    if joi:
        rows = [[f"`{r['label']}`", f"{r['budget']:,}", fmt(r["default"]), fmt(r["sequential"]), fmt(r["joint"])]
                for r in joi]
        parts.append("\n" + markdown_table(
            ["graph (joint task)", "budget", "default", "sequential (placement → scheduling → fusion)",
             "joint policy"], rows))
    readme_path = ROOT / args.readme
    text = replace_section(readme_path.read_text(), "go-results", "\n".join(parts) if parts else "(no results yet)")
    tmp = readme_path.with_suffix(".md.tmp")
    tmp.write_text(text)
    tmp.replace(readme_path)


def plot_curves(rows: list[dict], path: Path) -> None:
    """Best runtime found vs simulator calls, GO against local search, one panel per graph."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    cols = 5
    figure = Figure(figsize=(3.2 * cols, 2.6 * ((len(rows) + cols - 1) // cols)), dpi=90)
    FigureCanvasAgg(figure)
    for i, r in enumerate(rows):
        ax = figure.add_subplot((len(rows) + cols - 1) // cols, cols, i + 1)
        if r["go_curve"]:
            steps, ms = zip(*r["go_curve"])
            ax.plot(steps, ms, label="GO (best so far)")
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


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("parts", nargs="+", choices=["per-graph", "transfer", "joint", "readme"])
    parser.add_argument("--out", default="docs/results", help="results folder, relative to the repository")
    parser.add_argument("--graphs", nargs="*", default=[], help="only these graph families")
    parser.add_argument("--budget", type=int, default=1024, help="simulator calls per graph")
    parser.add_argument("--node-steps", type=float, default=8e6, help="at most this many nodes x steps per graph")
    parser.add_argument("--envs-per-graph", type=int, default=32)
    parser.add_argument("--learning-rate", type=float, default=3e-3)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--threads", type=int, default=1, help="torch threads per process")
    parser.add_argument("--pretrain-steps", type=int, default=8192)
    parser.add_argument("--graphs-per-update", type=int, default=4)
    parser.add_argument("--max-train-nodes", type=int, default=10000)
    parser.add_argument("--zero-shot-samples", type=int, default=32)
    parser.add_argument("--finetune-steps", type=int, default=256)
    parser.add_argument("--joint-graphs", nargs="*", default=["transformer-xl-2", "wavenet-2", "inception"])
    parser.add_argument("--joint-budget", type=int, default=1536)
    parser.add_argument("--final-samples", type=int, default=15)
    parser.add_argument("--resume", action="store_true", help="per-graph: keep graphs already in the results")
    parser.add_argument("--logs", action="store_true", help="per-graph: metrics.csv + curve per graph")
    parser.add_argument("--checkpoints", action="store_true", help="per-graph: save each trained agent")
    parser.add_argument("--progress", action="store_true", help="progress bars")
    parser.add_argument("--readme", default="README.md", help="readme: the file whose go-results section is rewritten")
    parser.add_argument("--figure", default="docs/go_training_curves.png", help="readme: where the curves go")
    args = parser.parse_args(argv)
    for part in args.parts:
        {"per-graph": per_graph, "transfer": transfer, "joint": joint, "readme": readme}[part](args)


if __name__ == "__main__":
    main()
