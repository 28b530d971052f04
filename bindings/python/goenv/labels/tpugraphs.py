"""Exports a labelled dataset in TpuGraphs' layout (Phothilimthana et al., "TpuGraphs: A
Performance Prediction Dataset on Large Tensor Computational Graphs", NeurIPS 2023 datasets
track; the layout collection's npz files), so code written for TpuGraphs reads goenv data.

One NNNNN-NAME.npz per graph, with the arrays of a layout file:
    node_feat         float32 (N, F)   the envs' static node features (goenv._core.node_feature_names())
    node_opcode       uint8 (N,)       op type ids (goenv._core.op_type_names())
    edge_index        int64 (E, 2)     [u, v]: op u consumes the output of op v (TpuGraphs' order)
    node_config_ids   int64 (N,)       every node is configurable: 0..N-1
    node_config_feat  float32 (C, N, 18)  per decision and node: columns 0-15 the device one-hot
                                       (at most 16 devices), 16 the priority level and 17 the
                                       fusion level, each divided by its number of levels - 1
    config_runtime    int64 (C,)       simulated runtime in nanoseconds
    node_splits       int64 (1, 1)     [[0]]: the graph is one computation
C counts the feasible decisions (OOM and invalid ones are left out unless keep_infeasible=True).
The folder also gets export.json, the names of the files written: what overwrite=True replaces
(files named like an export's that no record names are never removed).
"""

from __future__ import annotations

import json
import os
import re

import numpy as np

from goenv._core import InvalidArgument
from goenv.arguments import checked_flag, checked_int
from goenv.files import output_folder, read_json_file, remove_regular_files, write_atomic
from goenv.labels.folder import Labels

CONFIG_FEATURES = 18
MAX_DEVICES = 16


def config_features(decisions: dict, priority_levels: int, fusion_levels: int) -> np.ndarray:
    """(C, N, 18) float32: the one-hot device, priority and fusion levels of each decision."""
    placement = decisions["placement"]
    features = np.zeros(placement.shape + (CONFIG_FEATURES,), dtype=np.float32)
    np.put_along_axis(features, placement[..., None].astype(np.int64), 1.0, axis=2)
    features[..., 16] = decisions["priority"] / max(priority_levels - 1, 1)
    features[..., 17] = decisions["fusion"] / max(fusion_levels - 1, 1)
    return features


def _kept(decisions: dict, keep_infeasible: bool) -> np.ndarray:
    """Which decisions an export writes: the feasible ones, or all of them."""
    return np.ones(len(decisions["runtime"]), bool) if keep_infeasible else ~(decisions["oom"] | decisions["invalid"])


def _check_representable(labels, keep_infeasible: bool, priority_levels: int, fusion_levels: int) -> None:
    """InvalidArgument, before anything is written, for what TpuGraphs' arrays cannot hold:
    more than 16 devices, op ids beyond uint8, levels beyond the given counts (features above
    1), runtimes that are no int64 count of nanoseconds (an infeasible decision's, kept)."""
    for i in range(len(labels)):
        graph, decisions = labels.graph(i), labels.decisions(i)
        where = f"graph {i} ({graph['name']})"
        if graph["num_devices"] > MAX_DEVICES:
            raise InvalidArgument(f"{where}: TpuGraphs' 18 configuration features hold at most {MAX_DEVICES} "
                                  f"devices, its cluster has {graph['num_devices']}; nothing was written")
        if graph["op_type"].size and graph["op_type"].max() > np.iinfo(np.uint8).max:
            raise InvalidArgument(f"{where}: an op type id above 255 does not fit node_opcode (uint8); nothing "
                                  f"was written")
        for head, levels in (("priority", priority_levels), ("fusion", fusion_levels)):
            if decisions[head].size and decisions[head].max() >= levels:
                raise InvalidArgument(f"{where}: a {head} level of {decisions[head].max()}, but {head}_levels is "
                                      f"{levels}; pass the env's number of levels. Nothing was written")
        runtime = decisions["runtime"][_kept(decisions, keep_infeasible)]
        if not (np.isfinite(runtime) & (runtime * 1e9 < 2.0**63)).all():
            raise InvalidArgument(f"{where}: a kept decision's runtime is no int64 count of nanoseconds (an infeasible "
                                  f"decision's, with keep_infeasible=True); nothing was written")


# The files an export writes: NNNNN-NAME.npz, listed in RECORD (what overwrite=True replaces).
EXPORTED = re.compile(r"^\d{5}-[A-Za-z0-9_.-]*\.npz$")
RECORD = "export.json"


def _recorded_files(root: str) -> list[str]:
    """The files the export recorded in `root` says it wrote ([] without a record)."""
    path = os.path.join(root, RECORD)
    if not os.path.lexists(path):
        return []
    record = read_json_file(path, 1 << 24, "export record")
    files = record.get("files") if isinstance(record, dict) else None
    if not isinstance(files, list) or not all(isinstance(name, str) and EXPORTED.match(name) for name in files):
        raise InvalidArgument(f"{path}: not an export record (no list of NNNNN-NAME.npz files); nothing was changed")
    return files


def export_tpugraphs(labels, out_dir: str | os.PathLike, *, keep_infeasible: bool = False,
                     priority_levels: int = 16, fusion_levels: int = 4, overwrite: bool = False) -> list[str]:
    """Writes one TpuGraphs-layout .npz per graph of `labels` (a Labels or its folder) into
    `out_dir`; returns the paths. Files are written atomically, only over regular files. A folder
    that already holds an export (NNNNN-*.npz files) is refused unless overwrite=True, which
    replaces those files (and only those): an export never mixes with another one. What the
    layout cannot hold (more than 16 devices, levels beyond the given counts, a kept runtime
    that is not a finite count of nanoseconds) is refused before anything is written."""
    keep_infeasible, overwrite = checked_flag("keep_infeasible", keep_infeasible), checked_flag("overwrite", overwrite)
    for name, levels in (("priority_levels", priority_levels), ("fusion_levels", fusion_levels)):
        checked_int(f"{name} (the env's number of levels)", levels, low=1)
    labels = labels if isinstance(labels, Labels) else Labels(labels)
    _check_representable(labels, keep_infeasible, priority_levels, fusion_levels)
    root = output_folder(out_dir, "export folder")
    earlier = sorted(name for name in os.listdir(root) if EXPORTED.match(name))
    if (earlier or os.path.lexists(os.path.join(root, RECORD))) and not overwrite:
        raise InvalidArgument(f"{root} already holds an export ({len(earlier)} files such as "
                              f"{(earlier or [RECORD])[0]}); nothing was changed. Use another folder, or "
                              f"overwrite=True (--overwrite) to replace it")
    recorded = set(_recorded_files(root))
    unrecorded = [name for name in earlier if name not in recorded]
    if unrecorded:  # never ours to delete: a user's file, or an export of a goenv before the record
        raise InvalidArgument(f"{root} holds {len(unrecorded)} files named like an export's that no {RECORD} names "
                              f"(such as {unrecorded[0]}); nothing was changed. Remove them, or use another folder")
    # overwrite: the earlier export's files, never a link's target or anything but a file
    remove_regular_files(root, earlier, "exported file")
    # The record first, naming every file this export will write: an export stopped midway
    # leaves no file that a later overwrite=True would refuse as not ours.
    graph_names = labels.table("graphs").column("name").to_pylist()
    names = [f"{i:05d}-{re.sub(r'[^A-Za-z0-9_.-]+', '_', name or 'graph')[:80]}.npz" for i, name in enumerate(graph_names)]
    write_atomic(os.path.join(root, RECORD), json.dumps({"files": names}, indent=1).encode(), what="export record")
    paths = []
    for i in range(len(labels)):
        graph, decisions = labels.graph(i), labels.decisions(i)
        keep = _kept(decisions, keep_infeasible)
        chosen = {key: value[keep] for key, value in decisions.items()}
        arrays = {
            "node_feat": graph["node_features"].astype(np.float32),
            "node_opcode": graph["op_type"].astype(np.uint8),
            "edge_index": np.stack([graph["edge_dst"], graph["edge_src"]], axis=1).astype(np.int64),
            "node_config_ids": np.arange(graph["num_nodes"], dtype=np.int64),
            "node_config_feat": config_features(chosen, priority_levels, fusion_levels),
            "config_runtime": np.round(chosen["runtime"] * 1e9).astype(np.int64),
            "node_splits": np.zeros((1, 1), dtype=np.int64),
        }
        paths.append(write_atomic(os.path.join(root, names[i]),
                                  lambda file, arrays=arrays: np.savez_compressed(file, **arrays),
                                  what="TpuGraphs file"))
    return paths
