"""The learner: PPO updates on rollouts from the workers, bounded policy lag, one
weight publish per version, checkpoints.

It lives in the driver process (its state is never on a worker that can die) and
uses CUDA when the agent's device allows it (device="auto"). Rollouts sampled
more than `max_lag` versions ago are dropped; those within the bound are
importance-corrected by PPO's ratio to the sampling policy's log-probability.
"""

from __future__ import annotations

import time
from collections import Counter

import numpy as np
import ray


class Learner:
    def __init__(self, agent, envs: list, registry, max_lag: int) -> None:
        if isinstance(max_lag, bool) or not isinstance(max_lag, (int, np.integer)) or max_lag < 0:
            raise ValueError(f"max_lag must be a non-negative integer, got {max_lag!r}")
        self.agent = agent
        self.agent.set_envs(envs, sampled=[])  # the graphs for update(); refuses mismatched specs
        self.registry = registry
        self.max_lag = int(max_lag)
        self.lags: Counter = Counter()  # lag -> rollouts used, since the last update
        self.dropped = 0                # rollouts older than max_lag, over the run
        self._reference = None          # the newest published weights (kept alive: we own them)
        self.publish_seconds = 0.0

    @property
    def version(self) -> int:
        return self.agent.weights_version

    def publish(self) -> float:
        """Puts the current weights into the object store once and hands the reference to the
        registry; returns the seconds it took (the learner's whole serving work per version)."""
        start = time.perf_counter()
        reference = ray.put(self.agent.weights)
        ray.get(self.registry.publish.remote(self.version, [reference]))
        self._reference = reference
        self.publish_seconds = time.perf_counter() - start
        return self.publish_seconds

    def accept(self, rollouts: list[dict]) -> list[dict]:
        """The rollouts within the lag bound; the others are counted and dropped."""
        kept = []
        for rollout in rollouts:
            lag = self.version - int(rollout["policy_version"])
            if lag > self.max_lag:
                self.dropped += 1
                continue
            self.lags[lag] += 1
            kept.append(rollout)
        return kept

    def update(self, rollouts: list[dict]) -> dict:
        """One PPO update, then one publish of the new version."""
        start = time.perf_counter()
        metrics = self.agent.update(rollouts)
        metrics["update_seconds"] = time.perf_counter() - start
        metrics["publish_seconds"] = self.publish()
        metrics["version"] = self.version
        metrics["lag_histogram"] = dict(sorted(self.lags.items()))
        metrics["dropped_rollouts"] = self.dropped
        self.lags.clear()
        return metrics

    def save(self, path) -> None:
        """A checkpoint in goenv.agents.load's format, over the run's earlier one (the path was
        checked before training)."""
        self.agent.save(path, overwrite=True)
