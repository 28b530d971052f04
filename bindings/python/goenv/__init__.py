"""goenv: reinforcement-learning environments for ML-compiler graph optimization.

    import goenv
    env = goenv.make("placement-inception")
    obs, info = env.reset(seed=0)
    obs, reward, terminated, truncated, info = env.step(env.action_space.sample())

Units everywhere: seconds, bytes, and FLOPs with a multiply-accumulate counted as 2.
"""

# _openmp comes first (it sorts first too): it sets GOMP_SPINCOUNT before goenv._core loads OpenMP.
from goenv import _openmp, agents, baselines, clusters, datasets, labels, wrappers
from goenv._core import (
    Cluster,
    Device,
    Error,
    Graph,
    InvalidAction,
    InvalidArgument,
    InvalidGraph,
    Link,
    NotFound,
    ResetNeeded,
    SimulationResult,
    info_fields,
    observation_fields,
    op_type_names,
    option_fields,
)
from goenv.envs import GraphEnv, list_envs, make
from goenv.provenance import __version__
from goenv.simulation import lower_bound, simulate
from goenv.vector import GraphVectorEnv, make_vec

# goenv.datasets.label and the rest of labelling live in goenv.labels, which builds on goenv.datasets
# (never the reverse); users find them beside the datasets they label, so they join that namespace here.
_LABELS_IN_DATASETS = ("Labels", "export_tpugraphs", "label", "open_labels")
vars(datasets).update({name: getattr(labels, name) for name in _LABELS_IN_DATASETS})
datasets.__all__ += _LABELS_IN_DATASETS

__all__ = [
    "agents", "Cluster", "Device", "Error", "Graph", "GraphEnv", "InvalidAction", "InvalidArgument", "InvalidGraph",
    "Link", "NotFound", "ResetNeeded", "SimulationResult", "baselines", "clusters", "datasets", "info_fields", "list_envs",
    "GraphVectorEnv", "lower_bound", "make", "make_vec", "observation_fields", "op_type_names", "option_fields",
    "simulate", "wrappers",
]


def __getattr__(name: str):
    # goenv.integrations (and goenv.distributed) after a plain `import goenv`: imported on first
    # use, as it imports an RL library that most users never need. goenv.labels imports
    # goenv.distributed already (its address and Ray checks); Ray itself loads only when a run uses it.
    if name in ("distributed", "integrations"):
        import importlib

        return importlib.import_module(f"goenv.{name}")
    raise AttributeError(f"module 'goenv' has no attribute {name!r}")
