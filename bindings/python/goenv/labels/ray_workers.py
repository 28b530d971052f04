"""Labelling on Ray: N actors label whole shards; the caller records them in the manifest.

Ray's own ActorPool hands the shards out (no scheduler of goenv's) and each actor runs the
same label_shard as a single process, on one thread: an actor that sees the caller's folder
(its probe file: the same machine, or a file system they share) writes the shard's files into
it itself, so the caller's process does not serialize the writing of N actors; one that does
not (another machine, a Ray Client cluster) returns them as Parquet bytes for the caller to
write. Either way the files are byte-identical whatever the worker count. A shard counts as
done once the caller records it: a run killed while N shards are in flight labels those N
again when resumed (their files, if written, are replaced).
"""

from __future__ import annotations

from typing import Iterator

from goenv.labels.sources import Source


class ShardLabeller:
    """One Ray actor: labels shards of one source and configuration."""

    def __init__(self, source: Source, config: dict, agent_bytes: bytes | None, root: str, probe: str):
        import os

        import goenv  # noqa: F401 (sets the OpenMP wait policy before anything runs)

        self.source, self.config, self.agent_bytes = source, config, agent_bytes
        # the caller's folder (absolute) if this actor sees it, by the probe file the caller put there
        self.root = root if os.path.isfile(os.path.join(root, probe)) else None

    def label(self, shard: dict) -> dict:
        from goenv.labels.folder import label_shard

        return label_shard(self.source, self.config, shard["index"], shard["first"], shard["count"],
                           self.agent_bytes, self.root, pipelined=False)


def label_on_ray(source: Source, config: dict, shards: list[dict], agent_bytes: bytes | None, workers: int,
                 address: str | None, root: str, probe: str) -> Iterator[dict]:
    """Labels `shards` on `workers` actors, yielding each result as it finishes (any order);
    actors that see the file `probe` in `root` (an absolute path) write their files there."""
    import ray
    from ray.util import ActorPool

    from goenv.distributed import session

    if not shards:
        return
    started = session.connect(address, num_cpus=workers if address is None else None)
    actors = []
    try:
        labeller = ray.remote(num_cpus=1)(ShardLabeller)
        agent_ref = ray.put(agent_bytes)
        actors = [labeller.remote(source, config, agent_ref, root, probe) for _ in range(min(workers, len(shards)))]
        yield from ActorPool(actors).map_unordered(lambda actor, shard: actor.label.remote(shard), shards)
    finally:
        for actor in actors:
            ray.kill(actor)
        session.shutdown(started)
