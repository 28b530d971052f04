"""The first five minutes with goenv: make an env, step it, simulate by hand, draw the schedule."""

import numpy as np

import goenv

env = goenv.make("placement-inception")  # Inception-v3 training step on 2 V100s (NVLink)
obs, info = env.reset(seed=0)
print(env, "| default placement:", f"{info['runtime'] * 1e3:.1f} ms")
print({key: value.shape for key, value in obs.items()})

# One whole-graph decision per step: a device for every op.
obs, reward, terminated, truncated, info = env.step(env.action_space.sample())
print(f"random placement: reward {reward:+.3f}, invalid={info['invalid']} ({info['invalid_reason'][:60]}...)")

# The simulator directly: split the graph in two by topological position.
graph = env.graph
placement = np.zeros(graph.num_nodes, dtype=np.int64)
placement[graph.topological_order[graph.num_nodes // 2:]] = 1
result = goenv.simulate(graph, "2xgpu-nvlink", placement=placement)
print(result, "peak memory (GiB):", np.round(result.peak_memory / 2**30, 2),
      "| lower bound:", f"{goenv.lower_bound(graph, '2xgpu-nvlink') * 1e3:.1f} ms")

image = env.render()  # RGB Gantt chart of the last adopted schedule
print("rendered", image.shape)
