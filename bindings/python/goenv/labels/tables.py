"""The two Parquet tables of a labelled dataset, readable with pyarrow alone (or Hugging Face
`datasets`, pandas, polars, DuckDB), never with goenv's help.

graphs-NNNNN.parquet, one row per graph (the graph once, whatever K):
    graph_id int64, name, family, params (JSON), split, cluster: strings; num_nodes, num_edges
    int64; num_devices int32; lower_bound, default_runtime float64 (seconds; the analytic
    bound of docs/simulator.md for the task, with fusion where it decides fusion, and the env's default
    decision); op_type list<int16> (ids into the
    schema metadata's op_type_names); flops list<float64> (a multiply-accumulate counts 2);
    output_bytes, param_bytes list<int64>; colocation list<int32> (-1: none); edge_src,
    edge_dst list<int32> (producer -> consumer); edge_bytes list<int64>; node_features
    list<fixed_size_list<float32, F>> (the envs' static node features, names in the metadata);
    default_placement list<int16>, default_priority list<int16>, default_fusion list<int8> (the
    env's default decision: what the heads the task does not decide keep); graph binary
    (goenv.Graph.from_bytes restores the graph exactly).
labels-NNNNN.parquet, one row per (graph, decision):
    graph_id int64, decision int32 (0..K-1), source string (decisions.py: "default",
    "heuristic:NAME", "random", "perturb:MOVES", "policy"); runtime float64 (s); oom, invalid
    bool; bytes_moved float64; peak_memory (bytes), device_busy (s) list<float64> per device;
    placement list<int16> (device), priority list<int16> (level), fusion list<int8> (level)
    per node, null for a head the task does not decide (placement decides placement only:
    its rows keep the graph's default_priority and default_fusion, stored once in its row);
    start, finish list<float32> per node (s: to ~1e-7 of the runtime, half the bytes of
    float64, which the writing time follows; runtime itself is float64, exact).
Every column and every list's values are required (non-null in the Parquet schema) but a
head the task does not decide, which is null in every row: Parquet then writes no definition
levels for them, which took a third of the labels file's encoding time (format 4; 1,000-node
graphs, 64 decisions each: 52 -> 33 ms for 16 graphs, the same bytes of data).
Rows are in (graph_id, decision) order, one row group per graph in both files (ShardWriter
writes each graph as soon as it is labelled); files are written with fixed options (the codecs and
encodings below), so equal labels give equal bytes.
"""

from __future__ import annotations

import json

import numpy as np

import goenv._core as _core
from goenv._core import InvalidGraph
from goenv.extras import import_extra
from goenv.labels.decisions import HEADS

# The decision heads per node, as stored (devices and levels are small integers).
HEAD_TYPES = tuple(zip(HEADS, (np.int16, np.int16, np.int8)))
# Snappy without dictionaries: 3-4x faster to write than zstd with them (measured on label shards).
PARQUET_OPTIONS = {"compression": "snappy", "use_dictionary": False, "write_statistics": False}
# ...but zstd for the decision heads, small integers Parquet stores as int32 (below). Codecs per
# column, by name.
CODECS = {head: "zstd" for head in HEADS}
# Encodings other than PLAIN, per column (by name). The per-node times are float32 values of a
# schedule that barely repeat, so snappy alone saved 3% of their bytes for 10% of the labels
# file's writing time; after a byte-stream split (each value's four bytes in four streams: the
# exponents and high mantissas repeat) it saves 30% (the labels file above 8.72 -> 6.04 MB) for
# about 1% of a labelling's CPU time. The heads split too (format 5): three of an int32's four
# streams are zeros, which zstd then takes in 40-60% of the time the plain values took it, into
# 2.5-4x fewer bytes (16 graphs of 1,000 nodes, 64 joint decisions each: placement 11.5 -> 6.8 ms,
# 367 -> 96 KB; priority 7.1 -> 5.7 ms; fusion 12.4 -> 7.1 ms, 403 -> 163 KB).
ENCODINGS = {name: "BYTE_STREAM_SPLIT" for name in ("start", "finish", *HEADS)}
# What the readers check of a row (every version has these columns; older ones lack default_*).
NODE_COLUMNS = ("op_type", "flops", "output_bytes", "param_bytes", "colocation", "node_features",
                *(f"default_{head}" for head in HEADS))
EDGE_COLUMNS = ("edge_src", "edge_dst", "edge_bytes")
GRAPH_COLUMNS = ("graph_id", "num_nodes", "num_edges", "num_devices", *EDGE_COLUMNS)
LABEL_COLUMNS = ("graph_id", "decision", "runtime", "oom", "invalid", "peak_memory", "device_busy", *HEADS,
                 "start", "finish")
# Every column goenv writes, with its Arrow type as _type_name renders it (a list by its values'
# type, whatever their nullability): a file with another column, or another type, is refused
# before a reader touches its values. tests/python/test_labels.py holds the writers to it.
GRAPH_TYPES = {
    "graph_id": "int64", "name": "string", "family": "string", "params": "string", "split": "string",
    "cluster": "string", "num_nodes": "int64", "num_edges": "int64", "num_devices": "int32",
    "lower_bound": "double", "default_runtime": "double", "op_type": "list<int16>", "flops": "list<double>",
    "output_bytes": "list<int64>", "param_bytes": "list<int64>", "colocation": "list<int32>",
    "edge_src": "list<int32>", "edge_dst": "list<int32>", "edge_bytes": "list<int64>",
    "node_features": "list<fixed_size_list<float>>",
    **{f"default_{head}": f"list<{np.dtype(dtype).name}>" for head, dtype in HEAD_TYPES}, "graph": "binary",
}
LABEL_TYPES = {
    "graph_id": "int64", "decision": "int32", "source": "string", "runtime": "double", "oom": "bool",
    "invalid": "bool", "bytes_moved": "double", "peak_memory": "list<double>", "device_busy": "list<double>",
    **{head: f"list<{np.dtype(dtype).name}>" for head, dtype in HEAD_TYPES}, "start": "list<float>",
    "finish": "list<float>",
}


def _compression(schema) -> dict[str, str]:
    """The codec of every column (CODECS, else PARQUET_OPTIONS'), by the leaf path Parquet
    names it with (a column it does not name would go uncompressed)."""
    return {_leaf(f.name, f.type): CODECS.get(f.name, PARQUET_OPTIONS["compression"]) for f in schema}


def _encodings(schema) -> dict[str, str]:
    """ENCODINGS by the leaf path Parquet names each column with."""
    return {_leaf(f.name, f.type): ENCODINGS[f.name] for f in schema if f.name in ENCODINGS}


def _leaf(name: str, kind) -> str:
    """A column's leaf path in Parquet: lists (fixed-size ones too) nest as NAME.list.element."""
    pa = pyarrow()
    nested = pa.types.is_list(kind) or pa.types.is_fixed_size_list(kind)
    return _leaf(name + ".list.element", kind.value_type) if nested else name


def pyarrow():
    """The pyarrow module, with everything it imports lazily already imported: call it on the
    labelling thread before the pipeline's helper thread starts (see below)."""
    pa = import_extra("pyarrow", extra="parquet", feature="labelled datasets (Parquet files)")
    import_extra("pyarrow.parquet", extra="parquet", feature="labelled datasets (Parquet files)", package="pyarrow")
    if not _warm:
        # pyarrow imports pandas (and with it numpy.ma) on its first conversion from numpy. On one
        # labelling thread, that import would race with goenv._core.simulate on the other,
        # which looks numpy.ma up in sys.modules and can find it half-initialized.
        import numpy.ma  # noqa: F401

        pa.array(np.zeros(1))
        _warm.append(True)
    return pa


_warm: list[bool] = []


def _lists(pa, arrays: list[np.ndarray], dtype) -> "pa.Array":
    """One list<dtype> column, a row per array (built from flat values and offsets)."""
    return _column(pa, np.array([len(a) for a in arrays], dtype=np.int64), arrays, dtype)


def _matrix_rows(pa, matrices: list[np.ndarray], dtype) -> "pa.Array":
    """One list<dtype> column, a row per row of each (rows, columns) matrix."""
    lengths = np.concatenate([np.full(m.shape[0], m.shape[1], np.int64) for m in matrices])
    return _column(pa, lengths, [m.reshape(-1) for m in matrices], dtype)


def required_list(pa, value_type, size: int = -1) -> "pa.DataType":
    """list<value_type> (of `size` values each if given) whose values are never null (Parquet
    writes no definition levels for them)."""
    return pa.list_(pa.field("item", value_type, nullable=False), size)


def _required_table(pa, columns: dict, nullable: tuple[str, ...] = ()):
    """The columns as a table whose fields are required but those named in `nullable`."""
    schema = pa.schema([pa.field(name, array.type, nullable=name in nullable) for name, array in columns.items()])
    return pa.Table.from_arrays(list(columns.values()), schema=schema)


def _column(pa, lengths: np.ndarray, parts: list[np.ndarray], dtype) -> "pa.Array":
    # one part (a graph's rows): no copy; pyarrow takes numeric numpy arrays without one too
    values = (parts[0] if len(parts) == 1 else np.concatenate(parts) if parts else np.zeros(0, dtype))
    return _list_array(pa, lengths, pa.array(values.astype(dtype, copy=False)))


def _list_array(pa, lengths: np.ndarray, values) -> "pa.Array":
    """A list column whose row i holds the next lengths[i] entries of `values` (a pyarrow array)."""
    offsets = np.concatenate([[0], np.cumsum(lengths)])
    if offsets[-1] > np.iinfo(np.int32).max:
        raise ValueError("a shard's column exceeds 2^31 values; use a smaller shard_size")
    return pa.ListArray.from_arrays(pa.array(offsets.astype(np.int32)), values, type=required_list(pa, values.type))


def graphs_table(labelled: list[dict]):
    pa = pyarrow()
    graphs = [item["graph"] for item in labelled]
    g = [entry["graph"] for entry in graphs]
    features = [entry["node_features"] for entry in graphs]
    width = features[0].shape[1] if features else len(_core.node_feature_names())
    flat = pa.array(np.concatenate([f.reshape(-1) for f in features]) if features else np.zeros(0, np.float32))
    lengths = np.array([f.shape[0] for f in features], dtype=np.int64)
    rows = pa.FixedSizeListArray.from_arrays(flat, type=required_list(pa, pa.float32(), width))
    columns = {
        "graph_id": pa.array([e["graph_id"] for e in graphs], pa.int64()),
        "name": pa.array([e["name"] for e in graphs], pa.string()),
        "family": pa.array([e["family"] for e in graphs], pa.string()),
        "params": pa.array([json.dumps(e["params"], sort_keys=True) for e in graphs], pa.string()),
        "split": pa.array([e["split"] for e in graphs], pa.string()),
        "cluster": pa.array([e["cluster"] for e in graphs], pa.string()),
        "num_nodes": pa.array([x.num_nodes for x in g], pa.int64()),
        "num_edges": pa.array([x.num_edges for x in g], pa.int64()),
        "num_devices": pa.array([e["num_devices"] for e in graphs], pa.int32()),
        "lower_bound": pa.array([e["lower_bound"] for e in graphs], pa.float64()),
        "default_runtime": pa.array([e["default_runtime"] for e in graphs], pa.float64()),
        "op_type": _lists(pa, [np.asarray(x.op_types) for x in g], np.int16),
        "flops": _lists(pa, [np.asarray(x.flops) for x in g], np.float64),
        "output_bytes": _lists(pa, [np.asarray(x.output_bytes) for x in g], np.int64),
        "param_bytes": _lists(pa, [np.asarray(x.param_bytes) for x in g], np.int64),
        "colocation": _lists(pa, [np.asarray(x.colocation) for x in g], np.int32),
        "edge_src": _lists(pa, [e["edge_index"][0] for e in graphs], np.int32),
        "edge_dst": _lists(pa, [e["edge_index"][1] for e in graphs], np.int32),
        "edge_bytes": _lists(pa, [np.asarray(x.edge_bytes) for x in g], np.int64),
        "node_features": _list_array(pa, lengths, rows),
        **{f"default_{head}": _lists(pa, [e["defaults"][head] for e in graphs], dtype) for head, dtype in HEAD_TYPES},
        "graph": pa.array([x.to_bytes() for x in g], pa.binary()),
    }
    metadata = {"op_type_names": json.dumps(list(_core.op_type_names())),
                "node_feature_names": json.dumps(list(_core.node_feature_names()))}
    return _required_table(pa, columns).replace_schema_metadata(metadata)


def labels_table(labelled: list[dict]):
    pa = pyarrow()
    graph_ids = np.concatenate([np.full(len(item["runtime"]), item["graph"]["graph_id"], np.int64)
                                for item in labelled])
    decision = np.concatenate([np.arange(len(item["runtime"]), dtype=np.int32) for item in labelled])

    def scalars(key, dtype):
        return pa.array(np.concatenate([item[key] for item in labelled]).astype(dtype, copy=False))

    def per_row(key, dtype):
        return _matrix_rows(pa, [item[key] for item in labelled], dtype)

    def head(name, dtype):  # null where the task does not decide the head (all graphs have one task)
        if name in labelled[0]:
            return per_row(name, dtype)
        return pa.nulls(len(graph_ids), required_list(pa, pa.from_numpy_dtype(dtype)))

    columns = {
        "graph_id": pa.array(graph_ids), "decision": pa.array(decision),
        "source": pa.array([s for item in labelled for s in item["source"]], pa.string()),
        "runtime": scalars("runtime", np.float64), "oom": scalars("oom", bool), "invalid": scalars("invalid", bool),
        "bytes_moved": scalars("bytes_moved", np.float64),
        "peak_memory": per_row("peak_memory", np.float64), "device_busy": per_row("device_busy", np.float64),
        **{name: head(name, dtype) for name, dtype in HEAD_TYPES}, "start": per_row("start", np.float32),
        "finish": per_row("finish", np.float32),
    }
    return _required_table(pa, columns, nullable=tuple(name for name in HEADS if name not in labelled[0]))


class ShardWriter:
    """One Parquet file of a shard written graph by graph: append(item) adds the graph's rows
    (graphs_table or labels_table of [item], by `kind`) as one row group: table() then write(),
    which pipeline.py calls on different threads. `sink` is a binary file-like object
    (write(), flush()) or a pyarrow.NativeFile; close() writes the footer."""

    def __init__(self, kind: str, sink):
        self.pa = pyarrow()
        self.build = {"graphs": graphs_table, "labels": labels_table}[kind]
        # buffered: the Python sink is called once a megabyte, not once a page (each call takes the GIL)
        self.sink = sink if isinstance(sink, self.pa.NativeFile) else \
            self.pa.output_stream(self.pa.PythonFile(_LeftOpen(sink), mode="w"), buffer_size=1 << 20)
        self.writer = None

    def append(self, item: dict) -> None:
        self.write(self.table(item))

    def table(self, item: dict):
        """The graph's rows as one Arrow table (any thread may build them)."""
        return self.build([item])

    def write(self, table) -> None:
        """A table of table()'s, as the file's next row group."""
        if self.writer is None:  # the first graph's schema: every graph's columns have the same types
            self.writer = self.pa.parquet.ParquetWriter(
                self.sink, table.schema, **{**PARQUET_OPTIONS, "compression": _compression(table.schema)},
                column_encoding=_encodings(table.schema) or None)
        self.writer.write_table(table, row_group_size=table.num_rows)

    def close(self) -> None:
        """Writes the footer (once: a second call does nothing)."""
        if self.writer is None:
            raise ValueError("a shard has at least one graph")
        if self.writer.is_open:
            self.writer.close()
            self.sink.flush()  # a buffer's rest into the given sink (which stays open: it is the caller's)


class _LeftOpen:
    """The caller's sink as pyarrow sees it: pyarrow closes the file it wraps when it is done
    with it, but the sink is the caller's to close (write_atomic still flushes and fsyncs it)."""

    closed = False

    def __init__(self, sink):
        self.write, self.flush = sink.write, sink.flush

    def close(self) -> None:
        pass


# A shard may decode to at most this many bytes per byte of file, plus a fixed allowance (goenv's
# own shards decode to under 4): checked on the footer's declared sizes before anything is
# decoded, and on the decoded batches as they are read, since a footer can understate them.
MAX_EXPANSION, EXPANSION_ALLOWANCE = 8, 64 << 20
READ_BATCH_ROWS = 4096  # rows decoded at a time: what a read may hold beyond the bound
# A shard's required columns and every column's type, by kind.
SCHEMAS = {"graphs": (GRAPH_COLUMNS, GRAPH_TYPES), "labels": (LABEL_COLUMNS, LABEL_TYPES)}


def from_parquet(data: bytes, kind: str, rows: int | None = None, what: str = "labels shard"):
    """A shard's table, after its footer is checked: `rows` rows if given, goenv's columns and
    types for its `kind` ("graphs" or "labels") before any value is decoded, and no more decoded
    bytes than MAX_EXPANSION times the file's plus EXPANSION_ALLOWANCE, declared or actual.
    InvalidGraph naming `what` otherwise, as for any file pyarrow cannot read."""
    pa = pyarrow()
    bound = MAX_EXPANSION * len(data) + EXPANSION_ALLOWANCE
    try:
        with pa.parquet.ParquetFile(pa.BufferReader(data)) as parquet:
            meta = parquet.metadata
            if rows is not None and meta.num_rows != rows:
                raise InvalidGraph(f"{what}: {meta.num_rows} rows, the manifest says {rows}")
            _check_schema(parquet.schema_arrow, *SCHEMAS[kind], what)
            declared = sum(meta.row_group(i).total_byte_size for i in range(meta.num_row_groups))
            if declared > bound:
                raise InvalidGraph(f"{what}: declares {declared} decoded bytes for a {len(data)}-byte file (at most "
                                   f"{MAX_EXPANSION}x plus {EXPANSION_ALLOWANCE >> 20} MiB)")
            table = _read_bounded(pa, parquet, bound, what)
        table.validate(full=True)  # Parquet does not check its strings are UTF-8; Arrow's readers assume it
        return table
    except InvalidGraph:  # the checks above (a ValueError too): already named
        raise
    except (pa.ArrowException, OSError, ValueError) as error:
        raise InvalidGraph(f"{what}: not a readable Parquet file ({error})") from error


def _read_bounded(pa, parquet, bound: int, what: str):
    """The file's rows, READ_BATCH_ROWS at a time, refused as soon as they decode to more than
    `bound` bytes. Read on this thread only: Arrow's worker threads may otherwise drop the last
    reference to the file's bytes (a Python object) while the interpreter shuts down, which
    aborts the process."""
    batches, decoded = [], 0
    for batch in parquet.iter_batches(batch_size=READ_BATCH_ROWS, use_threads=False):
        decoded += batch.nbytes
        if decoded > bound:
            raise InvalidGraph(f"{what}: decodes to more than {bound} bytes, more than its footer declares (at "
                               f"most {MAX_EXPANSION}x the file plus {EXPANSION_ALLOWANCE >> 20} MiB)")
        batches.append(batch)
    return pa.Table.from_batches(batches, schema=parquet.schema_arrow)


def check_graphs(table, first: int, what: str) -> None:
    """The graphs table's rows against themselves (its columns were checked by from_parquet):
    graph ids first, first+1, ...; every per-node list num_nodes long, every per-edge list
    num_edges long, edges inside the graph."""
    bad = _refusal(what)
    columns = set(table.column_names)
    ids = _values(table, "graph_id")
    if not np.array_equal(ids, np.arange(first, first + len(ids))):
        raise bad(f"graph ids are not {first}..{first + len(ids) - 1} in order")
    nodes, edges, devices = _values(table, "num_nodes"), _values(table, "num_edges"), _values(table, "num_devices")
    if (nodes < 1).any() or (edges < 0).any() or (devices < 1).any():
        raise bad("a graph has no nodes, no devices or a negative edge count")
    for names, expected in ((NODE_COLUMNS, nodes), (EDGE_COLUMNS, edges)):
        for name in names:
            if name in columns and not np.array_equal(_lengths(table, name), expected):
                raise bad(f"a row's {name!r} list does not have its graph's length")
    for name in ("edge_src", "edge_dst"):
        if not _within(table, name, 0, np.repeat(nodes, edges)):
            raise bad(f"an edge's {name!r} is not a node of its graph")
    for row, params in enumerate(table.column("params").to_pylist() if "params" in columns else ()):
        try:
            if not isinstance(json.loads(params), dict):
                raise ValueError("not an object")
        except ValueError as error:  # JSONDecodeError included
            raise bad(f"row {row}'s 'params' is not a JSON object ({error})") from None
    names = (table.schema.metadata or {}).get(b"node_feature_names")
    if "node_features" in columns and names is not None:
        width = table.schema.field("node_features").type.value_type.list_size
        try:
            named = len(json.loads(names))
        except (ValueError, TypeError):
            named = None
        if named != width:
            raise bad(f"node_features are {width} wide, the schema names {named} features")
    if "graph" in columns:
        _check_against_graphs(table, columns, bad)


# The graph columns that repeat the row's goenv graph, and the Graph attribute each repeats.
_REPEATED = {"num_nodes": "num_nodes", "num_edges": "num_edges", "op_type": "op_types", "flops": "flops",
             "output_bytes": "output_bytes", "param_bytes": "param_bytes", "colocation": "colocation",
             "edge_bytes": "edge_bytes"}


def _check_against_graphs(table, columns: set[str], bad) -> None:
    """Each row's columns against the goenv graph it stores: a column edited alone (or a graph
    swapped for another) is refused, so a reader never sees two graphs in one row."""
    rows = {name: _per_row(table, name) for name in (*_REPEATED, "edge_src", "edge_dst") if name in columns}
    for row, data in enumerate(table.column("graph").to_pylist()):
        graph = _core.Graph.from_bytes(data)
        for name, values in rows.items():
            mine = graph.edge_index[int(name == "edge_dst")] if name in ("edge_src", "edge_dst") else \
                getattr(graph, _REPEATED[name])
            if not np.array_equal(np.asarray(mine), values[row]):
                raise bad(f"row {row}'s {name!r} is not its graph's")


def _per_row(table, name: str) -> list:
    """The column's values row by row: a scalar, or a list's values as an array."""
    column = table.column(name).combine_chunks()
    if not hasattr(column, "offsets"):
        return column.to_numpy(zero_copy_only=False)
    offsets = column.offsets.to_numpy()
    offsets = offsets - offsets[0]
    values = column.flatten().to_numpy(zero_copy_only=False)
    return [values[offsets[i]:offsets[i + 1]] for i in range(len(column))]


def check_labels(table, graphs, first: int, k: int, what: str) -> None:
    """The labels table's rows against their graphs' rows (its columns were checked by
    from_parquet): K decisions per graph in order, per-node lists of the graph's length,
    per-device lists of its device count, devices in range, levels >= 0, runtimes finite and >= 0
    but where the decision ran out of memory or is invalid."""
    bad = _refusal(what)
    count = graphs.num_rows
    for name in HEADS:  # a head the task does not decide (null) keeps the graph's default
        if table.column(name).null_count and f"default_{name}" not in graphs.column_names:
            raise bad(f"{name!r} is not decided in some rows, and their graphs have no 'default_{name}'")
    if table.num_rows != count * k:
        raise bad(f"{table.num_rows} rows for {count} graphs of {k} decisions")
    if not np.array_equal(_values(table, "graph_id"), np.repeat(np.arange(first, first + count), k)) or \
            not np.array_equal(_values(table, "decision"), np.tile(np.arange(k), count)):
        raise bad("rows are not each graph's decisions 0..K-1 in order")
    nodes, devices = np.repeat(_values(graphs, "num_nodes"), k), np.repeat(_values(graphs, "num_devices"), k)
    for names, expected in ((("start", "finish", *HEADS), nodes), (("peak_memory", "device_busy"), devices)):
        for name in names:
            if table.column(name).null_count == 0 and not np.array_equal(_lengths(table, name), expected):
                raise bad(f"a row's {name!r} list does not have its graph's length")
    if table.column("placement").null_count == 0 and not _within(table, "placement", 0, devices, per_row=nodes):
        raise bad("a placement names a device the cluster does not have")
    for name in ("priority", "fusion"):
        if table.column(name).null_count == 0 and (_flat(table, name) < 0).any():
            raise bad(f"a negative {name} level")
    runtime = _values(table, "runtime")
    failed = _values(table, "oom") | _values(table, "invalid")
    if np.isnan(runtime).any() or (runtime < 0).any() or (np.isinf(runtime) & ~failed).any():
        raise bad("a runtime is not a finite number of seconds >= 0 (where the decision did not fail)")


def _refusal(what: str):
    """bad(message): the InvalidGraph that names the file."""
    return lambda message: InvalidGraph(f"{what}: {message}")


def _check_schema(schema, required: tuple[str, ...], types: dict[str, str], what: str) -> set[str]:
    """The schema's column names, after checking it has every required one and only columns of
    `types`, each of its type."""
    bad = _refusal(what)
    columns = set(schema.names)
    missing = [name for name in required if name not in columns]
    if missing:
        raise bad(f"no column {missing[0]!r}")
    for field in schema:
        if field.name not in types:
            raise bad(f"a column goenv does not write, {field.name[:80]!r}")
        if _type_name(field.type) != types[field.name]:
            raise bad(f"column {field.name!r} is {_type_name(field.type)}, goenv writes {types[field.name]}")
    return columns


def _type_name(kind) -> str:
    """An Arrow type without field names, nullability or sizes: int64, list<int16>, ..."""
    pa = pyarrow()
    if pa.types.is_list(kind) or pa.types.is_large_list(kind):
        return f"list<{_type_name(kind.value_type)}>"
    if pa.types.is_fixed_size_list(kind):
        return f"fixed_size_list<{_type_name(kind.value_type)}>"
    return str(kind)


def _values(table, name: str) -> np.ndarray:
    return table.column(name).combine_chunks().to_numpy(zero_copy_only=False)


def _flat(table, name: str) -> np.ndarray:
    return table.column(name).combine_chunks().flatten().to_numpy(zero_copy_only=False)


def _lengths(table, name: str) -> np.ndarray:
    pc = pyarrow().compute
    return pc.list_value_length(table.column(name)).combine_chunks().to_numpy(zero_copy_only=False)


def _within(table, name: str, low: int, high: np.ndarray, per_row: np.ndarray | None = None) -> bool:
    """Every value of list column `name` in [low, high of its row); high holds one bound per
    row, repeated per value by `per_row` (the rows' lengths) when given, else already per value."""
    values = _flat(table, name)
    bound = np.repeat(high, per_row) if per_row is not None else high
    return len(values) == len(bound) and bool(((values >= low) & (values < bound)).all())
