"""Fuzz target: clusters from JSON (Cluster.from_json) and from pickled bytes.

First byte: even -> JSON text; odd -> a payload sealed into a valid cluster
envelope and unpickled. An accepted cluster must simulate a small graph to a
finite runtime (the cluster limits keep every time finite).
"""

from __future__ import annotations

import pickle

import numpy as np

from fuzz_common import CLUSTER_MAGIC, goenv, note, rich_graph, run, seal

GRAPH = rich_graph()


def unpickle(payload: bytes) -> goenv.Cluster:
    # Cluster pickles as (reconstructor, state bytes); swap in the fuzzed bytes.
    reduced = goenv.Cluster.preset("1xgpu").__reduce_ex__(2)
    cluster = reduced[0](*reduced[1])
    cluster.__setstate__(seal(CLUSTER_MAGIC, payload))
    return cluster


def test_one_input(data: bytes) -> None:
    if not data:
        return
    try:
        cluster = goenv.Cluster.from_json(data[1:]) if data[0] % 2 == 0 else unpickle(data[1:])
    except goenv.Error as error:
        note(error)
        assert not isinstance(error, goenv.InvalidGraph), "a cluster error raised InvalidGraph"
        return
    note(f"accepted {data[0] % 2} {min(cluster.num_devices, 8)}")
    repr(cluster), [repr(d) for d in cluster.devices], cluster.links
    assert goenv.Cluster.from_json(cluster.to_json()).num_devices == cluster.num_devices
    pickle.loads(pickle.dumps(cluster))
    try:
        result = goenv.simulate(GRAPH, cluster, placement=np.arange(GRAPH.num_nodes) % cluster.num_devices)
    except goenv.Error:
        return  # e.g. a device kind the graph does not allow
    assert np.isfinite(result.runtime), f"non-finite runtime {result.runtime}"


if __name__ == "__main__":
    run(test_one_input)
