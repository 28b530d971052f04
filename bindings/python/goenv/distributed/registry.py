"""The weight version registry: one small actor holding the newest weights' reference.

The learner puts each weight version into the object store once and publishes
the reference here; workers ask for it only when their version is older. The
registry never touches the weights themselves (the reference travels wrapped
in a list, so Ray does not resolve it), so its work per version is constant in
the number of workers. On a cluster each node's object store then pulls one
copy and serves all the node's workers from it: Menger's per-cell cache.
"""

from __future__ import annotations

import ray


@ray.remote(num_cpus=0)
class WeightRegistry:
    def __init__(self) -> None:
        self._version = -1
        self._holder: list = []
        self._publishes = 0
        self._answers = 0

    def publish(self, version: int, holder: list) -> None:
        """`holder` is [ObjectRef]; versions only move forward."""
        if version > self._version:
            self._version, self._holder = int(version), list(holder)
            self._publishes += 1

    def latest(self, known_version: int):
        """(version, [ref]) when newer than `known_version`, else None."""
        if self._version <= known_version:
            return None
        self._answers += 1
        return self._version, self._holder

    def version(self) -> int:
        return self._version

    def stats(self) -> dict:
        return {"version": self._version, "publishes": self._publishes, "answers": self._answers}
