"""Labelling on Ray: N actors label whole shards; the caller writes what they return.

Ray's own ActorPool hands the shards out (no scheduler of goenv's), each actor runs the same
label_shard as a single process, and results come back as Parquet bytes, so the files are
byte-identical whatever the worker count. A shard's work lives only in its actor until it
returns: a run killed while N shards are in flight labels those N again when resumed.
"""

from __future__ import annotations

from typing import Iterator

from goenv.labels.sources import Source


class ShardLabeller:
    """One Ray actor: labels shards of one source and configuration."""

    def __init__(self, source: Source, config: dict, agent_bytes: bytes | None):
        import goenv  # noqa: F401 (sets the OpenMP wait policy before anything runs)

        self.source, self.config, self.agent_bytes = source, config, agent_bytes

    def label(self, shard: dict) -> dict:
        from goenv.labels.folder import label_shard

        return label_shard(self.source, self.config, shard["index"], shard["first"], shard["count"],
                           self.agent_bytes)


def label_on_ray(source: Source, config: dict, shards: list[dict], agent_bytes: bytes | None, workers: int,
                 address: str | None) -> Iterator[dict]:
    """Labels `shards` on `workers` actors, yielding each result as it finishes (any order)."""
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
        actors = [labeller.remote(source, config, agent_ref) for _ in range(min(workers, len(shards)))]
        yield from ActorPool(actors).map_unordered(lambda actor, shard: actor.label.remote(shard), shards)
    finally:
        for actor in actors:
            ray.kill(actor)
        session.shutdown(started)
