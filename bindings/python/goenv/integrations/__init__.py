"""Graph encoders for RL libraries that know nothing about graphs.

    from stable_baselines3 import PPO
    import goenv.integrations.sb3
    model = PPO(goenv.integrations.sb3.GraphPolicy, env)               # per-node logits, masked

    from ray.rllib.core.rl_module.rl_module import RLModuleSpec
    import goenv.integrations.rllib
    RLModuleSpec(module_class=goenv.integrations.rllib.GraphModule)   # the same encoder in RLlib

`encoder` is plain PyTorch (one message-passing encoder over the observation's
`edge_index`, a per-node choice head and a value head); `sb3` and `rllib` wrap it
for their library and import that library, so `import goenv` (and this package)
imports neither: each is an optional extra (`goenv[sb3]`, `goenv[rllib]`).
Data flows one way: these modules read goenv envs and wrappers, never the reverse.
"""

import importlib

__all__ = ["encoder", "rllib", "sb3"]


def __getattr__(name: str):
    if name in __all__:
        return importlib.import_module(f"{__name__}.{name}")
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
