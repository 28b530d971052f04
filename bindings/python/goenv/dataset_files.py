"""Dataset files: many graphs of one family, in sharded, checksummed files.

    goenv.datasets.generate("random-layered", 10_000, "data/rl", params={"num_layers": 30}, seed=0)
    ds = goenv.datasets.open("data/rl")      # lazy; len(ds), ds[i], for g in ds
    goenv dataset generate random-layered --count 10000 --out data/rl --param num_layers=30

A dataset is a folder:

    manifest.json              what was generated and how, and one record per finished shard
    shard-00000.goenv-shard    graphs [0, shard_size), then shard-00001 ...

Graph i is built with the given parameters and seed = seed + i when the family
has a `seed` parameter (otherwise every graph is the same and count > 1 only
repeats it, with a warning).

Shard file, little-endian: magic b"GOENVSHD", u32 format version, u32 graph
count, then per graph a u64 byte length and Graph.to_bytes() (itself a checked
envelope). manifest.json: {"format": "goenv-dataset", "format_version",
"goenv_version", "family", "params", "seed", "count", "shard_size",
"num_shards", "complete", "shards": [{"file", "index", "first", "count",
"bytes", "sha256"}]}. Every file is written to a temporary name and renamed
into place, and the manifest is rewritten after each finished shard, so an
interrupted run leaves only whole shards behind; running the same command again
keeps every shard whose checksum matches its record and rewrites the rest
(missing, truncated or corrupt). A directory generated with other parameters
is refused with an error, never mixed. Without a readable manifest the shards
are verified one by one (every graph decodes, the first is the one this family,
params and seed build): the manifest is rebuilt from them when every shard file
there verifies, and otherwise nothing is touched and the error names
overwrite=True. Nothing is deleted without overwrite=True. Reading verifies each
shard's SHA-256 before its graphs are used; a mismatch or truncation raises
goenv.InvalidGraph. Every manifest entry must name its own shard file
(shard-NNNNN.goenv-shard) inside the folder; shards and the manifest are read
only as regular files of at most MAX_FILE_BYTES and MAX_MANIFEST_BYTES.
"""

from __future__ import annotations

import argparse
import bisect
import collections
import concurrent.futures
import hashlib
import math
import os
import re
import struct
import sys
import warnings
from typing import Any, Iterator, Mapping, Sequence

import numpy as np

import goenv._core as _core
from goenv._core import Graph, InvalidArgument, InvalidGraph
from goenv.arguments import as_command_line, checked_flag, checked_int, checked_number, is_count
from goenv.files import output_folder
from goenv.ordered import in_order
from goenv.progress import progress_bar
from goenv.storage import MANIFEST, ShardedFolder, goenv_version, is_sha256, plan_shards, read_shard
from goenv.storage import MAX_MANIFEST_BYTES  # noqa: F401 (a dataset's manifest limit, named here too)

FORMAT = "goenv-dataset"
FORMAT_VERSION = 1
SHARD_MAGIC = b"GOENVSHD"
SHARD_VERSION = 1
SHARD_SUFFIX = ".goenv-shard"
DATASET_FOLDER = ShardedFolder("dataset folder", ("shard",), SHARD_SUFFIX)  # the zoo's folders too
ZOO_FAMILY = "zoo"  # the manifest "family" of a zoo folder, whose manifest has a format of its own
_SHARD_HEADER = struct.Struct("<8sII")   # magic, version, count
_LENGTH = struct.Struct("<Q")

__all__ = ["Dataset", "generate", "generate_main", "manifest_family", "to_pyg", "add_generate_arguments",
           "run_generate"]


def shard_file(index: int) -> str:
    return DATASET_FOLDER.shard_file(index)


# ---------------------------------------------------------------------------
# Files.

def pack_shard(graph_bytes: Sequence[bytes]) -> bytes:
    """The shard container around serialized graphs."""
    parts = [_SHARD_HEADER.pack(SHARD_MAGIC, SHARD_VERSION, len(graph_bytes))]
    for blob in graph_bytes:
        parts.append(_LENGTH.pack(len(blob)))
        parts.append(blob)
    return b"".join(parts)


def unpack_shard(data: bytes, what: str = "shard") -> list[bytes]:
    """The serialized graphs of a shard container; InvalidGraph when it is not one or is cut short."""
    if len(data) < _SHARD_HEADER.size:
        raise InvalidGraph(f"{what}: truncated ({len(data)} bytes, shorter than the {_SHARD_HEADER.size}-byte header)")
    magic, version, count = _SHARD_HEADER.unpack_from(data, 0)
    if magic != SHARD_MAGIC:
        raise InvalidGraph(f"{what}: not a goenv shard (magic {magic!r}, expected {SHARD_MAGIC!r})")
    if version != SHARD_VERSION:
        raise InvalidGraph(f"{what}: shard format version {version}, this goenv reads version {SHARD_VERSION}")
    offset, blobs = _SHARD_HEADER.size, []
    for i in range(count):
        if offset + _LENGTH.size > len(data):
            raise InvalidGraph(f"{what}: truncated in the header of graph {i} of {count}")
        (length,) = _LENGTH.unpack_from(data, offset)
        offset += _LENGTH.size
        if offset + length > len(data):
            raise InvalidGraph(f"{what}: truncated in graph {i} of {count} ({len(data) - offset} of {length} bytes)")
        blobs.append(data[offset:offset + length])
        offset += length
    if offset != len(data):
        raise InvalidGraph(f"{what}: {len(data) - offset} unexpected bytes after the last of {count} graphs")
    return blobs


def _read_manifest(root: str, check=None) -> dict:
    """The manifest, checked by `check` (default _check_manifest: a family's graphs);
    InvalidGraph naming the problem otherwise."""
    path, manifest = DATASET_FOLDER.read_manifest(root, "dataset manifest")
    if not isinstance(manifest, dict) or manifest.get("format") != FORMAT:
        raise InvalidGraph(f"{path}: not a goenv dataset manifest (format {manifest.get('format')!r})"
                           if isinstance(manifest, dict) else f"{path}: not a goenv dataset manifest")
    if manifest.get("format_version") != FORMAT_VERSION:
        raise InvalidGraph(f"{path}: dataset format version {manifest.get('format_version')!r}, this goenv reads "
                           f"version {FORMAT_VERSION}")
    (check or _check_manifest)(manifest, path)
    return manifest


def _check_manifest(manifest: dict, path: str) -> None:
    """Every field has its type and range, and every shard record is the one the plan of
    (count, shard_size) has at its index, naming its own file: nothing outside the folder."""
    def bad(what: str) -> InvalidGraph:
        return InvalidGraph(f"{path}: {what}")

    if manifest.get("family") == ZOO_FAMILY:  # its own format (goenv.datasets.zoo.dataset.ZooDataset reads it)
        raise bad("a zoo folder (goenv dataset zoo), not a family's graphs: open it with goenv.datasets.open")
    for key in ("family", "params", "seed", "count", "shard_size", "shards"):
        if key not in manifest:
            raise bad(f"the manifest has no '{key}'")
    if not isinstance(manifest["family"], str):
        raise bad("'family' is not a name")
    params = manifest["params"]
    number = (int, float)
    if not isinstance(params, dict) or not all(
            isinstance(v, number) and not isinstance(v, bool)
            or isinstance(v, list) and len(v) == 2 and all(isinstance(x, number) and not isinstance(x, bool) for x in v)
            for v in params.values()):
        raise bad("'params' is not a map of numbers or [low, high] ranges")
    if not is_count(manifest["seed"]) or not is_count(manifest["count"], 1) or not is_count(
            manifest["shard_size"], 1):
        raise bad("'seed', 'count' or 'shard_size' is not a non-negative integer (count and shard_size >= 1)")
    if not isinstance(manifest.get("complete", False), bool):
        raise bad("'complete' is not true or false")
    count, shard_size, shards = manifest["count"], manifest["shard_size"], manifest["shards"]
    num_shards = -(-count // shard_size)
    if not isinstance(shards, list) or len(shards) > num_shards:
        raise bad(f"'shards' is not a list of at most {num_shards} records")
    seen = set()
    for record in shards:
        if not isinstance(record, dict) or not all(is_count(record.get(k)) for k in ("index", "first", "count",
                                                                                     "bytes")):
            raise bad(f"shard record {str(record)[:100]} lacks an integer index, first, count or bytes")
        index = record["index"]
        if index >= num_shards or index in seen:
            raise bad(f"shard record {index} is outside the {num_shards} shards or repeated")
        seen.add(index)
        if record.get("file") != shard_file(index):
            raise bad(f"shard record {index} names file {str(record.get('file'))[:100]!r}, not {shard_file(index)!r}")
        first = index * shard_size
        if record["first"] != first or record["count"] != min(shard_size, count - first):
            raise bad(f"shard record {index} covers graphs {record['first']}..+{record['count']}, the plan has "
                      f"{first}..+{min(shard_size, count - first)}")
        if not is_sha256(record.get("sha256")):
            raise bad(f"shard record {index} has no SHA-256")


# ---------------------------------------------------------------------------
# Generating.

def _normalize_params(family: str, params: Mapping[str, Any] | None) -> tuple[dict[str, Any], bool]:
    """Checks parameter names against the family (NotFound for an unknown family); returns each as a
    float, or as a [low, high] list for a range (graph i draws its value from it), and whether the
    family is seeded."""
    if not isinstance(family, str):
        raise InvalidArgument(f"family must be a graph family's name (goenv.datasets.list()), got {type(family).__name__}")
    if params is not None and not isinstance(params, Mapping):
        raise InvalidArgument(f"params must be a mapping of parameter names to values or (low, high) ranges, got "
                              f"{type(params).__name__}")
    accepted = _core.graph_family(family)["params"]
    params = {str(k): _param_value(family, str(k), v) for k, v in dict(params or {}).items()}
    unknown = sorted(set(params) - set(accepted))
    if unknown:
        raise InvalidArgument(f"graph '{family}' has no parameter(s) {', '.join(unknown)}; its parameters: "
                              f"{', '.join(sorted(accepted)) or 'none'}")
    seeded = "seed" in accepted
    if seeded and "seed" in params:
        raise InvalidArgument(f"graph '{family}': give the first seed as seed=..., not as params['seed'] "
                              f"(graph i gets seed + i)")
    return params, seeded


def _param_value(family: str, key: str, value: Any) -> float | list[float]:
    """A number, or a (low, high) range of numbers with low <= high."""
    is_range = isinstance(value, (tuple, list))
    values = list(value) if is_range else [value]
    if is_range and len(values) != 2:
        raise InvalidArgument(f"graph '{family}': the range of parameter '{key}' needs (low, high), got {value!r}")
    try:
        numbers = [checked_number(key, x) for x in values]
    except InvalidArgument:
        raise InvalidArgument(f"graph '{family}': parameter '{key}' must be a number or a (low, high) range, "
                              f"got {value!r}") from None
    if not all(math.isfinite(x) for x in numbers):
        raise InvalidArgument(f"graph '{family}': parameter '{key}' must be finite, got {value!r}")
    if is_range and numbers[0] > numbers[1]:
        raise InvalidArgument(f"graph '{family}': range of parameter '{key}' has low {numbers[0]:g} > high "
                              f"{numbers[1]:g}")
    return numbers if is_range else numbers[0]


def graph_params(params: Mapping[str, Any], seed: int, index: int, seeded: bool) -> dict[str, float]:
    """Graph `index`'s builder parameters: ranges drawn uniformly (integers when both ends are
    integers) from a generator seeded by (seed, index), so any graph can be rebuilt on its own."""
    rng = np.random.default_rng([seed, index])
    drawn = {}
    for key, value in sorted(params.items()):
        if isinstance(value, list):
            low, high = value
            integral = low.is_integer() and high.is_integer()
            drawn[key] = float(rng.integers(int(low), int(high) + 1)) if integral else float(rng.uniform(low, high))
        else:
            drawn[key] = value
    if seeded:
        drawn["seed"] = float(seed + index)
    return drawn


def _check_range_ends(family: str, params: dict, seeded: bool, seed: int) -> None:
    """Builds a graph at the low ends of the ranges and one at the high ends, before anything is
    written: a range the builder refuses at an end (an integer parameter from 0, or from 4.5) is
    named now, not when a drawn value fails after shards were written."""
    ranges = {key: value for key, value in params.items() if isinstance(value, list)}
    for end, name in ((0, "low"), (1, "high")):
        if not ranges:
            return
        values = {**params, **{key: value[end] for key, value in ranges.items()}}
        if seeded:
            values["seed"] = float(seed)
        try:
            _core.build_graph(family, values)
        except InvalidArgument as e:
            shown = ", ".join(f"{key}=({_number(value[0])}, {_number(value[1])})" for key, value in ranges.items())
            which = f"the range {shown} is refused at its {name} end" if len(ranges) == 1 else \
                f"the ranges {shown} are refused at their {name} ends"
            raise InvalidArgument(f"graph '{family}': {which}: {e}") from None


def _number(x: float) -> str:
    return str(int(x)) if float(x).is_integer() else repr(x)


def _built_bytes(family: str, params: dict, seeded: bool, seed: int, index: int) -> bytes:
    """Graph `index` of a dataset, built afresh: what its shard holds at that index."""
    return _core.build_graph(family, graph_params(params, seed, index, seeded)).to_bytes()


def _plan(count: int, shard_size: int) -> list[dict]:
    return [{"file": shard_file(shard["index"]), **shard} for shard in plan_shards(count, shard_size)]


def _recover_shards(root: str, plan: list[dict], family: str, params: dict, seeded: bool,
                    seed: int) -> dict[int, dict]:
    """Shards that are whole without a manifest to vouch for them: every graph decodes (each is a
    checksummed envelope) and the first is byte-identical to a fresh build, which pins family,
    params and seed at 1/shard_size of the cost of regenerating."""
    kept: dict[int, dict] = {}
    present = set(DATASET_FOLDER.shard_names(root))
    for shard in plan:
        if shard["file"] not in present:
            continue
        try:
            path = DATASET_FOLDER.path(root, shard["file"])
            data = read_shard(path, "shard")
            blobs = unpack_shard(data, path)
            if len(blobs) != shard["count"]:
                continue
            for blob in blobs:
                Graph.from_bytes(blob)
        except (InvalidGraph, OSError):
            continue
        if _built_bytes(family, params, seeded, seed, shard["first"]) == blobs[0]:
            kept[shard["index"]] = {**shard, "bytes": len(data), "sha256": hashlib.sha256(data).hexdigest()}
    return kept


def generate(family: str, count: int, out_dir: str | os.PathLike, *, shard_size: int = 64,
             params: Mapping[str, float | tuple[float, float]] | None = None, seed: int = 0,
             workers: int | None = None, progress: bool = True, overwrite: bool = False) -> "Dataset":
    """Writes `count` graphs of `family` into sharded files under `out_dir`; returns its Dataset.

    Graph i is built with `params` and seed = seed + i (families with a 'seed' parameter); a
    parameter given as a (low, high) range is drawn for each graph (graph_params), e.g.
    params={"num_nodes": (100, 1000)}. Resumable: a second call with the same arguments keeps every
    verified shard and rewrites only missing or damaged ones. Existing graphs are never deleted: a
    directory holding a dataset made with another family, params, seed, shard_size or count raises
    InvalidArgument, unless overwrite=True, which replaces it. Builds run on `workers` threads
    (default: the CPU count, at most 8); the C++ builders release the GIL.
    """
    count, shard_size, seed = checked_int("count", count, 1), checked_int("shard_size", shard_size, 1), checked_int(
        "seed", seed)
    progress, overwrite = checked_flag("progress", progress), checked_flag("overwrite", overwrite)
    params, seeded = _checked_params(family, params, seed, count)
    workers = workers if workers is not None else min(8, os.cpu_count() or 1)
    checked_int("workers", workers, 1, _core.MAX_THREADS)  # the threads limit of vector envs and agents
    _check_range_ends(family, params, seeded, seed)

    root = output_folder(out_dir, "dataset folder")
    DATASET_FOLDER.remove_temporaries(root)
    identity = {"family": family, "params": dict(sorted(params.items())), "seed": seed, "shard_size": shard_size}
    plan = _plan(count, shard_size)
    kept = _kept_shards(root, plan, identity, count, seeded, overwrite)
    if overwrite:  # shards of a replaced larger dataset; never deleted without overwrite=True
        planned_files = {p["file"] for p in plan}
        for name in DATASET_FOLDER.shard_names(root):
            if name not in planned_files:
                os.unlink(os.path.join(root, name))  # the entry itself, never a link's target

    manifest = {"format": FORMAT, "format_version": FORMAT_VERSION, "goenv_version": goenv_version(), **identity,
                "count": count, "num_shards": len(plan), "complete": False, "shards": []}

    def save_manifest() -> None:
        manifest["shards"] = [kept[k] for k in sorted(kept)]
        manifest["complete"] = len(kept) == len(plan)
        DATASET_FOLDER.write_manifest(root, manifest, "dataset file")

    save_manifest()
    todo = [p for p in plan if p["index"] not in kept]
    if todo:
        _write_shards(family, params, seeded, seed, root, todo, kept, save_manifest, workers, progress,
                      total=count, done=sum(r["count"] for r in kept.values()))
    return Dataset(root)


# The warnings below point at generate()'s caller: `stacklevel` counts the frames up to it.

def _checked_params(family: str, params: Mapping[str, Any] | None, seed: int, count: int) -> tuple[dict, bool]:
    """The normalized params and whether the family is seeded; graph seeds past the builders'
    range refused, and a warning when every graph would be the same."""
    params, seeded = _normalize_params(family, params)
    if seeded and seed + count - 1 > 2**31 - 1:
        raise InvalidArgument(f"seeds {seed}..{seed + count - 1} exceed the builders' range [0, 2^31 - 1]")
    if not seeded and count > 1 and not any(isinstance(v, list) for v in params.values()):
        warnings.warn(f"graph '{family}' has no 'seed' parameter: all {count} graphs will be identical",
                      UserWarning, stacklevel=3)
    return params, seeded


def _kept_shards(root: str, plan: list[dict], identity: dict, count: int, seeded: bool,
                 overwrite: bool) -> dict[int, dict]:
    """The shards already in `root` that this dataset keeps: those its manifest records and
    still match, or without a readable manifest those that verify (_recover_shards). Another
    dataset's graphs are refused unless `overwrite`."""
    present = DATASET_FOLDER.shard_names(root)
    damaged = f"{os.path.join(root, MANIFEST)}: missing" if present else None
    if os.path.lexists(os.path.join(root, MANIFEST)):
        try:
            previous = _read_manifest(root)
        except (InvalidGraph, OSError) as error:  # damaged manifest: the shards themselves may still be whole
            damaged = str(error)
        else:
            return _kept_of_manifest(root, previous, plan, {**identity, "count": count}, bool(present), overwrite)
    if damaged is None:
        return {}
    # Nothing vouches for the shards: keep those that verify as this dataset's; any other
    # shard file may be another dataset's graphs, which only overwrite=True replaces.
    # A manifest.json with no shard to vouch for it may be anyone's file: not replaced either.
    kept = _recover_shards(root, plan, identity["family"], identity["params"], seeded, identity["seed"])
    unverified = sorted(set(present) - {record["file"] for record in kept.values()})
    if (unverified or not kept) and not overwrite:
        what = (f"{len(unverified)} of {len(present)} shard files there ({', '.join(unverified[:3])}"
                f"{', ...' if len(unverified) > 3 else ''}) do not verify as graphs of this family, params and "
                f"seed" if unverified else "no shard file there shows it belongs to a goenv dataset")
        raise InvalidArgument(f"{damaged}; {what}; nothing was changed. Use another directory, or "
                              f"overwrite=True (--overwrite) to replace them")
    warnings.warn(f"{damaged}; kept {len(kept)} of {len(plan)} shards that decode intact and match this "
                  f"family, params and seed", UserWarning, stacklevel=3)
    return kept


def _kept_of_manifest(root: str, previous: dict, plan: list[dict], ours: dict, shards_present: bool,
                      overwrite: bool) -> dict[int, dict]:
    """The shards that a readable manifest records and whose files still match, when it records
    this dataset (`ours`: identity and count); another one is refused unless `overwrite`."""
    theirs = {"family": previous["family"], "params": dict(sorted(previous["params"].items())),
              "seed": previous["seed"], "shard_size": previous["shard_size"], "count": previous["count"]}
    # A run that failed before its first shard (a parameter the builder refuses) left only its
    # manifest: no graphs there to keep from another run.
    holds_graphs = bool(previous["shards"] or shards_present)
    if theirs != ours and not overwrite and holds_graphs:
        differences = ", ".join(f"{k}={theirs[k]!r} there, {ours[k]!r} here"
                                for k in ours if theirs[k] != ours[k])
        raise InvalidArgument(f"{root} holds {previous['count']} graphs generated with other parameters "
                              f"({differences}); nothing was changed. Use another directory, or "
                              f"overwrite=True (--overwrite) to replace them")
    if theirs != ours:
        return {}  # overwrite: nothing of the old dataset is kept
    kept: dict[int, dict] = {}
    planned = {(p["file"], p["first"], p["count"]) for p in plan}
    for record in previous["shards"]:
        if ((record["file"], record["first"], record["count"]) in planned
                and DATASET_FOLDER.matches(root, record, "shard")):
            kept[record["index"]] = record
    if kept and previous.get("goenv_version") != goenv_version():
        warnings.warn(f"{root}: keeping {len(kept)} shards written by goenv {previous.get('goenv_version')} "
                      f"(this is {goenv_version()})", UserWarning, stacklevel=4)
    return kept


def _write_shards(family, params, seeded, seed, root, todo, kept, save_manifest, workers, progress, total, done):
    jobs = iter([(shard, i) for shard in todo for i in range(shard["first"], shard["first"] + shard["count"])])
    window = 4 * workers  # graphs in flight: bounds memory, keeps every worker busy
    blobs: dict[int, list[bytes]] = collections.defaultdict(list)
    bar = progress_bar(progress, total=total, initial=done, desc=f"generate {family}", unit="graph",
                       dynamic_ncols=True)
    executor = concurrent.futures.ThreadPoolExecutor(max_workers=workers, thread_name_prefix="goenv-generate")
    try:
        # Results in graph order, so shards finish in order.
        for shard, blob in in_order(jobs, window,
                                    lambda job: (job[0], executor.submit(_built_bytes, family, params, seeded, seed,
                                                                         job[1])),
                                    lambda pair: (pair[0], pair[1].result())):
            blobs[shard["index"]].append(blob)
            bar.update(1)
            if len(blobs[shard["index"]]) == shard["count"]:
                data = pack_shard(blobs.pop(shard["index"]))
                kept[shard["index"]] = {**shard, **DATASET_FOLDER.store(root, shard["file"], data, "dataset file")}
                save_manifest()
    finally:
        executor.shutdown(wait=True, cancel_futures=True)
        bar.close()


# ---------------------------------------------------------------------------
# Reading.

class Dataset:
    """A generated dataset, read lazily: len(ds), ds[i] (negative and slices too), iteration.

    Each shard's SHA-256 is checked against the manifest whenever the shard is read; the
    most recently read shard is kept in memory.
    """

    # How the manifest is checked: a family's graphs here; a subclass reading another kind of
    # folder (ZooDataset) brings its own.
    check_manifest = staticmethod(_check_manifest)

    def __init__(self, root: str | os.PathLike):
        self.root = os.fspath(root)
        if not os.path.isdir(self.root):
            if os.path.lexists(self.root):  # a file (a graph file?), not a dataset's folder
                raise NotADirectoryError(20, "Not a dataset directory (a dataset is a folder made by "
                                             "goenv dataset generate)", self.root)
            raise FileNotFoundError(2, "No such dataset directory", self.root)
        if not os.path.lexists(os.path.join(self.root, MANIFEST)):  # anything else there: _read_manifest says what
            raise FileNotFoundError(2, f"Not a goenv dataset (no {MANIFEST})", self.root)
        self.manifest = _read_manifest(self.root, type(self).check_manifest)
        shards = sorted(self.manifest["shards"], key=lambda record: record["index"])
        count = int(self.manifest["count"])
        if not self.manifest.get("complete") or sum(r["count"] for r in shards) != count:
            raise InvalidGraph(f"{self.root}: {self._unfinished(shards)}")
        first = 0
        for record in shards:
            if record["first"] != first:
                raise InvalidGraph(f"{self.root}: manifest shard {record['file']} starts at graph {record['first']}, "
                                   f"expected {first}")
            first += record["count"]
            path = DATASET_FOLDER.path(self.root, record["file"])
            if not os.path.isfile(path):
                raise InvalidGraph(f"{path}: shard missing; run the generate command again to rewrite it")
            size = os.path.getsize(path)
            if size != record["bytes"]:
                raise InvalidGraph(f"{path}: {size} bytes, the manifest records {record['bytes']} (truncated or "
                                   f"modified); run the generate command again to rewrite it")
        self.shards = shards
        self._starts = [r["first"] for r in shards]
        self._cached: tuple[int, list[bytes]] | None = None

    @property
    def family(self) -> str:
        return self.manifest["family"]

    @property
    def params(self) -> dict[str, float]:
        return dict(self.manifest["params"])

    @property
    def seed(self) -> int:
        return int(self.manifest["seed"])

    def __len__(self) -> int:
        return int(self.manifest["count"])

    def __repr__(self) -> str:
        return (f"<goenv.datasets.Dataset '{self.family}': {len(self)} graphs in {len(self.shards)} shards "
                f"at {self.root}>")

    def summary(self) -> str:
        """One line on what the folder holds, from its manifest (`goenv dataset info` prints it)."""
        params = ", ".join(f"{k}={v[0]:g}:{v[1]:g}" if isinstance(v, list) else f"{k}={v:g}"
                           for k, v in self.params.items()) or "-"
        return (f"{self.root}: {len(self)} graphs of {self.family} ({params}), first seed {self.seed}, "
                f"{len(self.shards)} shards, {self._bytes() / 2**20:.1f} MiB")

    def _bytes(self) -> int:
        return sum(shard["bytes"] for shard in self.shards)

    def _unfinished(self, shards: list[dict]) -> str:
        """Why a folder whose manifest is not complete cannot be read yet, and how to finish it."""
        have = sum(r["count"] for r in shards)
        return (f"incomplete dataset ({have} of {self.manifest['count']} graphs in finished shards); run the same "
                f"generate command again to finish it")

    def _shard_graph_bytes(self, k: int) -> list[bytes]:
        cached = self._cached  # one read: another thread may cache another shard meanwhile (labelling reads on two)
        if cached is not None and cached[0] == k:
            return cached[1]
        record = self.shards[k]
        path = DATASET_FOLDER.path(self.root, record["file"])
        try:
            data = read_shard(path, "shard")
        except FileNotFoundError as error:
            raise InvalidGraph(f"{path}: shard missing; run the generate command again to rewrite it") from error
        if len(data) != record["bytes"]:
            raise InvalidGraph(f"{path}: {len(data)} bytes, the manifest records {record['bytes']} (truncated or "
                               f"modified); run the generate command again to rewrite it")
        if hashlib.sha256(data).hexdigest() != record["sha256"]:
            raise InvalidGraph(f"{path}: SHA-256 does not match the manifest (corrupt or modified); run the generate "
                               f"command again to rewrite it")
        blobs = unpack_shard(data, path)
        if len(blobs) != record["count"]:
            raise InvalidGraph(f"{path}: holds {len(blobs)} graphs, the manifest records {record['count']}")
        self._cached = (k, blobs)
        return blobs

    def __getitem__(self, index):
        if isinstance(index, slice):
            return [self[i] for i in range(*index.indices(len(self)))]
        try:
            i = int(index)
        except TypeError:
            raise TypeError(f"dataset indices must be integers or slices, not {type(index).__name__}") from None
        n = len(self)
        if i < 0:
            i += n
        if not 0 <= i < n:
            raise IndexError(f"graph index {index} out of range for a dataset of {n} graphs")
        k = bisect.bisect_right(self._starts, i) - 1
        return Graph.from_bytes(self._shard_graph_bytes(k)[i - self.shards[k]["first"]])

    def __iter__(self) -> Iterator[Graph]:
        for k in range(len(self.shards)):
            for blob in self._shard_graph_bytes(k):
                yield Graph.from_bytes(blob)

    def verify(self) -> None:
        """Checks every shard's checksum and container, and that the manifest says how the graphs
        were made: its family and params are this goenv's, and graph 0 is byte-identical to a
        fresh build from them (as generate checks before it keeps a shard). InvalidGraph on the
        first problem."""
        for k in range(len(self.shards)):
            self._cached = None
            self._shard_graph_bytes(k)
        family, seed = self.manifest["family"], int(self.manifest["seed"])
        try:
            params, seeded = _normalize_params(family, self.manifest["params"])
        except (InvalidArgument, _core.NotFound) as error:
            raise InvalidGraph(f"{self.root}: the manifest does not say how its graphs were made: {error}") from error
        if _built_bytes(family, params, seeded, seed, 0) != self._shard_graph_bytes(0)[0]:
            raise InvalidGraph(f"{self.root}: graph 0 is not what family '{family}' builds from the manifest's "
                               f"params and seed (another goenv version's builders, or a manifest edited by hand)")


def manifest_family(path: str | os.PathLike) -> str | None:
    """The "family" the folder's manifest names, unchecked (None when there is no readable one):
    which reader the folder needs (goenv.datasets.open)."""
    try:
        _, manifest = DATASET_FOLDER.read_manifest(os.fspath(path), "dataset manifest")
    except (OSError, ValueError):  # no folder, no manifest, a bad one: the reader says which
        return None
    return manifest.get("family") if isinstance(manifest, dict) else None


# ---------------------------------------------------------------------------
# PyTorch Geometric.

def to_pyg(graph: Graph):
    """A torch_geometric.data.Data of a graph: x = the envs' static node features, edge_index (PyG
    order), edge_attr = the static edge features, plus the raw columns (flops, output_bytes,
    param_bytes, op_type, edge_bytes) and the graph's name."""
    try:
        import numpy as np
        import torch
        from torch_geometric.data import Data
    except ImportError as error:
        raise ImportError("goenv.datasets.to_pyg needs PyTorch Geometric, which is not installed: "
                          "pip install torch_geometric") from error
    core = _core.make_env_on_graph("placement", graph, _core.Cluster.preset("1xgpu"))
    observation, _ = core.reset(0)

    def tensor(array, dtype):
        return torch.from_numpy(np.array(array, dtype=dtype, copy=True))

    return Data(
        x=tensor(observation["node_features"], np.float32),
        edge_index=tensor(observation["edge_index"], np.int64),
        edge_attr=tensor(observation["edge_features"], np.float32),
        flops=tensor(graph.flops, np.float64),
        output_bytes=tensor(graph.output_bytes, np.int64),
        param_bytes=tensor(graph.param_bytes, np.int64),
        op_type=tensor(graph.op_types, np.int64),
        edge_bytes=tensor(graph.edge_bytes, np.int64),
        num_nodes=graph.num_nodes,
        name=graph.name,
    )


# ---------------------------------------------------------------------------
# Command line: goenv dataset generate FAMILY --count N --out DIR [--param k=v ...]

def add_generate_arguments(parser: argparse.ArgumentParser) -> argparse.ArgumentParser:
    parser.add_argument("family", help="graph family (goenv.datasets.list())")
    parser.add_argument("--count", type=int, required=True, help="number of graphs")
    parser.add_argument("--out", required=True, help="dataset directory (created; an existing run is resumed)")
    parser.add_argument("--shard-size", type=int, default=64, help="graphs per shard file (default: %(default)s)")
    parser.add_argument("--seed", type=int, default=0, help="graph i gets seed + i (default: %(default)s)")
    parser.add_argument("--param", action="append", default=[], metavar="KEY=VALUE",
                        help="builder parameter, repeatable (goenv.datasets.info(FAMILY)['params']); "
                             "KEY=LOW:HIGH draws each graph's value from a range, e.g. num_nodes=100:1000")
    parser.add_argument("--overwrite", action="store_true",
                        help="replace a dataset of other parameters or count in --out (never done otherwise)")
    parser.add_argument("--workers", type=int, default=None, help="builder threads (default: CPU count, max 8)")
    parser.add_argument("--no-progress", action="store_true", help="no progress bar")
    return parser


def _parse_params(items: Sequence[str]) -> dict[str, float | tuple[float, float]]:
    params = {}
    for item in items:
        key, sep, value = item.partition("=")
        if not sep or not key.strip():
            raise InvalidArgument(f"--param takes KEY=VALUE or KEY=LOW:HIGH, got {item!r}")
        try:
            parts = [float(x) for x in value.split(":")]
        except ValueError:
            raise InvalidArgument(f"--param {key.strip()}: {value!r} is not a number or LOW:HIGH") from None
        if len(parts) > 2:
            raise InvalidArgument(f"--param {key.strip()}: {value!r} is not a number or LOW:HIGH")
        params[key.strip()] = parts[0] if len(parts) == 1 else (parts[0], parts[1])
    return params


def run_generate(args: argparse.Namespace) -> None:
    with as_command_line("count", "shard_size", "workers", "seed"):
        dataset = generate(args.family, args.count, args.out, shard_size=args.shard_size,
                           params=_parse_params(args.param), seed=args.seed, workers=args.workers,
                           progress=not args.no_progress, overwrite=args.overwrite)
    print(f"{len(dataset)} graphs of {dataset.family} in {len(dataset.shards)} shards at {dataset.root}")


def generate_main(argv: Sequence[str] | None = None) -> int:
    """`goenv dataset generate ...` on its own; returns the exit status (2 with a one-line message on errors)."""
    parser = add_generate_arguments(argparse.ArgumentParser(
        prog="goenv dataset generate", description="Generate a sharded, checksummed dataset of graphs (resumable)."))
    args = parser.parse_args(argv)
    try:
        run_generate(args)
    except (_core.Error, KeyError, OSError) as error:
        message = str(error.args[0]) if error.args else type(error).__name__
        if isinstance(error, OSError) and error.strerror:
            message = f"{error.strerror}: {error.filename}" if error.filename else error.strerror
        message = re.sub(r"\s*\[[^\]\s]+:\d+\]$", "", message.splitlines()[0] if message else message)
        print(f"goenv: error: {message}", file=sys.stderr)
        return 2
    return 0
