"""goenv: reinforcement-learning environments for ML-compiler graph optimization.

    import goenv
    env = goenv.make("placement-inception")
    obs, info = env.reset(seed=0)
    obs, reward, terminated, truncated, info = env.step(env.action_space.sample())

Units everywhere: seconds, bytes, and FLOPs with a multiply-accumulate counted as 2.
"""

import os as _os

# Idle OpenMP threads sleep instead of spinning: on a busy machine spinning made make_vec's
# default thread count 5-30x slower than one thread (tests/benchmarks/vector_under_load_bench.py).
# Read once, when the OpenMP runtime loads with goenv._core; set the variable yourself to override.
_os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")

from goenv._core import (  # noqa: E402
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
    op_type_names,
)
from goenv import agents, baselines, clusters, datasets, wrappers  # noqa: E402
from goenv.envs import GraphEnv, list_envs, make  # noqa: E402
from goenv.simulation import lower_bound, simulate  # noqa: E402
from goenv.vector import GraphVectorEnv, make_vec  # noqa: E402

__version__ = "0.3.0"

__all__ = [
    "agents", "Cluster", "Device", "Error", "Graph", "GraphEnv", "InvalidAction", "InvalidArgument", "InvalidGraph",
    "Link", "NotFound", "ResetNeeded", "SimulationResult", "baselines", "clusters", "datasets", "list_envs",
    "GraphVectorEnv", "lower_bound", "make", "make_vec", "op_type_names", "simulate", "wrappers",
]
