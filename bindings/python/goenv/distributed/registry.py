"""The weight version registry: one small actor holding the newest weights' reference.

The learner puts each weight version into the object store once and publishes
the reference here; workers ask for it only when their version is older. The
registry never touches the weights themselves (the reference travels wrapped
in a list, so Ray does not resolve it), so its work per version does not grow
with the model. Workers long-poll (`latest(known, wait)` returns when a newer
version is published or `wait` seconds pass), so the registry answers each
worker about once per version, not once per rollout. On a cluster each node's
object store then pulls one copy and serves all the node's workers from it:
Menger's per-cell cache.
"""

from __future__ import annotations

import asyncio

import ray


@ray.remote(num_cpus=0, max_concurrency=100_000)  # async actor: one waiting call per worker costs nothing
class WeightRegistry:
    def __init__(self) -> None:
        self._version = -1
        self._holder: list = []
        self._publishes = 0
        self._answers = 0
        self._changed: asyncio.Event | None = None

    def _event(self) -> asyncio.Event:
        if self._changed is None:  # created inside the actor's event loop
            self._changed = asyncio.Event()
        return self._changed

    async def publish(self, version: int, holder: list) -> None:
        """`holder` is [ObjectRef]; versions only move forward. Wakes the waiting workers."""
        if version > self._version:
            self._version, self._holder = int(version), list(holder)
            self._publishes += 1
            event, self._changed = self._event(), asyncio.Event()
            event.set()

    async def latest(self, known_version: int, wait: float = 0.0):
        """(version, [ref]) when newer than `known_version`, else None; with `wait` > 0
        first waits up to that many seconds for a newer version."""
        if self._version <= known_version and wait > 0:
            try:
                await asyncio.wait_for(self._event().wait(), wait)
            except asyncio.TimeoutError:
                pass
        if self._version <= known_version:
            return None
        self._answers += 1
        return self._version, self._holder

    async def version(self) -> int:
        return self._version

    async def stats(self) -> dict:
        return {"version": self._version, "publishes": self._publishes, "answers": self._answers}
