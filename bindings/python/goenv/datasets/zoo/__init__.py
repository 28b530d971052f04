"""The zoo: training graphs of real model definitions, built offline from small configs.

    from goenv.datasets import zoo
    zoo.model_types()                 # every transformers model type with a base model
    r = zoo.build("llama", "tiny")    # in a child process with memory and time limits
    r.ok, r.num_nodes, r.provenance   # provenance: library version, config hash, ...
    g = r.graph()                     # a goenv.Graph of one training step

Each type's default config is shrunk by one consistent rule (zoo/configs.py) for a size in
SIZES: "tiny" (hundreds to a few thousand ops), "small" (more layers, wider), "large" (many
layers: big graphs; a run of the whole library builds it for one type per lineage, planned_types). Weights are random; nothing is downloaded. Inputs come from the model's
own forward signature (zoo/inputs.py). A failed build is a ZooResult with ok=False, the
stage it stopped at and why; it never raises into the caller.
"""

from __future__ import annotations

from typing import Iterable, Iterator

from goenv._core import InvalidArgument, NotFound
from goenv.arguments import checked_number
from goenv.datasets.zoo.catalog import LIBRARIES, checked_library, checked_model_type, modality, model_types
from goenv.datasets.zoo.configs import SIZES
from goenv.datasets.zoo.result import STAGES, ZooResult

__all__ = ["LIBRARIES", "ONE_PER_LINEAGE", "SIZES", "STAGES", "ZooResult", "build", "build_many", "modality",
           "model_types", "planned_types"]

DEFAULT_MEMORY_LIMIT = 4 << 30
DEFAULT_TIME_LIMIT = 300.0

# Sizes a run of the whole library builds for one model type per lineage: a large graph repeats
# its type's block a hundred times over, so relatives' large graphs add little but hours.
ONE_PER_LINEAGE = ("large",)


def planned_types(library: str = "transformers", size: str = "tiny") -> list[str]:
    """The model types a run of the whole library builds at `size`: every type, or one per
    lineage (lineages.representatives) for a size in ONE_PER_LINEAGE."""
    if size in ONE_PER_LINEAGE:
        from goenv.datasets.zoo.lineages import representatives

        return representatives(checked_library(library))
    return list(model_types(library))


def _checked_request(model_type, size, library):
    checked_model_type(model_type, checked_library(library))
    if size not in SIZES:
        raise NotFound(f"zoo size {size!r} is not known; choices: {', '.join(SIZES)}")
    return model_type, size, library


def _checked_limits(memory_limit, time_limit):
    if isinstance(memory_limit, bool) or not isinstance(memory_limit, int) or memory_limit <= 0:
        raise InvalidArgument(f"memory_limit must be a positive number of bytes, got {memory_limit!r}")
    seconds = checked_number("time_limit", time_limit)
    if not seconds > 0 or seconds == float("inf"):
        raise InvalidArgument(f"time_limit must be a positive, finite number of seconds, got {time_limit!r}")
    return memory_limit, seconds


def build(model_type: str, size: str = "tiny", *, library: str = "transformers",
          memory_limit: int = DEFAULT_MEMORY_LIMIT, time_limit: float = DEFAULT_TIME_LIMIT) -> ZooResult:
    """Builds `model_type` at `size` in a fresh child process: at most `memory_limit` bytes
    beyond what the child starts with and `time_limit` seconds. An unknown type, size or
    library raises goenv.NotFound naming the choices."""
    request = _checked_request(model_type, size, library)
    memory_limit, time_limit = _checked_limits(memory_limit, time_limit)
    from goenv.datasets.zoo import child

    return child.finish(child.start(*request, memory_limit), time_limit, memory_limit)


def build_many(requests: Iterable, *, processes: int = 1, memory_limit: int = DEFAULT_MEMORY_LIMIT,
               time_limit: float = DEFAULT_TIME_LIMIT) -> Iterator[ZooResult]:
    """Builds each request (a model type, or a (model_type, size) or (model_type, size,
    library) tuple) in its own child, `processes` at a time; yields the results in request order."""
    from goenv.datasets.zoo import child

    if isinstance(processes, bool) or not isinstance(processes, int) or processes < 1:
        raise InvalidArgument(f"processes must be a positive integer, got {processes!r}")
    memory_limit, time_limit = _checked_limits(memory_limit, time_limit)
    checked = []
    for request in requests:
        parts = (request,) if isinstance(request, str) else tuple(request)
        model_type = parts[0]
        size = parts[1] if len(parts) > 1 else "tiny"
        library = parts[2] if len(parts) > 2 else "transformers"
        checked.append(_checked_request(model_type, size, library))
    yield from child.run_all(checked, processes, memory_limit, time_limit)
