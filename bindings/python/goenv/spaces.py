"""The observation and action spaces of goenv's envs, built once for a single env and for every
vector layout, from the widths the core reports (its node_state_dim, action_mask_width, ...)."""

from __future__ import annotations

import numpy as np
from gymnasium import spaces

__all__ = ["action_space", "observation_space"]


def _box(shape: tuple, dtype=np.float32, low=-np.inf, high=np.inf) -> spaces.Box:
    return spaces.Box(low, high, shape, dtype)


def observation_space(core, rows: int, edges: int, *, batch: int | None = None, edge_low: int = 0,
                      extra: dict | None = None) -> spaces.Dict:
    """The Dict of a core env's (or vector env's) observation with `rows` node rows and `edges`
    edges; `batch`: the per-env arrays (globals, per-device ones) lead with that many envs;
    edge_low -1 where padding marks absent edges; `extra`: a layout's own arrays."""
    lead = () if batch is None else (batch,)
    entries = {
        "node_features": _box((rows, core.node_feature_dim)),
        "edge_index": _box((2, edges), np.int64, edge_low, max(rows - 1, 0)),
        "edge_features": _box((edges, core.edge_feature_dim)),
        "node_state": _box((rows, core.node_state_dim)),
        "action_mask": _box((rows, core.action_mask_width), np.int8, 0, 1),
        "globals": _box(lead + (core.global_dim,)),
    }
    if core.observation_version >= 2:  # per device: one block per env in every layout
        entries["device_features"] = _box(lead + (core.num_devices, core.device_feature_dim))
        entries["device_state"] = _box(lead + (core.num_devices, core.device_state_dim))
    entries.update(extra or {})
    return spaces.Dict(entries)


def action_space(core, count: int | None) -> spaces.Space:
    """One value per node for each head over `count` nodes (MultiDiscrete), or one value
    (Discrete) when count is None (decision_mode="node"); a Dict when the task has several heads."""
    heads = {name: spaces.Discrete(choices) if count is None else spaces.MultiDiscrete(np.full(count, choices,
                                                                                              dtype=np.int64))
             for name, choices in zip(core.heads, core.head_choices)}
    return next(iter(heads.values())) if len(heads) == 1 else spaces.Dict(heads)
