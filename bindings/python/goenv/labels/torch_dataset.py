"""A PyTorch Dataset over a labelled dataset: one item per graph with its K decisions,
as plain tensors in PyG's conventions (no torch_geometric needed).

    data = goenv.labels.torch_dataset.LabelledGraphs("data/rl-labels")
    loader = torch.utils.data.DataLoader(data, batch_size=4, collate_fn=collate)
    for batch in loader: batch["x"], batch["edge_index"], batch["batch"], batch["placement"], batch["runtime"]

An item: x float32 (N, F) static node features, edge_index int64 (2, E) producer -> consumer,
op_type int64 (N,), placement / priority / fusion int64 (K, N), runtime float64 (K,)
seconds, oom bool (K,), num_nodes, num_devices, graph_id. collate concatenates graphs
PyG-style: nodes stacked, edge_index offset, `batch` the graph of each node, decisions
(K, sum N), runtime (B, K) (every graph of a labelled dataset has the same K).
"""

from __future__ import annotations

import numpy as np
import torch

from goenv._core import InvalidArgument
from goenv.labels.decisions import HEADS
from goenv.labels.folder import Labels


class LabelledGraphs(torch.utils.data.Dataset):
    """Graph i of a labelled dataset (a Labels or its folder) with its decisions, as tensors."""

    def __init__(self, labels):
        self.labels = labels if isinstance(labels, Labels) else Labels(labels)

    def __len__(self) -> int:
        return len(self.labels)

    def __getitem__(self, index: int) -> dict:
        graph, decisions = self.labels.graph(index), self.labels.decisions(index)
        item = {
            "x": torch.from_numpy(np.array(graph["node_features"], dtype=np.float32)),  # writable: a copy
            "edge_index": torch.from_numpy(np.stack([graph["edge_src"], graph["edge_dst"]]).astype(np.int64)),
            "op_type": torch.from_numpy(graph["op_type"].astype(np.int64)),
            "runtime": torch.from_numpy(decisions["runtime"].astype(np.float64)),
            "oom": torch.from_numpy(decisions["oom"].astype(bool)),
            "num_nodes": int(graph["num_nodes"]), "num_devices": int(graph["num_devices"]),
            "graph_id": int(graph["graph_id"]),
        }
        for head in HEADS:
            item[head] = torch.from_numpy(decisions[head].astype(np.int64))
        return item


def collate(items: list[dict]) -> dict:
    """Items of LabelledGraphs as one PyG-style batch (see the module docstring)."""
    if not items:
        raise InvalidArgument("collate needs at least one item (a DataLoader batch is never empty)")
    offsets = np.cumsum([0] + [item["num_nodes"] for item in items])[:-1]
    batch = {
        "x": torch.cat([item["x"] for item in items]),
        "edge_index": torch.cat([item["edge_index"] + int(offset) for item, offset in zip(items, offsets)], dim=1),
        "op_type": torch.cat([item["op_type"] for item in items]),
        "batch": torch.cat([torch.full((item["num_nodes"],), b, dtype=torch.int64) for b, item in enumerate(items)]),
        "runtime": torch.stack([item["runtime"] for item in items]),
        "oom": torch.stack([item["oom"] for item in items]),
        "num_devices": torch.tensor([item["num_devices"] for item in items]),
        "graph_id": torch.tensor([item["graph_id"] for item in items]),
    }
    for head in HEADS:
        batch[head] = torch.cat([item[head] for item in items], dim=1)
    return batch
