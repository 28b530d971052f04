"""The named benchmarks: fixed (task, graph, cluster) cases, budgets of simulator calls, seeds,
and the split a method may train on. A change that can move a score (a case, an env option, a
budget, a seed) makes a new version of the name, as Gymnasium ids do (docs/benchmark.md)."""

from __future__ import annotations

import builtins
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any, Mapping

from goenv._core import NotFound
from goenv.datasets import SuiteEntry, suite

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
        return self.entry.make(self.task, **{**ENV_OPTIONS, **options})


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


def _catalog() -> dict[str, Benchmark]:
    # No fusion benchmark yet: on these graphs no search finds anything better than the XLA-style
    # default (docs/benchmark.md#benchmarks), so every score would divide by nothing.
    benchmarks = [_transfer(task) for task in ("placement", "scheduling", "joint")] + [_quick()]
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
