"""The benchmark leaderboard, measured: runs every entry below on placement-transfer-v0 at its
budgets, writes one results file per (method, budget) into docs/results/benchmark/, then the
table between the <!-- leaderboard:begin/end --> markers and docs/benchmark/leaderboard.png.

    python experiments/benchmark_leaderboard.py              # everything (about 30 minutes on 2 cores)
    python experiments/benchmark_leaderboard.py --only sb3   # the entries whose name holds "sb3"
    python experiments/benchmark_leaderboard.py --table      # only the table and plot, from the files
    python experiments/benchmark_leaderboard.py --benchmark placement-zoo-v0   # the zoo's rows (files in a folder of their own)
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np

import goenv
import goenv.benchmark
from goenv.benchmark import leaderboard
from doc_sections import ROOT, section_file, write_section

BENCHMARK = "placement-transfer-v0"
ZOO_BENCHMARK = "placement-zoo-v0"
RESULTS = ROOT / "docs" / "results" / "benchmark"
PLOT = ROOT / "docs" / "benchmark" / "leaderboard.png"
HEURISTICS = ("single", "round-robin", "expert", "metis", "m-topo", "m-etf", "heft")
SEARCHES = ("best-heuristic", "random-search", "local-search", "genetic")


def uniform_random(seed: int = 0):
    """Uniformly random allowed devices per node: the floor a learned policy must clear."""
    rng = np.random.default_rng(seed)

    def act(obs):
        mask = np.asarray(obs["action_mask"]) > 0
        draws = rng.random(mask.shape) * mask
        return draws.argmax(axis=1)

    return act


def sb3_on_the_case(algorithm: str):
    """Stable-Baselines3 trained on the test case itself, as the library's examples train (GO's
    "train on the target graph" setting, not transfer): its first `budget` steps are the budget,
    one PPO update every 8 steps."""

    def train(env, seed):
        import goenv.integrations.sb3

        if algorithm == "MaskablePPO":
            from sb3_contrib import MaskablePPO as Algorithm
            policy = goenv.integrations.sb3.MaskableGraphPolicy
        else:
            from stable_baselines3 import PPO as Algorithm
            policy = goenv.integrations.sb3.GraphPolicy
        model = Algorithm(policy, env, n_steps=8, batch_size=8, seed=seed,
                          policy_kwargs=goenv.integrations.sb3.policy_kwargs(env))
        model.learn(total_timesteps=10**9)  # the harness stops it at the budget

    return goenv.benchmark.Search(train, f"sb3 {algorithm} (trained on the case)")


def cleanrl_on_the_case():
    """examples/cleanrl_gnn_ppo.py's GNN PPO trained on the case itself, on batches of the one env
    the harness gives: 4 one-shot episodes (reset, a whole-graph decision, its reward) per update,
    so the budget is its episodes."""

    def train(env, seed):
        import torch

        sys.path.insert(0, str(ROOT / "examples"))
        import cleanrl_gnn_ppo

        torch.set_num_threads(1)

        def reset(episode_seed):
            obs, _ = env.reset(seed=episode_seed)
            return {key: np.asarray(value)[None] for key, value in obs.items()}  # a batch of one

        def step(action):
            _, reward, _, _, info = env.step(action[0])
            return np.array([reward]), np.array([info["runtime"]])

        cleanrl_gnn_ppo.train(reset, step, env.unwrapped.core.head_choices[0], updates=10**9, rollouts=4, seed=seed)

    return goenv.benchmark.Search(train, "cleanrl GNN PPO (trained on the case)")


def entries(benchmark: str):
    """(method, name, budgets): what the leaderboard runs on `benchmark`."""
    placer = goenv.agents.pretrained("go-placement")
    yield uniform_random(), "uniform-random", (1, 16, 256)
    for name in HEURISTICS:
        yield name, name, (1,)
    for name in SEARCHES:
        yield name, name, (16, 256)
    yield placer, "go-placement (shipped)", (1, 16, 256)
    untrained = goenv.agents.GO(**placer.config, env=goenv.make("placement-transformer-xl-2"))  # same spec, fresh weights
    yield untrained, "go-placement untrained", (1, 16, 256)
    if benchmark != BENCHMARK:  # training on each case: 24 zoo cases cost hours here, so only on the transfer one
        return
    for algorithm in ("PPO", "MaskablePPO"):
        search = sb3_on_the_case(algorithm)
        yield search, search.name, (16,)  # 256 steps of training cost 80 s a case here: 2 h a row
    search = cleanrl_on_the_case()
    yield search, search.name, (16, 256)


def results_folder(benchmark: str) -> Path:
    """Where a benchmark's results files live (the first benchmark's at the top, the others in their own folder)."""
    return RESULTS if benchmark == BENCHMARK else RESULTS / benchmark


def plot_path(benchmark: str) -> Path:
    return PLOT if benchmark == BENCHMARK else PLOT.with_name(f"leaderboard-{benchmark}.png")


def run_all(benchmark: str, only: str | None) -> None:
    folder = results_folder(benchmark)
    folder.mkdir(parents=True, exist_ok=True)
    for method, name, budgets in entries(benchmark):
        if only is not None and only not in name:
            continue
        for budget in budgets:
            results = goenv.benchmark.evaluate(method, benchmark, budget=budget, name=name, progress=True)
            slug = name.replace(" ", "-").replace("(", "").replace(")", "")
            results.save(folder / f"{slug}-{budget}.json", overwrite=True)
            print(f"{name} @ {budget}: IQM {results.summary['iqm']:.3f}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--table", action="store_true", help="only remake the table and plot from the committed files")
    parser.add_argument("--only", metavar="TEXT", help="run only the entries whose name contains TEXT")
    parser.add_argument("--benchmark", default=BENCHMARK, choices=(BENCHMARK, ZOO_BENCHMARK),
                        help=f"the benchmark to run (default {BENCHMARK}); the table shows both")
    args = parser.parse_args()
    page = section_file("leaderboard")  # checked before the work
    if not args.table:
        run_all(args.benchmark, args.only)
    results = leaderboard.collect([RESULTS])
    PLOT.parent.mkdir(parents=True, exist_ok=True)
    for benchmark in sorted({r.benchmark for r in results}):
        leaderboard.plot(results, plot_path(benchmark), benchmark)
    made = "Written by `python experiments/benchmark_leaderboard.py`; every row validated from its results file.\n\n"
    write_section(page, "leaderboard", made + leaderboard.markdown(results))


if __name__ == "__main__":
    main()
