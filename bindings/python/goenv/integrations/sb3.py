"""Stable-Baselines3 policies over goenv's graph encoder (goenv.integrations.encoder).

    from stable_baselines3 import PPO
    import goenv.integrations.sb3
    env = goenv.make("placement-transformer-xl-2")
    model = PPO(goenv.integrations.sb3.GraphPolicy, env, policy_kwargs=goenv.integrations.sb3.policy_kwargs(env))

`GraphPolicy` (PPO, A2C) and `MaskableGraphPolicy` (sb3-contrib's MaskablePPO)
decide every node at once (a MultiDiscrete action, graph mode): each node's
device logits come from that node's embedding, masked by the observation's
action_mask, and the N categoricals are sampled as one batched distribution
(SB3's MultiCategorical builds one torch distribution per node). With
goenv.wrappers.GroupedPlacement, one decision per colocation group
(`policy_kwargs(env)` reads the groups from the wrapper).

`GraphFeaturesExtractor` is the encoder alone, for SB3's own heads
(`MultiInputPolicy`, `policy_kwargs=policy_kwargs(env)`): in node mode
(decision_mode="node", a Discrete action) it gives the embedding of the node to
decide now next to the graph's mean and max; in graph mode every node's embedding,
flattened, and the pooled ones.
"""

from __future__ import annotations

from goenv.extras import import_extra

for _module, _package in (("stable_baselines3", "stable-baselines3"), ("sb3_contrib", "sb3-contrib")):
    import_extra(_module, extra="sb3", feature="goenv.integrations.sb3", package=_package)

import gymnasium
import torch
from gymnasium import spaces
from stable_baselines3.common.distributions import Distribution
from stable_baselines3.common.policies import ActorCriticPolicy
from stable_baselines3.common.torch_layers import BaseFeaturesExtractor
from sb3_contrib.common.maskable.policies import MaskableActorCriticPolicy

from goenv._core import InvalidArgument, node_state_names
from goenv.arguments import checked_int
from goenv.envs import GraphEnv
from goenv.integrations.encoder import (
    MASKED_LOGIT,
    GraphActorCritic,
    GraphEncoder,
    NodeCategorical,
    check_observation_space,
    graph_inputs,
    input_dim,
)
from goenv.wrappers import GroupedPlacement

__all__ = ["GraphFeaturesExtractor", "GraphPolicy", "MaskableGraphPolicy", "policy_kwargs"]

# node_state's last columns are named (the first ones are the current device, one-hot):
# "current" marks the node a node-mode step decides.
CURRENT_COLUMN = node_state_names().index("current") - len(node_state_names())


def policy_kwargs(env: gymnasium.Env | None = None, hidden: int = 64, layers: int = 2,
                  log_prob: str = "sum") -> dict:
    """SB3 `policy_kwargs` for goenv's encoder. Graph mode (GraphPolicy, MaskableGraphPolicy):
    the encoder's size, the decision units of a GroupedPlacement `env` and how a placement's
    log-probability combines its nodes' (`log_prob`: "sum" or "mean", see
    goenv.integrations.encoder.NodeCategorical). Node mode (decision_mode="node" env, SB3's
    "MultiInputPolicy"): GraphFeaturesExtractor on the current node. Without `env`: graph
    mode, one decision per node."""
    options = {"hidden": checked_int("hidden", hidden, 1, 1 << 16), "layers": checked_int("layers", layers, 0, 64)}
    if env is None:
        return {"graph_options": {**options, "log_prob": log_prob}}
    base = getattr(env, "unwrapped", env)
    if not isinstance(base, GraphEnv):
        raise InvalidArgument(f"policy_kwargs reads goenv envs, got {type(base).__name__}")
    if base.core.node_mode:
        return {"features_extractor_class": GraphFeaturesExtractor,
                "features_extractor_kwargs": {**options, "node_mode": True}}
    wrapper = env
    while isinstance(wrapper, gymnasium.Wrapper) and not isinstance(wrapper, GroupedPlacement):
        wrapper = wrapper.env
    units = wrapper.units.tolist() if isinstance(wrapper, GroupedPlacement) else None
    return {"graph_options": {**options, "units": units, "log_prob": log_prob}}


class GraphFeaturesExtractor(BaseFeaturesExtractor):
    """goenv's Dict observation -> features for SB3's own heads. node_mode: the current
    node's embedding, the mean and the max of all (3 * hidden); else every node's embedding
    flattened, then the mean and the max ((N + 2) * hidden)."""

    def __init__(self, observation_space: spaces.Dict, hidden: int = 64, layers: int = 2, node_mode: bool = False):
        check_observation_space(observation_space)
        nodes = observation_space["node_features"].shape[0]
        super().__init__(observation_space, (3 if node_mode else nodes + 2) * hidden)
        self.node_mode = node_mode
        self.encoder = GraphEncoder(input_dim(observation_space), hidden, layers)

    def forward(self, obs: dict) -> torch.Tensor:
        x, edge_index, _ = graph_inputs(obs)
        h = self.encoder(x, edge_index)
        pooled = [h.mean(dim=1), h.max(dim=1).values]
        if self.node_mode:  # the node this step decides: its "current" flag (none after the last step)
            current = obs["node_state"][..., CURRENT_COLUMN].argmax(dim=1)
            return torch.cat([h[torch.arange(len(h)), current], *pooled], dim=-1)
        return torch.cat([h.flatten(1), *pooled], dim=-1)


class _LogitsAndValue(BaseFeaturesExtractor):
    """GraphPolicy's trunk, in SB3's features-extractor slot: the flat masked logits of
    every decision (U * A), then the value (1)."""

    def __init__(self, observation_space: spaces.Dict, num_choices: int, hidden: int = 64, layers: int = 2,
                 units=None):
        check_observation_space(observation_space)
        self.num_decisions = len(set(units)) if units is not None else observation_space["node_features"].shape[0]
        super().__init__(observation_space, self.num_decisions * num_choices + 1)
        self.net = GraphActorCritic(input_dim(observation_space), num_choices, hidden, layers, units)

    def forward(self, obs: dict) -> torch.Tensor:
        logits, value = self.net(obs)
        return torch.cat([logits.flatten(1), value[:, None]], dim=-1)


class _Split(torch.nn.Module):
    """SB3's mlp_extractor slot: (logits, value) from _LogitsAndValue's output."""

    latent_dim_vf = 1

    def __init__(self, latent_dim_pi: int):
        super().__init__()
        self.latent_dim_pi = latent_dim_pi

    def forward(self, features: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        return self.forward_actor(features), self.forward_critic(features)

    def forward_actor(self, features: torch.Tensor) -> torch.Tensor:
        return features[:, :-1]

    def forward_critic(self, features: torch.Tensor) -> torch.Tensor:
        return features[:, -1:]


class NodeCategoricalDistribution(Distribution):
    """SB3 face of encoder.NodeCategorical (log_prob and entropy: sums over decisions);
    apply_masking is sb3-contrib's MaskableDistribution interface."""

    def __init__(self, num_decisions: int, num_choices: int, reduction: str = "sum"):
        super().__init__()
        self.shape = (num_decisions, num_choices)
        self.reduction = reduction
        self.node: NodeCategorical | None = None
        self._logits: torch.Tensor | None = None

    def proba_distribution_net(self, latent_dim: int) -> torch.nn.Module:
        return torch.nn.Identity()

    def proba_distribution(self, action_logits: torch.Tensor) -> "NodeCategoricalDistribution":
        self._logits = action_logits.reshape(-1, *self.shape)
        self.node = NodeCategorical(self._logits, self.reduction)
        return self

    def apply_masking(self, masks) -> None:
        if masks is None:
            self.node = NodeCategorical(self._logits, self.reduction)
            return
        masks = torch.as_tensor(masks, device=self._logits.device).reshape(self._logits.shape).bool()
        self.node = NodeCategorical(self._logits.masked_fill(~masks, MASKED_LOGIT), self.reduction)

    def log_prob(self, actions: torch.Tensor) -> torch.Tensor:
        return self.node.log_prob(actions)

    def entropy(self) -> torch.Tensor:
        return self.node.entropy()

    def sample(self) -> torch.Tensor:
        return self.node.sample()

    def mode(self) -> torch.Tensor:
        return self.node.mode()

    def actions_from_params(self, action_logits: torch.Tensor, deterministic: bool = False) -> torch.Tensor:
        return self.proba_distribution(action_logits).get_actions(deterministic=deterministic)

    def log_prob_from_params(self, action_logits: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        actions = self.actions_from_params(action_logits)
        return actions, self.log_prob(actions)


class _GraphPolicyMixin:
    """Replaces an SB3 actor-critic's networks by GraphActorCritic; rollouts, PPO updates,
    saving and loading stay SB3's."""

    def __init__(self, observation_space, action_space, lr_schedule, graph_options: dict | None = None, **kwargs):
        check_observation_space(observation_space)
        if not isinstance(action_space, spaces.MultiDiscrete) or len(set(action_space.nvec.tolist())) != 1:
            raise InvalidArgument(
                f"{type(self).__name__} decides every node at once: it needs a MultiDiscrete action space with "
                f"one choice count (a goenv placement, scheduling or fusion env in graph mode), got {action_space}. "
                "For decision_mode='node' use 'MultiInputPolicy' with policy_kwargs=goenv.integrations.sb3."
                "policy_kwargs(env)")
        options = dict(graph_options or {})
        self.log_prob_reduction = options.pop("log_prob", "sum")
        nodes = observation_space["node_features"].shape[0]
        decisions = len(action_space.nvec)
        units = options.get("units")
        if units is None and decisions != nodes:
            raise InvalidArgument(
                f"the action space has {decisions} decisions for {nodes} nodes: pass "
                "policy_kwargs=goenv.integrations.sb3.policy_kwargs(env) so the policy knows the decision units")
        if units is not None and (len(units) != nodes or len(set(units)) != decisions):
            raise InvalidArgument(f"units must give each of the {nodes} nodes one of {decisions} decision units")
        options["num_choices"] = int(action_space.nvec[0])
        kwargs.setdefault("ortho_init", False)  # GraphActorCritic keeps PyTorch's initialization
        super().__init__(observation_space, action_space, lr_schedule, features_extractor_class=_LogitsAndValue,
                         features_extractor_kwargs=options, share_features_extractor=True, **kwargs)

    def _build_mlp_extractor(self) -> None:
        self.mlp_extractor = _Split(self.features_dim - 1)

    def _build(self, lr_schedule) -> None:
        self._build_mlp_extractor()
        extractor = self.features_extractor
        self.action_dist = NodeCategoricalDistribution(extractor.num_decisions, extractor.net.num_choices,
                                                       self.log_prob_reduction)
        self.action_net = torch.nn.Identity()
        self.value_net = torch.nn.Identity()  # the value is the trunk's last output
        self.optimizer = self.optimizer_class(self.parameters(), lr=lr_schedule(1), **self.optimizer_kwargs)

    def _get_action_dist_from_latent(self, latent_pi: torch.Tensor) -> NodeCategoricalDistribution:
        return self.action_dist.proba_distribution(self.action_net(latent_pi))

    def _get_constructor_parameters(self) -> dict:
        data = super()._get_constructor_parameters()
        data.pop("features_extractor_class", None)
        data.pop("features_extractor_kwargs", None)
        options = dict(self.features_extractor_kwargs)
        options.pop("num_choices", None)
        data["graph_options"] = {**options, "log_prob": self.log_prob_reduction}
        return data


class GraphPolicy(_GraphPolicyMixin, ActorCriticPolicy):
    """SB3 PPO/A2C policy: per-node (or per-unit) choice logits from goenv's graph encoder."""


class MaskableGraphPolicy(_GraphPolicyMixin, MaskableActorCriticPolicy):
    """sb3-contrib MaskablePPO policy: GraphPolicy, also masked by env.action_masks()."""
