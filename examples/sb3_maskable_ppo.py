"""sb3-contrib's MaskablePPO on a goenv env: choices the env forbids are never sampled.

    pip install "goenv[sb3]"
    python examples/sb3_maskable_ppo.py --env placement-transformer-xl-2 --json sb3_maskable_ppo.json

MaskablePPO reads `env.action_masks()`: goenv envs have it (in graph mode the whole
mask, node after node; in node mode the current node's row), and so does
goenv.wrappers.GroupedPlacement. The policy is goenv's graph encoder in one line,
`MaskablePPO(goenv.integrations.sb3.MaskableGraphPolicy, env, policy_kwargs=...)`:
per-node device logits, masked both by the observation's action_mask and by
MaskablePPO's masks. Masks matter on clusters that mix device kinds (`--cluster
cpu+2xgpu`) for graphs whose ops allow only some kinds, and, in node mode, for
colocation groups (once a group's first member is placed, the others may only follow it).
Same options as sb3_ppo.py.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from sb3_contrib import MaskablePPO

import goenv.integrations.sb3

sys.path.insert(0, str(Path(__file__).resolve().parent))
from learning_report import describe_run  # noqa: E402
from sb3_ppo import add_common_arguments, check_common_arguments, train  # noqa: E402


def main(argv: list[str] | None = None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    add_common_arguments(parser)
    parser.add_argument("--cluster", default=None, help="a cluster preset (default: the graph's)")
    args = parser.parse_args(argv)
    options = {"cluster": args.cluster} if args.cluster else {}
    check_common_arguments(parser, args, **options)
    return train(MaskablePPO, goenv.integrations.sb3.MaskableGraphPolicy, "sb3-contrib MaskablePPO", args,
                 describe_run(parser, args), **options)


if __name__ == "__main__":
    main()
