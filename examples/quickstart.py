"""The first five minutes with goenv: make an env, step it, compare baselines, simulate by hand, draw."""

import numpy as np

import goenv

env = goenv.make("placement-inception")  # Inception-v3 training step on 2 V100s (NVLink)
obs, info = env.reset(seed=0)
print(env, "| default placement:", f"{info['runtime'] * 1e3:.1f} ms")
print({key: value.shape for key, value in obs.items()})

# One whole-graph decision per step: a device for every op. Any placement is valid:
# colocation groups (a variable and its update op) follow their members' majority device.
obs, reward, terminated, truncated, info = env.step(env.action_space.sample())
print(f"random placement: {info['runtime'] * 1e3:.1f} ms, reward {reward:+.3f}, "
      f"{info['colocation_moved']} nodes moved to keep their groups together")

# A baseline's decisions are a valid action.
metis = goenv.baselines.solve(env, "metis")
obs, info = env.reset(seed=0)
obs, reward, terminated, truncated, info = env.step(metis["action"])
print(f"metis: {info['runtime'] * 1e3:.1f} ms, reward {reward:+.4f}, "
      f"lower bound {goenv.baselines.lower_bound(env) * 1e3:.1f} ms")

# The simulator directly, with fusion (XLA-style priorities: 1 for every fusible op).
graph = env.graph
result = goenv.simulate(graph, "2xgpu-nvlink", placement=metis["placement"], fusion=np.ones(graph.num_nodes, np.int64))
print(result, "kernels:", len(np.unique(result.kernel)), "peak memory (GiB):", np.round(result.peak_memory / 2**30, 2))

image = env.render()  # RGB Gantt chart of the last adopted schedule
print("rendered", image.shape)
