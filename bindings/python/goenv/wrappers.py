"""Thin adapters between goenv envs and RL libraries that know nothing about graphs.

    env = goenv.wrappers.GroupedPlacement(goenv.make("placement-transformer-xl-2"))
    env.action_space        # MultiDiscrete([devices] * decision units)
    env.action_masks()      # flat bool mask, the layout sb3-contrib's MaskablePPO expects

    env = goenv.wrappers.CurrentNodeObservation(goenv.make("placement-inception", decision_mode="node"))
    env.observation_space   # Box(F + S + G): the node to decide now, flat, for MLP policies

GroupedPlacement makes one decision per colocation group (a group is one
decision unit, every other node is a unit of its own), as TensorFlow's placer
and GO do: a variable and its update op are placed together by construction,
so the action space is smaller and no choice is wasted on a member that the
env's colocation rule would move anyway.
"""

from __future__ import annotations

import gymnasium
import numpy as np
from gymnasium import spaces

from goenv._core import InvalidAction, InvalidArgument, ResetNeeded
from goenv.envs import GraphEnv

__all__ = ["CurrentNodeObservation", "GroupedPlacement", "decision_units"]


def decision_units(colocation: np.ndarray) -> tuple[np.ndarray, int]:
    """(unit of each node, number of units): a colocation group is one unit, numbered by
    its first member; every node without a group is a unit of its own."""
    colocation = np.asarray(colocation)
    keys = np.where(colocation >= 0, colocation, -1 - np.arange(len(colocation)))  # distinct keys for loners
    _, first, unit = np.unique(keys, return_index=True, return_inverse=True)
    order = np.argsort(first, kind="stable")  # number units by their first node
    rank = np.empty_like(order)
    rank[order] = np.arange(len(order))
    return rank[unit].astype(np.int64), len(order)


class GroupedPlacement(gymnasium.Wrapper, gymnasium.utils.RecordConstructorArgs):
    """Placement decided per decision unit (colocation group or single node).

    action_space: MultiDiscrete([num_devices] * num_units); `units[v]` is node v's
    unit. Observations and rewards are the wrapped env's. action_masks(): unit u
    may take device d when every member of u may (the env's per-node mask).
    """

    def __init__(self, env: gymnasium.Env):
        base = getattr(env, "unwrapped", env)
        if not isinstance(env, gymnasium.Env) or not isinstance(base, GraphEnv):
            raise InvalidArgument(f"GroupedPlacement wraps goenv envs, got {type(base).__name__}")
        gymnasium.utils.RecordConstructorArgs.__init__(self)
        gymnasium.Wrapper.__init__(self, env)
        inner = env
        while isinstance(inner, gymnasium.Wrapper):  # its actions are units: a second one would take units of units
            if isinstance(inner, GroupedPlacement):
                raise InvalidArgument("the env is already a GroupedPlacement; wrap it once")
            inner = inner.env
        core = base.core
        if core.heads != ["placement"] or core.node_mode:
            raise InvalidArgument(
                f"GroupedPlacement needs a placement env with whole-graph decisions; {core.id} decides "
                f"{', '.join(core.heads)}{' one node per step' if core.node_mode else ''}")
        self.units, self.num_units = decision_units(base.graph.colocation)
        self.num_devices = core.num_devices
        self.action_space = spaces.MultiDiscrete(np.full(self.num_units, self.num_devices, dtype=np.int64))
        self._mask = None  # set by reset

    def reset(self, **kwargs):
        obs, info = self.env.reset(**kwargs)
        self._update_mask(obs)
        return obs, info

    def step(self, action):
        obs, reward, terminated, truncated, info = self.env.step(self._per_node(action, "GroupedPlacement", InvalidAction))
        self._update_mask(obs)
        return obs, reward, terminated, truncated, info

    def node_placement(self, action) -> np.ndarray:
        """The per-node placement (int64) a unit action stands for."""
        return self._per_node(action, "node_placement", InvalidArgument)

    def _per_node(self, action, what: str, error: type[Exception]) -> np.ndarray:
        """One device per unit, as the env checks its own actions (no masked array, integer values
        in range: 1.0 is device 1), spread over the units' nodes."""
        if isinstance(action, np.ma.MaskedArray):
            raise error(f"{what}: action is a masked array; pass plain values")
        action = np.asarray(action)
        if action.shape != (self.num_units,):
            raise error(f"{what} takes one device per decision unit: shape ({self.num_units},), got {action.shape}")
        # As the env: bools are no devices, and a float must be finite and whole (inf raised a
        # numpy RuntimeWarning in np.mod before the error).
        whole = action.dtype.kind == "f" and bool(np.all(np.isfinite(action))) and bool(np.all(np.mod(action, 1) == 0))
        if action.dtype.kind not in "iu" and not whole:
            raise error(f"{what} takes integer devices, got dtype {action.dtype} "
                        f"{'with fractional, infinite or NaN values' if action.dtype.kind == 'f' else ''}".rstrip())
        if action.size and (action.min() < 0 or action.max() >= self.num_devices):
            raise error(f"{what}: devices must be in [0, {self.num_devices}), got {action.min()}..{action.max()}")
        return action.astype(np.int64)[self.units]

    def action_masks(self) -> np.ndarray:
        """(num_units * num_devices,) bool, unit after unit (MaskablePPO's MultiDiscrete layout)."""
        if self._mask is None:  # as the env's own action_masks()
            raise ResetNeeded(f"{self.unwrapped.core.id}: action_masks() called before reset()")
        return self._mask.reshape(-1).copy()

    def _update_mask(self, obs: dict) -> None:
        node_mask = obs["action_mask"][:, : self.num_devices].astype(bool)
        mask = np.ones((self.num_units, self.num_devices), dtype=bool)
        np.logical_and.at(mask, self.units, node_mask)
        self._mask = mask


class CurrentNodeObservation(gymnasium.ObservationWrapper, gymnasium.utils.RecordConstructorArgs):
    """decision_mode="node": the observation is the node to decide now, as one flat vector —
    its features, its decision state (current device, priority, ...) and the globals (runtime
    so far, progress, ...): Box(node_feature_dim + node_state_dim + global_dim). What an MLP
    policy (Stable-Baselines3's "MlpPolicy") can use, where the whole graph's (N, F) arrays
    flattened would bury the one row that matters. action_masks(): the env's."""

    def __init__(self, env: gymnasium.Env):
        if not isinstance(env, gymnasium.Env):  # gymnasium's own check is a bare assert
            raise InvalidArgument(f"CurrentNodeObservation wraps a goenv env, got {type(env).__name__}")
        gymnasium.utils.RecordConstructorArgs.__init__(self)
        gymnasium.ObservationWrapper.__init__(self, env)
        base = env.unwrapped
        if not isinstance(base, GraphEnv) or not base.core.node_mode:
            raise InvalidArgument("CurrentNodeObservation needs a goenv env made with decision_mode='node', got "
                                  f"{base.core.id + ' in graph mode' if isinstance(base, GraphEnv) else type(base).__name__}")
        core = base.core
        width = core.node_feature_dim + core.node_state_dim + core.global_dim
        self.observation_space = spaces.Box(-np.inf, np.inf, (width,), np.float32)

    def observation(self, obs: dict) -> np.ndarray:
        current = self.env.unwrapped.current_node  # the node of this observation: the env just made it
        v = 0 if current is None else current  # after the last step of an episode no node is current
        return np.concatenate([obs["node_features"][v], obs["node_state"][v], obs["globals"]]).astype(np.float32)

    def action_masks(self) -> np.ndarray:
        return self.env.unwrapped.action_masks()

