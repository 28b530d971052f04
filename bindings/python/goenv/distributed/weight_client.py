"""A rollout worker's view of the learner's weights (Acme's VariableClient).

poll() starts a background fetch and returns at once (a fetch already running
is left to finish; it long-polls the registry until a newer version comes, so it
asks about once per version), so sampling never waits for the learner; take() hands the
newest fetched weights to the sampling thread, which copies them into its
policy between rollouts. wait_for() blocks only when the worker's version is
older than the learner allows (bounded policy lag).
"""

from __future__ import annotations

import threading
import time

import ray


class WeightClient:
    def __init__(self, registry, wait: float = 2.0) -> None:
        self._registry = registry
        self._wait = wait  # seconds a background question waits at the registry for a new version
        self._lock = threading.Lock()
        self._pending: tuple[int, object] | None = None
        self._thread: threading.Thread | None = None
        self._error: BaseException | None = None
        self.known_version = -1  # newest version fetched (applied or pending)
        self.fetches = 0

    def _fetch_once(self, known: int, wait: float) -> tuple[int, object] | None:
        answer = ray.get(self._registry.latest.remote(known, wait))
        if answer is None:
            return None
        version, (reference,) = answer
        weights = ray.get(reference)  # read-only, zero-copy from this node's object store
        return int(version), weights

    def _store(self, fetched: tuple[int, object] | None) -> None:
        if fetched is None:
            return
        with self._lock:
            if fetched[0] > self.known_version:
                self._pending, self.known_version = fetched, fetched[0]
                self.fetches += 1

    def _background(self, known: int) -> None:
        # Ask again until a newer version comes: a fetch that gave up while a long rollout ran
        # would leave the next rollout on old weights, to be dropped as stale by the learner.
        try:
            while True:  # a daemon thread: it ends with the worker
                fetched = self._fetch_once(known, self._wait)
                if fetched is not None:
                    self._store(fetched)
                    return
        except BaseException as error:  # noqa: BLE001 (re-raised on the sampling thread)
            self._error = error

    def poll(self) -> None:
        """Starts a fetch of a newer version in the background, unless one is running."""
        if self._thread is not None and self._thread.is_alive():
            return
        self._thread = threading.Thread(target=self._background, args=(self.known_version,), daemon=True,
                                        name="goenv-weight-client")
        self._thread.start()

    def take(self) -> tuple[int, object] | None:
        """The newest fetched (version, weights) not handed out yet, or None."""
        if self._error is not None:
            error, self._error = self._error, None
            raise error
        with self._lock:
            pending, self._pending = self._pending, None
        return pending

    def wait_for(self, min_version: int, timeout: float = 300.0) -> None:
        """Blocks until a version >= min_version has been fetched."""
        deadline = time.monotonic() + timeout
        if self._thread is not None:
            self._thread.join(timeout)
        while self.known_version < min_version:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise TimeoutError(f"weights version {min_version} was not published within {timeout:.0f} s")
            self._store(self._fetch_once(self.known_version, min(1.0, remaining)))
