"""Vectorized goenv: B environments stepped by the C++ engine (OpenMP threads,
GIL released) behind the gymnasium.vector.VectorEnv API.

    venv = goenv.make_vec("placement-inception", num_envs=16, num_threads=2)
    obs, info = venv.reset(seed=0)                 # env i gets seed 0 + i
    obs, reward, terminated, truncated, info = venv.step(venv.action_space.sample())

Batching follows the graphs:

* one graph for every env (one id, or one GraphEnv repeated): the single env's
  observation stacked, (B, N, ...), exactly `batch_space(single_observation_space)`.
  The static parts (`node_features`, `edge_index`, `edge_features`) are one
  read-only copy broadcast over B (stride 0), never copied.
* several graphs, `make_vec([id_a, id_b, ...])`: PyG-style concatenation: node
  rows of all envs one after another (`node_features`, `node_state`,
  `action_mask`: (sum N, ...)), `edge_index` (2, sum E) already offset to those
  rows, `batch` (sum N,) giving each row's env, and `num_nodes`/`num_edges` (B,).
  Actions: (sum N,) in the same order, or (B, max N) padded (extra entries ignored).
* `pad_to=(max_nodes, max_edges)`: fixed shapes (B, max_nodes, ...), padded node
  rows zero (their action mask too), padded `edge_index` entries -1, plus
  `num_nodes`/`num_edges`; actions (B, max_nodes), padded entries ignored.

Autoreset is Gymnasium's NEXT_STEP: after a step reports terminated or
truncated, the next step ignores that env's action and returns its reset
observation with reward 0. Results are identical for any num_threads.

`copy=True` (default, Gymnasium's vector `copy` semantics) returns new memory for
every array every step, so a kept observation is never overwritten or shared:
the static parts too, copied once per step (still one read-only copy broadcast
over B where the graph is the same). `copy=False` returns views of buffers the
engine reuses (valid until the next step or reset) and the same static arrays
every step: no allocation at all. `share_static=True` keeps copy=True's fresh
dynamic arrays but hands out the same read-only static arrays every step.
"""

from __future__ import annotations

import os
from typing import Any, Sequence

import gymnasium
import numpy as np
from gymnasium import spaces
from gymnasium.vector import AutoresetMode
from gymnasium.vector.utils import batch_space

import goenv._core as _core
from goenv._core import InvalidArgument, ResetNeeded
from goenv.arguments import checked_bytes, checked_flag, checked_int
from goenv.envs import GraphEnv, core_env, parse_gym_id, readonly_copy
from goenv.spaces import action_space, observation_space

__all__ = ["GraphVectorEnv", "make_vec", "make_vec_from_gym"]

# Bad input never allocates without bound: envs in one vector env, and their nodes in all (each
# node's batched observation is tens of bytes; 2**27 nodes are several GB).
MAX_ENVS = 65_536
MAX_TOTAL_NODES = 2**27


def make_vec(id_or_ids: str | GraphEnv | Sequence[str | GraphEnv], num_envs: int | None = None,
             num_threads: int | None = None, pad_to: tuple[int, int] | None = None, copy: bool = True,
             max_episode_steps: int | None = None, render_mode: str | None = None, share_static: bool = False,
             **options: Any) -> "GraphVectorEnv":
    """A vector env stepped in C++ with OpenMP.

    id_or_ids: an env id ("placement-inception", or the Gymnasium id), a GraphEnv
      to clone (your own graph: GraphEnv.from_graph), or a list of those; env i is
      entry i % len(list).
    num_envs: B; default 1 for a single entry, len(list) for a list.
    num_threads: OpenMP threads (default: min(B, available cores)). Results do not depend on it.
    pad_to: (max_nodes, max_edges) for fixed padded shapes.
    copy: fresh result arrays every step (True) or reused buffers (False).
    share_static: with copy=True, the same read-only static arrays every step (zero-copy).
    max_episode_steps: truncate episodes after this many steps (default: none; the
      env's own horizon terminates them).
    render_mode: None or "rgb_array" (render() returns one Gantt chart per env).
    options: as goenv.make (cluster, horizon, decision_mode, ..., graph parameters);
      only with ids, not with GraphEnv entries.
    """
    render_mode = _checked_render_mode(render_mode)
    entries = [id_or_ids] if isinstance(id_or_ids, (str, GraphEnv, _core.Env)) else list(id_or_ids)
    if not entries:
        raise InvalidArgument("make_vec needs at least one env id or GraphEnv")
    if num_envs is None:
        num_envs = len(entries)
    num_envs = checked_int("num_envs", num_envs, low=1, high=MAX_ENVS)
    if num_threads is None:
        num_threads = min(num_envs, _available_cores())
    num_threads = _checked_num_threads(num_threads)
    if max_episode_steps is not None:
        max_episode_steps = checked_int("max_episode_steps (or None)", max_episode_steps)
    copy = checked_flag("copy", copy)
    templates = []
    built: dict[tuple, _core.Env] = {}  # one template per (id, version): -v1 and -v2 observe differently
    for i in range(num_envs):
        entry = entries[i % len(entries)]
        if isinstance(entry, str):
            env_id, version = parse_gym_id(entry)
            if (env_id, version) not in built:
                env_options = dict(options)
                if version is not None:  # a Gymnasium id names its observation version
                    env_options.setdefault("observation_version", version)
                built[env_id, version] = core_env(env_id, **env_options)
            templates.append(built[env_id, version])
        elif isinstance(entry, (GraphEnv, _core.Env)):
            if options:
                raise InvalidArgument(f"options {sorted(options)} apply to env ids; a GraphEnv keeps its own options")
            templates.append(entry.core if isinstance(entry, GraphEnv) else entry)
        else:
            raise TypeError(f"make_vec takes env ids or GraphEnv instances, got {type(entry).__name__}")
    total_nodes = sum(template.num_nodes for template in templates)
    if total_nodes > MAX_TOTAL_NODES:  # before the batches are allocated (gigabytes)
        raise InvalidArgument(f"make_vec: {num_envs} envs of {total_nodes:,} nodes in all; at most "
                              f"{MAX_TOTAL_NODES:,} nodes in one vector env (use fewer envs)")
    if pad_to is not None:
        pad_to = _checked_pad_to(pad_to)
    core = _core.VectorEnv(templates, num_threads=int(num_threads), pad_to=pad_to,  # in [1, MAX_THREADS]
                           max_episode_steps=int(max_episode_steps or 0), copy=copy)
    share_static = checked_flag("share_static", share_static)
    venv = GraphVectorEnv(core)
    venv.render_mode = render_mode
    venv.share_static = share_static
    return venv


def make_vec_from_gym(env_id: str, num_envs: int = 1, render_mode: str | None = None,
                      max_episode_steps: int | None = None, **kwargs: Any) -> "GraphVectorEnv":
    """The `vector_entry_point` of every goenv Gymnasium id: gymnasium.make_vec calls
    it as (num_envs=..., **spec kwargs, **user kwargs); spec kwargs carry env_id."""
    return make_vec(env_id, num_envs=num_envs, max_episode_steps=max_episode_steps, render_mode=render_mode,
                    **kwargs)


def _checked_render_mode(render_mode: str | None) -> str | None:
    if render_mode not in (None, "rgb_array"):
        raise InvalidArgument(f"render_mode must be None or 'rgb_array', got {render_mode!r}")
    return render_mode


def _available_cores() -> int:
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except (AttributeError, OSError):
        return max(1, os.cpu_count() or 1)


class ClosedVectorEnv(gymnasium.error.ClosedEnvironmentError, RuntimeError):
    """A closed vector env was used (Gymnasium's error for it, and a RuntimeError as before)."""


class GraphVectorEnv(gymnasium.vector.VectorEnv):
    """B goenv environments of one task, stepped together by the C++ engine.

    Observations are dicts of batched arrays (see the module docstring for the
    three layouts); infos hold the info keys a vector env reports
    (goenv.info_fields(), "vector"), each with Gymnasium's `_key` mask of the envs
    that report it.
    """

    metadata = {"autoreset_mode": AutoresetMode.NEXT_STEP, "render_modes": ["rgb_array"]}

    # Arrays that describe the graphs and never change during an episode.
    _STATIC_KEYS = ("node_features", "edge_index", "edge_features", "batch", "num_nodes", "num_edges",
                    "device_features")

    def __init__(self, core: _core.VectorEnv):
        self.core = core
        self.num_envs = core.num_envs
        self.layout = core.layout
        self.share_static = False
        self._spaces: dict[str, gymnasium.Space] | None = None

    # -- spaces ------------------------------------------------------------
    # Each built on its first access, alone: a Box stores its bounds at full size
    # (~10 bytes per element), which for 64 envs on an 80k-node graph is gigabytes
    # the engine itself never needs (and a single space must not pay for the batch's).
    def _space(self, name: str) -> gymnasium.Space:
        if self._spaces is None:
            self._spaces = {}
        if name not in self._spaces:
            self._spaces[name] = self._built_space(name)  # raises (and keeps nothing) when closed
        return self._spaces[name]

    def _set_space(self, name: str, value: gymnasium.Space) -> None:
        self._space(name)
        self._spaces[name] = value

    observation_space = property(lambda self: self._space("observation_space"),
                                 lambda self, v: self._set_space("observation_space", v))
    action_space = property(lambda self: self._space("action_space"),
                            lambda self, v: self._set_space("action_space", v))
    single_observation_space = property(lambda self: self._space("single_observation_space"),
                                        lambda self, v: self._set_space("single_observation_space", v))
    single_action_space = property(lambda self: self._space("single_action_space"),
                                   lambda self, v: self._set_space("single_action_space", v))

    def _built_space(self, name: str) -> gymnasium.Space:
        c = self._open_core()
        b, num_nodes, num_edges = c.num_envs, c.num_nodes, c.num_edges

        def count(rows: int):
            return spaces.Box(0, rows, (), np.int64)

        # Single spaces: env 0's (stacked, concatenated) or the padded shape.
        rows = c.max_nodes if self.layout == "padded" else num_nodes[0]
        if name == "single_observation_space":
            if self.layout == "padded":
                return observation_space(c, rows, c.max_edges, edge_low=-1,
                                         extra={"num_nodes": count(rows), "num_edges": count(c.max_edges)})
            return observation_space(c, num_nodes[0], num_edges[0])
        if name == "single_action_space":
            return action_space(c, None if c.node_mode else rows)
        if self.layout != "concatenated" or (name == "action_space" and c.node_mode):
            return batch_space(self._space("single_" + name), b)
        # concatenated: fixed shapes over all envs
        n, e = c.total_nodes, c.total_edges
        if name == "action_space":
            return action_space(c, n)
        return observation_space(c, n, e, batch=b, extra={
            "batch": spaces.Box(0, b - 1, (n,), np.int64),
            "num_nodes": spaces.Box(0, max(num_nodes), (b,), np.int64),
            "num_edges": spaces.Box(0, max(num_edges), (b,), np.int64),
        })

    # -- the API -----------------------------------------------------------
    def reset(self, *, seed: int | Sequence[int | None] | None = None, options: dict | None = None):
        """seed: None (fresh entropy), an int (env i gets seed + i) or one seed per env.
        options: {"reset_mask": bool array (B,)} resets only those envs; {"start": ...} starts
        this reset's episodes from a start's name ("heft", "best-heuristic", ...), from given
        decisions {head: values} (every env), or from a list with one of those or None (the env's
        own start) per env, checked before any env changes; later autoresets begin from each
        env's own start (as a single env's options, they apply to this reset only)."""
        self._check_open()
        b = self.num_envs
        if seed is None:
            seeds = np.random.SeedSequence().generate_state(b, np.uint64)
        elif isinstance(seed, (int, np.integer)) and not isinstance(seed, bool):
            if seed < 0:
                raise InvalidArgument(f"seed must be >= 0, got {seed}")
            super().reset(seed=int(seed))
            # Like the single env, any size of int: env i gets (seed + i) mod 2**64.
            seeds = np.array([(int(seed) + i) % 2**64 for i in range(b)], dtype=np.uint64)
        else:
            if isinstance(seed, (str, bytes, bool)) or not isinstance(seed, (Sequence, np.ndarray)):
                raise InvalidArgument(f"seed must be None, a non-negative int or one per env, got {seed!r}")
            seed = list(seed)
            if len(seed) != b:
                raise InvalidArgument(f"seed has {len(seed)} entries; the vector env has num_envs={b}")
            fresh = np.random.SeedSequence().generate_state(b, np.uint64)
            seeds = np.array([fresh[i] if s is None else _checked_seed(s) for i, s in enumerate(seed)],
                             dtype=np.uint64)
        mask = start = None
        if options:
            unknown = set(options) - {"reset_mask", "start"}
            if unknown:
                raise InvalidArgument(f"unknown reset options {sorted(unknown)}; supported: reset_mask, start")
            mask, start = options.get("reset_mask"), options.get("start")
            if mask is not None and (not isinstance(mask, np.ndarray) or mask.dtype != np.bool_ or mask.shape != (b,)):
                raise InvalidArgument(f"options['reset_mask'] must be a bool numpy array of shape ({b},)")
            if mask is not None and not mask.any():
                raise InvalidArgument("options['reset_mask'] must select at least one env")
            if isinstance(start, np.ndarray):  # a placement, as a single env's reset takes it
                start = {"placement": start}
        core = self._open_core()
        obs, info = core.reset(seeds, mask, start)
        return self._owned(obs, core), info

    def step(self, actions):
        """actions: batched like action_space (see the module docstring for multi-graph
        layouts). Returns (obs, reward (B,) float64, terminated (B,), truncated (B,), info)."""
        core = self._open_core()  # one reference: another thread may close() meanwhile
        obs, reward, terminated, truncated, info = core.step(actions)
        return self._owned(obs, core), reward, terminated, truncated, info

    def _owned(self, obs: dict, core) -> dict:
        """copy=True: new memory for the static arrays too (a stride-0 broadcast stays one copy)."""
        if core.copy and not self.share_static:
            for key in self._STATIC_KEYS:
                a = obs.get(key)
                if a is None:
                    continue
                if a.ndim > 1 and a.strides[0] == 0:
                    obs[key] = np.broadcast_to(a[0].copy(), a.shape)
                else:
                    obs[key] = readonly_copy(a)
        return obs

    def render(self) -> tuple[np.ndarray, ...] | None:
        """One rgb_array Gantt chart of the last schedule per env (render_mode="rgb_array")."""
        if self.render_mode != "rgb_array":
            return None
        self._check_open()
        from goenv.render import gantt_rgb

        c = self.core
        results = [c.last_result(i) for i in range(c.num_envs)]
        for i, result in enumerate(results):  # no schedule to draw yet: as GraphEnv.render says it
            if len(result.start) != c.graph(i).num_nodes:
                raise ResetNeeded(f"vector env: env {i} ({c.ids[i]}): render() called before reset()")
        return tuple(gantt_rgb(c.graph(i), c.cluster(i), results[i], title=c.ids[i]) for i in range(c.num_envs))

    def best(self, index: int) -> dict[str, np.ndarray]:
        """Env `index`'s best adopted decisions of its episode so far, {head: (N,) array} (what
        info["best"] holds for a GraphEnv; info["best_runtime"] is their runtime). An episode that
        just ended keeps them until its autoreset, the next step."""
        return self._open_core().best(checked_int("index", index, 0, self.num_envs - 1))

    def close_extras(self, **kwargs: Any) -> None:
        self.core = None

    def _check_open(self) -> None:
        self._open_core()

    def _open_core(self):
        """The native vector env, or a clear error once close() was called (a call that already
        holds it finishes on it)."""
        core = self.core
        if core is None:
            raise ClosedVectorEnv("the vector env is closed: make a new one with goenv.make_vec")
        return core

    # -- extras ------------------------------------------------------------
    def get_state(self) -> bytes:
        """Every env's snapshot plus the autoreset flags; set_state() on this or an
        identically made vector env reproduces the same future."""
        self._check_open()
        return self.core.get_state()

    def set_state(self, state: bytes) -> None:
        self._check_open()
        self.core.set_state(bytes(checked_bytes(state, "set_state takes the bytes get_state() returned")))

    @property
    def num_threads(self) -> int:
        return self._open_core().num_threads

    @num_threads.setter
    def num_threads(self, value: int) -> None:
        self._open_core().num_threads = _checked_num_threads(value)

    @property
    def copy(self) -> bool:
        return self._open_core().copy

    @copy.setter
    def copy(self, value: bool) -> None:
        self._open_core().copy = checked_flag("copy", value)

    @property
    def ids(self) -> list[str]:
        return self._open_core().ids

    def __repr__(self) -> str:
        if self.core is None:
            return "<GraphVectorEnv (closed)>"
        c = self.core
        return (f"<GraphVectorEnv {c.task}: {c.num_envs} envs, {c.layout}, {c.num_threads} threads, "
                f"{c.total_nodes} nodes in all>")


def _checked_seed(seed) -> int:
    return checked_int("a seed (or None)", seed) % 2**64  # as an int seed: any size, taken mod 2**64


def _checked_num_threads(value) -> int:
    return checked_int("num_threads", value, 1, _core.MAX_THREADS)  # the core's limit, checked there too


# The graph limits of the core (core/graph.h: kMaxNodes, kMaxEdges).
_MAX_PAD_NODES = 2**21
_MAX_PAD_EDGES = 2**23


def _checked_pad_to(pad_to) -> tuple[int, int]:
    """(max_nodes, max_edges) as two ints within the graph limits, or a ValueError naming the problem."""
    try:
        values = tuple(pad_to)
    except TypeError:
        raise InvalidArgument(f"pad_to must be (max_nodes, max_edges), got {pad_to!r}") from None
    if len(values) != 2 or any(isinstance(x, bool) or not isinstance(x, (int, np.integer)) for x in values):
        raise InvalidArgument(f"pad_to must be two ints (max_nodes, max_edges), got {pad_to!r}")
    nodes, edges = (int(x) for x in values)
    if not 1 <= nodes <= _MAX_PAD_NODES or not 0 <= edges <= _MAX_PAD_EDGES:
        raise InvalidArgument(f"pad_to=({nodes}, {edges}) is outside the graph limits: max_nodes in "
                              f"[1, {_MAX_PAD_NODES}], max_edges in [0, {_MAX_PAD_EDGES}]")
    return nodes, edges
