"""An RLlib RLModule (new API stack, torch) over goenv's graph encoder.

    from ray.rllib.algorithms.ppo import PPOConfig
    from ray.rllib.core.rl_module.rl_module import RLModuleSpec
    import goenv.integrations.rllib
    config = PPOConfig().environment("goenv/placement-transformer-xl-2-v1").rl_module(
        rl_module_spec=RLModuleSpec(module_class=goenv.integrations.rllib.GraphModule))
    config.training(learner_class=goenv.integrations.rllib.GraphPPOLearner)   # one-shot episodes: see below

GraphModule decides every node at once (a goenv placement, scheduling or fusion
env in graph mode, MultiDiscrete action): per-node logits from each node's
embedding, masked by the observation's action_mask (a forbidden choice gets
probability 0), and a value from the pooled embeddings (ValueFunctionAPI, for
PPO). Its action distribution is one batched categorical over all nodes
(goenv.integrations.encoder.NodeCategorical).
`model_config`: `hidden` (64), `layers` (2), `units` (the decision unit of each
node when the env is wrapped in goenv.wrappers.GroupedPlacement: `wrapper.units`),
`log_prob` ("sum" or "mean" over the nodes, see NodeCategorical).

`GraphPPOLearner` is RLlib's PPO learner with one more step after its advantage
estimation: RLlib 2.60 extends every episode by one artificial time step (for the
bootstrap value) and standardizes the advantages over all rows, the artificial ones
included, whose "advantages" are junk (masked out of the loss, but not out of the
mean and the standard deviation). With goenv's one-shot episodes (horizon 1) half the
rows are artificial and the real advantages come out biased, which drives PPO to a
deterministic policy early; GraphPPOLearner re-standardizes over the real rows
(affine, so exactly the standardization RLlib means).
"""

from __future__ import annotations

import dataclasses
from typing import Any

from goenv.extras import import_extra

import_extra("ray.rllib", extra="rllib", feature="goenv.integrations.rllib", package="ray[rllib]")

import torch
from gymnasium import spaces
from ray.rllib.algorithms.ppo.torch.ppo_torch_learner import PPOTorchLearner
from ray.rllib.connectors.connector_v2 import ConnectorV2
from ray.rllib.core.columns import Columns
from ray.rllib.core.distribution.torch.torch_distribution import TorchDeterministic, TorchDistribution
from ray.rllib.core.rl_module.apis import ValueFunctionAPI
from ray.rllib.core.rl_module.torch import TorchRLModule
from ray.rllib.evaluation.postprocessing import Postprocessing

from goenv._core import InvalidArgument
from goenv.integrations.encoder import GraphActorCritic, NodeCategorical, check_observation_space, input_dim

__all__ = ["GraphModule", "GraphPPOLearner", "RealStepAdvantages", "TorchNodeCategorical"]


class TorchNodeCategorical(TorchDistribution):
    """RLlib face of encoder.NodeCategorical: flat logits (B, U * num_choices) -> U
    categoricals; logp, entropy and kl are sums over the U decisions."""

    def __init__(self, logits: torch.Tensor, num_choices: int, reduction: str = "sum"):
        self.logits = logits.reshape(*logits.shape[:-1], -1, num_choices)
        self.node = NodeCategorical(self.logits, reduction)
        super().__init__(logits=self.logits)

    def _get_torch_distribution(self, logits: torch.Tensor) -> torch.distributions.Distribution:
        return self.node.distribution

    def logp(self, value: torch.Tensor, **kwargs) -> torch.Tensor:
        return self.node.log_prob(value)

    def entropy(self) -> torch.Tensor:
        return self.node.entropy()

    def kl(self, other: "TorchNodeCategorical") -> torch.Tensor:
        return self.node.reduce(torch.distributions.kl.kl_divergence(self._dist, other._dist))

    def rsample(self, *, sample_shape=None):
        """Straight-through samples (Bengio et al. 2013), as RLlib's TorchCategorical: one-hot
        (..., U, num_choices) forward, the gradient of the probabilities backward. A forbidden
        choice (masked logit) has probability 0, so it is never the hot one."""
        probs = self.node.distribution.probs
        index = self.node.distribution.sample(torch.Size(sample_shape or ()))
        one_hot = torch.nn.functional.one_hot(index, probs.shape[-1]).to(probs.dtype)
        return (one_hot - probs).detach() + probs

    @staticmethod
    def required_input_dim(space: spaces.MultiDiscrete, **kwargs) -> int:
        return int(space.nvec.sum())

    @classmethod
    def from_logits(cls, logits: torch.Tensor, **kwargs) -> "TorchNodeCategorical":
        return cls(logits, **kwargs)

    def to_deterministic(self) -> TorchDeterministic:
        return TorchDeterministic(loc=self.node.mode())


def _options(model_config: Any) -> dict:
    if dataclasses.is_dataclass(model_config):
        model_config = dataclasses.asdict(model_config)
    model_config = model_config or {}
    return {key: model_config[key] for key in ("hidden", "layers", "units", "log_prob")
            if model_config.get(key) is not None}


class GraphModule(TorchRLModule, ValueFunctionAPI):
    """goenv's GraphActorCritic as an RLlib RLModule (torch, new API stack)."""

    def setup(self):
        check_observation_space(self.observation_space)
        space = self.action_space
        if not isinstance(space, spaces.MultiDiscrete) or len(set(space.nvec.tolist())) != 1:
            raise InvalidArgument(
                f"GraphModule decides every node at once: it needs a MultiDiscrete action space with one choice "
                f"count (a goenv placement, scheduling or fusion env in graph mode), got {space}")
        options = _options(self.model_config)
        reduction = options.pop("log_prob", "sum")
        nodes, decisions = self.observation_space["node_features"].shape[0], len(space.nvec)
        units = options.get("units")
        if (units is None and decisions != nodes) or (units is not None and len(set(units)) != decisions):
            raise InvalidArgument(f"the action space has {decisions} decisions for {nodes} nodes: pass "
                                  "model_config={'units': wrapper.units.tolist()} for a GroupedPlacement env")
        num_choices = int(space.nvec[0])
        self.net = GraphActorCritic(input_dim(self.observation_space), num_choices, **options)
        self.action_dist_cls = TorchNodeCategorical.get_partial_dist_cls(num_choices=num_choices, reduction=reduction)

    def _forward(self, batch: dict, **kwargs) -> dict:
        logits, value = self.net(batch[Columns.OBS])
        # The value rides along as the "embeddings" PPO hands back to compute_values.
        return {Columns.ACTION_DIST_INPUTS: logits.flatten(1), Columns.EMBEDDINGS: value}

    def compute_values(self, batch: dict, embeddings: Any = None) -> torch.Tensor:
        if embeddings is not None:
            return embeddings
        return self.net(batch[Columns.OBS])[1]


class RealStepAdvantages(ConnectorV2):
    """Learner connector piece, after RLlib's GeneralAdvantageEstimation: advantages
    standardized over the rows the loss uses (Columns.LOSS_MASK) only."""

    def __call__(self, *, rl_module, batch, episodes, **kwargs):
        for module_batch in batch.values():
            if Postprocessing.ADVANTAGES not in module_batch or Columns.LOSS_MASK not in module_batch:
                continue
            advantages = torch.as_tensor(module_batch[Postprocessing.ADVANTAGES])
            real = advantages[torch.as_tensor(module_batch[Columns.LOSS_MASK], device=advantages.device).bool()]
            if len(real) > 1:
                module_batch[Postprocessing.ADVANTAGES] = (advantages - real.mean()) / real.std().clamp(min=1e-4)
        return batch


class GraphPPOLearner(PPOTorchLearner):
    """RLlib's torch PPO learner, advantages standardized over real time steps only
    (RealStepAdvantages; see the module's docstring)."""

    def build(self) -> None:
        super().build()
        if self._learner_connector is not None and self.config.add_default_connectors_to_learner_pipeline:
            self._learner_connector.append(RealStepAdvantages())
