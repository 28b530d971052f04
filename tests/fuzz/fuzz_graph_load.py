"""Fuzz target: loading graphs (binary envelope, resealed binary payload, JSON, files).

First byte: 0 raw bytes -> Graph.from_bytes; 1 payload sealed into a valid
envelope (reaches the decoder past the checksum); 2 JSON -> Graph.from_json;
3 the bytes written to a file -> Graph.load (".goenv" or ".json" by the next byte).
An accepted graph must work in every accessor and round-trip.
"""

from __future__ import annotations

import os
import tempfile

from fuzz_common import GRAPH_MAGIC, goenv, note, run, seal

_TMP = tempfile.mkdtemp(prefix="goenv-fuzz-")


def load(data: bytes) -> goenv.Graph:
    mode, body = data[0] % 4, data[1:]
    if mode == 0:
        return goenv.Graph.from_bytes(body)
    if mode == 1:
        return goenv.Graph.from_bytes(seal(GRAPH_MAGIC, body))
    if mode == 2:
        return goenv.Graph.from_json(body)
    suffix = ".json" if body[:1] == b"{" else ".goenv"
    path = os.path.join(_TMP, "input" + suffix)
    with open(path, "wb") as f:
        f.write(body)
    return goenv.Graph.load(path)


def test_one_input(data: bytes) -> None:
    if not data:
        return
    try:
        graph = load(data)
    except goenv.Error as error:
        note(error)
        return
    note(f"accepted {data[0] % 4} {min(graph.num_nodes, 8)} {min(graph.num_edges, 8)}")
    # Accepted: a valid graph, every accessor works (names are str), it round-trips.
    repr(graph), graph.names, graph.shapes, graph.op_type_names, graph.cost_us, graph.edge_index
    assert graph.total_flops >= 0 and graph.total_param_bytes >= 0
    again = goenv.Graph.from_bytes(graph.to_bytes())
    assert again.num_nodes == graph.num_nodes and again.num_edges == graph.num_edges
    assert goenv.Graph.from_json(graph.to_json()).num_nodes == graph.num_nodes


if __name__ == "__main__":
    run(test_one_input)
