"""The named benchmarks: fixed (task, graph, cluster) cases, budgets of simulator calls, seeds,
and the split a method may train on. A change that can move a score (a case, an env option, a
budget, a seed) makes a new version of the name, as Gymnasium ids do (docs/benchmark.md)."""

from __future__ import annotations

import builtins
import functools
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any, Mapping

from goenv._core import InvalidGraph, NotFound
from goenv.datasets import SuiteEntry, suite
from goenv.datasets.zoo.dataset import structural_hash
from goenv.datasets.zoo.lineages import ZooEntry, lineage, split
from goenv.envs import make

# Env options every case is made with, written down so that a change of a library default
# cannot move a published score.
ENV_OPTIONS = MappingProxyType({"colocation": "follow", "observation_version": 2})


@dataclass(frozen=True)
class Case:
    """One (task, graph, cluster) of a benchmark."""

    task: str
    entry: SuiteEntry

    @property
    def id(self) -> str:
        """e.g. "placement:inception[batch_size=32] on 2xgpu-nvlink": unique within a benchmark."""
        return f"{self.task}:{self.entry.label}"

    def make(self, **options: Any):
        """A fresh env of the case with the benchmark's env options (and `options`, e.g. horizon)."""
        if isinstance(self.entry, ZooEntry):  # built once per process, and checked against its pinned hash
            return make(self.task, graph=_pinned_zoo_graph(self.entry), cluster=self.entry.cluster,
                        **{**ENV_OPTIONS, **options})
        return self.entry.make(self.task, **{**ENV_OPTIONS, **options})


# The zoo's test split, one model type per lineage (the lineage's own type where it imports,
# else the first by name), each pinned to the structural hash of the graph the pinned
# transformers release gives it (its first 16 hex digits): a different graph is refused, never
# scored under the same name.
ZOO_CASES = MappingProxyType({
    "codegen": "c01c3bb7fc9b00ce", "ctrl": "c968c8fb0ac966c3", "deberta": "4beaa6cd68ed3ce1",
    "dinov3_convnext": "06bd7f0c43533e8c", "efficientnet": "808561106ac546fb", "falcon": "0c84c6df1d00da36",
    "flava": "db8c8701d973e608", "gpt_bigcode": "03a91295f8c7bc7a", "gpt-sw3": "076de2fddef71ce7",
    "ibert": "69e208f393329a64", "aya_vision": "87aaa09c7e2f9937", "luke": "aaf66d40b01fb1dc",
    "m2m_100": "d7001052094cd6cf", "nemotron_h": "a9140cde661b8c7b", "nllb-moe": "383a3a4e9028de5f",
    "openai-gpt": "e5eec5788c85f5bb", "lasr_encoder": "31ac2d291a125525", "pvt": "89ae8265b38c0643",
    "speech_to_text": "6316eba6bf53ed71", "splinter": "08f09ad3cc903111", "visual_bert": "354e10d7ba7937a8",
    "vit": "89df4cb9f52590bd", "xlnet": "cd55ccea0da7eeee", "zamba": "76d5ee9bddf48e5a",
})
ZOO_BENCHMARK_CLUSTER = "4xgpu-nvlink"


@functools.lru_cache(maxsize=None)
def _pinned_zoo_graph(entry: ZooEntry):
    graph = entry.load()
    pinned = ZOO_CASES.get(entry.model_type)
    if pinned is not None and not structural_hash(graph).startswith(pinned):
        raise InvalidGraph(f"zoo model {entry.graph} ({entry.size}) builds a graph of structural hash "
                           f"{structural_hash(graph)[:16]}, the benchmark pins {pinned}: another transformers, torch "
                           f"or goenv version than the benchmark was made with")
    return graph


@dataclass(frozen=True)
class Benchmark:
    """A named, versioned benchmark. `budgets` are the simulator calls a method may spend per case
    and seed (`default_budget` is one of them), `train_on` what a method may train or tune on."""

    name: str
    description: str
    cases: tuple[Case, ...]
    budgets: tuple[int, ...]
    default_budget: int
    seeds: tuple[int, ...]
    train_on: str
    options: Mapping[str, Any] = field(default_factory=lambda: ENV_OPTIONS)

    @property
    def version(self) -> int:
        return int(self.name.rsplit("-v", 1)[1])

    def case(self, case_id: str) -> Case:
        for case in self.cases:
            if case.id == case_id:
                return case
        raise NotFound(f"benchmark {self.name} has no case {case_id!r}")


def _transfer(task: str) -> Benchmark:
    return Benchmark(
        name=f"{task}-transfer-v0",
        description=f"{task} of the transfer suite's 8 test graphs (inception, amoebanet, wavenet, transformer-xl), "
                    f"architectures absent from its training split",
        cases=tuple(Case(task, entry) for entry in suite("transfer")["test"]),
        budgets=(1, 16, 256), default_budget=16, seeds=(0, 1, 2, 3, 4),
        train_on="the transfer suite's train split, or any graph of another lineage; choices on its "
                 "validation split; never its test graphs")


def _quick() -> Benchmark:
    test = {entry.graph: entry for entry in suite("transfer")["test"]}
    return Benchmark(
        name="placement-quick-v0",
        description="placement of two small test graphs (transformer-xl-2, wavenet-2), 3 seeds: a check in seconds",
        cases=tuple(Case("placement", test[graph]) for graph in ("transformer-xl-2", "wavenet-2")),
        budgets=(1, 16), default_budget=16, seeds=(0, 1, 2),
        train_on="as placement-transfer-v0, whose cases these are")


def _zoo() -> Benchmark:
    def entry(model_type: str) -> ZooEntry:  # from the committed split: listing needs no transformers
        if split(model_type) != "test":
            raise InvalidGraph(f"placement-zoo-v0: {model_type} is in the zoo's {split(model_type)} split, not test")
        return ZooEntry(model_type, lineage(model_type), "test", cluster=ZOO_BENCHMARK_CLUSTER)

    return Benchmark(
        name="placement-zoo-v0",
        description=f"placement of {len(ZOO_CASES)} transformers architectures of the zoo's test split (one per "
                    f"lineage: text, vision, speech and vision-language models) on {ZOO_BENCHMARK_CLUSTER}",
        cases=tuple(Case("placement", entry(model_type)) for model_type in ZOO_CASES),
        budgets=(1, 16, 256), default_budget=16, seeds=(0, 1, 2, 3, 4),
        train_on="the zoo's train split (goenv.datasets.suite('zoo')['train']) and the graph builders' families; "
                 "choices on its validation split; never a model type of a test lineage")


def _catalog() -> dict[str, Benchmark]:
    # No fusion benchmark yet: on these graphs no search finds anything better than the XLA-style
    # default (docs/benchmark.md#benchmarks), so every score would divide by nothing.
    benchmarks = [_transfer(task) for task in ("placement", "scheduling", "joint")] + [_quick(), _zoo()]
    return {benchmark.name: benchmark for benchmark in benchmarks}


_CATALOG: dict[str, Benchmark] | None = None


def names() -> builtins.list[str]:
    """The benchmarks' names."""
    return sorted(_benchmarks())


def get(name: str | Benchmark) -> Benchmark:
    """The benchmark called `name` (a Benchmark is returned as it is); goenv.NotFound names the known ones."""
    if isinstance(name, Benchmark):
        return name
    benchmarks = _benchmarks()
    if name not in benchmarks:
        raise NotFound(f"unknown benchmark {name!r}; known: {', '.join(sorted(benchmarks))}")
    return benchmarks[name]


def _benchmarks() -> dict[str, Benchmark]:
    global _CATALOG
    if _CATALOG is None:
        _CATALOG = _catalog()
    return _CATALOG
