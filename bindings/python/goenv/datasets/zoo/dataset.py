"""The zoo as a goenv dataset: every (library, model type, size) built in one fixed order into
sharded, checksummed files, each graph with its provenance.

    build_dataset("data/zoo", sizes=["tiny"], workers=2)     # or: goenv dataset zoo --out data/zoo
    ds = goenv.datasets.open("data/zoo")                      # a ZooDataset
    len(ds), ds[i], ds.provenance(i), ds.records              # graphs, where graph i came from, every build

The folder is a goenv dataset (goenv.dataset_files: manifest.json and shard-NNNNN.goenv-shard
files in the same container) whose manifest says "family": "zoo". The builds are planned in
(library, model type, size) order, sizes in goenv.datasets.zoo.SIZES order; shard k covers
builds [k * shard_size, (k + 1) * shard_size) of that plan and holds the graphs of those that
imported and are not duplicates, and its manifest record lists every one of its builds:

    {"library", "model_type", "size", "status": "imported" | "failed" | "duplicate",
     "stage", "reason", "num_nodes", "structural_hash", "duplicate_of", "graph", "provenance"}

`graph` is the graph's index in the dataset (None unless imported); `duplicate_of` names the
first build ("library/model_type/size") whose graph has the same structural hash (the graph
without its names); `provenance` is the builder's (library and its version, model type, size,
config hash, goenv and torch versions) plus the structural hash. Results are taken in plan
order whatever order the builds finish in, so any worker count writes the same shards and
manifest. Measured times and memory vary from run to run: they go to the coverage report
(coverage.json, coverage.md; goenv.datasets.zoo.report), never into the dataset's files.

A run that stops (Ctrl-C, a kill) leaves whole shards and a manifest naming them; the same
command again keeps the finished shards up to the first missing or damaged one and builds the
rest. A folder holding another dataset (another zoo plan, or generated graphs) is refused
unless overwrite=True.
"""

from __future__ import annotations

import collections
import concurrent.futures
import hashlib
import json
import os
import time
from dataclasses import dataclass
from typing import Any, Callable, Iterator, Sequence

import numpy as np

from goenv._core import Graph, InvalidArgument, InvalidGraph, NotFound
from goenv.arguments import checked_flag, checked_int, checked_number, is_count
from goenv.dataset_files import DATASET_FOLDER, FORMAT, FORMAT_VERSION, ZOO_FAMILY, Dataset, pack_shard, shard_file
from goenv.extras import import_extra
from goenv.files import output_folder, remove_regular_files
from goenv.ordered import in_order
from goenv.progress import progress_bar
from goenv.datasets.zoo.report import read_measurements, write_report
from goenv.storage import MANIFEST, goenv_version, is_sha256

__all__ = ["ZOO_FAMILY", "BuildRequest", "ZooDataset", "build_dataset", "check_manifest", "plan_requests",
           "structural_hash"]

DEFAULT_SHARD_SIZE = 16  # builds per shard
DEFAULT_MEMORY_LIMIT = 4 << 30
DEFAULT_TIME_LIMIT = 300.0
STATUSES = ("imported", "failed", "duplicate")


@dataclass(frozen=True, order=True)
class BuildRequest:
    """One build of the plan: a model type of a library at a size."""

    library: str
    model_type: str
    size: str

    @property
    def key(self) -> str:
        """"transformers/bert/tiny": how a duplicate names the build it repeats."""
        return f"{self.library}/{self.model_type}/{self.size}"


# ---------------------------------------------------------------------------
# The plan.

def _zoo():
    import goenv.datasets.zoo as zoo

    return zoo


def _choices(kind: str, given: Sequence[str], known: Sequence[str], extra: str = "") -> None:
    unknown = [name for name in given if name not in known]
    if unknown:
        shown = ", ".join(known) if len(known) <= 40 else ", ".join(known[:40]) + f", ... ({len(known)} in all)"
        raise NotFound(f"unknown {kind} {', '.join(repr(u) for u in unknown)}{extra}; the choices: {shown}")


def plan_requests(library: str = "transformers", model_types: Sequence[str] | None = None,
                  sizes: Sequence[str] | None = None, builder=None) -> list[BuildRequest]:
    """The builds of a zoo run in their order: (library, model type, size), sizes in the
    builder's SIZES order. model_types=None: the whole library, each size for the types
    builder.planned_types gives it; sizes=None: every size. NotFound naming the choices for an
    unknown library, model type or size."""
    builder = builder or _zoo()
    if not isinstance(library, str):
        raise InvalidArgument(f"library must be a name, got {type(library).__name__}")
    _choices("library", [library], sorted(builder.LIBRARIES))
    version = f" (transformers {builder.LIBRARIES[library]})" if library == "transformers" else \
        f" ({library} {builder.LIBRARIES[library]})"
    known_types = list(builder.model_types(library))
    types = known_types if model_types is None else _names("model_types", model_types)
    _choices(f"{library} model type", types, known_types, version)
    known_sizes = list(builder.SIZES)
    chosen_sizes = known_sizes if sizes is None else _names("sizes", sizes)
    _choices("size", chosen_sizes, known_sizes)
    if not types or not chosen_sizes:
        raise InvalidArgument("a zoo run needs at least one model type and one size")
    types_at = {size: types if model_types is not None else builder.planned_types(library, size)
                for size in chosen_sizes}
    order = {size: i for i, size in enumerate(known_sizes)}
    return sorted({BuildRequest(library, t, s) for s in chosen_sizes for t in types_at[s]},
                  key=lambda r: (r.library, r.model_type, order[r.size]))


def _names(what: str, names) -> list[str]:
    if isinstance(names, str) or not all(isinstance(name, str) for name in names):
        raise InvalidArgument(f"{what} must be a list of names, got {names!r}")
    return list(dict.fromkeys(names))


# ---------------------------------------------------------------------------
# Structural hash: two builds that import to the same graph (an alias, a subclass that changes
# only names) are one graph in the dataset.

def structural_hash(graph: Graph) -> str:
    """SHA-256 of what a simulator sees of a graph: edges, op types, costs, shapes, groups and
    colocation, never its name or node names."""
    digest = hashlib.sha256()

    def add(array) -> None:
        array = np.ascontiguousarray(array)
        digest.update(f"{array.dtype.str}{array.shape}".encode())
        digest.update(array.tobytes())

    digest.update(b"goenv-structure-1")
    add(np.asarray(graph.edge_index, dtype=np.int64))
    digest.update("\n".join(graph.op_type_names).encode())
    for column in (graph.flops, graph.output_bytes, graph.param_bytes, graph.edge_bytes, graph.group,
                   graph.colocation):
        add(np.asarray(column))
    add(np.nan_to_num(np.asarray(graph.cost_us, dtype=np.float64), nan=-1.0))
    digest.update(json.dumps([list(shape) for shape in graph.shapes]).encode())
    return digest.hexdigest()


# ---------------------------------------------------------------------------
# Running the builds: results in plan order, whatever order they finish in.

def _local_results(builder, requests: list[BuildRequest], workers: int, limits: dict) -> Iterator:
    """Each build in the builder's own limited child process; `workers` of them at a time."""
    build_many = getattr(builder, "build_many", None)
    if build_many is not None:
        yield from build_many([(r.model_type, r.size, r.library) for r in requests], processes=workers, **limits)
        return
    executor = concurrent.futures.ThreadPoolExecutor(max_workers=workers, thread_name_prefix="goenv-zoo")
    try:
        yield from in_order(requests, 2 * workers,
                                  lambda request: executor.submit(_build_one, builder, request, limits),
                                  lambda future: future.result())
    finally:
        executor.shutdown(wait=True, cancel_futures=True)


def _ray_results(builder, requests: list[BuildRequest], workers: int, limits: dict,
                 address: str | None) -> Iterator:
    """Each build as a Ray task (one CPU each) that runs the builder's limited child process."""
    ray = import_extra("ray", extra="distributed", feature="goenv dataset zoo --ray")
    started = not ray.is_initialized()
    if started:
        if address:
            ray.init(address=address, log_to_driver=False)
        else:
            ray.init(num_cpus=workers, include_dashboard=False, log_to_driver=False)
    try:
        build = ray.remote(num_cpus=1, max_retries=0)(_build_one)
        yield from in_order(requests, 2 * workers,
                                  lambda request: build.remote(builder, request, limits), ray.get)
    finally:
        if started:
            ray.shutdown()


def _build_one(builder, request: BuildRequest, limits: dict):
    return builder.build(request.model_type, request.size, library=request.library, **limits)


# ---------------------------------------------------------------------------
# Records.

def _record(request: BuildRequest, result, seen: dict[str, str], next_graph: int) -> tuple[dict, bytes | None]:
    """The manifest's record of one build, and the graph's bytes when the shard keeps it."""
    record = {"library": request.library, "model_type": request.model_type, "size": request.size,
              "status": "failed", "stage": str(result.stage or ""), "reason": str(result.reason or ""),
              "num_nodes": 0, "structural_hash": None, "duplicate_of": None, "graph": None, "provenance": None}
    if (result.model_type, result.size, result.library) != (request.model_type, request.size, request.library):
        raise InvalidArgument(f"the builder answered {result.library}/{result.model_type}/{result.size} for "
                              f"{request.key}")
    if not result.ok:
        if not record["stage"]:
            record["stage"] = "build"
        return record, None
    blob = bytes(result.graph_bytes)
    try:
        graph = Graph.from_bytes(blob)
    except InvalidGraph as error:  # a graph that does not decode is a failed import, not a crash
        record.update(stage="build", reason=f"the imported graph does not decode: {error}")
        return record, None
    digest = structural_hash(graph)
    record.update(status="imported", stage="", reason="", num_nodes=int(graph.num_nodes), structural_hash=digest,
                  provenance={**dict(result.provenance), "structural_hash": digest})
    if digest in seen:
        record.update(status="duplicate", duplicate_of=seen[digest])
        return record, None
    seen[digest] = request.key
    record["graph"] = next_graph
    return record, blob


def _measurement(result, graph_bytes: bytes | None) -> dict:
    """What the coverage report keeps of a build beside its record: time, memory, op mix and the
    ops the importer had no cost rule for."""
    measured = {"seconds": float(getattr(result, "seconds", 0.0) or 0.0),
                "peak_memory_bytes": int(getattr(result, "peak_memory_bytes", 0) or 0)}
    if getattr(result, "uncosted_ops", ()):
        measured["uncosted_ops"] = sorted(result.uncosted_ops)
    if graph_bytes is not None:
        names = Graph.from_bytes(graph_bytes).op_type_names
        measured["op_counts"] = dict(sorted(collections.Counter(names).items()))
    return measured


# ---------------------------------------------------------------------------
# The manifest.

def _identity(requests: list[BuildRequest], builder, memory_limit: int, time_limit: float,
              shard_size: int) -> dict:
    library = requests[0].library
    types = sorted({r.model_type for r in requests})
    sizes = list(dict.fromkeys(r.size for r in requests))
    identity = {"library": library, "library_version": str(builder.LIBRARIES[library]), "model_types": types,
                "sizes": sizes, "num_builds": len(requests), "memory_limit": int(memory_limit),
                "time_limit": float(time_limit), "shard_size": shard_size}
    fewer = {size: sorted(r.model_type for r in requests if r.size == size) for size in sizes}
    fewer = {size: built for size, built in fewer.items() if len(built) < len(types)}
    if fewer:  # sizes built for some of the types only (a whole-library run's one type per lineage)
        identity["types_by_size"] = fewer
    return identity


def _shard_plan(requests: list[BuildRequest], shard_size: int) -> list[list[BuildRequest]]:
    return [requests[k:k + shard_size] for k in range(0, len(requests), shard_size)]


def check_manifest(manifest: dict, path: str) -> None:
    """A zoo manifest's fields, and every shard record matching the plan it states: InvalidGraph
    naming the problem (ZooDataset reads its manifest through this)."""
    def bad(what: str) -> InvalidGraph:
        return InvalidGraph(f"{path}: {what}")

    if manifest.get("family") != ZOO_FAMILY:
        raise bad(f"a dataset of family {manifest.get('family')!r}, not a zoo: open it with goenv.datasets.open")
    zoo = manifest.get("zoo")
    if not isinstance(zoo, dict) or not isinstance(zoo.get("library"), str):
        raise bad("a zoo manifest without its 'zoo' plan (library, model types, sizes)")
    types, sizes = zoo.get("model_types"), zoo.get("sizes")
    if not (isinstance(types, list) and types and all(isinstance(t, str) for t in types)
            and isinstance(sizes, list) and sizes and all(isinstance(s, str) for s in sizes)):
        raise bad("the zoo plan's 'model_types' and 'sizes' are not lists of names")
    shard_size, count, shards = manifest.get("shard_size"), manifest.get("count"), manifest.get("shards")
    if not is_count(shard_size, 1) or not is_count(count) or zoo.get("shard_size") != shard_size:
        raise bad("'shard_size' (>= 1) or 'count' (>= 0) is not a count, or the plan's shard size differs")
    if not isinstance(manifest.get("complete", False), bool):
        raise bad("'complete' is not true or false")
    fewer = zoo.get("types_by_size", {})
    if not (isinstance(fewer, dict) and set(fewer) <= set(sizes)
            and all(isinstance(built, list) and set(built) < set(types) for built in fewer.values())):
        raise bad("the zoo plan's 'types_by_size' does not map some of its sizes to some of its model types")
    num_builds = sum(len(fewer.get(size, types)) for size in sizes)
    if zoo.get("num_builds") != num_builds:
        raise bad(f"the plan's 'num_builds' is not the {num_builds} builds of its model types and sizes")
    num_shards = -(-num_builds // shard_size)
    if not isinstance(shards, list) or len(shards) > num_shards:
        raise bad(f"'shards' is not a list of at most {num_shards} records")
    first = 0
    for index, record in enumerate(shards):  # the finished shards are always a prefix of the plan
        if not isinstance(record, dict) or record.get("index") != index or record.get("file") != shard_file(index):
            raise bad(f"shard record {index} is not the record of {shard_file(index)} (index {index})")
        if not all(is_count(record.get(k)) for k in ("first", "count", "bytes")) or record["first"] != first:
            raise bad(f"shard record {index} lacks integer first, count or bytes, or does not start at graph {first}")
        if not is_sha256(record.get("sha256")):
            raise bad(f"shard record {index} has no SHA-256")
        entries = record.get("builds")
        expected = min(shard_size, num_builds - index * shard_size)
        if not isinstance(entries, list) or len(entries) != expected:
            raise bad(f"shard record {index} does not list its {expected} builds")
        graphs = [e.get("graph") for e in entries if isinstance(e, dict) and e.get("status") == "imported"]
        if not all(isinstance(e, dict) and e.get("status") in STATUSES for e in entries) or \
                graphs != list(range(first, first + len(graphs))) or len(graphs) != record["count"]:
            raise bad(f"shard record {index}: its builds' statuses and graph indices do not match its "
                      f"{record['count']} graphs from {first}")
        first += record["count"]
    if first != count:
        raise bad(f"'count' is {count}, the finished shards hold {first} graphs")


def _read_manifest(root: str) -> dict | None:
    """The folder's manifest when it is a readable goenv dataset manifest, else None."""
    try:
        _, manifest = DATASET_FOLDER.read_manifest(root, "dataset manifest")
    except (InvalidGraph, OSError):
        return None
    return manifest if isinstance(manifest, dict) and manifest.get("format") == FORMAT else None


# ---------------------------------------------------------------------------
# Building the dataset.

def build_dataset(out_dir: str | os.PathLike, *, library: str = "transformers",
                  model_types: Sequence[str] | None = None, sizes: Sequence[str] | None = None,
                  workers: int = 1, ray: bool = False, address: str | None = None,
                  memory_limit: int = DEFAULT_MEMORY_LIMIT, time_limit: float = DEFAULT_TIME_LIMIT,
                  shard_size: int = DEFAULT_SHARD_SIZE, overwrite: bool = False, progress: bool = True,
                  builder=None, on_shard: Callable[[str], None] | None = None) -> "ZooDataset":
    """Builds the zoo's graphs into `out_dir` (see the module's docstring) and returns the
    dataset; the coverage report (coverage.json, coverage.md) is written beside it after every
    shard. `workers` builds run at once, each in the builder's limited child process, on this
    machine or, with ray=True, as Ray tasks (a local Ray of `workers` CPUs, or the cluster at
    `address`). `builder` is the module that builds models (goenv.datasets.zoo; tests pass a
    stand-in with the same names). `on_shard(root)` is called after each finished shard."""
    builder = builder or _zoo()
    workers, shard_size, memory_limit, time_limit = (
        checked_int("workers", workers, 1, 1024), checked_int("shard_size", shard_size, 1),
        checked_int("memory_limit", memory_limit, 1), checked_number("time_limit", time_limit))
    if not time_limit > 0:
        raise InvalidArgument(f"time_limit must be a positive number of seconds, got {time_limit!r}")
    ray, overwrite, progress = (checked_flag("ray", ray), checked_flag("overwrite", overwrite),
                                checked_flag("progress", progress))
    if address is not None and not ray:
        raise InvalidArgument("address= joins a Ray cluster: give it with ray=True (--ray)")
    requests = plan_requests(library, model_types, sizes, builder)
    identity = _identity(requests, builder, memory_limit, time_limit, shard_size)
    plan = _shard_plan(requests, shard_size)

    root = output_folder(out_dir, "zoo dataset folder")
    kept = _kept_shards(root, identity, overwrite)
    seen = {entry["structural_hash"]: f"{entry['library']}/{entry['model_type']}/{entry['size']}"
            for record in kept for entry in record["builds"] if entry["status"] == "imported"}
    measurements = _previous_measurements(root, kept)
    manifest = {"format": FORMAT, "format_version": FORMAT_VERSION, "goenv_version": goenv_version(),
                "family": ZOO_FAMILY, "params": {}, "seed": 0, "shard_size": shard_size,
                "count": sum(r["count"] for r in kept), "num_shards": len(plan), "complete": False,
                "zoo": identity, "shards": list(kept)}

    started, kept_builds = time.perf_counter(), sum(len(r["builds"]) for r in kept)

    def save() -> None:
        manifest["count"] = sum(r["count"] for r in manifest["shards"])
        manifest["complete"] = len(manifest["shards"]) == len(plan)
        DATASET_FOLDER.write_manifest(root, manifest, "dataset manifest")
        run = {"workers": workers, "ray": ray, "builds": sum(len(r["builds"]) for r in manifest["shards"]) - kept_builds,
               "wall_seconds": round(time.perf_counter() - started, 3)}
        write_report(root, manifest, measurements, builder, run)

    save()
    todo = [request for shard in plan[len(kept):] for request in shard]
    limits = {"memory_limit": memory_limit, "time_limit": time_limit}
    bar = progress_bar(progress, total=len(requests), initial=len(requests) - len(todo), desc=f"zoo {library}",
                       unit="model", dynamic_ncols=True)
    results = (_ray_results(builder, todo, workers, limits, address) if ray
               else _local_results(builder, todo, workers, limits))
    try:  # one shard at a time, in plan order
        shard_index, builds, blobs = len(kept), [], []
        for request, result in zip(todo, results):
            record, blob = _record(request, result, seen, manifest["count"] + len(blobs))
            builds.append(record)
            measurements[request.key] = _measurement(result, blob)
            if blob is not None:
                blobs.append(blob)
            bar.update(1)
            bar.set_postfix_str(f"{request.model_type}/{request.size}", refresh=False)
            if len(builds) == len(plan[shard_index]):
                stored = DATASET_FOLDER.store(root, shard_file(shard_index), pack_shard(blobs), "dataset shard")
                manifest["shards"].append({"file": stored["file"], "index": shard_index, "first": manifest["count"],
                                           "count": len(blobs), "bytes": stored["bytes"], "sha256": stored["sha256"],
                                           "builds": builds})
                save()
                if on_shard is not None:
                    on_shard(root)
                shard_index, builds, blobs = shard_index + 1, [], []
    finally:
        if hasattr(results, "close"):
            results.close()
        bar.close()
    return ZooDataset(root)


def _kept_shards(root: str, identity: dict, overwrite: bool) -> list[dict]:
    """The records of the shards an earlier run of the same plan finished in `root` (its verified
    prefix), after removing interrupted writes; InvalidArgument, nothing changed, when `root`
    holds another dataset and `overwrite` is False (with it, that dataset's shards are removed)."""
    DATASET_FOLDER.remove_temporaries(root, also=("coverage",))  # the coverage report is written here too
    previous = _read_manifest(root)
    present = DATASET_FOLDER.shard_names(root)
    kept: list[dict] = []
    if previous is not None and previous.get("family") == ZOO_FAMILY and previous.get("zoo") == identity:
        try:
            check_manifest(previous, os.path.join(root, MANIFEST))
            kept = DATASET_FOLDER.verified_prefix(root, previous["shards"], "shard")
        except InvalidGraph:
            kept = []
    elif (previous is not None or present or os.path.lexists(os.path.join(root, MANIFEST))) and not overwrite:
        what = (f"a zoo dataset of another plan ({_difference(previous['zoo'], identity)})"
                if previous is not None and isinstance(previous.get("zoo"), dict) else
                f"a dataset of family '{previous.get('family')}'" if previous is not None else
                "shard files or a manifest goenv cannot read")
        raise InvalidArgument(f"{root} holds {what}; nothing was changed. Use another folder, or overwrite=True "
                              f"(--overwrite) to replace it")
    if overwrite:  # shard files of the replaced dataset; the kept prefix is this plan's own
        remove_regular_files(root, [name for name in present if name not in {r["file"] for r in kept}], "shard")
    return kept


def _difference(theirs: dict, ours: dict) -> str:
    def shown(value) -> str:
        text = repr(value)
        return text if len(text) <= 60 else text[:57] + "..."

    return ", ".join(f"{key}={shown(theirs.get(key))} there, {shown(ours[key])} here"
                     for key in ours if theirs.get(key) != ours[key])


def _previous_measurements(root: str, kept: list[dict]) -> dict[str, dict]:
    """Times, memory and op mixes of the kept shards' builds, from the last coverage report."""
    wanted = {f"{e['library']}/{e['model_type']}/{e['size']}" for record in kept for e in record["builds"]}
    return {key: value for key, value in read_measurements(root).items() if key in wanted}


# ---------------------------------------------------------------------------
# Reading.

class ZooDataset(Dataset):
    """A zoo folder, read lazily like any goenv dataset (len, ds[i], slices, iteration), plus
    where each graph came from: provenance(i), and every build of the plan (records)."""

    check_manifest = staticmethod(check_manifest)

    def __init__(self, root: str | os.PathLike):
        super().__init__(root)
        self.records = [entry for record in self.shards for entry in record["builds"]]
        self._imported = [entry for entry in self.records if entry["status"] == "imported"]

    @property
    def library(self) -> str:
        return self.manifest["zoo"]["library"]

    def __repr__(self) -> str:
        zoo = self.manifest["zoo"]
        return (f"<goenv.datasets.zoo.ZooDataset {zoo['library']} {zoo['library_version']}: {len(self)} graphs of "
                f"{zoo['num_builds']} builds in {len(self.shards)} shards at {self.root}>")

    def summary(self) -> str:
        zoo, records = self.manifest["zoo"], self.records
        imported = {r["model_type"] for r in records if r["status"] in ("imported", "duplicate")}
        duplicates = sum(r["status"] == "duplicate" for r in records)
        return (f"{self.root}: a zoo of {zoo['library']} {zoo['library_version']}: {len(self)} graphs from "
                f"{len(records)} builds (sizes {', '.join(zoo['sizes'])}; {len(imported)} of "
                f"{len(zoo['model_types'])} model types imported, {duplicates} duplicates, "
                f"{len(records) - len(self._imported) - duplicates} failed), {len(self.shards)} shards, "
                f"{self._bytes() / 2**20:.1f} MiB; coverage report: {os.path.join(self.root, 'coverage.md')}")

    def _unfinished(self, shards: list[dict]) -> str:
        built = sum(len(record["builds"]) for record in shards)
        return (f"incomplete zoo ({built} of {self.manifest['zoo']['num_builds']} builds in finished shards); run "
                f"the same goenv dataset zoo command again to finish it")

    def _index(self, index) -> int:
        i = int(index)
        if i < 0:
            i += len(self)
        if not 0 <= i < len(self):
            raise IndexError(f"graph index {index} out of range for a dataset of {len(self)} graphs")
        return i

    def provenance(self, index: int) -> dict:
        """Where graph `index` came from: library and version, model type, size, config hash,
        goenv and torch versions, structural hash."""
        return dict(self._imported[self._index(index)]["provenance"])

    def verify(self) -> None:
        """Every shard's checksum and container, and every graph's structural hash against its
        record (InvalidGraph on the first problem). The graphs are not rebuilt: the zoo's
        determinism test does that (tests/python/test_zoo_dataset.py)."""
        for k, record in enumerate(self.shards):
            self._cached = None
            blobs = self._shard_graph_bytes(k)
            imported = [e for e in record["builds"] if e["status"] == "imported"]
            for blob, entry in zip(blobs, imported):
                if structural_hash(Graph.from_bytes(blob)) != entry["structural_hash"]:
                    raise InvalidGraph(f"{self.root}: graph {entry['graph']} ({entry['model_type']}/{entry['size']}) "
                                       f"does not have the structural hash its record gives")


def records_of(dataset_or_manifest: Any) -> list[dict]:
    """Every build record of a zoo dataset or manifest, in plan order."""
    manifest = getattr(dataset_or_manifest, "manifest", dataset_or_manifest)
    return [entry for record in manifest["shards"] for entry in record["builds"]]
