"""The Gymnasium face of goenv's C++ environments."""

from __future__ import annotations

import dataclasses
import os
from typing import Any

import gymnasium
import numpy as np

import goenv._core as _core
from goenv._core import Cluster, Graph, InvalidArgument, NotFound, ResetNeeded
from goenv.arguments import checked_bytes, checked_flag
from goenv.clusters import get as get_cluster
from goenv.spaces import action_space, observation_space

# The observation version of Gymnasium ids "goenv/<id>-v<N>" (bump, with a note in
# CHANGELOG.md, whenever the observation or the dynamics change):
# v1 the graph, node and global arrays; v2 adds per-device arrays and node slack.
# Every version stays registered; goenv.make gives the latest unless told.
VERSION = _core.OBSERVATION_VERSION
VERSIONS = tuple(range(1, VERSION + 1))


def list_envs() -> list[str]:
    """Every env id: each registered task crossed with each registered graph."""
    return _core.list_env_ids()


DEFAULT_CLUSTER = "2xgpu-nvlink"  # for your own graphs, when no cluster is given


def make(env_id: str, render_mode: str | None = "rgb_array", *, graph: Graph | str | os.PathLike | None = None,
         share_static: bool = False, **options: Any) -> "GraphEnv":
    """Creates an environment, e.g. make("placement-inception", cluster="4xgpu-nvlink", batch_size=32).

    env_id: "<task>-<graph>" (goenv.list_envs()), its Gymnasium id
      ("goenv/placement-inception-v1"), or just a task ("placement") together with
      `graph=`: a goenv.Graph (Graph.from_arrays, datasets.from_torch, ...) or the
      path of a graph file (.goenv binary or .json), on `cluster` (default
      "2xgpu-nvlink").
    share_static: False (default) hands out new memory for every observation array
      each step, as Gymnasium requires; True hands out the same read-only static
      arrays (node_features, edge_index, edge_features) every step: zero-copy, for
      agents that know (it fails check_env's data-reuse check by design).
    Options: goenv.option_fields() (cluster, horizon, decision_mode, colocation,
      ...); any other keyword is a parameter of the graph builder
      (goenv.datasets.info(name)).
    """
    if not isinstance(env_id, str):
        raise InvalidArgument(f"env_id must be a string such as 'placement-inception' (goenv.list_envs()), "
                              f"got {type(env_id).__name__}")
    if graph is not None:
        if env_id not in _core.task_names():
            raise NotFound(f"with graph=, the first argument is a task ({', '.join(_core.task_names())}), "
                                  f"got {env_id!r}")
        if isinstance(graph, (str, os.PathLike)):
            graph = Graph.load(os.fspath(graph))
        elif not isinstance(graph, Graph):
            raise TypeError(f"graph must be a goenv.Graph or the path of a graph file, got {type(graph).__name__}")
        cluster = options.pop("cluster", DEFAULT_CLUSTER)
        return GraphEnv.from_graph(env_id, graph, cluster, render_mode=render_mode, share_static=share_static,
                                   **options)
    if env_id in _core.task_names():
        raise NotFound(f"'{env_id}' is a task: give it a graph (goenv.make({env_id!r}, graph=g_or_path)) "
                              f"or use an id such as '{env_id}-inception' (goenv.list_envs())")
    env = GraphEnv(env_id, render_mode=render_mode, share_static=share_static, **options)
    env.spec = _spec_for(env.core.id, env.core.observation_version, render_mode, share_static, options)
    return env


def _spec_for(env_id: str, version: int, render_mode, share_static: bool,
              options: dict) -> gymnasium.envs.registration.EnvSpec:
    """The Gymnasium spec of a registered id with these options, as gymnasium.make would set it."""
    spec = gymnasium.spec(f"goenv/{env_id}-v{version}")
    options = {k: v for k, v in options.items() if k != "observation_version"}  # the id says it
    kwargs = dict(spec.kwargs, **options)
    if share_static:
        kwargs["share_static"] = True
    if render_mode != "rgb_array":
        kwargs["render_mode"] = render_mode
    return dataclasses.replace(spec, kwargs=kwargs)


def strip_gym_id(env_id: str) -> str:
    """goenv's id of a Gymnasium id ("goenv/placement-inception-v1" -> "placement-inception"); others as they are."""
    return parse_gym_id(env_id)[0]


def parse_gym_id(env_id: str) -> tuple[str, int | None]:
    """(goenv id, observation version) of a Gymnasium id ("goenv/placement-inception-v1" ->
    ("placement-inception", 1)); a plain goenv id comes back with version None."""
    if env_id.startswith("goenv/"):
        env_id = env_id[len("goenv/"):]
        for version in VERSIONS:
            suffix = f"-v{version}"
            if env_id.endswith(suffix):
                return env_id[: -len(suffix)], version
    return env_id, None


class GraphEnv(gymnasium.Env):
    """One goenv environment (placement, scheduling, fusion or joint) on one graph.

    Observation (a Dict, the same layout for every task): `node_features` (N, F),
    `edge_index` (2, E), `edge_features` (E, Fe) describe the graph and never
    change; `node_state` (N, S), `action_mask` (N, A), `globals` (G,) describe the
    decisions. Version 2 (the default; observation_version=1 or a "-v1" id for
    the old layout) adds `device_features` (D, Fd), static, and `device_state`
    (D, Sd), and the node's slack as node_state's last column, so a policy can
    score (node, device) pairs on any cluster. Every array is new memory each
    step, the static ones read-only (with share_static=True they are the same
    read-only arrays every step instead).

    Episodes start from the env's start (option `start`: "default" or a
    baseline's name such as "best-heuristic"), or from this reset's
    `options={"start": ...}`: a name, or decisions {head: values} (an array is
    a placement). With horizon > 1 every step changes the decisions in force and
    the next observation shows their schedule; info["best"] and
    info["best_runtime"] hold the episode's best decisions.
    Action: one value per node per decision head (MultiDiscrete), or one value
    for the current node in decision_mode="node" (Discrete); a Dict when the
    task decides several heads (joint).
    """

    metadata = {"render_modes": ["rgb_array"], "render_fps": 1}

    def __init__(self, env_id: str | None = None, render_mode: str | None = "rgb_array", *,
                 core: _core.Env | None = None, share_static: bool = False, **options: Any):
        self.share_static = checked_flag("share_static", share_static)
        if core is None:
            if env_id is None:
                raise InvalidArgument("GraphEnv needs an env id, e.g. 'placement-inception'")
            env_id, version = parse_gym_id(env_id)
            if version is not None and options.setdefault("observation_version", version) != version:
                raise InvalidArgument(f"observation_version={options['observation_version']} contradicts the id's "
                                      f"-v{version}")
            core = core_env(env_id, **options)
        if render_mode not in (None, "rgb_array"):
            raise InvalidArgument(f"render_mode must be None or 'rgb_array', got {render_mode!r}")
        self.core = core
        self.render_mode = render_mode
        self._last_mask = None
        self._current_node: int | None = None
        self._current_column = core.num_devices + _core.node_state_names().index("current")
        self._starts: dict[str, dict] = {}  # start names resolved on this env (deterministic)
        self.spec_id = core.id
        self.observation_space = observation_space(core, core.num_nodes, core.num_edges)
        self.action_space = action_space(core, None if core.node_mode else core.num_nodes)

    @classmethod
    def from_graph(cls, task: str, graph: Graph, cluster: str | Cluster, render_mode: str | None = None,
                   share_static: bool = False, **options: Any) -> "GraphEnv":
        """An env for `task` on your own graph (from a file, an importer, Graph.from_arrays)."""
        return cls(render_mode=render_mode, share_static=share_static,
                   core=_core.make_env_on_graph(task, graph, get_cluster(cluster), **options))

    def reset(self, *, seed: int | None = None, options: dict | None = None):
        """options: {"start": ...} starts this episode (only) from a baseline's decisions
        ("best-heuristic", "heft", ...; "default" the compiler's) or given decisions
        ({"placement": ..., ...}; an array is a placement). Checked before anything
        changes: an unknown name raises NotFound, infeasible decisions InvalidArgument."""
        start = self._start_of(options)
        super().reset(seed=seed)
        obs, info = self.core.reset(int(self.np_random.integers(2**63)), start)
        return self._owned(obs), info

    RESET_OPTIONS = ("start",)

    def _start_of(self, options: dict | None) -> dict | None:
        if options is None:
            return None
        if not isinstance(options, dict):
            raise InvalidArgument(f"reset options must be a dict, got {type(options).__name__}")
        unknown = sorted(set(options) - set(self.RESET_OPTIONS))
        if unknown:
            raise InvalidArgument(f"unknown reset option(s) {unknown}; known: {list(self.RESET_OPTIONS)}")
        start = options.get("start")
        if start is None:
            return None
        if isinstance(start, str):
            if start not in self._starts:
                self._starts[start] = _core.start_decisions(self.core, start)
            return self._starts[start]
        if isinstance(start, dict):
            return start
        if "placement" not in self.core.heads:
            raise InvalidArgument(f"{self.core.id}: an array start is a placement, and this task decides "
                                  f"{self.core.heads}; give a dict {{head: values}}")
        return {"placement": start}

    def set_start(self, start) -> None:
        """Makes every later reset start from `start` (a name or decisions, as in reset's options)."""
        decisions = self._start_of({"start": start})
        if decisions is None:
            start, decisions = "default", _core.start_decisions(self.core, "default")
        self.core.set_start(decisions, start if isinstance(start, str) else "")

    @property
    def start(self) -> dict:
        """The decisions every reset starts from ({head: values})."""
        return self.core.start

    def step(self, action):
        obs, reward, terminated, truncated, info = self.core.step(action)
        return self._owned(obs), reward, terminated, truncated, info

    _STATIC_KEYS = ("node_features", "edge_index", "edge_features", "device_features")

    def action_masks(self) -> np.ndarray:
        """Which choices the last observation allows, flat bool: node after node (the
        layout of sb3-contrib's MaskablePPO for a MultiDiscrete action); in node mode the
        current node's choices. Under colocation="follow" every allowed choice is valid."""
        if self._last_mask is None:
            raise _core.ResetNeeded(f"{self.core.id}: action_masks() called before reset()")
        mask = self._last_mask.astype(bool)
        if self.core.node_mode:
            current = self._current_node
            return mask[current] if current is not None else np.ones(mask.shape[1], dtype=bool)
        return mask.reshape(-1)

    @property
    def current_node(self) -> int | None:
        """decision_mode="node": the node the next step decides (None after the episode's last
        step, or in graph mode)."""
        return self._current_node

    def _owned(self, obs: dict) -> dict:
        """New memory for the static arrays too, unless share_static (Gymnasium's contract:
        an observation kept by the caller is never the same object as a later one)."""
        self._last_mask = obs["action_mask"]
        if self.core.node_mode:
            flags = np.flatnonzero(obs["node_state"][:, self._current_column] == 1)
            self._current_node = int(flags[0]) if len(flags) else None
        if not self.share_static:
            for key in self._STATIC_KEYS:
                if key in obs:
                    obs[key] = readonly_copy(obs[key])
        return obs

    def render(self):
        if self.render_mode != "rgb_array":
            return None
        if not self.core.started:  # no schedule to draw yet (Gymnasium: render after reset)
            raise ResetNeeded(f"{self.core.id}: render() called before reset()")
        from goenv.render import gantt_rgb

        return gantt_rgb(self.graph, self.cluster, self.core.last_result, title=self.core.id)

    def get_state(self) -> bytes:
        """A snapshot of the episode; set_state() on an env of the same task, graph and cluster
        (this one, a copy, or one in another process) reproduces the same future."""
        return self.core.get_state()

    def set_state(self, state: bytes) -> None:
        self.core.set_state(bytes(checked_bytes(state, "set_state takes the bytes get_state() returned")))

    # The options that rebuild an env on its graph and cluster (envs/spec.h; the cluster travels apart).
    OPTIONS = tuple(field["name"] for field in _core.option_fields() if field["name"] != "cluster")

    def __getstate__(self) -> dict:
        return {
            "task": self.core.task,
            "graph": self.graph,
            "cluster": self.cluster,
            "options": env_options(self.core),
            "start": env_start(self.core),
            "state": self.core.get_state(),
            "render_mode": self.render_mode,
            "share_static": self.share_static,
        }

    def __setstate__(self, saved: dict) -> None:
        core = _core.make_env_on_graph(saved["task"], saved["graph"], saved["cluster"], **saved["options"])
        if saved.get("start") is not None:  # under the name it was made or set with, if any
            core.set_start(saved["start"], start_name(saved["options"]))
        core.set_state(saved["state"])
        self.__init__(render_mode=saved["render_mode"], core=core, share_static=saved.get("share_static", False))

    @property
    def graph(self) -> Graph:
        return self.core.graph

    @property
    def cluster(self) -> Cluster:
        return self.core.cluster

    def __repr__(self) -> str:
        return f"<GraphEnv {self.core.id}: {self.core.num_nodes} nodes on {self.cluster.name}>"

    __str__ = __repr__


def core_env(env_id: str, **options: Any) -> "_core.Env":
    """_core.make_env(env_id, **options), where `cluster` may also be a goenv.Cluster: the id's
    graph (built with the graph builder's parameters among `options`) on that cluster."""
    cluster = options.get("cluster")
    if not isinstance(cluster, Cluster):
        return _core.make_env(env_id, **options)
    graph_of_id = _core.make_env(env_id, **{k: v for k, v in options.items()
                                            if k not in ("cluster", "placement", "priority", "start")})
    env_keywords = {k: v for k, v in options.items() if k != "cluster"}
    return _core.make_env_on_graph(graph_of_id.task, graph_of_id.graph, cluster, **env_keywords)


def env_options(core: "_core.Env") -> dict:
    """The options that rebuild `core` on its graph and cluster (_core.make_env_on_graph keywords);
    a start of given decisions is "default" there, its decisions travel in env_start."""
    config = core.config
    options = {key: config[key] for key in GraphEnv.OPTIONS}
    if options["start"] == "given":
        options["start"] = "default"
    return options


def env_start(core: "_core.Env") -> dict | None:
    """The decisions `core`'s resets begin from when a start was set ({head: values}; set_start
    on the rebuilt env restores it, under start_name(options)), else None (none set, or
    "default" set by name: the initial decisions)."""
    return dict(core.start) if core.has_start and core.config["start"] != "default" else None


def start_name(options: dict) -> str:
    """The name a rebuilt env's start of carried decisions (env_start) goes by: the named start
    of `options` (env_options), or "" for decisions given as such."""
    return "" if options.get("start", "default") == "default" else options["start"]


def readonly_copy(array: np.ndarray) -> np.ndarray:
    """New memory, still read-only: the static arrays describe the graph, not the caller's state."""
    copy = array.copy()
    copy.flags.writeable = False
    return copy


def _register_with_gymnasium() -> None:
    for env_id in list_envs():
        for version in VERSIONS:
            gym_id = f"goenv/{env_id}-v{version}"
            if gym_id not in gymnasium.registry:
                gymnasium.register(id=gym_id, entry_point="goenv.envs:GraphEnv",
                                   kwargs={"env_id": env_id, "observation_version": version},
                                   vector_entry_point="goenv.vector:make_vec_from_gym")


_register_with_gymnasium()
