"""One small message-passing encoder over a goenv observation, in plain PyTorch.

    net = GraphActorCritic.from_space(env.observation_space, num_choices=2)
    logits, value = net(obs)      # logits (B, N, 2), masked by obs["action_mask"]; value (B,)

Each node starts from its static features, its decision state and the graph's
globals; each round mixes in the mean of its producers' and of its consumers'
embeddings along `edge_index` (GraphSAGE-style mean aggregation, a residual
update). A per-node head maps every node's embedding to its own choice logits, so
the same weights serve any graph size; the value head reads the mean and max of
the embeddings. Choices the observation's `action_mask` forbids get probability 0.

Input conventions (what SB3 and RLlib hand to a policy): a dict of tensors,
unbatched (N, F) or batched (B, N, F); `edge_index` (2, E) shared by the batch or
(B, 2, E) per observation, of any numeric dtype (SB3 turns it into float32); edges
padded with negative indices are ignored, so graphs with fewer edges can share a
batch. Nodes are not padded: a batch holds graphs of the same node count.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np
import torch
from torch import nn

from goenv._core import InvalidArgument

__all__ = ["GraphActorCritic", "GraphEncoder", "NodeCategorical", "graph_inputs", "input_dim", "MASKED_LOGIT"]

# A forbidden choice's logit: softmax gives it exactly 0 in float32, and the mean over a
# colocation group's members stays finite (no -inf, no NaN when everything is masked).
MASKED_LOGIT = -1e9

OBSERVATION_KEYS = ("node_features", "node_state", "edge_index", "action_mask", "globals")


def check_observation_space(space) -> None:
    """Raises InvalidArgument unless `space` is goenv's Dict observation space."""
    keys = getattr(space, "spaces", None)
    if not isinstance(keys, Mapping) or any(key not in keys for key in OBSERVATION_KEYS):
        raise InvalidArgument(
            "goenv's graph encoder reads goenv's Dict observation (node_features, node_state, edge_index, "
            f"action_mask, globals); got {space!r}. Use a goenv env without observation wrappers "
            "(not CurrentNodeObservation, FlattenObservation)")


def input_dim(space) -> int:
    """Width of a node's input row: node features, node state and the graph's globals."""
    check_observation_space(space)
    return space["node_features"].shape[-1] + space["node_state"].shape[-1] + space["globals"].shape[-1]


def graph_inputs(obs: Mapping) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """(x (B, N, F+S+G) float, edge_index (B, 2, E) long, mask (B, N, A) bool) from a goenv
    observation as tensors or arrays, batched or not."""
    if not isinstance(obs, Mapping) or any(key not in obs for key in OBSERVATION_KEYS):
        raise InvalidArgument(f"expected goenv's Dict observation with keys {', '.join(OBSERVATION_KEYS)}, got "
                              f"{sorted(obs) if isinstance(obs, Mapping) else type(obs).__name__}")
    tensor = {key: torch.as_tensor(np.asarray(obs[key]) if not torch.is_tensor(obs[key]) else obs[key])
              for key in OBSERVATION_KEYS}
    features = tensor["node_features"]
    if features.dim() == 2:  # one observation
        tensor = {key: value.unsqueeze(0) for key, value in tensor.items()}
        features = tensor["node_features"]
    if features.dim() != 3:
        raise InvalidArgument(f"node_features must be (N, F) or (B, N, F), got shape {tuple(features.shape)}")
    batch, nodes = features.shape[:2]
    globals_ = tensor["globals"].reshape(batch, 1, -1).expand(batch, nodes, -1)
    x = torch.cat([features.float(), tensor["node_state"].float(), globals_.float()], dim=-1)
    edge_index = tensor["edge_index"]
    if edge_index.dim() == 2:
        edge_index = edge_index.unsqueeze(0)
    if edge_index.dim() != 3 or edge_index.shape[1] != 2:
        raise InvalidArgument(f"edge_index must be (2, E) or (B, 2, E), got shape {tuple(tensor['edge_index'].shape)}")
    edge_index = edge_index.long().expand(batch, 2, -1)
    return x, edge_index, tensor["action_mask"] > 0


class GraphEncoder(nn.Module):
    """Node embeddings (B, N, hidden) from node inputs (B, N, input_dim) and edge_index (B, 2, E)."""

    def __init__(self, input_dim: int, hidden: int = 64, layers: int = 2):
        super().__init__()
        self.hidden = hidden
        self.embed = nn.Sequential(nn.Linear(input_dim, hidden), nn.Tanh())
        self.rounds = nn.ModuleList(nn.Linear(3 * hidden, hidden) for _ in range(layers))

    def forward(self, x: torch.Tensor, edge_index: torch.Tensor) -> torch.Tensor:
        batch, nodes, _ = x.shape
        # One big graph of B disjoint copies: node v of observation b is b * N + v.
        offset = (torch.arange(batch, device=x.device) * nodes)[:, None]
        valid = (edge_index >= 0).all(dim=1)  # (B, E): padding edges carry negative indices
        src, dst = (edge_index[:, 0] + offset)[valid], (edge_index[:, 1] + offset)[valid]
        if len(src) and int(max(src.max(), dst.max()) - offset.max()) >= nodes:
            raise InvalidArgument(f"edge_index names a node >= the {nodes} nodes of the observation")
        ones = torch.ones(len(src), device=x.device)
        degree_in = torch.zeros(batch * nodes, device=x.device).index_add_(0, dst, ones).clamp(min=1)[:, None]
        degree_out = torch.zeros(batch * nodes, device=x.device).index_add_(0, src, ones).clamp(min=1)[:, None]
        h = self.embed(x).reshape(batch * nodes, self.hidden)
        for layer in self.rounds:
            from_producers = torch.zeros_like(h).index_add_(0, dst, h[src]) / degree_in
            from_consumers = torch.zeros_like(h).index_add_(0, src, h[dst]) / degree_out
            h = torch.tanh(layer(torch.cat([h, from_producers, from_consumers], dim=-1))) + h
        return h.reshape(batch, nodes, self.hidden)


class GraphActorCritic(nn.Module):
    """Encoder + per-node choice logits + graph value.

    forward(obs) -> (logits (B, U, num_choices), value (B,)), U = N, or the number of
    decision units when `units` (unit of each node, as goenv.wrappers.GroupedPlacement's)
    is given: a unit's logits are the mean of its members', and a unit may take a choice
    only when every member may (GroupedPlacement's action_masks).
    """

    def __init__(self, input_dim: int, num_choices: int, hidden: int = 64, layers: int = 2,
                 units: Sequence[int] | None = None):
        super().__init__()
        self.num_choices = num_choices
        self.encoder = GraphEncoder(input_dim, hidden, layers)
        self.choices = nn.Linear(hidden, num_choices)
        self.value = nn.Sequential(nn.Linear(2 * hidden, hidden), nn.Tanh(), nn.Linear(hidden, 1))
        units_tensor = torch.as_tensor(np.asarray(units if units is not None else [], dtype=np.int64))
        self.register_buffer("units", units_tensor, persistent=False)
        self.num_units = int(units_tensor.max()) + 1 if len(units_tensor) else None
        if units is not None:
            size = torch.zeros(self.num_units).index_add_(0, units_tensor, torch.ones(len(units_tensor)))
            self.register_buffer("unit_size", size[:, None], persistent=False)

    @classmethod
    def from_space(cls, observation_space, num_choices: int, **kwargs) -> "GraphActorCritic":
        return cls(input_dim(observation_space), num_choices, **kwargs)

    def embed(self, obs: Mapping) -> tuple[torch.Tensor, torch.Tensor]:
        """(node embeddings (B, N, hidden), choice mask (B, N, num_choices) bool)."""
        x, edge_index, mask = graph_inputs(obs)
        if mask.shape[-1] < self.num_choices:
            raise InvalidArgument(f"action_mask has {mask.shape[-1]} columns, fewer than the {self.num_choices} choices")
        return self.encoder(x, edge_index), mask[..., : self.num_choices]

    def heads(self, h: torch.Tensor, mask: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """Masked logits per node (or unit) and the value, from node embeddings."""
        logits = self.choices(h)
        if self.num_units is not None:
            if h.shape[1] != len(self.units):
                raise InvalidArgument(f"units name {len(self.units)} nodes, the observation has {h.shape[1]}")
            batch = h.shape[0]
            logits = torch.zeros(batch, self.num_units, self.num_choices, device=h.device).index_add_(
                1, self.units, logits) / self.unit_size
            forbidden = torch.zeros(batch, self.num_units, self.num_choices, device=h.device).index_add_(
                1, self.units, (~mask).float())
            mask = forbidden == 0
        logits = logits.masked_fill(~mask, MASKED_LOGIT)
        value = self.value(torch.cat([h.mean(dim=1), h.max(dim=1).values], dim=-1)).squeeze(-1)
        return logits, value

    def forward(self, obs: Mapping) -> tuple[torch.Tensor, torch.Tensor]:
        return self.heads(*self.embed(obs))


class NodeCategorical:
    """One categorical per node (or unit) over logits (B, U, A), as one batched distribution.

    log_prob and entropy: with reduction="sum" (default) the joint distribution of
    independent per-node choices (as SB3's MultiCategorical and RLlib's), so PPO clips the
    ratio of the whole placement; with "mean" the per-node mean (a length-normalized ratio,
    as GSPO does for sequences), whose clip range means the same at any graph size.
    Measured with sb3_ppo.py's defaults (last quarter, compiler default): on
    placement-transformer-xl-2 the sum ended at 41.8, 38.3 and 42.6 ms (seeds 0-2, default
    46.6), the mean at 46.6, 46.6 and 41.9 (twice stuck on the default placement); on
    placement-transformer-xl-4 (401 nodes, 4 devices, default 63.3) the sum at 76.1, the
    mean below the default (docs/rl-libraries.md, library-results).
    """

    def __init__(self, logits: torch.Tensor, reduction: str = "sum"):
        if reduction not in ("sum", "mean"):
            raise InvalidArgument(f"reduction must be 'sum' or 'mean', got {reduction!r}")
        self.reduction = reduction
        self.logits = logits
        self.distribution = torch.distributions.Categorical(logits=logits)

    def sample(self) -> torch.Tensor:
        return self.distribution.sample()

    def mode(self) -> torch.Tensor:
        return self.logits.argmax(dim=-1)

    def log_prob(self, actions: torch.Tensor) -> torch.Tensor:
        actions = actions.reshape(self.logits.shape[:-1]).long()
        return self.reduce(self.distribution.log_prob(actions))

    def entropy(self) -> torch.Tensor:
        return self.reduce(self.distribution.entropy())

    def reduce(self, per_node: torch.Tensor) -> torch.Tensor:
        return per_node.sum(dim=-1) if self.reduction == "sum" else per_node.mean(dim=-1)
