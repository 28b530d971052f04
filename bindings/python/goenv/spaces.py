"""The observation and action spaces of goenv's envs, built once for a single env and for every
vector layout: the observation's arrays, dtypes and shapes from envs/spec.h
(goenv._core.observation_fields()), the widths from the core (its node_state_dim, ...)."""

from __future__ import annotations

import numpy as np
from gymnasium import spaces

from goenv import _core

__all__ = ["OBSERVATION_FIELDS", "action_space", "observation_space"]

OBSERVATION_FIELDS = tuple(_core.observation_fields())


def _size(core, dim: str, rows: int, edges: int) -> int:
    """One of a field's dims: "N" nodes, "E" edges, a number, or a width the core reports."""
    if dim == "N":
        return rows
    if dim == "E":
        return edges
    return int(dim) if dim.isdigit() else int(getattr(core, dim))


def _bounds(field: dict, rows: int, edge_low: int) -> tuple:
    return {"real": (-np.inf, np.inf), "binary": (0, 1), "node index": (edge_low, max(rows - 1, 0))}[field["range"]]


def observation_space(core, rows: int, edges: int, *, batch: int | None = None, edge_low: int = 0,
                      extra: dict | None = None) -> spaces.Dict:
    """The Dict of a core env's (or vector env's) observation with `rows` node rows and `edges`
    edges; `batch`: the per-env arrays (globals, per-device ones) lead with that many envs;
    edge_low -1 where padding marks absent edges; `extra`: a layout's own arrays."""
    entries = {}
    for field in OBSERVATION_FIELDS:
        if core.observation_version < field["since_version"]:
            continue
        shape = tuple(_size(core, dim, rows, edges) for dim in field["dims"])
        if batch is not None and field["per_env"]:
            shape = (batch,) + shape
        low, high = _bounds(field, rows, edge_low)
        entries[field["name"]] = spaces.Box(low, high, shape, np.dtype(field["dtype"]))
    entries.update(extra or {})
    return spaces.Dict(entries)


def action_space(core, count: int | None) -> spaces.Space:
    """One value per node for each head over `count` nodes (MultiDiscrete), or one value
    (Discrete) when count is None (decision_mode="node"); a Dict when the task has several heads."""
    heads = {name: spaces.Discrete(choices) if count is None else spaces.MultiDiscrete(np.full(count, choices,
                                                                                              dtype=np.int64))
             for name, choices in zip(core.heads, core.head_choices)}
    return next(iter(heads.values())) if len(heads) == 1 else spaces.Dict(heads)
