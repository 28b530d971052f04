"""PPO with a small graph neural network, in one file of plain PyTorch (CleanRL style),
over goenv.make_vec batches.

    python examples/cleanrl_gnn_ppo.py --env placement-transformer-xl-2 --updates 40

Every env step is a whole-graph decision (one-shot episodes, as in GO): the policy
embeds each node from its features and its current decision state, passes
messages along the graph's edges in both directions, and outputs one device
distribution per node (choices the action mask forbids get probability 0) plus a
value for the graph. The env's colocation="follow" keeps every sampled placement
valid, so the reward is always the runtime improvement, never a penalty.

The PPO ratio is taken per node (each node's decision is clipped on its own, all
sharing the graph's advantage), not over the product of N probabilities: with
hundreds of nodes, the joint ratio leaves the clip range after tiny per-node
changes and learning stalls.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np
import torch
from torch import nn

import goenv

sys.path.insert(0, str(Path(__file__).resolve().parent))
from learning_report import add_report_arguments, describe_run, report  # noqa: E402


class GraphPolicy(nn.Module):
    """Mean-aggregation message passing (GraphSAGE-like) -> per-node logits, pooled value."""

    def __init__(self, node_dim: int, num_choices: int, hidden: int = 64, rounds: int = 2):
        super().__init__()
        self.embed = nn.Sequential(nn.Linear(node_dim, hidden), nn.Tanh())
        self.messages = nn.ModuleList(nn.Linear(3 * hidden, hidden) for _ in range(rounds))
        self.logits = nn.Linear(hidden, num_choices)
        self.value = nn.Sequential(nn.Linear(hidden, hidden), nn.Tanh(), nn.Linear(hidden, 1))

    def forward(self, x: torch.Tensor, edge_index: torch.Tensor, mask: torch.Tensor):
        """x (B, N, node_dim), edge_index (2, E) shared by the batch, mask (B, N, choices) bool."""
        src, dst = edge_index
        degree_in = torch.zeros(x.shape[1]).index_add_(0, dst, torch.ones(len(dst))).clamp(min=1)[:, None]
        degree_out = torch.zeros(x.shape[1]).index_add_(0, src, torch.ones(len(src))).clamp(min=1)[:, None]
        h = self.embed(x)
        for layer in self.messages:
            from_producers = torch.zeros_like(h).index_add_(1, dst, h[:, src]) / degree_in
            from_consumers = torch.zeros_like(h).index_add_(1, src, h[:, dst]) / degree_out
            h = torch.tanh(layer(torch.cat([h, from_producers, from_consumers], dim=-1))) + h
        logits = self.logits(h).masked_fill(~mask, -1e9)
        return logits, self.value(h.mean(dim=1)).squeeze(-1)


def observe(obs: dict, num_devices: int) -> tuple[torch.Tensor, torch.Tensor]:
    """A batch's node inputs (static features and decision state) and its allowed devices."""
    x = torch.as_tensor(np.concatenate([obs["node_features"], obs["node_state"]], axis=-1))
    return x, torch.as_tensor(obs["action_mask"][..., :num_devices].astype(bool))


def ppo_update(policy: GraphPolicy, optimizer, batch: dict, edge_index: torch.Tensor, epochs: int,
               clip: float) -> None:
    """PPO-clip per node plus a value loss, the whole batch of one-shot episodes one minibatch."""
    advantage = batch["reward"] - batch["value"]
    spread = advantage.std() if advantage.numel() > 1 else torch.ones(())  # one sample: no spread to divide by
    advantage = (advantage - advantage.mean()) / (spread + 1e-8)
    for _ in range(epochs):
        logits, value = policy(batch["x"], edge_index, batch["mask"])
        dist = torch.distributions.Categorical(logits=logits)
        ratio = torch.exp(dist.log_prob(batch["action"]) - batch["log_prob"])  # (episodes, nodes)
        per_node = advantage[:, None]
        policy_loss = -torch.min(ratio * per_node, ratio.clamp(1 - clip, 1 + clip) * per_node).mean()
        value_loss = ((value - batch["reward"]) ** 2).mean()
        optimizer.zero_grad()
        (policy_loss + 0.5 * value_loss).backward()
        nn.utils.clip_grad_norm_(policy.parameters(), 0.5)
        optimizer.step()


def train(reset, step, num_devices: int, updates: int, rollouts: int, epochs: int = 4, learning_rate: float = 3e-3,
          clip: float = 0.2, seed: int = 0) -> list[float]:
    """PPO on one-shot episodes: `reset(seed)` gives a batch's observation, `step(action)` its
    (reward, runtime) arrays after a whole-graph decision. Returns every episode's runtime."""
    torch.manual_seed(seed)
    obs = reset(seed)
    edge_index = torch.from_numpy(np.array(obs["edge_index"][0]))  # a writable copy for torch
    policy = GraphPolicy(obs["node_features"].shape[-1] + obs["node_state"].shape[-1], num_devices)
    optimizer = torch.optim.Adam(policy.parameters(), lr=learning_rate)
    runtimes: list[float] = []
    for update in range(updates):
        batch = {"x": [], "mask": [], "action": [], "log_prob": [], "value": [], "reward": []}
        for _ in range(rollouts):  # one-shot episodes: reset, decide for every node, simulate
            x, mask = observe(reset(seed + update * rollouts), num_devices)
            with torch.no_grad():
                logits, value = policy(x, edge_index, mask)
                dist = torch.distributions.Categorical(logits=logits)
                action = dist.sample()
            reward, runtime = step(action.numpy())
            runtimes.extend(np.asarray(runtime).tolist())
            for key, item in (("x", x), ("mask", mask), ("action", action), ("log_prob", dist.log_prob(action)),
                              ("value", value), ("reward", torch.as_tensor(reward, dtype=torch.float32))):
                batch[key].append(item)
        ppo_update(policy, optimizer, {key: torch.cat(items) for key, items in batch.items()}, edge_index, epochs,
                   clip)
    return runtimes


def main(argv: list[str] | None = None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--env", default="placement-transformer-xl-2")
    parser.add_argument("--num-envs", type=int, default=16)
    parser.add_argument("--rollouts", type=int, default=4, help="whole-graph decisions per env per update")
    parser.add_argument("--updates", type=int, default=40)
    parser.add_argument("--epochs", type=int, default=4)
    parser.add_argument("--learning-rate", type=float, default=3e-3)
    parser.add_argument("--clip", type=float, default=0.2)
    parser.add_argument("--seed", type=int, default=0)
    add_report_arguments(parser)
    args = parser.parse_args(argv)
    if min(args.num_envs, args.rollouts, args.updates, args.epochs) < 1 or not args.clip > 0 \
            or not args.learning_rate > 0:
        parser.error("--num-envs, --rollouts, --updates and --epochs must be >= 1, --clip and --learning-rate > 0")
    if args.num_envs * args.rollouts * args.updates < 8:  # the report compares the first and last quarters
        parser.error("--num-envs x --rollouts x --updates must be >= 8 episodes")

    torch.set_num_threads(1)
    envs = goenv.make_vec(args.env, num_envs=args.num_envs)
    if envs.core.heads != ["placement"]:
        raise SystemExit(f"this example decides placements; {args.env} decides {', '.join(envs.core.heads)}")

    def step(action):
        _, reward, _, _, info = envs.step(action)
        return reward, info["runtime"]

    start = time.perf_counter()
    runtimes = train(lambda seed: envs.reset(seed=seed)[0], step, envs.core.head_choices[0], args.updates,
                     args.rollouts, args.epochs, args.learning_rate, args.clip, args.seed)
    return report("CleanRL-style GNN PPO", args.env, runtimes, time.perf_counter() - start, args.json,
                  describe_run(parser, args))


if __name__ == "__main__":
    main()
