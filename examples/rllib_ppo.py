"""RLlib PPO (new API stack) on a goenv placement env, with goenv's graph encoder as its RLModule.

    pip install "goenv[rllib]"      # ray[rllib], pinned
    python examples/rllib_ppo.py --env placement-transformer-xl-2 --json rllib_ppo.json

The env is registered with Ray Tune's registry and used as any Gymnasium env by
RLlib's own env runner, GAE connector and PPO learner; only the model is
goenv's, in one line: `RLModuleSpec(module_class=goenv.integrations.rllib.GraphModule)`.
Every step places the whole graph (one-shot episodes): per-node device logits
from a message-passing encoder over the observation's edge_index, masked by its
action_mask. Sampling runs in this process (`--env-runners 0`) or in Ray workers.
"""

from __future__ import annotations

import argparse
import logging
import sys
import time
from pathlib import Path

import ray
import torch
from ray.rllib.algorithms.ppo import PPOConfig
from ray.rllib.core.rl_module.rl_module import RLModuleSpec
from ray.tune.registry import register_env

import goenv
import goenv.integrations.rllib

sys.path.insert(0, str(Path(__file__).resolve().parent))
from learning_report import add_report_arguments, check_arguments, describe_run, report  # noqa: E402

RUNTIME = "goenv_episode_runtime"


def record_runtime(*, episode, metrics_logger, **kwargs) -> None:
    """RLlib callback: every finished episode's simulated runtime, in order (not averaged)."""
    metrics_logger.log_value(RUNTIME, episode.get_infos(-1)["runtime"], reduce="item_series")


def make_config(args) -> PPOConfig:
    register_env("goenv", lambda config: goenv.make(config["id"]))
    episodes_per_update = args.num_envs * args.rollouts  # one-shot episodes: one env step each
    return (
        PPOConfig()
        .environment("goenv", env_config={"id": args.env})
        .env_runners(num_env_runners=args.env_runners, num_envs_per_env_runner=args.num_envs,
                     rollout_fragment_length=args.rollouts)
        .learners(num_learners=0)
        .rl_module(rl_module_spec=RLModuleSpec(module_class=goenv.integrations.rllib.GraphModule,
                                               model_config={"log_prob": args.log_prob}))
        .training(train_batch_size_per_learner=episodes_per_update, minibatch_size=episodes_per_update,
                  num_epochs=args.epochs, lr=args.learning_rate, clip_param=0.2, use_kl_loss=False,
                  entropy_coeff=0.0, vf_loss_coeff=0.5, grad_clip=0.5,
                  learner_class=goenv.integrations.rllib.GraphPPOLearner)  # advantages of one-shot episodes
        .callbacks(on_episode_end=record_runtime)
        .debugging(seed=args.seed, log_level="ERROR")
    )


def main(argv: list[str] | None = None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--env", default="placement-transformer-xl-2")
    parser.add_argument("--updates", type=int, default=40, help="PPO iterations")
    parser.add_argument("--num-envs", type=int, default=16, help="envs per env runner")
    parser.add_argument("--rollouts", type=int, default=4, help="whole-graph decisions per env per update")
    parser.add_argument("--epochs", type=int, default=10)
    parser.add_argument("--learning-rate", type=float, default=3e-3)
    parser.add_argument("--env-runners", type=int, default=0, help="Ray workers that sample (0: this process)")
    parser.add_argument("--log-prob", choices=["sum", "mean"], default="sum",
                        help="a placement's log-probability: the sum of its nodes' or their mean (larger graphs)")
    parser.add_argument("--seed", type=int, default=0)
    add_report_arguments(parser)
    args = parser.parse_args(argv)
    if args.env_runners < 0:
        parser.error(f"--env-runners must be >= 0, got {args.env_runners}")
    # Each update samples --rollouts whole-graph decisions per env on each env runner (or here).
    check_arguments(parser, args, ("updates", "num_envs", "rollouts", "epochs"), lambda: goenv.make(args.env),
                    lambda env: args.updates * args.num_envs * args.rollouts * max(1, args.env_runners))

    torch.set_num_threads(1)
    own_session = not ray.is_initialized()
    if own_session:
        ray.init(num_cpus=2, include_dashboard=False, logging_level=logging.ERROR)
    algo = make_config(args).build_algo()
    runtimes: list[float] = []
    start = time.perf_counter()
    try:
        for _ in range(args.updates):
            result = algo.train()
            runtimes.extend(result["env_runners"].get(RUNTIME, []))
    finally:
        algo.stop()
        if own_session:
            ray.shutdown()
    return report("RLlib PPO", args.env, runtimes, time.perf_counter() - start, args.json,
                  describe_run(parser, args))


if __name__ == "__main__":
    main()
