"""Graphs: the registered model families, benchmark suites, importers and dataset files.

    goenv.datasets.list()                                  # registered graph families
    g = goenv.datasets.load("inception", batch_size=32)    # one goenv.Graph
    for entry in goenv.datasets.suite("go-placement"):     # the GO paper's placement benchmark
        env = entry.make("placement")
    splits = goenv.datasets.suite("transfer")              # {"train": [...], "validation": [...], "test": [...]}
    g = goenv.datasets.from_torch(model, (x,))             # a PyTorch module's training step (torch.export)
    g = goenv.datasets.from_onnx("model.onnx")             # an ONNX model
    goenv.datasets.generate("random-layered", 1000, "data/rl")   # sharded, checksummed files
    ds = goenv.datasets.open("data/rl")                    # lazy: len(ds), ds[i], iteration
    goenv.datasets.label("data/rl", "data/rl-labels")      # K simulated decisions per graph, Parquet shards
    labels = goenv.datasets.open_labels("data/rl-labels")  # .graph(i), .decisions(i), .table()
"""

from __future__ import annotations

import builtins
import os
from dataclasses import dataclass
from types import MappingProxyType
from typing import Any, Mapping

import goenv._core as _core
from goenv._core import Graph, InvalidArgument, NotFound
from goenv.arguments import checked_number
from goenv.dataset_files import ZOO_FAMILY, Dataset, generate, generate_main, graph_params, manifest_family, to_pyg
from goenv.datasets.zoo.dataset import ZooDataset
from goenv.envs import make as _make_env
from goenv.importers import CostEstimateWarning, from_onnx, from_torch

# label, open_labels, Labels and export_tpugraphs are goenv.labels' names, added to this module by
# goenv/__init__.py: labels are made from datasets, so goenv.labels imports this module, never the reverse.
__all__ = [
    "CostEstimateWarning", "Dataset", "SuiteEntry", "from_onnx", "from_torch", "generate", "generate_main",
    "graph_params", "info", "lineage", "list", "load", "open", "suite", "suite_description", "suites", "to_pyg",
]


def open(path: str | os.PathLike) -> Dataset:  # noqa: A001 - the public name
    """The dataset generated under `path` (lazy; shards are checksummed when read); a zoo folder
    (goenv dataset zoo) is a goenv.datasets.zoo.dataset.ZooDataset."""
    return (ZooDataset if manifest_family(path) == ZOO_FAMILY else Dataset)(path)


def list() -> builtins.list[str]:  # noqa: A001 - the documented public name
    """Names of the registered graph families (each is also the <graph> part of env ids)."""
    return _core.graph_names()


def _family_name(name: Any) -> str:
    if not isinstance(name, str):
        raise InvalidArgument(f"a graph family's name must be a string (goenv.datasets.list()), got "
                              f"{type(name).__name__}")
    return name


def info(name: str) -> dict:
    """Description, default cluster and parameters (with defaults) of a graph family."""
    return _core.graph_family(_family_name(name))


def load(name: str, **params: float) -> Graph:
    """Builds the graph family `name` with builder parameters, e.g. load("inception", batch_size=64)."""
    return _core.build_graph(_family_name(name),
                             {key: checked_number(f"graph parameter {key!r}", value) for key, value in params.items()})


# ---------------------------------------------------------------------------
# Suites: fixed lists of (graph family, parameters, cluster) that papers report on.


@dataclass(frozen=True)
class SuiteEntry:
    """One benchmark case: a graph family with builder parameters, on a cluster preset."""

    graph: str                    # graph family name, the <graph> of env ids
    params: Mapping[str, float]   # builder parameters (a read-only mapping)
    cluster: str                  # cluster preset name

    def __post_init__(self) -> None:
        object.__setattr__(self, "params", MappingProxyType({k: checked_number(f"graph parameter {k!r}", v)
                                                            for k, v in dict(self.params).items()}))

    def __hash__(self) -> int:
        return hash((self.graph, tuple(sorted(self.params.items())), self.cluster))

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, SuiteEntry):
            return NotImplemented
        return (self.graph, dict(self.params), self.cluster) == (other.graph, dict(other.params), other.cluster)

    def __reduce__(self):
        return (SuiteEntry, (self.graph, dict(self.params), self.cluster))

    def __repr__(self) -> str:
        return f"SuiteEntry({self.label})"

    @property
    def num_devices(self) -> int:
        return _core.Cluster.preset(self.cluster).num_devices

    @property
    def label(self) -> str:
        """e.g. "inception[batch_size=32] on 2xgpu-nvlink"."""
        params = ",".join(f"{k}={v:g}" for k, v in sorted(self.params.items()))
        return f"{self.graph}{f'[{params}]' if params else ''} on {self.cluster}"

    def env_id(self, task: str = "placement") -> str:
        """The env id of this graph for `task`, e.g. "placement-inception" (params and cluster go to make())."""
        return f"{task}-{self.graph}"

    def load(self) -> Graph:
        """The graph."""
        return load(self.graph, **self.params)

    def make(self, task: str = "placement", **options: Any):
        """The env: goenv.make(env_id(task), cluster=cluster, **params, **options)."""
        return _make_env(self.env_id(task), **{"cluster": self.cluster, **self.params, **options})


def _nvlink(devices: int) -> str:
    return f"{devices}xgpu-nvlink"


def _go_placement() -> builtins.list[SuiteEntry]:
    """The 14 placement cases of the GO paper (Zhou et al., "Transferable Graph Optimizers for ML
    Compilers", NeurIPS 2020, Table 1): each graph on the device count in its name."""
    entries = [SuiteEntry(f"rnnlm-{n}", {}, _nvlink(n)) for n in (2, 4, 8)]
    entries += [SuiteEntry(f"gnmt-{n}", {}, _nvlink(n)) for n in (2, 4, 8)]
    entries += [SuiteEntry(f"transformer-xl-{n}", {}, _nvlink(n)) for n in (2, 4, 8)]
    entries += [SuiteEntry("inception", {"batch_size": b}, _nvlink(2)) for b in (32, 64)]
    entries += [SuiteEntry("amoebanet", {}, _nvlink(4)),
                SuiteEntry("wavenet-2", {}, _nvlink(2)),
                SuiteEntry("wavenet-4", {}, _nvlink(4))]
    return entries


# Transfer: train on random graphs and some model families; validate and test on
# architectures (lineages: rnnlm-2/4/8 are one) never seen in training. Clusters
# are each family's default.
_TRANSFER_TRAIN = (
    [("random-layered", {"seed": s, "num_layers": layers, "width": width})
     for s, (layers, width) in enumerate([(10, 5), (20, 10), (30, 8), (15, 12)] * 4)]
    + [("random-series-parallel", {"seed": s, "num_nodes": n}) for s, n in enumerate([100, 200, 400, 800] * 4)]
    + [("enas-cnn", {"seed": s}) for s in range(8)]
    + [("enas-rnn", {"seed": s, "seq_len": 20}) for s in range(8)]
    + [("resnet50", {"batch_size": b}) for b in (32, 64)]
    + [(f"rnnlm-{n}", {"batch_size": b}) for n in (2, 4, 8) for b in (32, 64)]
    + [(f"gnmt-{n}", {"batch_size": b, "seq_len": 40}) for n in (2, 4, 8) for b in (64, 128)]
)
_TRANSFER_VALIDATION = [("bert-base", {"batch_size": b}) for b in (16, 32)] + \
                       [("gpt2-small", {"batch_size": b}) for b in (4, 8)]
_TRANSFER_TEST = (
    [("inception", {"batch_size": b}) for b in (32, 64)]
    + [("amoebanet", {}), ("wavenet-2", {}), ("wavenet-4", {})]
    + [(f"transformer-xl-{n}", {}) for n in (2, 4, 8)]
)


def lineage(family: str) -> str:
    """The architecture a family belongs to: "gnmt-4" -> "gnmt", "transformer-xl-8" -> "transformer-xl"."""
    head, _, tail = family.rpartition("-")
    return head if head and tail.isdigit() else family


def _transfer() -> dict[str, builtins.list[SuiteEntry]]:
    def entries(cases):
        return [SuiteEntry(family, params, _default_cluster(family)) for family, params in cases]

    return {"train": entries(_TRANSFER_TRAIN), "validation": entries(_TRANSFER_VALIDATION),
            "test": entries(_TRANSFER_TEST)}


def _default_cluster(family: str) -> str:
    return info(family)["default_cluster"]


def _zoo(library: str = "transformers") -> dict:
    # here, not at import: the zoo's lineage module (its patterns compiled at import) adds about 4 ms
    # to `import goenv`, for the zoo suites only
    from goenv.datasets.zoo.lineages import suite as zoo_suite

    return zoo_suite(library)


_SUITES = {  # name: (entries, the families they use, description)
    "go-placement": (_go_placement, lambda: [e.graph for e in _go_placement()],
                     "the GO paper's 14 placement cases (graph, device count)"),
    "transfer": (_transfer, lambda: [f for f, _ in _TRANSFER_TRAIN + _TRANSFER_VALIDATION + _TRANSFER_TEST],
                 "train / validation / test splits; validation and test architectures unseen in train"),
    "zoo": (_zoo, lambda: [], "real architectures (goenv.datasets.zoo), one ZooEntry per transformers model type, "
                              "split by lineage into train / validation / test"),
    "zoo-diffusers": (lambda: _zoo("diffusers"), lambda: [],
                      "diffusion models (goenv.datasets.zoo), one ZooEntry per diffusers model class, split by "
                      "lineage into train / validation / test"),
}


def suites() -> builtins.list[str]:
    """Names of the benchmark suites."""
    return sorted(_SUITES)


def suite(name: str):
    """The entries of a suite: a list of SuiteEntry, or a dict of lists for suites with splits
    ("transfer": {"train", "validation", "test"}); "zoo" gives goenv.datasets.zoo.lineages.ZooEntry
    items (a model type that builds its graph on demand). Raises goenv.NotFound for an unknown suite, or
    for a suite whose graph families are not built into this goenv."""
    if name not in _SUITES:
        raise NotFound(f"unknown suite '{name}'; known suites: {', '.join(suites())}")
    build, families, _ = _SUITES[name]
    registered = set(list())
    missing = sorted(set(families()) - registered)
    if missing:
        raise NotFound(f"suite '{name}' needs graph families that are not registered in this build of goenv: "
                       f"{', '.join(missing)}; registered: {', '.join(sorted(registered)) or 'none'}")
    result = build()
    for entry in (e for split in result.values() for e in split) if isinstance(result, dict) else result:
        if not isinstance(entry, SuiteEntry):  # a zoo entry: a model type, not a family's parameters
            continue
        accepted = info(entry.graph)["params"]
        unknown = sorted(set(entry.params) - set(accepted))
        if unknown:
            raise InvalidArgument(f"suite '{name}': graph family '{entry.graph}' has no parameter(s) "
                                  f"{', '.join(unknown)}; its parameters: "
                                  f"{', '.join(sorted(accepted)) or 'none'}")
    return result


def suite_description(name: str) -> str:
    if name not in _SUITES:
        raise NotFound(f"unknown suite '{name}'; known suites: {', '.join(suites())}")
    return _SUITES[name][2]
