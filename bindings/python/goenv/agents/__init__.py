"""Reference agents for goenv, written in LibTorch: PPO and the GO policy.

    import goenv.agents
    agent = goenv.agents.GO(hidden=64, segment_length=512, seed=0)
    agent.train(["placement-inception"], total_steps=20_000, log_dir="runs/go")
    action = agent.act(obs, deterministic=True)
    agent.evaluate(["placement-inception"])   # {"placement-inception": {"runtime": ..., "speedup": ...}}
    agent.save("go.agent"); goenv.agents.load("go.agent")

    agent.imitate(["placement-inception"])            # warm start: copy the best heuristic
    agent.optimize(env, budget=16)                    # best of 16 decisions (+ local_search_budget=...)
    goenv.agents.pretrained("go-placement")            # the shipped placer, for graphs it never saw
    goenv.agents.algorithms(); goenv.agents.make_agent("go", seed=0)   # the registry, by name

`PPO` is GraphSAGE with per-node MLP heads; `GO` follows "Transferable Graph
Optimizers for ML Compilers" (Zhou et al., NeurIPS 2020): GraphSAGE node
embeddings, segment-recurrent (Transformer-XL-style) attention over the nodes
in topological order, FiLM conditioned on a graph embedding, one output layer
per decision head. Both train with PPO in C++ (no Python in the loop).

Importing this package does not import torch; creating an agent does, and
raises ImportError with the fix when torch (or goenv's agents module) is missing.
goenv._agents is linked against one torch build (its C++ ABI): importing this
package raises ImportError, naming both versions, when another torch is already
imported or is the one installed.
"""

import importlib.metadata
import sys

from goenv.agents.agent import GO, PPO, PRETRAINED, Agent, load, load_bytes, options, pretrained
from goenv.agents.registry import algorithms, make_agent


def _public_version(version: str) -> str:
    """2.13.0+cpu -> 2.13.0: CPU and CUDA wheels of one release share the C++ ABI goenv uses."""
    return version.split("+", 1)[0]


def _check_torch_abi() -> None:
    """Fail early and clearly instead of with undefined symbols (or a crash) in goenv._agents."""
    try:
        from goenv.agents import _torch_build  # written by agents/CMakeLists.txt with goenv._agents
    except ImportError:
        return  # built without agents, or run from a source tree: nothing to compare against
    torch = sys.modules.get("torch")
    if torch is not None:
        found, how = getattr(torch, "__version__", "unknown"), f"imported from {getattr(torch, '__file__', '?')}"
    else:
        try:
            found, how = importlib.metadata.version("torch"), "installed"
        except importlib.metadata.PackageNotFoundError:
            return  # no torch at all: creating an agent says how to install it
    if _public_version(str(found)) == _public_version(_torch_build.TORCH_VERSION):
        return
    pinned = _public_version(_torch_build.TORCH_VERSION)
    raise ImportError(
        f"goenv's agents were built against torch {_torch_build.TORCH_VERSION}, but torch {found} is {how}; "
        f"one process can hold only one torch. Install the pinned one (pip install 'torch=={pinned}') "
        "or rebuild goenv against yours (its torch pins in pyproject.toml, then pip install .).")


_check_torch_abi()

__all__ = ["GO", "PPO", "PRETRAINED", "Agent", "algorithms", "load", "load_bytes", "make_agent", "options", "pretrained"]
