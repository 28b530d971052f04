"""A labelled dataset on disk: label() writes it (resumable, in one process or on Ray),
Labels reads it (every shard checksummed when read).

    manifest.json              what was labelled and how, one record per finished shard
    graphs-00000.parquet       shard 0's graphs, once each  (tables.py has the columns)
    labels-00000.parquet       shard 0's K decisions per graph and their simulated outcomes

Shard k holds graphs [k * shard_size, (k + 1) * shard_size) of the source. Both files of a
shard are written to temporary names and renamed into place, then the manifest (rewritten
after each finished shard) records their sizes and SHA-256: a run killed at any moment
leaves whole files, and the same call again keeps every recorded shard whose files still
match and labels only the rest, so at most the shards in flight are labelled twice and
the result is byte-identical to an uninterrupted run. A folder labelled with another
source or configuration is refused, never mixed, and nothing is deleted without
overwrite=True. Reading checks each shard file's size and SHA-256 against the manifest and
raises goenv.InvalidGraph on a mismatch. The folder is a goenv.storage.ShardedFolder
(shard.LABELS_FOLDER); shard.py labels and writes one shard's files.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import secrets
import tempfile
from typing import Iterator

import numpy as np

import goenv._core as _core
from goenv._core import InvalidArgument, InvalidGraph
from goenv.agents import load_bytes
from goenv.arguments import checked_flag, checked_int, is_count
from goenv.distributed.session import check_address, require_ray
from goenv.files import output_folder, read_regular_file, remove_regular_files
from goenv.labels import decisions, tables
from goenv.labels.ray_workers import label_on_ray
from goenv.labels.shard import KINDS, LABELS_FOLDER, label_shard, shard_file
from goenv.labels.sources import resolve
from goenv.progress import progress_bar
from goenv.storage import MANIFEST, TEMPORARY_MARK, goenv_version, is_sha256, plan_shards, read_shard

FORMAT = "goenv-labels"
# 5: the decision heads byte-stream split (the same values; 4: plain); 4: every column
# required (non-null) in the Parquet schema but the heads the task does not
# decide (3: all optional; a head the task does not decide is null in the labels rows, the
# graph row has the env's defaults; 2: every head in every row; 1: one row group per shard,
# not per graph): all read.
FORMAT_VERSION = 5
READABLE_VERSIONS = (1, 2, 3, 4, 5)
FUSION_RULES = 2  # config["fusion_rules"] of fusion and joint labels (label() says why)
_PROBE = ".goenv-labels-probe"  # _probe's files


# ---------------------------------------------------------------------------
# The manifest.

def read_manifest(root: str) -> dict:
    """The checked manifest; InvalidGraph naming the problem otherwise."""
    path, manifest = LABELS_FOLDER.read_manifest(root, "labels manifest")
    if not isinstance(manifest, dict) or manifest.get("format") != FORMAT:
        found = manifest.get("format") if isinstance(manifest, dict) else None
        raise InvalidGraph(f"{path}: not a goenv labelled dataset (format {found!r}, expected {FORMAT!r})")
    if manifest.get("format_version") not in READABLE_VERSIONS:
        raise InvalidGraph(f"{path}: labels format version {manifest.get('format_version')!r}, this goenv reads "
                           f"versions {', '.join(map(str, READABLE_VERSIONS))}")

    def bad(what: str) -> InvalidGraph:
        return InvalidGraph(f"{path}: {what}")

    for key in ("source", "config", "count", "shard_size", "shards", "complete"):
        if key not in manifest:
            raise bad(f"the manifest has no '{key}'")
    if not isinstance(manifest["config"], dict) or not isinstance(manifest["source"], dict):
        raise bad("'config' or 'source' is not a map")
    if not is_count(manifest["count"], 1) or not is_count(manifest["shard_size"], 1):
        raise bad("'count' or 'shard_size' is not an integer >= 1")
    # The plan's length and entries are computed, not built: a manifest's count is not trusted
    # with memory (10**15 graphs would be as many records).
    size, count = manifest["shard_size"], manifest["count"]
    planned = -(-count // size)
    if manifest.get("num_shards", planned) != planned:
        raise bad(f"'num_shards' is {manifest['num_shards']!r}, but {count} graphs in shards of {size} make {planned}")
    manifest["num_shards"] = planned  # derived from count and shard_size wherever it is read
    if not isinstance(manifest["shards"], list) or len(manifest["shards"]) > planned:
        raise bad(f"'shards' is not a list of at most {planned} records")
    k = manifest["config"].get("decisions_per_graph")
    if not is_count(k, 1):
        raise bad("config's 'decisions_per_graph' is not an integer >= 1")
    _check_config(manifest["config"], bad)
    seen = set()
    for record in manifest["shards"]:
        if not isinstance(record, dict) or not all(is_count(record.get(k)) for k in ("index", "first", "count",
                                                                                     "rows")):
            raise bad(f"shard record {str(record)[:100]} lacks an integer index, first, count or rows")
        index = record["index"]
        if index >= planned or index in seen:
            raise bad(f"shard record {index} is outside the {planned} shards or repeated")
        seen.add(index)
        first = index * size
        if (record["first"], record["count"]) != (first, min(size, count - first)):
            raise bad(f"shard record {index} covers graphs {record['first']}..+{record['count']}, the plan has "
                      f"{first}..+{min(size, count - first)}")
        if record["rows"] != record["count"] * k:
            raise bad(f"shard record {index} has {record['rows']} rows, not {record['count']} graphs x {k} decisions")
        files = record.get("files")
        for kind in KINDS:
            entry = files.get(kind) if isinstance(files, dict) else None
            if not isinstance(entry, dict) or entry.get("file") != shard_file(kind, index):
                raise bad(f"shard record {index} does not name its {kind} file {shard_file(kind, index)!r}")
            if not is_count(entry.get("bytes")) or not is_sha256(entry.get("sha256")):
                raise bad(f"shard record {index} has no size or SHA-256 for its {kind} file")
    return manifest


def _check_config(config: dict, bad) -> None:
    """The labelling options a reader uses or reports, as label() writes them (older formats lack
    the last few)."""
    for key in ("task", "sampler", "seed", "cluster"):
        if key not in config:
            raise bad(f"config has no {key!r}")
    if config["task"] not in _core.task_names():
        raise bad(f"config's 'task' is {str(config.get('task'))[:40]!r}, not one of {', '.join(_core.task_names())}")
    checks = {"sampler": lambda v: v in decisions.SAMPLERS, "cluster": lambda v: v is None or isinstance(v, str),
              "seed": lambda v: is_count(v), "max_moves": lambda v: is_count(v),
              "max_fusion_size": lambda v: is_count(v, 1), "fusion_rules": lambda v: is_count(v, 1),
              "agent_sha256": lambda v: v is None or is_sha256(v)}
    for key, valid in checks.items():
        if key in config and not valid(config[key]):
            raise bad(f"config's {key!r} is {str(config[key])[:40]!r}, which label() never writes")


@contextlib.contextmanager
def _probe(root: str) -> Iterator[str]:
    """An empty file in the folder, there while Ray tasks run: a task that sees it (on this
    machine, or sharing its file system) writes its shards into the folder itself; one that does
    not (another machine, a Ray Client cluster) sends them back. Its name: PROBE.tmp-RANDOM."""
    name = f"{_PROBE}{TEMPORARY_MARK}{secrets.token_hex(8)}"
    path = LABELS_FOLDER.path(root, name)
    with open(path, "xb"):
        pass
    try:
        yield name
    finally:
        try:
            os.unlink(path)
        except OSError:
            pass


# ---------------------------------------------------------------------------
# Labelling.

def _agent_bytes(agent) -> bytes | None:
    """A checkpoint's bytes from a path or an agent; checked by loading it once."""
    if agent is None:
        return None
    if isinstance(agent, (str, os.PathLike)):
        data = read_regular_file(agent, what="checkpoint")
    else:
        if not hasattr(agent, "save") or not hasattr(agent, "act"):
            raise InvalidArgument(f"agent must be a goenv agent or a checkpoint path, got {type(agent).__name__}")
        with tempfile.TemporaryDirectory() as folder:
            path = os.path.join(folder, "agent.safetensors")
            agent.save(path)
            data = read_regular_file(path, what="checkpoint")
    load_bytes(data)
    return data


def label(source, out, *, task: str = "placement", cluster: str | None = None, decisions_per_graph: int = 64,
          sampler: str = "mix", seed: int = 0, max_moves: int = 32, shard_size: int = 16, agent=None,
          workers: int = 0, address: str | None = None, overwrite: bool = False, progress: bool = True) -> "Labels":
    """Labels every graph of `source` with `decisions_per_graph` simulated decisions; returns open_labels(out).

    source: a dataset folder (goenv.datasets.generate), a suite name ("go-placement",
    "transfer", "transfer:test"), a graph file or a list of them. task: "placement",
    "scheduling", "fusion" or "joint". cluster: a preset for every graph (default: each
    graph's own: its family's default cluster, the suite's, or 2xgpu-nvlink for files).
    sampler: "mix" (default), "random", "perturb" or "policy" (goenv.labels.decisions says what
    each draws); agent: a goenv agent or checkpoint path whose samples join the mix. seed:
    graph i's decisions come from a generator seeded by (seed, i). workers=N labels shards as
    Ray tasks, N at a time (address= joins a running Ray cluster; the source must be readable there):
    the files are byte-identical to workers=0, which labels in this process.
    Resumable and never destructive without overwrite=True (see the module's docstring).
    """
    _check_label_arguments(task, sampler, decisions_per_graph, max_moves, agent, seed, shard_size, workers)
    progress, overwrite = checked_flag("progress", progress), checked_flag("overwrite", overwrite)
    _check_ray_arguments(workers, address)
    resolved = resolve(source, cluster)
    agent_bytes = _agent_bytes(agent)
    config = _label_config(task, resolved.cluster, decisions_per_graph, sampler, seed, max_moves, agent_bytes)
    identity = {"source": resolved.identity, "config": config, "count": len(resolved), "shard_size": shard_size}

    root = output_folder(out, "labels folder")
    LABELS_FOLDER.remove_temporaries(root, also=(_PROBE,))  # a killed run's probe too
    plan = plan_shards(len(resolved), shard_size)
    kept = _kept_shards(root, identity, overwrite)
    if overwrite:  # our files of a replaced run; nothing else in the folder is touched
        keep = {shard_file(kind, k) for k in kept for kind in KINDS}
        remove_regular_files(root, [name for name in LABELS_FOLDER.shard_names(root) if name not in keep],
                             "labels shard")
    manifest = {"format": FORMAT, "format_version": FORMAT_VERSION, "goenv_version": goenv_version(), **identity,
                "num_shards": len(plan), "complete": False, "shards": []}

    def save_manifest() -> None:
        manifest["shards"] = [kept[k] for k in sorted(kept)]
        manifest["complete"] = len(kept) == len(plan)
        LABELS_FOLDER.write_manifest(root, manifest, "labels manifest")

    def finished(result: dict) -> None:
        shard = plan[result["index"]]
        files = {}
        for kind in KINDS:
            name = shard_file(kind, shard["index"])
            if isinstance(result[kind], dict):  # written into the folder by label_shard (streamed)
                files[kind] = result[kind]
                continue
            files[kind] = LABELS_FOLDER.store(root, name, result[kind], "labels shard")
        kept[shard["index"]] = {**shard, "rows": result["rows"], "files": files}
        save_manifest()

    save_manifest()
    _label_shards(resolved, identity, plan, kept, agent_bytes, workers, address, root, progress, finished)
    return Labels(root)


def _check_label_arguments(task: str, sampler: str, decisions_per_graph: int, max_moves: int, agent, seed: int,
                           shard_size: int, workers: int) -> None:
    """label()'s labelling options, refused before the folder is made."""
    if task not in _core.task_names():
        raise InvalidArgument(f"unknown task {task!r}; tasks: {', '.join(_core.task_names())}")
    decisions.check(sampler, decisions_per_graph, max_moves, agent is not None)
    for name, value, low in (("seed", seed, 0), ("shard_size", shard_size, 1), ("workers", workers, 0)):
        checked_int(name, value, low)


def _check_ray_arguments(workers: int, address: str | None) -> None:
    """address= and workers > 0, refused before the folder is made: a malformed address, or Ray missing."""
    if address is not None:
        if not workers:
            raise InvalidArgument("address= joins a Ray cluster for workers > 0; give workers=N")
        check_address(address)
    if workers:
        require_ray("goenv.datasets.label with workers > 0")


def _label_config(task: str, cluster: str | None, decisions_per_graph: int, sampler: str, seed: int, max_moves: int,
                  agent_bytes: bytes | None) -> dict:
    """The manifest's config: what the labels depend on besides the source."""
    config = {"task": task, "cluster": cluster, "decisions_per_graph": decisions_per_graph,
              "sampler": sampler, "seed": seed, "max_moves": max_moves, "max_fusion_size": 16,
              "agent_sha256": hashlib.sha256(agent_bytes).hexdigest() if agent_bytes else None}
    if task in ("fusion", "joint"):
        # The fusion rules these labels follow: 2 since priority 0 keeps a producer alone and the
        # lower bound counts fusion. A folder labelled under the old rules is "made otherwise",
        # so a resumed run never mixes the two (placement and scheduling labels did not change).
        config["fusion_rules"] = FUSION_RULES
    return config


def _label_shards(resolved, identity: dict, plan: list[dict], kept: dict[int, dict], agent_bytes: bytes | None,
                  workers: int, address: str | None, root: str, progress: bool, finished) -> None:
    """Labels the shards of `plan` not in `kept`, in this process (workers=0) or as Ray tasks,
    handing each result to `finished` as it comes."""
    config = identity["config"]
    todo = [shard for shard in plan if shard["index"] not in kept]
    done = sum(plan[k]["count"] for k in kept)
    with progress_bar(progress, total=len(resolved), initial=done, desc=f"label {config['task']}", unit="graph",
                      dynamic_ncols=True) as bar:
        if workers == 0:
            for shard in todo:
                finished(label_shard(resolved, config, shard["index"], shard["first"], shard["count"], agent_bytes,
                                     root))
                bar.update(shard["count"])
        else:
            with _probe(root) as probe:
                for result in label_on_ray(resolved, identity["source"], config, todo, agent_bytes, workers, address,
                                           os.path.abspath(root), probe):
                    finished(result)
                    bar.update(plan[result["index"]]["count"])


def _kept_shards(root: str, identity: dict, overwrite: bool) -> dict[int, dict]:
    """The shard records of an earlier run of the same labelling whose files still match."""
    manifest_path = os.path.join(root, MANIFEST)
    present = LABELS_FOLDER.shard_names(root)
    if not os.path.lexists(manifest_path):
        if present and not overwrite:
            raise InvalidArgument(f"{root} holds labels shard files ({', '.join(present[:2])}, ...) but no manifest; "
                                  f"nothing was changed. Use another folder, or overwrite=True (--overwrite)")
        return {}
    try:
        previous = read_manifest(root)
    except InvalidGraph as error:
        if "not a goenv labelled dataset" in str(error):  # e.g. a dataset of graphs: never ours to replace
            raise InvalidArgument(f"{error}; label into a folder of its own") from None
        if not overwrite:
            raise InvalidArgument(f"{error}; nothing was changed. Use another folder, or overwrite=True "
                                  f"(--overwrite) to replace it") from None
        return {}
    if previous["format_version"] != FORMAT_VERSION:  # readable, but its shards' bytes are not this version's
        if not overwrite:
            raise InvalidArgument(f"{root} holds labels of format version {previous['format_version']} (an older "
                                  f"goenv); this goenv writes version {FORMAT_VERSION}, whose files differ in bytes, "
                                  f"so it does not add to them; nothing was changed. They still read as they are; "
                                  f"use another folder, or overwrite=True (--overwrite) to relabel them")
        return {}
    theirs = {key: previous[key] for key in identity}
    if theirs != identity:
        # A run that failed before its first shard (too many decisions for memory, an agent that
        # does not fit the graphs) left only its manifest: nothing there to keep from another run.
        if not overwrite and (previous["shards"] or present):
            differences = ", ".join(f"{key}: {json.dumps(theirs[key])[:160]} there, {json.dumps(identity[key])[:160]} "
                                    f"here" for key in identity if theirs[key] != identity[key])
            raise InvalidArgument(f"{root} holds labels made otherwise ({differences}); nothing was changed. Use "
                                  f"another folder, or overwrite=True (--overwrite) to replace them")
        return {}
    return {record["index"]: record for record in previous["shards"]
            if all(LABELS_FOLDER.matches(root, record["files"][kind], "labels shard") for kind in KINDS)}


# ---------------------------------------------------------------------------
# Reading.

class Labels:
    """A labelled dataset, read lazily: len(labels) graphs; labels.graph(i) and
    labels.decisions(i) as numpy; labels.table("labels" | "graphs") as one pyarrow Table.
    Each shard file's size and SHA-256 are checked against the manifest when it is read."""

    def __init__(self, root: str | os.PathLike):
        self.root = os.fspath(root)
        if not os.path.isdir(self.root) or not os.path.lexists(os.path.join(self.root, MANIFEST)):
            raise FileNotFoundError(2, f"Not a goenv labelled dataset (no {MANIFEST})", self.root)
        self.manifest = read_manifest(self.root)
        if not self.manifest["complete"] or len(self.manifest["shards"]) != self.manifest["num_shards"]:
            raise InvalidGraph(f"{self.root}: incomplete ({len(self.manifest['shards'])} of "
                               f"{self.manifest['num_shards']} shards); run the same label command again to finish it")
        self.shards = sorted(self.manifest["shards"], key=lambda record: record["index"])
        for record in self.shards:
            for kind in KINDS:
                entry = record["files"][kind]
                path = LABELS_FOLDER.path(self.root, entry["file"])
                if not os.path.isfile(path):
                    raise InvalidGraph(f"{path}: shard file missing; run the label command again to rewrite it")
                if os.path.getsize(path) != entry["bytes"]:
                    raise InvalidGraph(f"{path}: {os.path.getsize(path)} bytes, the manifest records "
                                       f"{entry['bytes']} (truncated or modified)")
        self._cached: tuple[int, dict] | None = None

    @property
    def config(self) -> dict:
        return dict(self.manifest["config"])

    def __len__(self) -> int:
        return int(self.manifest["count"])

    @property
    def num_decisions(self) -> int:
        return sum(record["rows"] for record in self.shards)

    def __repr__(self) -> str:
        c = self.config
        return (f"<goenv.datasets.Labels {c['task']}: {len(self)} graphs x {c['decisions_per_graph']} decisions "
                f"({c['sampler']}) in {len(self.shards)} shards at {self.root}>")

    def shard_bytes(self, k: int, kind: str) -> bytes:
        """A shard file's bytes, checked against the manifest."""
        _check_kind(kind)
        entry = self.shards[checked_int("shard", k, 0, len(self.shards) - 1)]["files"][kind]
        path = LABELS_FOLDER.path(self.root, entry["file"])
        try:
            data = read_shard(path, "labels shard")
        except FileNotFoundError as error:
            raise InvalidGraph(f"{path}: shard file missing; run the label command again to rewrite it") from error
        if len(data) != entry["bytes"] or hashlib.sha256(data).hexdigest() != entry["sha256"]:
            raise InvalidGraph(f"{path}: size or SHA-256 does not match the manifest (corrupt or modified); run the "
                               f"label command again with overwrite=True to rewrite it")
        return data

    def _shard(self, k: int) -> dict:
        cached = self._cached  # one read: another thread may cache another shard meanwhile
        if cached is None or cached[0] != k:
            cached = (k, self._read_shard(k))
            self._cached = cached
        return cached[1]

    def _read_shard(self, k: int) -> dict:
        """Shard k's two tables, their rows checked against the manifest and each other."""
        record, k_decisions = self.shards[k], self.manifest["config"]["decisions_per_graph"]
        path = {kind: os.path.join(self.root, record["files"][kind]["file"]) for kind in KINDS}
        graphs = tables.from_parquet(self.shard_bytes(k, "graphs"), "graphs", record["count"], path["graphs"])
        tables.check_graphs(graphs, record["first"], path["graphs"])
        labels = tables.from_parquet(self.shard_bytes(k, "labels"), "labels", record["rows"], path["labels"])
        tables.check_labels(labels, graphs, record["first"], k_decisions, path["labels"])
        return {"graphs": graphs, "labels": labels}

    def _locate(self, index: int) -> tuple[int, int]:
        n = len(self)
        index = checked_int("graph index", index, -2**63, 2**63 - 1)  # "0", 1.0 and True are no index
        i = index + (n if index < 0 else 0)
        if not 0 <= i < n:
            raise IndexError(f"graph index {index} out of range for {n} labelled graphs")
        return i // self.manifest["shard_size"], i

    def graph(self, index: int) -> dict:
        """Graph `index`'s row: scalars as Python values, lists as numpy (node_features (N, F)),
        plus "goenv_graph", the goenv.Graph."""
        k, i = self._locate(index)
        table = self._shard(k)["graphs"]
        row = i - self.shards[k]["first"]
        out = {}
        for name in table.column_names:
            value = table.column(name)[row]
            if name == "node_features":
                out[name] = np.asarray(value.values.flatten().to_numpy()).reshape(len(value), -1)
            elif name == "graph":
                out["goenv_graph"] = _core.Graph.from_bytes(value.as_py())
            elif hasattr(value, "values"):
                out[name] = value.values.to_numpy(zero_copy_only=False)
            else:
                out[name] = value.as_py()
        out["params"] = json.loads(out["params"])
        return out

    def decisions(self, index: int) -> dict:
        """Graph `index`'s K labelled decisions: (K,) arrays for scalars and source, (K, N) or
        (K, devices) for lists. Every head is there: one the task does not decide (null in the
        file) is the graph's default, repeated."""
        k, i = self._locate(index)
        shard = self._shard(k)
        table = shard["labels"]
        ids = table.column("graph_id").to_numpy()
        lo, hi = np.searchsorted(ids, i, "left"), np.searchsorted(ids, i, "right")
        part = table.slice(lo, hi - lo)
        pa = tables.pyarrow()
        out = {}
        for name in part.column_names:
            column = part.column(name).combine_chunks()
            if name in tables.HEADS and column.null_count == len(column) > 0:  # format 3: not decided
                default = shard["graphs"].column(f"default_{name}")[i - self.shards[k]["first"]]
                out[name] = np.tile(default.values.to_numpy(zero_copy_only=False), (hi - lo, 1))
            elif pa.types.is_list(column.type):
                out[name] = column.flatten().to_numpy(zero_copy_only=False).reshape(hi - lo, -1)
            else:
                out[name] = np.asarray(column.to_numpy(zero_copy_only=False))
        return out

    def __iter__(self) -> Iterator[tuple[dict, dict]]:
        for i in range(len(self)):
            yield self.graph(i), self.decisions(i)

    def table(self, kind: str = "labels"):
        """Every shard's rows of `kind` ("labels" or "graphs") as one pyarrow Table (checked)."""
        _check_kind(kind)
        pa = tables.pyarrow()
        shards = [self._read_shard(k)[kind] for k in range(len(self.shards))]
        for k, shard in enumerate(shards[1:], 1):  # each reads alone; one table needs one schema
            if not shard.schema.equals(shards[0].schema, check_metadata=False):
                differs = next((f"{field.name!r} is {field.type}, shard 0's {shards[0].schema.field(field.name).type}"
                                for field in shard.schema if field.name in shards[0].schema.names
                                and not field.equals(shards[0].schema.field(field.name))),
                               f"its columns are {shard.schema.names}, shard 0's {shards[0].schema.names}")
                raise InvalidGraph(f"{os.path.join(self.root, self.shards[k]['files'][kind]['file'])}: not the "
                                   f"columns of shard 0: {differs}")
        return pa.concat_tables(shards)

    def files(self, kind: str = "labels") -> list[str]:
        """The Parquet files of `kind`, in order (for pyarrow.dataset or Hugging Face `datasets`)."""
        _check_kind(kind)
        return [os.path.join(self.root, record["files"][kind]["file"]) for record in self.shards]

    def verify(self) -> None:
        """Checks every shard file's checksum, that it reads as Parquet and that its rows agree with
        the manifest and their graphs (Labels._read_shard); InvalidGraph on the first bad one."""
        for k in range(len(self.shards)):
            self._cached = None
            self._shard(k)


def _check_kind(kind: str) -> None:
    if kind not in KINDS:
        raise InvalidArgument(f"kind must be one of {KINDS}, got {kind!r}")


def open_labels(path: str | os.PathLike) -> Labels:
    """The labelled dataset at `path` (lazy; shards are checksummed when read)."""
    return Labels(path)
