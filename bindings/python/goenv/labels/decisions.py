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
from goenv.arguments import checked_int

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
        for head, mask in zip(self.heads, masks):
            self.units[head] = _placement_units(self.graph.colocation, mask) if head == "placement" else \
                (None, mask, None)

    def decision(self, **heads) -> dict:
        """One full decision: the given heads, the env's defaults for the others."""
        return {head: heads.get(head, self.defaults[head]) for head in HEADS}

    def heuristics(self) -> list[tuple[str, dict]]:
        """The default, then each heuristic baseline of the task (C++; its decisions only: draw
        simulates them all in one batch)."""
        out = [("default", self.decision())]
        for name in _core.baseline_names(self.core.task):
            if name in SEARCHES or name in NOT_REPRODUCIBLE:
                continue
            result = _core.solve_baseline(self.core, name, 0, 0, measure=False)
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
        """(count, units) values per decision unit -> (count, nodes) values per node."""
        unit_of_node = self.units[head][0]
        values = unit_values if unit_of_node is None else unit_values[:, unit_of_node]
        return values.astype(self.defaults[head].dtype, copy=False)

    def _stacked(self, count: int, chosen: dict) -> dict:
        """`count` full decisions as {head: (count, nodes) array}: the chosen heads, the env's
        defaults for the others."""
        return {head: chosen[head] if head in chosen else
                np.broadcast_to(self.defaults[head], (count, len(self.defaults[head]))) for head in HEADS}

    def random(self, count: int) -> dict:
        """`count` uniformly random decisions, drawn at once (stacked: {head: (count, nodes)})."""
        chosen = {}
        for head in self.heads:
            allowed = self.units[head][1]
            units, choices = allowed.shape
            if allowed.all():  # every choice allowed everywhere (the usual case): one bounded draw
                drawn = self.rng.integers(choices, size=(count, units))
            else:
                # the r-th allowed choice of each unit, r uniform below the unit's number of them
                # (a unit that allows none keeps choice 0); r from uniform floats, which numpy
                # draws several times faster than integers below a bound per unit
                listed = np.argsort(~allowed, axis=1, kind="stable")  # the allowed choices first, in order
                bound = np.maximum(allowed.sum(axis=1), 1)
                ranks = np.minimum((self.rng.random((count, units)) * bound).astype(np.int64), bound - 1)
                drawn = listed[np.arange(units), ranks]
            chosen[head] = self._node_values(head, drawn)
        return self._stacked(count, chosen)

    def moves(self, count: int) -> np.ndarray:
        """`count` move counts in 1..max_moves, log-uniform: as many one-move neighbours as far ones."""
        drawn = np.exp(self.rng.uniform(0.0, math.log(self.max_moves + 1), size=count)).astype(np.int64)
        return np.minimum(self.max_moves, drawn)

    def perturb(self, base: dict, moves: np.ndarray) -> dict:
        """One decision per entry of `moves`: `base` with that many units given another allowed
        choice (each move picks a head at random when there are several), drawn at once (stacked)."""
        count = len(moves)
        if len(self.heads) == 1:
            per_head = moves[None, :]
        else:
            head_of_move = self.rng.integers(len(self.heads), size=int(moves.sum()))
            decision_of_move = np.repeat(np.arange(count), moves)
            per_head = np.zeros((len(self.heads), count), np.int64)
            np.add.at(per_head, (head_of_move, decision_of_move), 1)
        chosen = {}
        for head, counts in zip(self.heads, per_head):
            if not counts.any():
                continue
            unit_of_node, allowed, first_node = self.units[head]
            units = allowed.shape[0]
            counts = np.minimum(counts, units)
            order = _distinct(self.rng, units, counts)
            rows, ranks = np.nonzero(np.arange(order.shape[1])[None, :] < counts[:, None])
            moved = order[rows, ranks]
            base_units = (base[head] if unit_of_node is None else base[head][first_node]).astype(np.int64)
            unit_values = np.tile(base_units, (count, 1))
            current = unit_values[rows, moved]
            keys = self.rng.random((len(moved), allowed.shape[1])) * allowed[moved]
            keys[np.arange(len(moved)), current] = 0.0  # another choice than the current one, when one is allowed
            unit_values[rows, moved] = np.where(keys.max(axis=1) > 0, np.argmax(keys, axis=1), current)
            chosen[head] = self._node_values(head, unit_values)
        return self._stacked(count, {head: chosen.get(head, np.broadcast_to(base[head], (count, len(base[head]))))
                                     for head in self.heads})

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


# A graph's decisions are labelled in memory at once: K x N values per per-node column (start,
# finish, each decided head), so both K and K x N are bounded (a few GB at the limit).
MAX_DECISIONS_PER_GRAPH = 2**16
MAX_VALUES_PER_GRAPH = 2**27


def check_size(k: int, num_nodes: int, graph_name: str) -> None:
    """InvalidArgument before a graph's labels would take more than MAX_VALUES_PER_GRAPH values."""
    if k * num_nodes > MAX_VALUES_PER_GRAPH:
        raise InvalidArgument(f"graph {graph_name!r}: {k} decisions x {num_nodes} nodes is more than "
                              f"{MAX_VALUES_PER_GRAPH} per-node values in memory at once; lower decisions_per_graph")


def check(sampler: str, k, max_moves, with_agent: bool) -> None:
    if sampler not in SAMPLERS:
        raise InvalidArgument(f"unknown sampler {sampler!r}; samplers: {', '.join(SAMPLERS)}")
    checked_int("decisions_per_graph", k, 1, MAX_DECISIONS_PER_GRAPH)
    checked_int("max_moves", max_moves, 1)
    if sampler == "policy" and not with_agent:
        raise InvalidArgument("sampler 'policy' needs an agent (agent=..., --agent PATH)")


def _distinct(rng: np.random.Generator, units: int, counts: np.ndarray) -> np.ndarray:
    """Row i's first counts[i] entries: distinct units drawn uniformly (a random subset in random
    order). Drawn with replacement and a row redrawn while it repeats one: moves are few against
    the units, so a redraw is rare and no row pays for all the units (as a permutation would)."""
    most = int(counts.max())
    if 2 * most > units:  # many of the units: the first entries of a permutation
        return np.argsort(rng.random((len(counts), units)), axis=1)[:, :most]
    drawn = rng.integers(units, size=(len(counts), most))
    unused = -1 - np.arange(most)  # distinct values no unit has, in the entries past counts[i]
    first = np.arange(most)[None, :] < counts[:, None]
    while True:
        repeated = (np.diff(np.sort(np.where(first, drawn, unused), axis=1), axis=1) == 0).any(axis=1)
        if not repeated.any():
            return drawn
        drawn[repeated] = rng.integers(units, size=(int(repeated.sum()), most))


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
