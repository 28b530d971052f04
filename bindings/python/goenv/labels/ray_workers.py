"""Labelling on Ray: each shard is a Ray task, at most N of them running at once; the caller
records them.

Each task runs the same label_shard as a single process, on one thread. A task that sees the
caller's folder (its probe file: the same machine, or a file system they share) writes the
shard's files into it itself, so the caller's process does not serialize the writing of N
workers; one that does not (another machine, a Ray Client cluster) returns them as Parquet
bytes for the caller to write. Either way the files are byte-identical whatever the worker
count. A shard counts as done once the caller records it: a run killed while N shards are in
flight labels those N again when resumed (their files, if written, are replaced).

Tasks rather than actors: Ray keeps its worker processes between tasks, so a second labelling in
the same Ray session (or on a running cluster) starts on workers that have goenv imported and the
source open, where every run of actors started N new processes (about 0.5-0.9 s each here), and
an idle worker holds no CPU of the cluster's. Ray schedules the tasks; the caller only keeps N in
flight (Ray's pattern for limiting pending tasks, with ray.wait).
"""

from __future__ import annotations

import json
import os
from typing import Iterator

from goenv.distributed import session
from goenv.labels.shard import label_shard
from goenv.labels.sources import Source

_OPEN: dict[str, Source] = {}  # this worker process's last source, open (a dataset's files read once)


def _opened(source: Source, identity: dict) -> Source:
    """The source this process already has open for the same description and content, else
    `source`, which replaces it (identity carries the dataset's or files' checksums: a dataset
    regenerated in place is opened again)."""
    key = json.dumps([source.kind, source.spec, source.cluster, identity], sort_keys=True, default=str)
    if key not in _OPEN:
        _OPEN.clear()
        _OPEN[key] = source
    return _OPEN[key]


def label_shard_task(source: Source, identity: dict, config: dict, agent_bytes: bytes | None, root: str, probe: str,
                     shard: dict) -> dict:
    """One shard, labelled in a Ray worker: its manifest entries if the worker sees the caller's
    folder (the probe file there), else its files' bytes."""
    sees = os.path.isfile(os.path.join(root, probe))
    return label_shard(_opened(source, identity), config, shard["index"], shard["first"], shard["count"], agent_bytes,
                       root if sees else None, pipelined=False)


def label_on_ray(source: Source, identity: dict, config: dict, shards: list[dict], agent_bytes: bytes | None,
                 workers: int, address: str | None, root: str, probe: str) -> Iterator[dict]:
    """Labels `shards` as Ray tasks, `workers` at a time, yielding each result as it finishes (any
    order); tasks that see the file `probe` in `root` (an absolute path) write their files there."""
    import ray

    if not shards:
        return
    started = session.connect(address, num_cpus=workers if address is None else None)
    running: set = set()  # the shards in flight, as object refs
    try:
        task = ray.remote(num_cpus=1)(label_shard_task)
        shared = [ray.put(value) for value in (source, identity, config, agent_bytes)]
        waiting = list(reversed(shards))
        while waiting or running:
            while waiting and len(running) < workers:
                running.add(task.remote(*shared, root, probe, waiting.pop()))
            done, _ = ray.wait(list(running), num_returns=1)
            for ref in done:
                running.remove(ref)
                yield ray.get(ref)
    finally:
        for ref in running:  # a failure or an interrupt: stop the shards still in flight
            ray.cancel(ref, force=True)
        session.shutdown(started)
