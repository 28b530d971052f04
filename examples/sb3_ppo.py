"""Stable-Baselines3 PPO on a goenv placement env, with goenv's graph encoder as its policy.

    pip install "goenv[sb3]"        # stable-baselines3 and sb3-contrib, pinned
    python examples/sb3_ppo.py --env placement-transformer-xl-2 --json sb3_ppo.json

The env is used as any Gymnasium env (SB3's own check_env, SB3's PPO and rollout
buffer); only the policy is goenv's, in one line:
`PPO(goenv.integrations.sb3.GraphPolicy, env, policy_kwargs=goenv.integrations.sb3.policy_kwargs(env))`.
Every step places the whole graph (a MultiDiscrete action, one-shot episodes as
in GO): a message-passing encoder over the observation's edge_index embeds every
node, and each node's device logits come from its own embedding (masked by the
observation's action_mask). `--grouped` decides one device per colocation group
(goenv.wrappers.GroupedPlacement). `--mode node` instead places one node per step
(Placeto style, a Discrete action) with SB3's MultiInputPolicy over the encoder's
embedding of the node to decide (goenv.integrations.sb3.GraphFeaturesExtractor).
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import torch
from stable_baselines3 import PPO
from stable_baselines3.common.callbacks import BaseCallback
from stable_baselines3.common.env_checker import check_env
from stable_baselines3.common.vec_env import DummyVecEnv

import goenv
import goenv.integrations.sb3
from goenv.wrappers import GroupedPlacement

sys.path.insert(0, str(Path(__file__).resolve().parent))
from learning_report import add_report_arguments, check_arguments, describe_run, report  # noqa: E402


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


def make_env(env_id: str, mode: str = "graph", grouped: bool = False, **options):
    """Graph mode: the Dict observation, one decision per node (or per colocation group
    if `grouped`); node mode: one node per step."""
    env = goenv.make(env_id, decision_mode=mode, **options)
    return GroupedPlacement(env) if grouped and mode == "graph" else env


def add_common_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--env", default="placement-transformer-xl-2")
    parser.add_argument("--mode", choices=["graph", "node"], default="graph",
                        help="every node at once (MultiDiscrete, GraphPolicy) or one node per step (Discrete)")
    parser.add_argument("--grouped", action=argparse.BooleanOptionalAction, default=False,
                        help="graph mode: one decision per colocation group instead of per node")
    parser.add_argument("--episodes", type=int, default=2560, help="whole-graph decisions (graph mode)")
    parser.add_argument("--steps", type=int, default=None, help="env steps (default: --episodes episodes)")
    parser.add_argument("--num-envs", type=int, default=16)
    parser.add_argument("--n-steps", type=int, default=4, help="env steps per env per PPO update")
    parser.add_argument("--epochs", type=int, default=10)
    parser.add_argument("--batch-size", type=int, default=64)
    parser.add_argument("--learning-rate", type=float, default=3e-3)
    parser.add_argument("--log-prob", choices=["sum", "mean"], default="sum",
                        help="a placement's log-probability: the sum of its nodes' or their mean (larger graphs)")
    parser.add_argument("--seed", type=int, default=0)
    add_report_arguments(parser)


def check_common_arguments(parser: argparse.ArgumentParser, args, **options) -> None:
    """add_common_arguments' options checked before training (learning_report.check_arguments).
    Graph mode: an episode per env step; node mode: one per num_nodes steps."""
    def episodes(env) -> int:
        return args.steps // (env.unwrapped.core.num_nodes if args.mode == "node" else 1) if args.steps \
            else args.episodes

    check_arguments(parser, args, ("episodes", "steps", "num_envs", "n_steps", "epochs", "batch_size"),
                    lambda: make_env(args.env, args.mode, args.grouped, **options), episodes)


def train(algorithm, policy, title: str, args, run: dict | None = None, **options) -> dict:
    """Builds the vectorized env, trains `algorithm` (PPO or MaskablePPO) and reports."""
    torch.set_num_threads(1)
    check_env(make_env(args.env, args.mode, args.grouped, **options), warn=False)  # SB3's own checker
    env = DummyVecEnv([lambda: make_env(args.env, args.mode, args.grouped, **options)] * args.num_envs)
    one = env.envs[0]
    if args.mode == "node":
        policy = "MultiInputPolicy"
    steps = args.steps or args.episodes * (one.unwrapped.core.num_nodes if args.mode == "node" else 1)
    model = algorithm(policy, env, policy_kwargs=goenv.integrations.sb3.policy_kwargs(one, log_prob=args.log_prob),
                      n_steps=args.n_steps,
                      batch_size=args.batch_size, n_epochs=args.epochs, learning_rate=args.learning_rate,
                      seed=args.seed, device="cpu", verbose=0)
    log = EpisodeRuntimes()
    start = time.perf_counter()
    model.learn(total_timesteps=steps, callback=log)
    return report(f"{title} ({args.mode} mode)", args.env, log.runtimes, time.perf_counter() - start, args.json,
                  run, **options)


def main(argv: list[str] | None = None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    add_common_arguments(parser)
    args = parser.parse_args(argv)
    check_common_arguments(parser, args)
    return train(PPO, goenv.integrations.sb3.GraphPolicy, "Stable-Baselines3 PPO", args, describe_run(parser, args))


if __name__ == "__main__":
    main()
