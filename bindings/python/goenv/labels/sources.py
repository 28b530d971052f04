"""What `goenv.datasets.label` labels: the graphs of a generated dataset, of a suite, or of
graph files, each with the cluster it runs on.

A Source is small and picklable (a folder path, a suite name or file paths, never graphs),
so Ray workers rebuild it and read their own graphs; graph i is the same wherever it is read.
"""

from __future__ import annotations

import hashlib
import json
import os

import goenv._core as _core
from goenv._core import Graph, InvalidArgument, NotFound
from goenv.clusters import get as get_cluster
from goenv.dataset_files import graph_params
from goenv.datasets import open as open_dataset
from goenv.datasets import suite, suites
from goenv.files import MAX_FILE_BYTES, read_regular_file

# Where an imported graph runs without cluster= (as `goenv.make("placement", graph=...)`).
FILE_CLUSTER = "2xgpu-nvlink"
GRAPH_SUFFIXES = (".goenv", ".json")


class Source:
    """Graphs to label: len(source), source.graph(i) -> (Graph, info dict with name, family,
    params, split and cluster), source.identity (what a resumed run must match)."""

    def __init__(self, kind: str, spec, cluster: str | None):
        self.kind, self.spec, self.cluster = kind, spec, cluster
        self._dataset = None
        self._entries = None

    def __reduce__(self):  # only the description travels (to Ray workers)
        return (Source, (self.kind, self.spec, self.cluster))

    # -- the graphs -----------------------------------------------------------------------

    def _suite_entries(self) -> list:
        if self._entries is None:
            name, _, split = self.spec.partition(":")
            entries = suite(name)
            if isinstance(entries, dict):
                if split and split not in entries:
                    raise NotFound(f"suite '{name}' has no split '{split}'; its splits: {', '.join(entries)}")
                entries = [(s, e) for s in ([split] if split else entries) for e in entries[s]]
            else:
                if split:
                    raise InvalidArgument(f"suite '{name}' has no splits; give it as '{name}'")
                entries = [("", e) for e in entries]
            self._entries = entries
        return self._entries

    def _open_dataset(self):
        if self._dataset is None:
            self._dataset = open_dataset(self.spec)
        return self._dataset

    def __len__(self) -> int:
        if self.kind == "dataset":
            return len(self._open_dataset())
        if self.kind == "suite":
            return len(self._suite_entries())
        return len(self.spec)

    def graph(self, index: int) -> tuple[Graph, dict]:
        if self.kind == "dataset":
            dataset = self._open_dataset()
            family = dataset.family
            graph = dataset[index]
            if family == "zoo":  # imported model types: no family parameters, the imported graphs' cluster
                info = {"family": family, "params": {}, "split": "", "cluster": self.cluster or FILE_CLUSTER}
                return graph, {"name": graph.name, **info}
            seeded = "seed" in _core.graph_family(family)["params"]
            params = graph_params(dataset.params, dataset.seed, index, seeded)
            info = {"family": family, "params": params, "split": "",
                    "cluster": self.cluster or _core.graph_family(family)["default_cluster"]}
        elif self.kind == "suite":
            split, entry = self._suite_entries()[index]
            graph = entry.load()
            info = {"family": entry.graph, "params": dict(entry.params), "split": split,
                    "cluster": self.cluster or entry.cluster}
        else:
            graph = Graph.load(self.spec[index])
            info = {"family": "", "params": {}, "split": "", "cluster": self.cluster or FILE_CLUSTER}
        return graph, {"name": graph.name, **info}

    @property
    def identity(self) -> dict:
        """The description a manifest records: a dataset by its manifest's checksum, files by theirs."""
        if self.kind == "dataset":
            manifest = self._open_dataset().manifest
            digest = hashlib.sha256(json.dumps(manifest["shards"], sort_keys=True).encode()).hexdigest()
            return {"kind": "dataset", "family": manifest["family"], "count": manifest["count"],
                    "shards_sha256": digest}
        if self.kind == "suite":
            return {"kind": "suite", "name": self.spec, "count": len(self)}
        return {"kind": "files", "count": len(self.spec),
                "sha256": [hashlib.sha256(read_regular_file(path, MAX_FILE_BYTES, what="graph file")).hexdigest()
                           for path in self.spec]}


def resolve(source, cluster: str | None) -> Source:
    """A Source from a dataset folder, a suite name ("go-placement", "transfer", "transfer:test"),
    a graph file or a list of graph files. InvalidArgument / NotFound naming what it is not."""
    if cluster is not None:
        cluster = get_cluster(cluster).name  # NotFound (with the closest preset) before anything runs
    if isinstance(source, (list, tuple)):
        paths = [os.fspath(p) for p in source]
        if not paths:
            raise InvalidArgument("source: an empty list of graph files")
        for path in paths:
            if not os.path.isfile(path):
                raise InvalidArgument(f"source: {path} is not a graph file")
        return Source("files", paths, cluster)
    if not isinstance(source, (str, os.PathLike)):
        raise InvalidArgument(f"source must be a dataset folder, a suite name or graph files, got "
                              f"{type(source).__name__}")
    text = os.fspath(source)
    if os.path.isdir(text):
        manifest = os.path.join(text, "manifest.json")
        if not os.path.exists(manifest):
            raise InvalidArgument(f"source {text}: not a goenv dataset (no manifest.json); make one with "
                                  f"`goenv dataset generate`, or give a suite name or graph files")
        open_dataset(text)  # InvalidGraph when the manifest is damaged or the dataset incomplete
        return Source("dataset", os.path.abspath(text), cluster)
    if os.path.isfile(text):
        if not text.endswith(GRAPH_SUFFIXES):
            raise InvalidArgument(f"source {text}: not a dataset folder or a graph file (.goenv or .json)")
        return Source("files", [text], cluster)
    if text.partition(":")[0] in suites():
        resolved = Source("suite", text, cluster)
        resolved._suite_entries()  # an unknown split fails now
        return resolved
    raise InvalidArgument(f"source {text!r}: no such dataset folder, graph file or suite (suites: "
                          f"{', '.join(suites())})")

