"""sb3-contrib's MaskablePPO on a goenv env: choices the env forbids are never sampled.

    pip install "goenv[sb3]"
    python examples/sb3_maskable_ppo.py --env placement-transformer-xl-2 --steps 8192

MaskablePPO reads `env.action_masks()`: goenv envs have it (in node mode the current
node's row of the observation's action_mask; in graph mode the whole mask, node after
node), and so does goenv.wrappers.GroupedPlacement. In node mode (the default here) the
mask keeps colocation groups together: once a group's first member is placed, the
others may only follow it. Masks also matter on clusters that mix device kinds
(`--cluster cpu+2xgpu`: ops with no CPU kernel).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import torch
from sb3_contrib import MaskablePPO

sys.path.insert(0, str(Path(__file__).resolve().parent))
from learning_report import report  # noqa: E402
from sb3_ppo import EpisodeRuntimes, add_common_arguments, episodes_per_update, make_env, policy_for  # noqa: E402


def main(argv: list[str] | None = None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    add_common_arguments(parser)
    parser.add_argument("--cluster", default=None, help="a cluster preset (default: the graph's)")
    args = parser.parse_args(argv)

    torch.set_num_threads(1)
    options = {"cluster": args.cluster} if args.cluster else {}
    env = make_env(args.env, args.mode, args.grouped, **options)
    model = MaskablePPO(policy_for(args.mode), env, n_steps=args.n_steps, batch_size=128,
                        learning_rate=args.learning_rate,
                        seed=args.seed, device="cpu", verbose=0)
    log = EpisodeRuntimes()
    model.learn(total_timesteps=args.steps, callback=log)
    return report(f"sb3-contrib MaskablePPO ({args.mode} mode)", args.env, log.runtimes,
                  episodes_per_update=episodes_per_update(env, args.n_steps), **options)


if __name__ == "__main__":
    main()
