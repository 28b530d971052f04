"""A shard's graphs labelled on two threads and appended to its files in graph order.

Both threads (the caller and a helper) do the same thing: take the next graph, label it
(its env, heuristics, drawn decisions and their simulation), build its Arrow tables, then
append to each file every table that is next in line for it. A file is appended to by one
thread at a time, and a thread that finds a file busy goes on labelling: whoever holds it
appends the waiting tables before letting go. So both cores label and encode, no thread
waits on another while there is work, and the files receive the same calls in the same
order as on one thread: the same bytes. A thread with no graph left to label stays to
append (the last graphs' tables for one file while the other thread appends to the other)
and each file is closed (its footer written) by whoever appends its last graph: 16
1,000-node graphs left one thread appending and closing both files alone for the last 8 of
their 130 ms.

Why not a simulating thread, a helper preparing graphs and a writer (as before): three busy
threads on two cores preempt the simulation, whose CPU time then grew by a third. Against
that pipeline, in A/B runs of tests/benchmarks/labels_bench.py's rows: 10k-node graphs
1.17-1.20x the bare simulation vs 1.24-1.28x, 256 decisions per graph 1.04-1.05x vs
1.22-1.29x, 1k-node graphs with 64 decisions each no change (1.5-1.8x, bound by CPU).
"""

from __future__ import annotations

import threading
from typing import Callable

# Graphs labelled but not yet in both files, at most (a slow graph on one thread lets the
# other run this far ahead; their tables wait in memory).
AHEAD = 4


def label_in_order(labelled: Callable[[int], dict], writers: dict, first: int, count: int, name: str) -> int:
    """Labels graphs [first, first + count) with `labelled(graph_id)` on this thread and a
    helper thread named `name`, appending each graph's rows to writers[kind]
    (tables.ShardWriter) in graph order and closing each writer after its last graph.
    Returns the number of label rows. An error on either thread stops both and is raised
    here (the writers are left mid-file: the caller drops their files)."""
    pipeline = _Pipeline(labelled, writers, first, count)
    helper = threading.Thread(target=pipeline.guarded, name=name, daemon=True)
    helper.start()
    pipeline.guarded()
    helper.join()
    if pipeline.failure:
        raise pipeline.failure[0]
    if any(done != pipeline.end for done in pipeline.written.values()):
        raise RuntimeError(f"labelling pipeline: files stopped at graphs {pipeline.written}, expected {pipeline.end}")
    return pipeline.rows


class _Pipeline:
    """What both threads of label_in_order share, and what each of them does (guarded())."""

    def __init__(self, labelled: Callable[[int], dict], writers: dict, first: int, count: int) -> None:
        self.labelled, self.writers = labelled, writers
        self.end = first + count
        self.state = threading.Condition()  # guards everything below but the writers themselves
        self.next_graph, self.rows, self.failure = first, 0, []
        self.written = {kind: first for kind in writers}  # per file: the graphs before this one are in it
        self.ready: dict[str, dict[int, object]] = {kind: {} for kind in writers}  # per file: tables waiting their turn
        self.appending = {kind: threading.Lock() for kind in writers}  # held by the thread appending to that file

    def append_ready(self, kind: str) -> None:
        # A thread that cannot take the lock leaves its table to the holder, which looks
        # again after letting go: a table put before a failed try is always appended.
        state, written, ready, appending = self.state, self.written, self.ready, self.appending
        while appending[kind].acquire(blocking=False):
            try:
                while True:
                    with state:
                        table = ready[kind].pop(written[kind], None)
                    if table is None:
                        break
                    self.writers[kind].write(table)
                    if written[kind] + 1 == self.end:
                        self.writers[kind].close()
                    with state:
                        written[kind] += 1
                        state.notify_all()
            finally:
                appending[kind].release()
            with state:
                if written[kind] not in ready[kind]:
                    return

    def appendable(self) -> list[str]:  # (with state held) files whose next table waits and no thread appends
        return [kind for kind in self.writers
                if self.written[kind] in self.ready[kind] and not self.appending[kind].locked()]

    def work(self) -> None:
        state, written, end = self.state, self.written, self.end
        while True:
            with state:
                state.wait_for(lambda: self.failure or self.next_graph < min(end, min(written.values()) + AHEAD) or
                               all(done == end for done in written.values()) or
                               (self.next_graph >= end and self.appendable()))
                if self.failure or all(done == end for done in written.values()):
                    return
                if self.next_graph >= end:  # no graph left: append what waits, then look again
                    waiting = self.appendable()
                else:
                    waiting, graph_id, self.next_graph = None, self.next_graph, self.next_graph + 1
            if waiting is not None:
                for kind in waiting:
                    self.append_ready(kind)
                continue
            item = self.labelled(graph_id)
            tables = {kind: writer.table(item) for kind, writer in self.writers.items()}
            with state:
                self.rows += len(item["runtime"])
                for kind, table in tables.items():
                    self.ready[kind][graph_id] = table
                state.notify_all()  # a thread with no graph left may append them
            for kind in self.writers:
                self.append_ready(kind)

    def guarded(self) -> None:
        try:
            self.work()
        except BaseException as error:  # noqa: BLE001 (raised on the calling thread)
            with self.state:
                self.failure.append(error)
                self.state.notify_all()
