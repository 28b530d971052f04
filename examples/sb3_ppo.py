"""Stable-Baselines3 PPO on a goenv placement env, with nothing goenv-specific in the agent.

    pip install "goenv[sb3]"        # stable-baselines3 and sb3-contrib, pinned
    python examples/sb3_ppo.py --env placement-transformer-xl-2 --steps 8192

The env is used as any Gymnasium env: SB3's own check_env, then PPO with its
MlpPolicy or MultiInputPolicy. `--mode node` (default) places one node per step,
Placeto-style (a Discrete action, a reward for every node's move), seeing the node to
decide as one flat vector (goenv.wrappers.CurrentNodeObservation);
`--mode graph` places every node at once (a MultiDiscrete action; SB3 builds one
torch Categorical per dimension, so its steps are ~100x slower on a 200-node
graph) on the Dict observation, one device per colocation group with `--grouped`
(goenv.wrappers.GroupedPlacement). Every action is a valid placement thanks to the
env's colocation="follow".
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import torch
from stable_baselines3 import PPO
from stable_baselines3.common.callbacks import BaseCallback
from stable_baselines3.common.env_checker import check_env

import goenv
from goenv.wrappers import CurrentNodeObservation, GroupedPlacement

sys.path.insert(0, str(Path(__file__).resolve().parent))
from learning_report import report  # noqa: E402


class EpisodeRuntimes(BaseCallback):
    """Collects the simulated runtime of every finished episode."""

    def __init__(self):
        super().__init__()
        self.runtimes: list[float] = []

    def _on_step(self) -> bool:
        for info, done in zip(self.locals["infos"], self.locals["dones"]):
            if done:
                self.runtimes.append(info["runtime"])
        return True


def make_env(env_id: str, mode: str, grouped: bool, **options):
    """Node mode: the node to decide now as one flat vector (an MLP policy's input); graph
    mode: the Dict observation as it is, one decision per colocation group if `grouped`."""
    env = goenv.make(env_id, decision_mode=mode, **options)
    if mode == "node":
        return CurrentNodeObservation(env)
    return GroupedPlacement(env) if grouped else env


def policy_for(mode: str) -> str:
    return "MlpPolicy" if mode == "node" else "MultiInputPolicy"


def episodes_per_update(env, n_steps: int) -> int:
    """Episodes that end during one update: n_steps of one-step episodes in graph mode, or
    n_steps / N of N-step episodes in node mode (at least one)."""
    core = env.unwrapped.core
    return max(1, n_steps // (core.num_nodes * core.horizon)) if core.node_mode else n_steps


def add_common_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--env", default="placement-transformer-xl-2")
    parser.add_argument("--mode", choices=["node", "graph"], default="node",
                        help="one node per step (Discrete) or every node at once (MultiDiscrete)")
    parser.add_argument("--steps", type=int, default=8192, help="env steps")
    parser.add_argument("--n-steps", type=int, default=512, help="env steps per PPO update")
    parser.add_argument("--learning-rate", type=float, default=3e-4)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--grouped", action=argparse.BooleanOptionalAction, default=True,
                        help="graph mode: one decision per colocation group (default) or per node")


def main(argv: list[str] | None = None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    add_common_arguments(parser)
    args = parser.parse_args(argv)

    torch.set_num_threads(1)
    env = make_env(args.env, args.mode, args.grouped)
    check_env(env, warn=False)  # Stable-Baselines3's own checker
    model = PPO(policy_for(args.mode), env, n_steps=args.n_steps, batch_size=128, learning_rate=args.learning_rate,
                seed=args.seed, device="cpu", verbose=0)
    log = EpisodeRuntimes()
    model.learn(total_timesteps=args.steps, callback=log)
    return report(f"Stable-Baselines3 PPO ({args.mode} mode)", args.env, log.runtimes,
                  episodes_per_update=episodes_per_update(env, args.n_steps))


if __name__ == "__main__":
    main()
