"""The plain-PyTorch anchor of tests/benchmarks/agents_bench.py: the GO policy's network
(agents/policy.cc) written the ordinary way in Python, at the same widths, with an act and
a PPO update as a PyTorch user would write them around a goenv env.

Same layers as GoPolicyImpl: GraphSAGE (input layer, `sage_layers` of [h, mean of
predecessors, mean of successors] -> h with a residual and LayerNorm), a graph embedding
from the mean node and the globals, segment attention over the topological order (segments
of `segment_length` attending to themselves and the previous segment, FiLM-modulated by the
graph embedding), one output layer per head and a value MLP. The anchor measures what the
C++ agent's act and update cost against the same arithmetic driven from Python; it is not
used for training.
"""

from __future__ import annotations

import math
import time

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn


class SegmentAttention(nn.Module):
    def __init__(self, hidden: int, heads: int):
        super().__init__()
        self.heads = heads
        self.query = nn.Linear(hidden, hidden)
        self.key_value = nn.Linear(hidden, 2 * hidden)
        self.output = nn.Linear(hidden, hidden)
        self.feed_forward1 = nn.Linear(hidden, 2 * hidden)
        self.feed_forward2 = nn.Linear(2 * hidden, hidden)
        self.norm1 = nn.LayerNorm(hidden)
        self.norm2 = nn.LayerNorm(hidden)

    def forward(self, segments, memory, key_mask):
        m, length, hidden = segments.shape
        head_dim = hidden // self.heads
        context = torch.cat([memory, segments], 1)
        q = self.query(segments).view(m, length, self.heads, head_dim).transpose(1, 2)
        kv = self.key_value(context).view(m, 2 * length, 2, self.heads, head_dim)
        k, v = kv[:, :, 0].transpose(1, 2), kv[:, :, 1].transpose(1, 2)
        attended = F.scaled_dot_product_attention(q, k, v, attn_mask=key_mask)
        z = self.norm1(segments + self.output(attended.transpose(1, 2).reshape(m, length, hidden)))
        return self.norm2(z + self.feed_forward2(torch.relu(self.feed_forward1(z))))


class PlainGoPolicy(nn.Module):
    def __init__(self, node_dim: int, global_dim: int, choices: int, hidden: int = 64, sage_layers: int = 2,
                 attention_layers: int = 2, heads: int = 4, segment_length: int = 512):
        super().__init__()
        self.hidden, self.segment_length = hidden, segment_length
        self.input = nn.Linear(node_dim, hidden)
        self.combine = nn.ModuleList(nn.Linear(3 * hidden, hidden) for _ in range(sage_layers))
        self.norms = nn.ModuleList(nn.LayerNorm(hidden) for _ in range(sage_layers))
        self.condition = nn.Linear(hidden + global_dim, hidden)
        self.film = nn.Linear(hidden, 2 * hidden * attention_layers)
        self.attention = nn.ModuleList(SegmentAttention(hidden, heads) for _ in range(attention_layers))
        self.head = nn.Linear(hidden, choices)
        self.value1 = nn.Linear(hidden, hidden)
        self.value2 = nn.Linear(hidden, 1)

    @staticmethod
    def mean_over_edges(h, source, target, inverse_degree):
        return torch.zeros_like(h).index_add(1, target, h.index_select(1, source)) * inverse_degree

    def forward(self, graph: dict, node_state, globals_):
        b, n, h = node_state.shape[0], graph["n"], self.hidden
        x = torch.cat([graph["node_features"].expand(b, -1, -1), node_state], -1)
        nodes = torch.relu(self.input(x))
        for combine, norm in zip(self.combine, self.norms):
            before = self.mean_over_edges(nodes, graph["source"], graph["target"], graph["inverse_in"])
            after = self.mean_over_edges(nodes, graph["target"], graph["source"], graph["inverse_out"])
            nodes = norm(nodes + torch.relu(combine(torch.cat([nodes, before, after], -1))))
        embedding = torch.relu(self.condition(torch.cat([nodes.mean(1), globals_], -1)))
        z = nodes.index_select(1, graph["order"]) + graph["positions"]
        length = min(self.segment_length, n)
        segments = -(-n // length)
        padded = segments * length
        if padded > n:
            z = torch.cat([z, z.new_zeros(b, padded - n, h)], 1)
        real = (torch.arange(padded) < n).view(segments, length)
        memory_real = torch.cat([torch.zeros(1, length, dtype=torch.bool), real[:-1]], 0)
        key_mask = torch.cat([memory_real, real], 1).view(1, segments, 1, 1, 2 * length) \
            .expand(b, segments, 1, 1, 2 * length).reshape(b * segments, 1, 1, 2 * length)
        film = self.film(embedding).view(b, len(self.attention), 2, 1, 1, h)
        z = z.view(b, segments, length, h)
        for layer, attention in enumerate(self.attention):
            memory = torch.cat([z.new_zeros(b, 1, length, h), z[:, :-1]], 1).detach()
            z = attention(z.reshape(b * segments, length, h), memory.reshape(b * segments, length, h),
                          key_mask).view(b, segments, length, h)
            z = z * (1 + film[:, layer, 0]) + film[:, layer, 1]
        z = z.view(b, padded, h)[:, :n]
        out = z.index_select(1, graph["position"]) + nodes
        return self.head(out), self.value2(torch.relu(self.value1(embedding))).squeeze(-1)


def graph_tensors(env, obs: dict, hidden: int) -> dict:
    """What the policy reads once per graph: features, edges, degrees, topological order, positions."""
    n = obs["node_features"].shape[0]
    source, target = (torch.from_numpy(np.array(r)) for r in obs["edge_index"])
    inverse_in = 1.0 / torch.bincount(target, minlength=n).clamp_min(1).float()
    inverse_out = 1.0 / torch.bincount(source, minlength=n).clamp_min(1).float()
    order = torch.as_tensor(np.array(env.unwrapped.graph.topological_order), dtype=torch.int64)
    position = torch.empty_like(order)
    position[order] = torch.arange(n)
    pairs = hidden // 2  # the sinusoidal position encoding of agents/policy.cc
    where = (torch.arange(n, dtype=torch.float32) / max(n, 1)).unsqueeze(1)
    frequency = torch.pow(2.0, torch.arange(pairs, dtype=torch.float32) * (10.0 / max(pairs, 1))) * math.pi
    angle = where * frequency.unsqueeze(0)
    positions = torch.cat([torch.sin(angle), torch.cos(angle)], 1).unsqueeze(0)
    return {"n": n, "node_features": torch.from_numpy(np.array(obs["node_features"])).unsqueeze(0), "source": source,
            "target": target, "inverse_in": inverse_in.view(1, n, 1), "inverse_out": inverse_out.view(1, n, 1),
            "order": order, "position": position, "positions": positions}


class PlainAgent:
    """act(obs) -> action; update(env, steps): `steps` env steps sampled from the policy, the rollout
    forward pass, then one PPO minibatch step (forward, clipped loss, backward, Adam) over them."""

    def __init__(self, env, obs: dict, hidden: int = 64, segment_length: int = 512, seed: int = 0):
        torch.manual_seed(seed)
        self.graph = graph_tensors(env, obs, hidden)
        choices = obs["action_mask"].shape[1]
        self.policy = PlainGoPolicy(obs["node_features"].shape[1] + obs["node_state"].shape[1],
                                    obs["globals"].shape[0], choices, hidden, segment_length=segment_length)
        self.optimizer = torch.optim.Adam(self.policy.parameters(), lr=3e-4)

    @staticmethod
    def batch(observations: list[dict]):
        state = torch.from_numpy(np.stack([o["node_state"] for o in observations]))
        globals_ = torch.from_numpy(np.stack([o["globals"] for o in observations]))
        mask = torch.from_numpy(np.stack([o["action_mask"] for o in observations])).bool()
        return state, globals_, mask

    def distribution(self, observations: list[dict]):
        state, globals_, mask = self.batch(observations)
        logits, value = self.policy(self.graph, state, globals_)
        return torch.distributions.Categorical(logits=logits.masked_fill(~mask, -1e9)), value

    def act(self, obs: dict) -> np.ndarray:
        with torch.no_grad():
            dist, _ = self.distribution([obs])
            return dist.sample()[0].numpy()

    def update(self, env, steps: int) -> float:
        """Seconds for `steps` env steps plus one PPO update over them (one-shot episodes)."""
        start = time.perf_counter()
        observations, actions, rewards = [], [], []
        for k in range(steps):
            obs, _ = env.reset(seed=k)
            observations.append(obs)
        with torch.no_grad():
            dist, values = self.distribution(observations)
            sampled = dist.sample()
            old_log_prob = dist.log_prob(sampled).sum(-1)
        for k in range(steps):  # one-shot episodes: each step starts from its own reset
            env.reset(seed=k)
            actions.append(sampled[k].numpy())
            rewards.append(env.step(actions[-1])[1])
        advantages = torch.tensor(rewards, dtype=torch.float32) - values
        returns = torch.tensor(rewards, dtype=torch.float32)
        dist, value = self.distribution(observations)
        ratio = torch.exp(dist.log_prob(sampled).sum(-1) - old_log_prob)
        clipped = torch.clamp(ratio, 0.8, 1.2)
        loss = -torch.min(ratio * advantages, clipped * advantages).mean() + 0.5 * (value - returns).pow(2).mean() \
            - 0.01 * dist.entropy().sum(-1).mean()
        self.optimizer.zero_grad()
        loss.backward()
        self.optimizer.step()
        return time.perf_counter() - start
