"""One labels shard: its two Parquet files, graphs-NNNNN.parquet (each graph once) and
labels-NNNNN.parquet (its decisions and their simulated outcomes), and label_shard, which
labels and writes them: what a process or a Ray worker runs (folder.py records the shards)."""

from __future__ import annotations

import hashlib
import os

from goenv.files import EarlySync, write_atomic
from goenv.labels import tables
from goenv.labels.labeller import draw, label_drawn, prepare_graph
from goenv.labels.pipeline import label_in_order
from goenv.labels.sources import Source
from goenv.storage import ShardedFolder

KINDS = ("graphs", "labels")
LABELS_FOLDER = ShardedFolder("labels folder", KINDS, ".parquet")


def shard_file(kind: str, index: int) -> str:
    return LABELS_FOLDER.shard_file(index, kind)


def label_shard(source: Source, config: dict, index: int, first: int, count: int, agent_bytes: bytes | None,
                root: str | None = None, pipelined: bool | None = None) -> dict:
    """Labels graphs [first, first + count) as shard `index`: {"index", "rows", "graphs", "labels"}.

    With `root`, the shard's two files are written there (atomically) and "graphs" and
    "labels" are their manifest entries {"file", "bytes", "sha256"}; without, they are the
    files' bytes as pyarrow.Buffers (a Ray worker on another machine than the folder's).
    `pipelined` (default: with `root` and a spare core) labels on two threads, each taking
    the next graph, and streams each graph's rows into both files (one row group per graph,
    in graph order, hashed as they are written) as soon as the graphs before it are in
    (pipeline.py; the simulator, the heuristics, Arrow, Parquet, hashing and file writes
    release the GIL). Otherwise (a Ray task, whose workers have the cores, or a single core)
    all on this thread. Every graph's decisions come from its own generator and the files
    are written by the same calls either way: the bytes are the same."""
    pa = tables.pyarrow()  # its lazy imports on this thread, before any other starts

    def prepare(graph_id: int) -> dict:
        graph, info = source.graph(graph_id)
        return prepare_graph(graph, info, graph_id, config)

    def drawn(graph_id: int) -> dict:
        return draw(prepare(graph_id), config, agent_bytes)

    if not (root is not None and _spare_core() if pipelined is None else pipelined):
        buffers = {kind: pa.BufferOutputStream() for kind in KINDS}
        writers = {kind: tables.ShardWriter(kind, buffers[kind]) for kind in KINDS}
        rows = 0
        for graph_id in range(first, first + count):
            item = label_drawn(drawn(graph_id), config)
            rows += len(item["runtime"])
            for kind in KINDS:
                writers[kind].append(item)
        for kind in KINDS:
            writers[kind].close()
        files = {kind: buffers[kind].getvalue() for kind in KINDS}
        if root is not None:
            files = {kind: LABELS_FOLDER.store(root, shard_file(kind, index), data, "labels shard")
                     for kind, data in files.items()}
        return {"index": index, "rows": rows, **files}
    if root is None:
        raise ValueError("a pipelined shard streams into its files: it needs the folder (root)")

    entries: dict[str, dict] = {}
    rows = 0

    def into_files(sinks: dict, kinds: list[str]) -> None:  # write_atomic for each file, the labelling innermost
        nonlocal rows
        if kinds:
            kind, name = kinds[0], shard_file(kinds[0], index)

            def into(file) -> None:
                early = EarlySync(file)  # the disk writes as the file grows, not all after its last row
                sinks[kind] = _HashingFile(file, early.written)
                try:
                    into_files(sinks, kinds[1:])
                finally:
                    early.close()

            write_atomic(LABELS_FOLDER.path(root, name), into, what="labels shard")
            entries[kind] = {"file": name, "bytes": sinks[kind].size, "sha256": sinks[kind].sha256.hexdigest()}
            return
        writers = {kind: tables.ShardWriter(kind, sinks[kind]) for kind in KINDS}
        try:
            rows = label_in_order(lambda graph_id: label_drawn(drawn(graph_id), config),
                                  writers, first, count, name=f"goenv-labels-shard-{index}")
        except BaseException:
            for kind in KINDS:  # the files are dropped (write_atomic removes them): their footers go nowhere
                sinks[kind].file = None
                try:
                    writers[kind].close()
                except Exception:  # noqa: BLE001 (the first error is the one raised)
                    pass
            raise

    into_files({}, list(KINDS))
    return {"index": index, "rows": rows, **entries}


def _spare_core() -> bool:
    """Whether this process may run on more than one core (the pipeline's threads need one)."""
    cores = os.sched_getaffinity(0) if hasattr(os, "sched_getaffinity") else range(os.cpu_count() or 1)
    return len(cores) > 1


class _HashingFile:
    """A binary sink that hashes and counts the bytes it passes on to `file` (None: drops them),
    calling `written` after each write to the file."""

    closed = False

    def __init__(self, file, written=lambda: None):
        self.file, self.written, self.sha256, self.size = file, written, hashlib.sha256(), 0

    def write(self, data) -> int:
        view = memoryview(data)
        self.sha256.update(view)
        self.size += view.nbytes
        if self.file is None:
            return view.nbytes
        count = self.file.write(view)
        self.written()
        return count

    def flush(self) -> None:
        if self.file is not None:
            self.file.flush()
