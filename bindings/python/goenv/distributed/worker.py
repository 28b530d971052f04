"""RolloutWorker: a Ray actor that samples rollouts with its own copy of the policy.

Each worker owns env copies of its share of the graphs (a C++ vector env inside
the agent) and runs inference locally (Menger, Acme), so the learner sends
weights, never actions. Rollouts return through the object store as dicts of
numpy arrays, tagged with the policy version that produced them.
"""

from __future__ import annotations

import os
import time

import ray

from goenv.agents import make_agent
from goenv.distributed.weight_client import WeightClient


@ray.remote
class RolloutWorker:
    def __init__(self, index: int, envs: list, sampled: list[int], options: dict, registry, stream: int) -> None:
        options = dict(options)
        algorithm = options.pop("algorithm")
        self.index = index
        self.agent = make_agent(algorithm, **options)
        self.agent.set_envs(envs, sampled=sampled, stream=stream)
        self.client = WeightClient(registry)
        self.version = -1  # no learner weights yet: the first sample() waits for them
        self.rollouts = 0

    def _apply(self, fetched) -> None:
        if fetched is not None and fetched[0] > self.version:
            self.agent.set_weights(fetched[1], fetched[0])
            self.version = fetched[0]

    def sample(self, min_version: int) -> dict:
        """One collect() with weights of version >= min_version (waits only if older)."""
        waited = 0.0
        self._apply(self.client.take())
        if self.version < min_version:
            start = time.perf_counter()
            self.client.wait_for(min_version)
            self._apply(self.client.take())
            waited = time.perf_counter() - start
        start, cpu = time.perf_counter(), time.process_time()
        rollouts = self.agent.collect()
        seconds, cpu_seconds = time.perf_counter() - start, time.process_time() - cpu
        self.client.poll()  # fetch a newer version, if any, while the learner consumes this one
        self.rollouts += 1
        return {
            "worker": self.index,
            "version": self.version,
            "rollouts": rollouts,
            "samples": int(sum(r["copies"] * r["steps"] for r in rollouts)),
            "sample_seconds": seconds,
            "sample_cpu_seconds": cpu_seconds,  # all of this process's threads
            "weight_wait_seconds": waited,
        }

    def info(self) -> dict:
        return {"worker": self.index, "pid": os.getpid(), "version": self.version, "rollouts": self.rollouts,
                "fetches": self.client.fetches, "node": ray.get_runtime_context().get_node_id()}
