"""The Gymnasium face of goenv's C++ environments."""

from __future__ import annotations

from typing import Any

import gymnasium
import numpy as np
from gymnasium import spaces

from goenv import _core
from goenv._core import Cluster, Graph
from goenv.clusters import get as get_cluster

VERSION = 0  # bump, with a note in README's version history, whenever dynamics change


def list_envs() -> list[str]:
    """Every env id: each registered task crossed with each registered graph."""
    return _core.list_env_ids()


def make(env_id: str, render_mode: str | None = "rgb_array", **options: Any) -> "GraphEnv":
    """Creates an environment, e.g. make("placement-inception", cluster="4xgpu-nvlink", batch_size=32).

    Options: cluster (preset name), horizon, decision_mode ("graph" | "node"),
    invalid_penalty, priority_levels, fusion_levels; any other keyword is a
    parameter of the graph builder (see goenv.datasets.info(name)).
    Gymnasium ids ("goenv/placement-inception-v0") are accepted too.
    """
    return GraphEnv(_strip_gym_id(env_id), render_mode=render_mode, **options)


def _strip_gym_id(env_id: str) -> str:
    if env_id.startswith("goenv/"):
        env_id = env_id[len("goenv/"):]
        suffix = f"-v{VERSION}"
        if env_id.endswith(suffix):
            env_id = env_id[: -len(suffix)]
    return env_id


class GraphEnv(gymnasium.Env):
    """One goenv environment (placement, scheduling, fusion or joint) on one graph.

    Observation (a Dict, the same layout for every task): static read-only views
    `node_features` (N, F), `edge_index` (2, E), `edge_features` (E, Fe); fresh
    arrays each step `node_state` (N, S), `action_mask` (N, A), `globals` (G,).
    Action: one value per node per decision head (MultiDiscrete), or one value
    for the current node in decision_mode="node" (Discrete); a Dict when the
    task decides several heads (joint).
    """

    metadata = {"render_modes": ["rgb_array"], "render_fps": 1}

    def __init__(self, env_id: str | None = None, render_mode: str | None = "rgb_array", *,
                 core: _core.Env | None = None, **options: Any):
        if core is None:
            if env_id is None:
                raise ValueError("GraphEnv needs an env id, e.g. 'placement-inception'")
            core = _core.make_env(_strip_gym_id(env_id), **options)
        if render_mode not in (None, "rgb_array"):
            raise ValueError(f"render_mode must be None or 'rgb_array', got {render_mode!r}")
        self.core = core
        self.render_mode = render_mode
        self.spec_id = core.id
        n, e = core.num_nodes, core.num_edges
        self.observation_space = spaces.Dict({
            "node_features": spaces.Box(-np.inf, np.inf, (n, core.node_feature_dim), np.float32),
            "edge_index": spaces.Box(0, max(n - 1, 0), (2, e), np.int64),
            "edge_features": spaces.Box(-np.inf, np.inf, (e, core.edge_feature_dim), np.float32),
            "node_state": spaces.Box(-np.inf, np.inf, (n, core.node_state_dim), np.float32),
            "action_mask": spaces.Box(0, 1, (n, core.action_mask_width), np.int8),
            "globals": spaces.Box(-np.inf, np.inf, (core.global_dim,), np.float32),
        })
        heads = {
            name: spaces.Discrete(choices) if core.node_mode
            else spaces.MultiDiscrete(np.full(n, choices, dtype=np.int64))
            for name, choices in zip(core.heads, core.head_choices)
        }
        self.action_space = next(iter(heads.values())) if len(heads) == 1 else spaces.Dict(heads)

    @classmethod
    def from_graph(cls, task: str, graph: Graph, cluster: str | Cluster, render_mode: str | None = None,
                   **options: Any) -> "GraphEnv":
        """An env for `task` on your own graph (from a file, an importer, Graph.from_arrays)."""
        return cls(render_mode=render_mode, core=_core.make_env_on_graph(task, graph, get_cluster(cluster), **options))

    def reset(self, *, seed: int | None = None, options: dict | None = None):
        super().reset(seed=seed)
        obs, info = self.core.reset(int(self.np_random.integers(2**63)))
        return obs, info

    def step(self, action):
        return self.core.step(action)

    def render(self):
        if self.render_mode != "rgb_array":
            return None
        from goenv.render import gantt_rgb

        return gantt_rgb(self.graph, self.cluster, self.core.last_result, title=self.core.id)

    def get_state(self) -> bytes:
        """A snapshot of the episode; set_state() on an env of the same task, graph and cluster
        (this one, a copy, or one in another process) reproduces the same future."""
        return self.core.get_state()

    def set_state(self, state: bytes) -> None:
        self.core.set_state(state)

    _OPTIONS = ("horizon", "decision_mode", "invalid_penalty", "priority_levels", "fusion_levels",
                "max_fusion_size", "placement", "priority")

    def __getstate__(self) -> dict:
        config = self.core.config
        return {
            "task": self.core.task,
            "graph": self.graph,
            "cluster": self.cluster,
            "options": {key: config[key] for key in self._OPTIONS},
            "state": self.core.get_state(),
            "render_mode": self.render_mode,
        }

    def __setstate__(self, saved: dict) -> None:
        core = _core.make_env_on_graph(saved["task"], saved["graph"], saved["cluster"], **saved["options"])
        core.set_state(saved["state"])
        self.__init__(render_mode=saved["render_mode"], core=core)

    @property
    def graph(self) -> Graph:
        return self.core.graph

    @property
    def cluster(self) -> Cluster:
        return self.core.cluster

    def __repr__(self) -> str:
        return f"<GraphEnv {self.core.id}: {self.core.num_nodes} nodes on {self.cluster.name}>"

    __str__ = __repr__


def _register_with_gymnasium() -> None:
    for env_id in list_envs():
        gym_id = f"goenv/{env_id}-v{VERSION}"
        if gym_id not in gymnasium.registry:
            gymnasium.register(id=gym_id, entry_point="goenv.envs:GraphEnv", kwargs={"env_id": env_id},
                               vector_entry_point="goenv.vector:make_vec_from_gym")


_register_with_gymnasium()
