"""The decisions a graph is labelled with: K per graph, drawn from a documented mix.

    sampler="mix" (default), in this order:
      1. the env's default decision, then every heuristic baseline of the task, one each
         (goenv.baselines.list(task) without the searches and METIS, whose result depends on
         other threads: see NOT_REPRODUCIBLE), as long as K lasts;
      2. of the remaining R: R // 4 uniformly random decisions;
      3. with an agent, R // 4 policy samples (agent.act, not deterministic);
      4. the rest: perturbations of the best feasible heuristic by m moves, m drawn
         log-uniformly from 1..max_moves (a move gives one decision unit a new random
         allowed choice; in joint, each move picks a head at random).
    sampler="random" | "perturb" | "policy": K decisions of that one kind.

A decision unit is a colocation group for placement (so no decision splits a group and
colocation="follow" moves nothing) and a node for priority and fusion. Every choice is one
the env's action mask allows. Decisions are the env's actions: device per node, priority
level in [0, priority_levels), fusion level in [0, fusion_levels); heads the task does not
decide keep the env's defaults. Everything is drawn from a generator seeded by
(seed, graph index), so graph i gets the same decisions in any process, in any order.
"""

from __future__ import annotations

import math

import numpy as np

import goenv._core as _core
from goenv._core import InvalidArgument

SAMPLERS = ("mix", "random", "perturb", "policy")
SEARCHES = {"best-heuristic", "local-search", "genetic", "random-search"}
# METIS (Debian's libmetis 5.1) draws from the process-wide libc rand(): any other thread calling
# rand() meanwhile (Ray's do) changes its partition, so its labels would differ between runs.
NOT_REPRODUCIBLE = {"metis"}
HEADS = ("placement", "priority", "fusion")


class Decider:
    """Draws the decisions of one graph on one env (a goenv._core.Env after reset)."""

    def __init__(self, core: _core.Env, observation: dict, rng: np.random.Generator, max_moves: int):
        self.core, self.rng, self.max_moves = core, rng, max_moves
        self.graph = core.graph
        self.heads = list(core.heads)
        self.defaults = {"placement": np.asarray(core.placement, dtype=np.int16),
                         "priority": _levels(core.priority),
                         "fusion": np.asarray(core.fusion, dtype=np.int8)}
        masks = np.split(np.asarray(observation["action_mask"], dtype=bool), np.cumsum(core.head_choices)[:-1], axis=1)
        self.units = {}  # head -> (unit of each node, allowed choices per unit, a node of each unit); None: nodes
        self._base_units: dict[str, tuple] = {}
        for head, mask in zip(self.heads, masks):
            self.units[head] = _placement_units(self.graph.colocation, mask) if head == "placement" else \
                (None, mask, None)

    def decision(self, **heads) -> dict:
        """A full decision: the given heads, the env's defaults for the others."""
        return {head: heads.get(head, self.defaults[head]) for head in HEADS}

    def heuristics(self) -> list[tuple[str, dict]]:
        """The default, then each heuristic baseline of the task (C++; none simulates)."""
        out = [("default", self.decision())]
        for name in _core.baseline_names(self.core.task):
            if name in SEARCHES or name in NOT_REPRODUCIBLE:
                continue
            result = _core.solve_baseline(self.core, name, 0, 0)
            chosen = {}
            for head, choices in zip(self.heads, self.core.head_choices):
                if head == "priority":
                    chosen[head] = _core.quantize_priorities(np.asarray(result["priority"], np.float64),
                                                             int(choices)).astype(np.int16)
                else:
                    chosen[head] = np.asarray(result[head], dtype=self.defaults[head].dtype)
            out.append((f"heuristic:{name}", self.decision(**chosen)))
        return out

    def _node_values(self, head: str, unit_values: np.ndarray) -> np.ndarray:
        unit_of_node = self.units[head][0]
        values = unit_values if unit_of_node is None else unit_values[unit_of_node]
        return values.astype(self.defaults[head].dtype, copy=False)

    def random(self) -> dict:
        chosen = {}
        for head in self.heads:
            allowed = self.units[head][1]
            # argmax of random keys over the allowed choices: uniform among them
            chosen[head] = self._node_values(head, np.argmax(self.rng.random(allowed.shape) * allowed, axis=1))
        return self.decision(**chosen)

    def moves(self) -> int:
        """1..max_moves, log-uniform: as many one-move neighbours as far ones."""
        return min(self.max_moves, int(math.exp(self.rng.uniform(0.0, math.log(self.max_moves + 1)))))

    def _unit_values(self, base: dict, head: str) -> np.ndarray:
        """The base decision's value per decision unit of `head` (int64; cached for the last base)."""
        values = base[head]
        cached = self._base_units.get(head)
        if cached is None or cached[0] is not values:
            unit_of_node, _, first_node = self.units[head]
            cached = (values, (values if unit_of_node is None else values[first_node]).astype(np.int64))
            self._base_units[head] = cached
        return cached[1].copy()

    def perturb(self, base: dict, moves: int) -> dict:
        if len(self.heads) == 1:
            per_head = [moves]  # what the draw below gives with one head (integers(1) consumes nothing)
        else:
            per_head = np.bincount(self.rng.integers(len(self.heads), size=moves), minlength=len(self.heads))
        chosen = {head: base[head] for head in self.heads}  # (decisions are never written to)
        for head, count in zip(self.heads, per_head):
            allowed = self.units[head][1]
            count = min(int(count), allowed.shape[0])
            if count == 0:
                continue
            units = self.rng.choice(allowed.shape[0], size=count, replace=False)
            unit_values = self._unit_values(base, head)
            current = unit_values[units]
            keys = self.rng.random((count, allowed.shape[1])) * allowed[units]
            keys[np.arange(count), current] = 0.0  # another choice than the current one, when one is allowed
            unit_values[units] = np.where(keys.max(axis=1) > 0, np.argmax(keys, axis=1), current)
            chosen[head] = self._node_values(head, unit_values)
        return self.decision(**chosen)

    def policy(self, agent, observation: dict) -> dict:
        action = agent.act(observation, deterministic=False, colocation=self.graph.colocation)
        actions = action if isinstance(action, dict) else {self.heads[0]: action}
        return self.decision(**{head: np.asarray(actions[head], dtype=self.defaults[head].dtype)
                                for head in self.heads})


def plan(sampler: str, k: int, heuristics: int, with_agent: bool) -> dict[str, int]:
    """How many decisions of each kind: {"heuristics", "random", "policy", "perturb"}."""
    if sampler == "mix":
        first = min(k, heuristics)
        rest = k - first
        policy = rest // 4 if with_agent else 0
        return {"heuristics": first, "random": rest // 4, "policy": policy, "perturb": rest - rest // 4 - policy}
    counts = {"heuristics": 0, "random": 0, "policy": 0, "perturb": 0}
    counts[sampler] = k
    return counts


def check(sampler: str, k, max_moves, with_agent: bool) -> None:
    if sampler not in SAMPLERS:
        raise InvalidArgument(f"unknown sampler {sampler!r}; samplers: {', '.join(SAMPLERS)}")
    if not isinstance(k, int) or isinstance(k, bool) or k < 1:
        raise InvalidArgument(f"decisions_per_graph must be an integer >= 1, got {k!r}")
    if not isinstance(max_moves, int) or isinstance(max_moves, bool) or max_moves < 1:
        raise InvalidArgument(f"max_moves must be an integer >= 1, got {max_moves!r}")
    if sampler == "policy" and not with_agent:
        raise InvalidArgument("sampler 'policy' needs an agent (agent=..., --agent PATH)")


def _levels(priority) -> np.ndarray:
    values = np.asarray(priority, dtype=np.float64)
    if not np.all(values == np.round(values)):
        raise InvalidArgument("the env's default priorities are not integer levels")
    return values.astype(np.int16)


def _placement_units(colocation: np.ndarray, mask: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(unit of each node, devices every member of the unit allows, a node of each unit): a
    colocation group is one unit."""
    colocation = np.asarray(colocation, dtype=np.int64)
    alone = colocation < 0
    keys = np.where(alone, colocation.max(initial=-1) + 1 + np.cumsum(alone), colocation)
    _, unit_of_node = np.unique(keys, return_inverse=True)
    order = np.argsort(unit_of_node, kind="stable")
    starts = np.flatnonzero(np.r_[True, np.diff(unit_of_node[order]) != 0])
    allowed = np.minimum.reduceat(mask[order].astype(np.int8), starts, axis=0).astype(bool)
    return unit_of_node.astype(np.int64), allowed, order[starts]
