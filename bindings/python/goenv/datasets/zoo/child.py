"""Each zoo build in its own child process, with limits, so no model can take the caller down.

Children come from a multiprocessing "forkserver" whose server has torch, transformers and
goenv preloaded (zoo/preload.py): each build forks a fresh child (one model's memory never
reaches another's), sets RLIMIT_AS to what it started with plus `memory_limit` bytes, runs
with one torch thread, and sends its ZooResult back over a pipe. A child that dies (an
allocation past the limit, a crash) or outlives `time_limit` seconds (it is killed) becomes a
failed ZooResult with stage "limits"; the caller never crashes."""

from __future__ import annotations

import contextlib
import multiprocessing
import resource
import sys
import threading
import time
import types
from dataclasses import dataclass

from goenv.datasets.zoo.result import ZooResult

_PRELOAD = ["goenv.datasets.zoo.preload"]
_context = None


def context():
    """The zoo's forkserver context (preloaded once per process)."""
    global _context
    if _context is None:
        ctx = multiprocessing.get_context("forkserver")
        ctx.set_forkserver_preload(_PRELOAD)
        _context = ctx
    return _context


def _virtual_bytes() -> int:
    with open("/proc/self/statm") as statm:
        return int(statm.read().split()[0]) * resource.getpagesize()


def _child_main(connection, model_type: str, size: str, library: str, memory_limit: int) -> None:
    import os

    from goenv.datasets.zoo.builder import OFFLINE

    os.environ.update(OFFLINE)
    limit = _virtual_bytes() + int(memory_limit)
    resource.setrlimit(resource.RLIMIT_AS, (limit, limit))
    import torch

    torch.set_num_threads(1)
    try:
        from goenv.datasets.zoo.builder import build_here

        result = build_here(model_type, size, library)
    except MemoryError as error:
        result = ZooResult(model_type, size, library, stage="limits",
                           reason=f"memory limit exceeded ({memory_limit / 2**30:.2f} GiB): {str(error)[:200]}")
    except BaseException as error:  # noqa: BLE001 - reported, never raised into the parent
        result = ZooResult(model_type, size, library, stage="build", reason=f"{type(error).__name__}: {error}"[:300])
    result.peak_memory_bytes = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
    connection.send(result)
    connection.close()


_main_lock = threading.Lock()


@contextlib.contextmanager
def _main_hidden():
    """A forkserver child normally re-runs the caller's __main__ script first (the spawn rule
    that needs an `if __name__ == "__main__"` guard). The build child needs only goenv, so the
    script is hidden while the child is started: it works from any script, guarded or not."""
    with _main_lock:
        main = sys.modules.get("__main__")
        sys.modules["__main__"] = types.ModuleType("__main__")
        try:
            yield
        finally:
            if main is not None:
                sys.modules["__main__"] = main


@dataclass
class _Running:
    process: object
    connection: object
    started: float
    request: tuple


def start(model_type: str, size: str, library: str, memory_limit: int) -> _Running:
    ctx = context()
    receiver, sender = ctx.Pipe(duplex=False)
    process = ctx.Process(target=_child_main, args=(sender, model_type, size, library, int(memory_limit)),
                          name=f"zoo-{model_type}-{size}", daemon=True)
    with _main_hidden():
        process.start()
    sender.close()
    return _Running(process, receiver, time.monotonic(), (model_type, size, library))


def run_all(requests: list, processes: int, memory_limit: int, time_limit: float):
    """Runs `requests` ((model_type, size, library) each), `processes` children at a time,
    and yields their results in request order. Every running child's pipe is drained as soon
    as its result is ready, so a finished child never waits (and times out) behind a slow one."""
    from multiprocessing.connection import wait

    results: dict = {}
    running: dict = {}  # request index -> _Running
    next_start = next_yield = 0
    while next_yield < len(requests):
        while next_start < len(requests) and len(running) < processes:
            running[next_start] = start(*requests[next_start], memory_limit)
            next_start += 1
        if next_yield in results:
            yield results.pop(next_yield)
            next_yield += 1
            continue
        now = time.monotonic()
        deadline = min(r.started + time_limit for r in running.values())
        ready = wait([r.connection for r in running.values()], timeout=max(0.0, deadline - now))
        for index, r in list(running.items()):
            expired = time.monotonic() >= r.started + time_limit
            if r.connection in ready or expired or not r.process.is_alive():
                results[index] = finish(r, time_limit, memory_limit)
                del running[index]


def finish(running: _Running, time_limit: float, memory_limit: int) -> ZooResult:
    """Waits for the child (at most what is left of `time_limit`) and returns its result."""
    model_type, size, library = running.request
    remaining = max(0.0, time_limit - (time.monotonic() - running.started))
    result = None
    try:
        if running.connection.poll(remaining):
            result = running.connection.recv()
    except (EOFError, OSError):
        result = None  # the child died before sending
    elapsed = time.monotonic() - running.started
    process = running.process
    if result is None:
        if process.is_alive():
            process.kill()
            reason = f"time limit exceeded ({time_limit:g} s); killed"
        else:
            process.join()
            code = process.exitcode
            reason = (f"child died (exit code {code}), most likely memory past the limit "
                      f"({memory_limit / 2**30:.2f} GiB)")
        process.join()
        result = ZooResult(model_type, size, library, stage="limits", reason=reason, seconds=elapsed,
                           peak_memory_bytes=0)
    else:
        process.join()
    running.connection.close()
    return result
