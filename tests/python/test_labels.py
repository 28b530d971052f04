"""Labelled datasets (goenv.datasets.label): the decision mix, labels equal to the envs'
runtimes, Parquet readable without goenv, resume after kill -9, corruption, the TpuGraphs
export, the PyTorch Dataset and bad input. The Ray path is in test_labels_ray.py."""

from __future__ import annotations

import json
import os
import signal
import stat
import subprocess
import sys
import threading
import time

import numpy as np
import pytest

import goenv
import goenv.labels.shard as labels_shard
from goenv.labels import folder, tables
from helpers import cache_switching

pytest.importorskip("pyarrow")

SMALL = {"num_layers": 6, "width": 4}


@pytest.fixture(scope="module")
def graphs(tmp_path_factory):
    root = tmp_path_factory.mktemp("graphs") / "ds"
    goenv.datasets.generate("random-layered", 5, root, params=SMALL, seed=1, progress=False)
    return root


def _label(source, out, **options):
    return goenv.datasets.label(source, out, **{"decisions_per_graph": 24, "shard_size": 2, "progress": False,
                                                **options})


def _files(root) -> dict[str, bytes]:
    return {name: (root / name).read_bytes() for name in sorted(os.listdir(root))}


@pytest.mark.parametrize("task", ["placement", "scheduling", "fusion", "joint"])
def test_every_label_is_the_runtime_the_env_reports_for_that_decision(graphs, tmp_path, task):
    labels = _label(graphs, tmp_path / "l", task=task, cluster="4xgpu-nvlink")
    graph, decisions = labels.graph(3), labels.decisions(3)
    env = goenv.make(task, graph=graph["goenv_graph"], cluster="4xgpu-nvlink")
    heads = env.unwrapped.core.heads
    for k in range(len(decisions["runtime"])):
        env.reset(seed=0)
        action = {head: decisions[head][k] for head in heads}
        _, _, _, _, info = env.step(action if task == "joint" else action[heads[0]])
        assert info["runtime"] == decisions["runtime"][k], (k, decisions["source"][k])
        assert info["colocation_moved"] == 0 if task in ("placement", "joint") else True
        np.testing.assert_array_equal(info["peak_memory"], decisions["peak_memory"][k])
    assert np.all(decisions["finish"] >= decisions["start"])
    np.testing.assert_allclose(decisions["finish"].max(axis=1), decisions["runtime"], rtol=1e-6)  # float32
    if task == "placement":  # indices are integers (numpy's too), kinds are named
        assert labels.graph(np.int64(-2))["graph_id"] == 3
        for index in ("3", 3.0, True):
            with pytest.raises(goenv.InvalidArgument, match="graph index must be an integer, got"):
                labels.decisions(index)
        with pytest.raises(IndexError, match="out of range"):
            labels.graph(5)
        for read in (labels.files, labels.table, lambda kind: labels.shard_bytes(0, kind)):
            with pytest.raises(goenv.InvalidArgument, match="kind must be one of"):
                read("xx")
        for shard in (-1, len(labels.shards), "0"):
            with pytest.raises(goenv.InvalidArgument, match="shard must be an integer in"):
                labels.shard_bytes(shard, "labels")


def test_a_labelling_that_fails_before_its_first_shard_leaves_nothing_that_refuses_the_corrected_one(graphs,
                                                                                                      tmp_path,
                                                                                                      monkeypatch):
    # Too many decisions for memory: refused before anything is written, or (K x N, known per
    # graph) when the first graph is read; then the manifest records no shard, so the same
    # folder takes the corrected command; one with shards is still refused.
    with pytest.raises(goenv.InvalidArgument, match=r"decisions_per_graph must be an integer in \[1, 65536\]"):
        _label(graphs, tmp_path / "l", decisions_per_graph=10**12)  # terabytes
    assert not os.path.exists(tmp_path / "l")
    with monkeypatch.context() as patch:
        patch.setattr(goenv.labels.decisions, "MAX_VALUES_PER_GRAPH", 1000)
        with pytest.raises(goenv.InvalidArgument, match="lower decisions_per_graph"):
            _label(graphs, tmp_path / "l", decisions_per_graph=2**16)
    assert sorted(os.listdir(tmp_path / "l")) == ["manifest.json"]
    assert _label(graphs, tmp_path / "l", decisions_per_graph=2).num_decisions == 2 * len(goenv.datasets.open(graphs))
    with pytest.raises(goenv.InvalidArgument, match="made otherwise"):
        _label(graphs, tmp_path / "l", decisions_per_graph=3)


def test_a_cluster_that_is_neither_a_name_nor_a_cluster_is_named(graphs, tmp_path):
    with pytest.raises(goenv.InvalidArgument, match="a cluster is a preset's name .* got int"):
        _label(graphs, tmp_path / "l", cluster=3)
    assert not os.path.exists(tmp_path / "l")


def test_the_mix_is_heuristics_random_then_perturbations_of_the_best(graphs, tmp_path):
    labels = _label(graphs, tmp_path / "l", decisions_per_graph=40, max_moves=5)
    decisions = labels.decisions(0)
    sources = list(decisions["source"])
    heuristics = ["default"] + [f"heuristic:{name}" for name in goenv.baselines.list("placement")
                                if name not in ("best-heuristic", "local-search", "genetic", "random-search",
                                                "metis")]
    assert sources[:len(heuristics)] == heuristics
    rest = 40 - len(heuristics)
    assert sources[len(heuristics):len(heuristics) + rest // 4] == ["random"] * (rest // 4)
    perturbed = sources[len(heuristics) + rest // 4:]
    assert len(perturbed) == rest - rest // 4 and all(s.startswith("perturb:") for s in perturbed)
    moves = [int(s.split(":")[1]) for s in perturbed]
    assert 1 in moves and max(moves) <= 5
    feasible = [k for k in range(len(heuristics)) if not decisions["oom"][k]]
    best = min(feasible, key=lambda k: decisions["runtime"][k])
    for k, m in zip(range(len(heuristics) + rest // 4, 40), moves):
        changed = decisions["placement"][k] != decisions["placement"][best]
        graph = labels.graph(0)
        groups = graph["colocation"]
        units = len(set(groups[changed][groups[changed] >= 0])) + int(np.sum(changed & (groups < 0)))
        assert units == m  # m distinct units, each given another device (every unit has several)
    for k in range(40):  # no decision splits a colocation group
        for group in set(groups[groups >= 0]):
            assert len(set(decisions["placement"][k][groups == group])) == 1


def test_simulate_batch_is_simulate_row_by_row(graphs):
    """The labeller's one call per graph gives what goenv.simulate gives per decision: a row of
    zeros is the default (FIFO, no fusion), start and finish rounded to float32."""
    import goenv._core as _core

    graph = goenv.datasets.load("random-layered", **SMALL, seed=2)
    cluster = goenv.clusters.get("4xgpu-nvlink")
    n, rng = graph.num_nodes, np.random.default_rng(0)
    placement = rng.integers(4, size=(6, n))
    priority = rng.integers(3, size=(6, n)).astype(np.int16)
    fusion = rng.integers(2, size=(6, n)).astype(np.int8)
    priority[1] = 0
    fusion[2] = 0
    batch = _core.simulate_batch(graph, cluster, placement, priority, fusion, 4)
    assert batch["start"].dtype == np.float32 and batch["peak_memory"].shape == (6, 4)
    for k in range(6):
        one = goenv.simulate(graph, cluster, placement[k], priority[k].astype(float) if priority[k].any() else None,
                             fusion[k] if fusion[k].any() else None, max_fusion_size=4)
        assert batch["runtime"][k] == one.runtime and batch["bytes_moved"][k] == one.bytes_moved
        assert batch["oom"][k] == one.oom and batch["invalid"][k] == one.invalid
        np.testing.assert_array_equal(batch["peak_memory"][k], one.peak_memory)
        np.testing.assert_array_equal(batch["device_busy"][k], one.device_busy)
        np.testing.assert_array_equal(batch["start"][k], one.start.astype(np.float32))
        np.testing.assert_array_equal(batch["finish"][k], one.finish.astype(np.float32))
    with pytest.raises(goenv.InvalidAction, match="shape"):
        _core.simulate_batch(graph, cluster, placement[:, 1:])
    with pytest.raises(goenv.InvalidAction, match="as many rows"):
        _core.simulate_batch(graph, cluster, placement, priority[:2])
    with pytest.raises(goenv.InvalidAction):
        _core.simulate_batch(graph, cluster, placement + 4)  # no device 4
    with pytest.raises(goenv.InvalidAction, match="integer"):
        _core.simulate_batch(graph, cluster, placement + 0.5)


def test_perturbations_move_distinct_units_drawn_uniformly():
    from goenv.labels.decisions import _distinct

    rng, counts = np.random.default_rng(0), np.array([1, 3, 5, 2, 5])
    for units in (6, 40):  # a permutation's head (most moves >= half the units), and draws with redraws
        tally = np.zeros(units)
        for _ in range(3000):
            drawn = _distinct(rng, units, counts)
            for row, count in zip(drawn, counts):
                assert len(set(row[:count])) == count and 0 <= row[:count].min() and row[:count].max() < units
            np.add.at(tally, drawn[2, :5], 1)
        expected = 3000 * 5 / units
        assert np.all(np.abs(tally - expected) < 5 * np.sqrt(expected))  # uniform over the units


@pytest.mark.parametrize("allowed", [[[1, 1, 1, 1], [0, 1, 0, 1], [0, 0, 1, 0], [1, 0, 1, 1]], [[1, 1, 1, 1]] * 4],
                         ids=["some-allowed", "all-allowed"])
def test_random_decisions_are_uniform_over_each_units_allowed_choices(allowed):
    """Both ways of drawing: a rank among each unit's allowed choices, and one bounded draw
    where every unit allows every choice."""
    from goenv.labels.decisions import Decider

    allowed = np.array(allowed, bool)
    decider = Decider.__new__(Decider)  # a Decider over these units alone, without an env
    decider.rng, decider.heads, decider.units = np.random.default_rng(0), ["placement"], {"placement": (None, allowed, None)}
    decider.defaults = {"placement": np.zeros(4, np.int16), "priority": np.zeros(4, np.int16),
                        "fusion": np.zeros(4, np.int8)}
    drawn = decider.random(8000)["placement"]
    for unit, row in enumerate(allowed):
        share = np.bincount(drawn[:, unit], minlength=4) / 8000
        np.testing.assert_allclose(share, row / row.sum(), atol=0.03)


def test_same_call_same_bytes_and_the_samplers_draw_one_kind(graphs, tmp_path):
    a, b = _label(graphs, tmp_path / "a", seed=5), _label(graphs, tmp_path / "b", seed=5)
    assert _files(tmp_path / "a") == _files(tmp_path / "b")
    c = _label(graphs, tmp_path / "c", seed=6)
    assert not np.array_equal(a.decisions(0)["runtime"], c.decisions(0)["runtime"])
    assert b.num_decisions == 5 * 24
    only_random = _label(graphs, tmp_path / "r", sampler="random", decisions_per_graph=3)
    assert set(only_random.decisions(1)["source"]) == {"random"}
    only_perturb = _label(graphs, tmp_path / "p", sampler="perturb", decisions_per_graph=3)
    assert all(s.startswith("perturb:") for s in only_perturb.decisions(1)["source"])


def _run_without_goenv(script: str, **environment: str) -> str:
    """`script` run by a fresh interpreter in which `import goenv` fails, as a reader of the files
    without goenv (pyarrow alone, Hugging Face datasets); `environment` added to its variables.
    Its stdout; its stderr in the failure."""
    code = 'import sys\nsys.modules["goenv"] = None  # importing goenv fails\n' + script
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         env={**os.environ, **environment})
    assert out.returncode == 0, out.stderr[-3000:]
    return out.stdout


def test_parquet_reads_with_pyarrow_alone_graph_once_per_graph(graphs, tmp_path):
    labels = _label(graphs, tmp_path / "l")
    script = f"""
import pyarrow.parquet as pq, pyarrow as pa, json
graphs = pa.concat_tables([pq.read_table(f) for f in {labels.files("graphs")!r}])
rows = pa.concat_tables([pq.read_table(f) for f in {labels.files("labels")!r}])
assert graphs.num_rows == 5 and graphs.column("graph_id").to_pylist() == list(range(5))
assert rows.num_rows == 5 * 24
first = rows.filter(pa.compute.equal(rows.column("graph_id"), 2))
n = graphs.column("num_nodes")[2].as_py()
assert all(len(x) == n for x in first.column("start").to_pylist())
names = json.loads(graphs.schema.metadata[b"op_type_names"])
print(len(names), first.column("runtime")[0].as_py(), graphs.column("lower_bound")[2].as_py())
"""
    out = _run_without_goenv(script).split()
    assert int(out[0]) == len(goenv._core.op_type_names())
    assert float(out[1]) == labels.decisions(2)["runtime"][0]
    assert float(out[2]) <= labels.decisions(2)["runtime"].min()
    table = labels.table("labels")
    assert table.num_rows == 120 and table.column_names[:4] == ["graph_id", "decision", "source", "runtime"]


@pytest.mark.parametrize("task", ["placement", "joint"])
def test_hugging_face_datasets_reads_both_files_without_goenv(graphs, tmp_path, task):
    """README's `load_dataset("parquet", data_files=labels.files())`, as a user without goenv
    runs it: offline, one call per file kind (the two kinds have different columns)."""
    pytest.importorskip("datasets")
    labels = _label(graphs, tmp_path / "l", task=task)
    script = f"""
from datasets import load_dataset
graphs = load_dataset("parquet", data_files={labels.files("graphs")!r}, split="train")
rows = load_dataset("parquet", data_files={labels.files("labels")!r}, split="train").with_format("numpy")
assert graphs.num_rows == 5 and graphs["graph_id"] == list(range(5)), graphs
assert rows.num_rows == 5 * 24, rows
n = graphs[2]["num_nodes"]
features = graphs[2]["node_features"]
assert len(features) == n and len(features[0]) == {len(goenv._core.node_feature_names())}
row = rows[2 * 24 + 5]
assert row["graph_id"] == 2 and row["decision"] == 5 and len(row["start"]) == n and len(row["placement"]) == n
print(row["runtime"], row["priority"] is None, ",".join(map(str, row["placement"].tolist())))
"""
    out = _run_without_goenv(script, HF_DATASETS_OFFLINE="1", HF_HUB_OFFLINE="1", HF_HOME=str(tmp_path / "hf"))
    runtime, priority_is_null, placement = out.split()[-3:]
    decisions = labels.decisions(2)
    assert float(runtime) == decisions["runtime"][5]
    assert priority_is_null == str(task == "placement")  # a head the placement task does not decide
    assert [int(d) for d in placement.split(",")] == decisions["placement"][5].tolist()


@pytest.mark.parametrize("task", ["placement", "scheduling", "fusion"])
def test_a_head_the_task_does_not_decide_is_null_and_the_graph_row_has_its_default(graphs, tmp_path, task):
    """Format 3 on: the labels rows hold the heads the task decides; the others are null (not the
    same default written K times), the graph row has the env's default, and decisions() gives
    every head in full, so simulating them reproduces every label."""
    import pyarrow.parquet as pq

    from goenv.labels.labeller import simulate_all

    labels = _label(graphs, tmp_path / "l", task=task, cluster="4xgpu-nvlink")
    rows = pq.read_table(labels.files("labels")[1])
    graph_rows = pq.read_table(labels.files("graphs")[1])
    env = goenv.make(task, graph=labels.graph(2)["goenv_graph"], cluster="4xgpu-nvlink")
    decided = set(env.unwrapped.core.heads)
    for head in ("placement", "priority", "fusion"):
        assert (rows.column(head).null_count == 0) if head in decided else (rows.column(head).null_count == rows.num_rows)
        assert graph_rows.column(f"default_{head}").null_count == 0
    # Format 4: every column and list value is required in the Parquet schema (no definition
    # levels to write) but the undecided heads, which are null.
    undecided = {"placement", "priority", "fusion"} - decided
    for table, optional in ((rows, undecided), (graph_rows, set())):
        for field in table.schema:
            assert field.nullable == (field.name in optional), field
            inner = field.type
            while hasattr(inner, "value_field"):  # lists, fixed-size lists of lists
                assert not inner.value_field.nullable, field
                inner = inner.value_type
    for leaf in pq.ParquetFile(labels.files("labels")[1]).schema:  # a list's level only tells an empty list apart
        assert leaf.max_definition_level == leaf.path.count(".list.element") + (leaf.path.split(".")[0] in undecided)
    graph, decisions = labels.graph(2), labels.decisions(2)
    env.reset(seed=0)
    core = env.unwrapped.core
    np.testing.assert_array_equal(graph["default_placement"], np.asarray(core.placement))
    np.testing.assert_array_equal(graph["default_fusion"], np.asarray(core.fusion))
    np.testing.assert_array_equal(np.stack([graph["edge_src"], graph["edge_dst"]]), graph["goenv_graph"].edge_index)
    for head in {"placement", "priority", "fusion"} - decided:
        assert decisions[head].shape == (24, graph["num_nodes"])
        assert (decisions[head] == graph[f"default_{head}"]).all()
    outcomes = simulate_all(graph["goenv_graph"], goenv.clusters.get("4xgpu-nvlink"),
                            {head: np.ascontiguousarray(decisions[head]) for head in ("placement", "priority", "fusion")},
                            labels.config["max_fusion_size"])
    np.testing.assert_array_equal(outcomes["runtime"], decisions["runtime"])


def test_every_column_has_its_codec_and_encoding(graphs, tmp_path):
    """The per-node start and finish (float32 times) are byte-stream split, then snappy, the
    decision heads (small integers) byte-stream split, then zstd, every other column of both files plain snappy: a
    column whose Parquet leaf path the writer missed would go uncompressed silently."""
    import pyarrow.parquet as pq

    labels = _label(graphs, tmp_path / "l", task="joint", cluster="4xgpu-nvlink")
    zstd = {f"{head}.list.element" for head in ("placement", "priority", "fusion")}
    split = {"start.list.element", "finish.list.element"} | zstd
    for kind in ("labels", "graphs"):
        for path in labels.files(kind):
            metadata = pq.ParquetFile(path).metadata
            columns = [metadata.row_group(g).column(c) for g in range(metadata.num_row_groups)
                       for c in range(metadata.num_columns)]
            codecs = {column.path_in_schema: column.compression for column in columns}
            assert {name for name, codec in codecs.items() if codec != "SNAPPY"} == (zstd if kind == "labels" else set())
            assert set(codecs.values()) <= {"SNAPPY", "ZSTD"}
            encoded = {column.path_in_schema for column in columns if "BYTE_STREAM_SPLIT" in column.encodings}
            assert encoded == (split if kind == "labels" else set()), encoded


def test_a_corrupt_or_truncated_shard_is_detected_on_read(graphs, tmp_path):
    root = tmp_path / "l"
    _label(graphs, root)
    path = root / "labels-00001.parquet"
    data = bytearray(path.read_bytes())
    data[len(data) // 2] ^= 0x01
    path.write_bytes(bytes(data))
    labels = goenv.datasets.open_labels(root)
    assert labels.decisions(0)["runtime"].shape == (24,)  # shard 0 is fine
    with pytest.raises(goenv.InvalidGraph, match="SHA-256"):
        labels.decisions(2)
    with pytest.raises(goenv.InvalidGraph):
        labels.verify()
    with pytest.raises(goenv.InvalidGraph):
        labels.table()
    path.write_bytes(bytes(data[:-7]))
    with pytest.raises(goenv.InvalidGraph, match="truncated"):
        goenv.datasets.open_labels(root)
    _label(graphs, root)  # the same call again rewrites the damaged shard, and only it
    goenv.datasets.open_labels(root).verify()


def test_a_process_that_read_labels_exits_cleanly(graphs, tmp_path):
    # Arrow worker threads once freed the bytes of a read shard during interpreter shutdown and
    # aborted about every other process; eight fresh processes all exit 0 now.
    root = tmp_path / "l"
    _label(graphs, root)
    for _ in range(8):
        done = subprocess.run([sys.executable, "-m", "goenv", "dataset", "verify", str(root)],
                              capture_output=True, text=True, timeout=300)
        assert done.returncode == 0, done.stderr[-2000:]


def test_kill_minus_9_then_resume_gives_the_same_bytes_and_loses_at_most_one_shard(tmp_path):
    source = tmp_path / "ds"
    goenv.datasets.generate("random-layered", 24, source, params={"num_layers": 40, "width": 25}, seed=0,
                            progress=False)
    options = {"decisions_per_graph": 64, "shard_size": 2, "progress": False}
    clean = tmp_path / "clean"
    goenv.datasets.label(source, clean, **options)
    killed = tmp_path / "killed"
    process = subprocess.Popen([sys.executable, "-c", f"import goenv; goenv.datasets.label({str(source)!r}, "
                                                      f"{str(killed)!r}, **{options!r})"])
    manifest = killed / "manifest.json"
    deadline = time.monotonic() + 120
    recorded = 0
    while time.monotonic() < deadline and process.poll() is None:
        try:
            recorded = len(json.loads(manifest.read_text())["shards"])
        except (OSError, ValueError):
            recorded = 0
        if recorded >= 2:
            break
        time.sleep(0.005)
    if process.poll() is not None:
        pytest.skip("the labelling finished before it could be killed")
    process.send_signal(signal.SIGKILL)
    process.wait()
    state = json.loads(manifest.read_text())
    assert not state["complete"]
    recorded = {record["index"] for record in state["shards"]}
    written = {int(name[7:12]) for name in os.listdir(killed) if name.startswith("labels-")}
    assert len(written - recorded) <= 1  # at most the shard being recorded when killed
    labelled = []
    original = folder.label_shard
    folder.label_shard = lambda *args: labelled.append(args[2]) or original(*args)
    try:
        goenv.datasets.label(source, killed, **options)
    finally:
        folder.label_shard = original
    assert sorted(labelled) == sorted(set(range(12)) - recorded)
    assert _files(killed) == _files(clean)


def test_tpugraphs_export_has_the_layout_arrays(graphs, tmp_path):
    labels = _label(graphs, tmp_path / "l", cluster="4xgpu-nvlink")
    paths = goenv.datasets.export_tpugraphs(labels, tmp_path / "npz")
    assert len(paths) == 5 and all(p.endswith(".npz") for p in paths)
    data = np.load(paths[1])
    graph, decisions = labels.graph(1), labels.decisions(1)
    n, c = graph["num_nodes"], int(np.sum(~decisions["oom"]))
    assert data["node_feat"].shape == (n, 64) and data["node_feat"].dtype == np.float32
    assert data["node_opcode"].dtype == np.uint8 and data["node_opcode"].shape == (n,)
    np.testing.assert_array_equal(data["edge_index"], np.stack([graph["edge_dst"], graph["edge_src"]], 1))
    assert data["node_config_feat"].shape == (c, n, 18)
    np.testing.assert_array_equal(np.argmax(data["node_config_feat"][:, :, :16], axis=2),
                                  decisions["placement"][~decisions["oom"]])
    np.testing.assert_array_equal(data["config_runtime"], np.round(decisions["runtime"][~decisions["oom"]] * 1e9))
    np.testing.assert_array_equal(data["node_config_ids"], np.arange(n))


def test_tpugraphs_export_never_mixes_with_an_earlier_one(graphs, tmp_path, monkeypatch):
    labels = _label(graphs, tmp_path / "l", decisions_per_graph=4)
    out = tmp_path / "npz"
    first = goenv.datasets.export_tpugraphs(labels, out)
    (out / "notes.txt").write_text("mine")
    before = {name: (out / name).read_bytes() for name in os.listdir(out)}
    with pytest.raises(goenv.InvalidArgument, match="already holds an export .5 files.*overwrite=True"):
        goenv.datasets.export_tpugraphs(labels, out)
    assert {name: (out / name).read_bytes() for name in os.listdir(out)} == before  # nothing changed
    record = json.loads((out / "export.json").read_text())
    (out / "00009-of-a-bigger-export.npz").write_bytes(b"stale")  # an earlier export's 10th graph ...
    (out / "export.json").write_text(json.dumps({"files": record["files"] + ["00009-of-a-bigger-export.npz"]}))
    again = goenv.datasets.export_tpugraphs(labels, out, overwrite=True)  # ... replaced with it
    assert sorted(os.listdir(out)) == sorted([os.path.basename(p) for p in again] + ["notes.txt", "export.json"])
    assert again == first and (out / "notes.txt").read_text() == "mine"  # only the export's files replaced
    (out / "00099-mine.npz").write_bytes(b"precious")  # named like an export's file, recorded by none
    before = _files(out)
    with pytest.raises(goenv.InvalidArgument, match="1 files named like an export's that no export.json names"):
        goenv.datasets.export_tpugraphs(labels, out, overwrite=True)
    assert _files(out) == before
    os.unlink(out / "00099-mine.npz")
    os.unlink(out / os.path.basename(first[0]))
    os.mkfifo(out / os.path.basename(first[0]))  # a FIFO where a recorded file was: refused, not removed
    with pytest.raises(goenv.InvalidArgument, match="a FIFO, not a file goenv wrote; nothing was changed"):
        goenv.datasets.export_tpugraphs(labels, out, overwrite=True)
    assert stat.S_ISFIFO(os.lstat(out / os.path.basename(first[0])).st_mode)
    # An export stopped midway (a full disk): its record already names its files, so the
    # next overwrite replaces them instead of refusing them as not ours.
    written, savez = [], np.savez_compressed
    def fails_on_the_third(file, **arrays):
        if len(written) == 2:
            raise OSError("no space left on device")
        written.append(1)
        savez(file, **arrays)
    with monkeypatch.context() as patch:
        patch.setattr(np, "savez_compressed", fails_on_the_third)
        with pytest.raises(OSError, match="no space"):
            goenv.datasets.export_tpugraphs(labels, tmp_path / "cut")
    assert len([name for name in os.listdir(tmp_path / "cut") if name.endswith(".npz")]) == 2
    assert len(goenv.datasets.export_tpugraphs(labels, tmp_path / "cut", overwrite=True)) == 5
    for levels in (0, -5, 2.0, True):
        with pytest.raises(goenv.InvalidArgument, match=r"priority_levels \(the env's number of levels\) must be an integer >= 1"):
            goenv.datasets.export_tpugraphs(labels, tmp_path / "other", priority_levels=levels)


def test_torch_dataset_and_pyg_style_collate(graphs, tmp_path):
    torch = pytest.importorskip("torch")
    from goenv.labels.torch_dataset import LabelledGraphs, collate

    data = LabelledGraphs(_label(graphs, tmp_path / "l"))
    assert len(data) == 5
    item = data[4]
    assert item["x"].shape == (item["num_nodes"], 64) and item["placement"].shape == (24, item["num_nodes"])
    loader = torch.utils.data.DataLoader(data, batch_size=2, collate_fn=collate)
    batch = next(iter(loader))
    sizes = [data[0]["num_nodes"], data[1]["num_nodes"]]
    assert batch["x"].shape[0] == sum(sizes) and batch["runtime"].shape == (2, 24)
    assert batch["batch"].tolist() == [0] * sizes[0] + [1] * sizes[1]
    assert int(batch["edge_index"].min()) >= 0 and int(batch["edge_index"][:, -1].min()) >= sizes[0]
    with pytest.raises(goenv.InvalidArgument, match="collate needs at least one item"):
        collate([])


def test_suites_and_graph_files_are_sources(tmp_path):
    path = tmp_path / "g.goenv"
    goenv.datasets.load("random-series-parallel", num_nodes=30).save(str(path))
    labels = _label(str(path), tmp_path / "f", decisions_per_graph=3)
    assert labels.graph(0)["cluster"] == "2xgpu-nvlink" and labels.graph(0)["num_nodes"] > 0
    both = _label([str(path), str(path)], tmp_path / "two", decisions_per_graph=2, cluster="4xgpu-pcie")
    assert len(both) == 2 and both.graph(1)["cluster"] == "4xgpu-pcie"
    from goenv.labels.sources import resolve

    suite = resolve("transfer:validation", None)
    assert len(suite) == 4 and suite.graph(0)[1]["split"] == "validation"


def test_bad_input_raises_clear_errors_and_changes_nothing(graphs, tmp_path, monkeypatch):
    out = tmp_path / "l"
    with pytest.raises(goenv.InvalidArgument, match="unknown task"):
        _label(graphs, out, task="placment")
    with pytest.raises(goenv.NotFound, match="did you mean"):
        _label(graphs, out, cluster="4xgpu-nvlnk")
    with pytest.raises(goenv.InvalidArgument, match="unknown sampler"):
        _label(graphs, out, sampler="best")
    for k in (0, 2**16 + 1, 2.0, "4"):
        with pytest.raises(goenv.InvalidArgument, match="decisions_per_graph"):
            _label(graphs, out, decisions_per_graph=k)
    with pytest.raises(goenv.InvalidArgument, match="needs an agent"):
        _label(graphs, out, sampler="policy")
    with pytest.raises(goenv.InvalidArgument, match="bad Ray address 'foo'"):
        _label(graphs, out, workers=2, address="foo")
    with pytest.raises(goenv.InvalidArgument, match="workers > 0"):
        _label(graphs, out, address="10.0.0.1:6379")
    with pytest.raises(goenv.InvalidArgument, match="not a goenv dataset"):
        _label(tmp_path, out)
    with pytest.raises(goenv.InvalidArgument, match="no such dataset folder"):
        _label("no-such-thing", out)
    assert not out.exists()
    with pytest.raises(goenv.InvalidArgument, match="its own"):  # a dataset of graphs is never replaced
        _label(graphs, graphs, overwrite=True)
    _label(graphs, out)
    before = _files(out)
    with pytest.raises(goenv.InvalidArgument, match="made otherwise"):
        _label(graphs, out, seed=1)
    assert _files(out) == before
    (out / "notes.txt").write_text("mine")
    os.mkfifo(out / "labels-00007.parquet")  # named like a shard: an overwrite refuses it, removes nothing
    before = _files_but_fifos(out)
    with pytest.raises(goenv.InvalidArgument, match="labels-00007.parquet: a FIFO, not a file goenv wrote"):
        _label(graphs, out, seed=1, shard_size=5, overwrite=True)
    assert _files_but_fifos(out) == before
    os.unlink(out / "labels-00007.parquet")
    replaced = _label(graphs, out, seed=1, shard_size=5, overwrite=True)
    assert sorted(os.listdir(out)) == ["graphs-00000.parquet", "labels-00000.parquet", "manifest.json", "notes.txt"]
    assert replaced.config["seed"] == 1
    small = goenv.datasets.load("random-layered", num_layers=3, width=2)
    with monkeypatch.context() as patch:  # a graph whose K x N values would not fit in memory at once
        patch.setattr(goenv.labels.decisions, "MAX_VALUES_PER_GRAPH", small.num_nodes * 4 - 1)
        with pytest.raises(goenv.InvalidArgument, match="4 decisions x .* nodes is more than"):
            small.save(str(tmp_path / "small.goenv"))
            goenv.datasets.label([str(tmp_path / "small.goenv")], tmp_path / "big", decisions_per_graph=4,
                                 progress=False)


def _files_but_fifos(root) -> dict[str, bytes]:
    return {name: (root / name).read_bytes() for name in sorted(os.listdir(root))
            if not stat.S_ISFIFO(os.lstat(root / name).st_mode)}


@pytest.mark.parametrize("failing", ["preparing", "writing"])
def test_a_failure_on_either_thread_keeps_the_finished_shards_and_no_partial_file(graphs, tmp_path, monkeypatch,
                                                                                   failing):
    """label_shard labels and writes on two threads: an error on either (labelling a graph or
    appending it) stops both, leaves no temporary or partial file, and the same call again
    finishes the folder byte-identical to a clean run."""

    out = tmp_path / "l"
    if failing == "preparing":
        original = labels_shard.prepare_graph  # on the thread that prepares the next graph

        def prepare_graph(graph, info, graph_id, *args):
            if graph_id == 3:
                raise RuntimeError("boom")
            return original(graph, info, graph_id, *args)

        monkeypatch.setattr(labels_shard, "prepare_graph", prepare_graph)
    else:
        original = tables.ShardWriter.write

        def write(self, table):
            if table.column("graph_id")[0].as_py() == 3:
                raise RuntimeError("boom")
            return original(self, table)

        monkeypatch.setattr(tables.ShardWriter, "write", write)
    with pytest.raises(RuntimeError, match="boom"):
        _label(graphs, out)
    assert sorted(os.listdir(out)) == ["graphs-00000.parquet", "labels-00000.parquet", "manifest.json"]
    assert [record["index"] for record in json.loads((out / "manifest.json").read_text())["shards"]] == [0]
    monkeypatch.undo()
    _label(graphs, out)
    _label(graphs, tmp_path / "clean")
    assert _files(out) == _files(tmp_path / "clean")


def test_one_core_labels_on_one_thread_and_writes_the_same_bytes(graphs, tmp_path, monkeypatch):
    """With a spare core label_shard labels on two threads and streams the files in graph
    order (pipeline.py); without (or on a Ray actor) it does the same calls on one thread:
    the same bytes."""
    pipelined = []  # per shard: did it go through the two-thread pipeline?
    original = labels_shard.label_in_order

    def label_in_order(*args, **kwargs):
        pipelined.append(True)
        return original(*args, **kwargs)

    monkeypatch.setattr(labels_shard, "label_in_order", label_in_order)
    monkeypatch.setattr(labels_shard, "_spare_core", lambda: True)  # whatever the machine running the test has
    _label(graphs, tmp_path / "pipelined")
    assert len(pipelined) == 3  # shard_size 2, 5 graphs
    monkeypatch.setattr(labels_shard, "_spare_core", lambda: False)
    _label(graphs, tmp_path / "one")
    assert len(pipelined) == 3
    assert _files(tmp_path / "one") == _files(tmp_path / "pipelined")


def test_the_pipeline_appends_in_graph_order_whichever_thread_finishes_first(tmp_path):
    """pipeline.label_in_order: graphs that finish out of order (a slow one on one thread)
    are still appended in graph order, each file by one thread at a time, at most AHEAD
    graphs in flight; an error on the helper thread is raised on the caller's."""
    import threading
    import time

    from goenv.labels import pipeline

    in_flight, most, lock, threads = set(), [0], threading.Lock(), set()

    class Recorder:  # a ShardWriter's table() and write()
        def __init__(self):
            self.rows, self.busy = [], threading.Lock()

        def table(self, item):
            return item["id"]

        def close(self):
            self.rows.append("closed")

        def write(self, table):
            assert self.busy.acquire(blocking=False), "two threads appended to one file at once"
            time.sleep(0.001)
            self.rows.append(table)
            with lock:
                in_flight.discard(table)
            self.busy.release()

    both = threading.Barrier(2)  # the first two graphs, one on each thread

    def labelled(graph_id):
        threads.add(threading.current_thread().name)
        if graph_id < 12:
            both.wait(timeout=60)
        with lock:
            in_flight.add(graph_id)
            most[0] = max(most[0], len(in_flight))
        time.sleep(0.05 if graph_id % 5 == 0 else 0.002)  # every fifth graph slow
        return {"id": graph_id, "runtime": [0.0] * 3}

    writers = {"graphs": Recorder(), "labels": Recorder()}
    assert pipeline.label_in_order(labelled, writers, 10, 20, name="helper") == 60
    assert writers["graphs"].rows == writers["labels"].rows == list(range(10, 30)) + ["closed"]
    assert threads == {threading.current_thread().name, "helper"}
    assert most[0] <= pipeline.AHEAD

    def failing(graph_id):
        if threading.current_thread().name == "helper":
            raise RuntimeError("boom on the helper")
        time.sleep(0.01)
        return {"id": graph_id, "runtime": []}

    with pytest.raises(RuntimeError, match="boom on the helper"):
        pipeline.label_in_order(failing, {"labels": Recorder()}, 0, 50, name="helper")


class _RecordingWriter:
    """A stand-in for tables.ShardWriter: records which thread appended which graph, and closes.
    Appending graph `wait_at` waits (up to 10 s) for the event `wait_for`; appending graph
    `signal_at` sets the event `signal`."""

    def __init__(self, log, wait_at=None, wait_for=None, signal_at=None, signal=None):
        self.log, self.wait_at, self.wait_for, self.signal_at, self.signal = log, wait_at, wait_for, signal_at, signal

    def table(self, item):
        return item["graph_id"]

    def write(self, graph_id):
        if graph_id == self.wait_at:
            self.wait_for.wait(timeout=10)
        self.log.append(("write", graph_id, threading.current_thread().name))
        if graph_id == self.signal_at:
            self.signal.set()

    def close(self):
        self.log.append(("close", None, threading.current_thread().name))


@pytest.mark.parametrize("count", [1, 2, 9])
def test_the_pipeline_appends_in_order_closes_once_and_shares_the_last_appends(count):
    """label_in_order (pipeline.py) appends every graph to each file in graph order and closes
    each file once, after its last graph; a thread with no graph left appends to one file while
    the other thread appends to the other. Here the graphs file's last append waits until the
    labels file has its last graph: another thread must append that one (on one thread, the
    wait runs out after 10 s and the test fails)."""
    from goenv.labels.pipeline import label_in_order

    last, labels_done = 10 + count - 1, threading.Event()
    logs = {"graphs": [], "labels": []}
    writers = {"graphs": _RecordingWriter(logs["graphs"], wait_at=last, wait_for=labels_done),
               "labels": _RecordingWriter(logs["labels"], signal_at=last, signal=labels_done)}

    def labelled(graph_id):
        return {"graph_id": graph_id, "runtime": np.zeros(3)}

    assert label_in_order(labelled, writers, 10, count, name="test-labels-pipeline") == 3 * count
    for log in logs.values():
        assert [(kind, graph) for kind, graph, _ in log] == [("write", g) for g in range(10, 10 + count)] + \
            [("close", None)]
    assert logs["labels"][-2][2] != logs["graphs"][-2][2]  # the last graph's two appends on two threads


def test_a_failing_graph_stops_the_pipeline_and_is_raised():
    from goenv.labels.pipeline import label_in_order

    logs = {"graphs": [], "labels": []}
    writers = {kind: _RecordingWriter(log) for kind, log in logs.items()}

    def labelled(graph_id):
        if graph_id == 3:
            raise goenv.InvalidGraph("graph 3 is bad")
        return {"graph_id": graph_id, "runtime": np.zeros(1)}

    with pytest.raises(goenv.InvalidGraph, match="graph 3 is bad"):
        label_in_order(labelled, writers, 0, 8, name="test-labels-pipeline")
    for log in logs.values():
        assert ("close", None) not in [(kind, graph) for kind, graph, _ in log]  # no footer on a dropped file
        assert [graph for _, graph, _ in log] == list(range(len(log)))  # in order, stopped before graph 3
        assert len(log) <= 3


@pytest.mark.parametrize("switch_after", [1, 2, 3])
def test_a_cached_labels_shard_is_read_whole_whatever_another_thread_caches_meanwhile(graphs, tmp_path,
                                                                                    switch_after):
    """Labels keeps the last shard read: a read that finds its shard cached must return that
    shard's rows even if another thread caches another shard between two steps of the read.
    Here the other thread caches shard 2 right after the `switch_after`-th look at the cache."""
    labels = _label(graphs, tmp_path / "l")
    expected = labels.decisions(1)["runtime"]
    other = (2, goenv.datasets.open_labels(tmp_path / "l")._shard(2))
    Switching, looks = cache_switching(folder.Labels, other, switch_after)

    switching = Switching(tmp_path / "l")
    switching.decisions(0)  # caches shard 0
    looks[0] = 0
    np.testing.assert_array_equal(switching.decisions(1)["runtime"], expected)  # shard 0 again, found cached


def test_pyarrow_imports_what_it_imports_lazily_before_the_pipeline_threads_start():
    """pyarrow imports pandas, and with it numpy.ma, on its first conversion from numpy. Done
    first on one thread (once a writer thread), that import raced with goenv._core.simulate on
    another, which looks numpy.ma up in sys.modules: "AttributeError: partially initialized
    module 'numpy.ma'". tables.pyarrow(), which label_shard calls before starting its threads,
    does the imports; a fresh interpreter shows it."""
    script = """
import importlib.util, sys
import goenv.labels.tables as tables
assert "numpy.ma" not in sys.modules or "pandas" not in sys.modules
tables.pyarrow()
assert "numpy.ma" in sys.modules
assert "pandas" in sys.modules or importlib.util.find_spec("pandas") is None
"""
    subprocess.run([sys.executable, "-c", script], check=True)


def test_older_format_versions_read_but_are_never_added_to(graphs, tmp_path):
    """Version 5 writes a row group per graph, nulls for the heads the task does not decide,
    every other column required and the heads byte-stream split; a folder of an older version
    (1: one row group per shard; 2: every head in every row; 3: every column optional; 4: the
    heads plain) still reads, but labelling into it is
    refused (its bytes would mix two layouts) unless overwrite=True; an unknown version is
    refused on read."""
    import pyarrow.parquet as pq

    out = tmp_path / "l"
    labels = _label(graphs, out)
    assert labels.manifest["format_version"] == folder.FORMAT_VERSION == 5
    assert [pq.ParquetFile(f).num_row_groups for f in labels.files()] == [2, 2, 1]  # shard_size 2, 5 graphs
    expected = labels.decisions(3)
    manifest = json.loads((out / "manifest.json").read_text())
    (out / "manifest.json").write_text(json.dumps({**manifest, "format_version": 1}))
    np.testing.assert_array_equal(goenv.datasets.open_labels(out).decisions(3)["runtime"], expected["runtime"])
    before = _files(out)
    with pytest.raises(goenv.InvalidArgument, match="format version 1.*nothing was changed"):
        _label(graphs, out)
    assert _files(out) == before
    assert _label(graphs, out, overwrite=True).manifest["format_version"] == 5
    (out / "manifest.json").write_text(json.dumps({**manifest, "format_version": 6}))
    with pytest.raises(goenv.InvalidGraph, match="format version 6"):
        goenv.datasets.open_labels(out)


def test_label_and_export_commands(graphs, tmp_path, capsys):
    from goenv.cli import main

    out = tmp_path / "l"
    assert main(["dataset", "label", str(graphs), "--out", str(out), "-k", "4", "--no-progress"]) == 0
    assert "20 labelled decisions of 5 graphs" in capsys.readouterr().out
    assert main(["dataset", "info", str(out)]) == 0 and "5 graphs x 4 decisions" in capsys.readouterr().out
    assert main(["dataset", "verify", str(out)]) == 0 and "all checksums valid" in capsys.readouterr().out
    assert main(["dataset", "export-tpugraphs", str(out), "--out", str(tmp_path / "npz")]) == 0
    assert sorted(os.listdir(tmp_path / "npz"))[-1] == "export.json" and len(os.listdir(tmp_path / "npz")) == 6
    assert main(["dataset", "label", str(graphs), "--out", str(out), "-k", "0"]) == 2
    assert "goenv: error: --decisions-per-graph" in capsys.readouterr().err


def test_policy_samples_join_the_mix(graphs, tmp_path):
    from helpers import require_agents

    agents = require_agents()
    env = goenv.make("placement", graph=goenv.datasets.open(graphs)[0], cluster="2xgpu-nvlink")
    agent = agents.GO(env, seed=0, hidden=16)
    path = tmp_path / "agent.safetensors"
    agent.save(path)
    labels = _label(graphs, tmp_path / "l", agent=str(path), decisions_per_graph=16)
    sources = list(labels.decisions(0)["source"])
    assert sources.count("policy") == (16 - 8) // 4
    again = _label(graphs, tmp_path / "again", agent=agent, decisions_per_graph=16)
    assert _files(tmp_path / "l") == _files(tmp_path / "again")


def test_labels_do_not_depend_on_other_threads_calling_libc_rand(tmp_path):
    """Ray's threads call libc rand(); no labelled decision may draw from it (METIS does: it
    is left out of the mix)."""
    import ctypes
    import threading

    source = tmp_path / "ds"
    goenv.datasets.generate("random-series-parallel", 12, source, params={"num_nodes": 600}, progress=False)
    options = {"cluster": "4xgpu-nvlink", "decisions_per_graph": 12, "shard_size": 4, "progress": False}
    goenv.datasets.label(source, tmp_path / "quiet", **options)
    rand, stop = ctypes.CDLL(None).rand, threading.Event()
    spinner = threading.Thread(target=lambda: [rand() for _ in iter(stop.is_set, True)], daemon=True)
    spinner.start()
    try:
        goenv.datasets.label(source, tmp_path / "busy", **options)
    finally:
        stop.set()
        spinner.join()
    assert _files(tmp_path / "busy") == _files(tmp_path / "quiet")


def test_a_shard_writer_leaves_the_callers_file_open_and_writes_what_a_buffer_gets(graphs, tmp_path):
    """ShardWriter buffers a Python sink (one GIL-taking write a megabyte); pyarrow closes what it
    wraps when done, but the sink is the caller's: write_atomic flushes and fsyncs it after."""
    import gc
    import io

    from goenv.labels import tables

    labels = _label(graphs, tmp_path / "labels")
    row = labels.graph(0)
    item = {"graph": {**row, "graph": row["goenv_graph"], "edge_index": np.stack([row["edge_src"], row["edge_dst"]]),
                      "defaults": {head: row[f"default_{head}"] for head in ("placement", "priority", "fusion")}},
            **{key: value for key, value in labels.decisions(0).items() if key not in ("graph_id", "decision")}}
    for kind in ("graphs", "labels"):
        sink, reference = io.BytesIO(), tables.pyarrow().BufferOutputStream()
        for target in (sink, reference):
            writer = tables.ShardWriter(kind, target)
            writer.append(item)
            writer.close()
            del writer
        gc.collect()
        assert not sink.closed
        assert sink.getvalue() == reference.getvalue().to_pybytes()


def test_a_shard_column_of_more_than_2_31_values_is_a_clear_error():
    """Parquet's list offsets are int32: a shard's column past them asks for smaller shards
    (checked before any array is built, for the node features' nested lists too)."""
    from goenv.labels import tables

    pa = tables.pyarrow()
    with pytest.raises(ValueError, match="use a smaller shard_size"):
        tables._list_array(pa, np.array([2**31 - 1, 1]), pa.array(np.zeros(0, np.float32)))
    assert tables._list_array(pa, np.array([2, 1]), pa.array(np.arange(3, dtype=np.int16))).to_pylist() == [[0, 1], [2]]


def test_fusion_labels_name_their_rules_so_a_resume_never_mixes_old_ones(graphs, tmp_path):
    """Priority 0 keeping a producer alone and the fusion lower bound changed fusion and joint
    labels: their config says which rules they follow, and a folder of the old ones is refused."""
    fused = _label(graphs, tmp_path / "f", task="fusion", decisions_per_graph=2)
    assert fused.config["fusion_rules"] == 2
    assert "fusion_rules" not in _label(graphs, tmp_path / "p", decisions_per_graph=2).config
    manifest = json.loads((tmp_path / "f" / "manifest.json").read_text())
    del manifest["config"]["fusion_rules"]  # as labelled before the rules changed
    (tmp_path / "f" / "manifest.json").write_text(json.dumps(manifest))
    with pytest.raises(goenv.InvalidArgument, match="made otherwise"):
        _label(graphs, tmp_path / "f", task="fusion", decisions_per_graph=2)


def test_a_manifest_that_claims_a_huge_count_or_lacks_num_shards_is_refused_cheaply(graphs, tmp_path):
    root = tmp_path / "l"
    _label(graphs, root)
    manifest = json.loads((root / "manifest.json").read_text())
    for change, message in (({"count": 10**15}, "count|shards|graphs"), ({"num_shards": 7}, "num_shards")):
        (root / "manifest.json").write_text(json.dumps({**manifest, **change}))
        with pytest.raises(goenv.InvalidGraph, match=message):
            goenv.datasets.open_labels(root)
    (root / "manifest.json").write_text(json.dumps({k: v for k, v in manifest.items() if k != "num_shards"}))
    assert goenv.datasets.open_labels(root).decisions(0)["runtime"].shape == (24,)  # derived, not required


@pytest.mark.parametrize("change, message", [
    (lambda c: c.pop("task"), "config has no 'task'"),
    (lambda c: c.update(task=["x"]), "config's 'task' is"),
    (lambda c: c.update(sampler={"a": 1}), "config's 'sampler' is"),
    (lambda c: c.update(seed=-1), "config's 'seed' is"),
    (lambda c: c.update(agent_sha256="evil"), "config's 'agent_sha256' is"),
])
def test_a_manifest_config_label_never_writes_is_refused(graphs, tmp_path, change, message):
    """Outside-probe finding: without config.task a dataset opened and repr() raised KeyError;
    task ["x"] passed verify and export."""
    root = tmp_path / "l"
    _label(graphs, root, decisions_per_graph=2)
    manifest = json.loads((root / "manifest.json").read_text())
    change(manifest["config"])
    (root / "manifest.json").write_text(json.dumps(manifest))
    with pytest.raises(goenv.InvalidGraph, match=message):
        goenv.datasets.open_labels(root)


def test_graph_columns_that_disagree_with_the_rows_graph_are_refused(graphs, tmp_path):
    """Outside-probe finding: a row's stored goenv graph swapped for another, its edge columns
    swapped, or node_features narrower than the features it names, passed open, read and verify."""
    import pyarrow as pa

    root = tmp_path / "l"
    _label(graphs, root, decisions_per_graph=2)
    original = _shard_table(root, 0, "graphs")
    other = goenv.datasets.load("inception").to_bytes()
    swapped = original.set_column(original.column_names.index("graph"), "graph",
                                  pa.array([other] + original.column("graph").to_pylist()[1:], pa.binary()))
    reversed_edges = original.rename_columns(
        [{"edge_src": "edge_dst", "edge_dst": "edge_src"}.get(n, n) for n in original.column_names])
    column = original.column("node_features").combine_chunks()
    narrow = pa.ListArray.from_arrays(column.offsets, pa.FixedSizeListArray.from_arrays(
        column.values.flatten().slice(0, len(column.values) * 3), 3))
    narrowed = original.set_column(original.column_names.index("node_features"), "node_features", narrow)
    params = original.set_column(original.column_names.index("params"), "params",
                                 pa.array(['{"a" 1}'] + original.column("params").to_pylist()[1:], pa.string()))
    raw = pa.array([b"\x91"] + [p.encode() for p in original.column("params").to_pylist()[1:]], pa.binary())
    not_utf8 = original.set_column(original.column_names.index("params"), "params", raw.view(pa.string()))
    for table, message in ((params, "row 0's 'params' is not a JSON object"),  # a fuzz finding: JSONDecodeError
                           (not_utf8, "not a readable Parquet file .*Invalid UTF8"),  # a fuzz finding: UnicodeDecodeError
                           (swapped, "row 0's 'num_nodes' is not its graph's"),
                           (reversed_edges, "row 0's 'edge_src' is not its graph's"),
                           (narrowed, "node_features are 3 wide, the schema names")):
        _reseal(root, 0, "graphs", table)
        with pytest.raises(goenv.InvalidGraph, match=message):
            goenv.datasets.open_labels(root).graph(0)
        with pytest.raises(goenv.InvalidGraph, match=message):
            goenv.datasets.open_labels(root).verify()


def _reseal(root, index: int, kind: str, table, **record_changes) -> None:
    """Writes `table` as shard `index`'s `kind` file and seals it in the manifest as goenv would
    (size and SHA-256): only the rows checks can then catch what the table holds."""
    import hashlib

    import pyarrow.parquet as pq

    path = root / folder.shard_file(kind, index)
    pq.write_table(table, path)
    data = path.read_bytes()
    manifest = json.loads((root / "manifest.json").read_text())
    record = manifest["shards"][index]
    record["files"][kind].update(bytes=len(data), sha256=hashlib.sha256(data).hexdigest())
    record.update(record_changes)
    (root / "manifest.json").write_text(json.dumps(manifest))


def _shard_table(root, index: int, kind: str):
    import pyarrow.parquet as pq

    return pq.read_table(root / folder.shard_file(kind, index))


@pytest.mark.parametrize("task", ["placement", "joint"])
def test_the_writers_write_exactly_the_declared_columns_and_types(graphs, tmp_path, task):
    import pyarrow.parquet as pq

    root = tmp_path / task
    _label(graphs, root, task=task, decisions_per_graph=2)
    for kind, declared in (("graphs", tables.GRAPH_TYPES), ("labels", tables.LABEL_TYPES)):
        schema = pq.read_schema(root / folder.shard_file(kind, 0))
        assert {field.name: tables._type_name(field.type) for field in schema} == declared


def test_a_column_renamed_or_retyped_in_a_resealed_shard_is_refused_naming_it(graphs, tmp_path):
    """Fuzz finding: a graphs shard whose 'default_fusion' was renamed by one byte raised
    pyarrow's KeyError from decisions() of a placement dataset."""
    import pyarrow as pa

    root = tmp_path / "l"
    _label(graphs, root)
    original = _shard_table(root, 0, "graphs")
    renamed = original.rename_columns(["default_fusioo" if n == "default_fusion" else n for n in original.column_names])
    _reseal(root, 0, "graphs", renamed)
    with pytest.raises(goenv.InvalidGraph, match="a column goenv does not write, 'default_fusioo'"):
        goenv.datasets.open_labels(root).decisions(0)
    _reseal(root, 0, "graphs", original.drop_columns(["default_fusion"]))
    with pytest.raises(goenv.InvalidGraph, match="'fusion' is not decided in some rows, and their graphs have no"):
        goenv.datasets.open_labels(root).decisions(0)
    _reseal(root, 0, "graphs", original)
    labels = _shard_table(root, 0, "labels")
    retyped = labels.set_column(labels.column_names.index("runtime"), "runtime",
                                labels.column("runtime").cast(pa.float32()))
    _reseal(root, 0, "labels", retyped)
    with pytest.raises(goenv.InvalidGraph, match="column 'runtime' is float, goenv writes double"):
        goenv.datasets.open_labels(root).decisions(0)
    with pytest.raises(goenv.InvalidGraph, match="runtime"):
        goenv.datasets.open_labels(root).verify()


def test_a_resealed_shard_of_many_constant_rows_is_refused_before_it_is_decoded(graphs, tmp_path):
    import pyarrow as pa

    root = tmp_path / "l"
    _label(graphs, root)
    rows = 20_000_000  # a few hundred KB of file, 160 MB of decoded graph ids
    constant = pa.table({"graph_id": pa.array(np.zeros(rows, np.int64))})
    _reseal(root, 0, "labels", constant)
    labels = goenv.datasets.open_labels(root)
    with pytest.raises(goenv.InvalidGraph, match="20000000 rows, the manifest says 48") as refused:
        labels.decisions(0)
    assert "not a readable Parquet file" not in str(refused.value)  # our own refusal, not rewrapped
    with pytest.raises(goenv.InvalidGraph, match="rows"):
        labels.verify()
    # The manifest claiming them too: its rows are not 2 graphs x 24 decisions.
    _reseal(root, 0, "labels", constant, rows=rows)
    with pytest.raises(goenv.InvalidGraph, match="20000000 rows, not 2 graphs x 24 decisions"):
        goenv.datasets.open_labels(root)


def test_a_shard_that_declares_more_decoded_bytes_than_it_may_is_refused(graphs, tmp_path, monkeypatch):
    from goenv.labels import tables

    root = tmp_path / "l"
    _label(graphs, root)
    monkeypatch.setattr(tables, "MAX_EXPANSION", 0)
    monkeypatch.setattr(tables, "EXPANSION_ALLOWANCE", 100)
    with pytest.raises(goenv.InvalidGraph, match="decoded bytes for a .*-byte file"):
        goenv.datasets.open_labels(root).decisions(0)


def _understate_footer(path) -> None:
    """Rewrites the Parquet footer of `path` to declare that each row group decodes to 1 byte
    (RowGroup.total_byte_size: an i64 field, header byte 0x16, then a zigzag varint)."""
    import struct

    import pyarrow.parquet as pq

    def varint(n: int) -> bytes:
        n, out = (n << 1) ^ (n >> 63), bytearray()
        while n >= 0x80:
            out.append(n & 0x7F | 0x80)
            n >>= 7
        return bytes(out + bytes([n]))

    data = path.read_bytes()
    meta = pq.ParquetFile(path).metadata
    size = struct.unpack("<I", data[-8:-4])[0]
    footer = data[-8 - size:-8]
    for group in range(meta.num_row_groups):
        footer = footer.replace(b"\x16" + varint(meta.row_group(group).total_byte_size), b"\x16" + varint(1), 1)
    path.write_bytes(data[:-8 - size] + footer + struct.pack("<I", len(footer)) + b"PAR1")
    meta = pq.ParquetFile(path).metadata
    assert all(meta.row_group(group).total_byte_size == 1 for group in range(meta.num_row_groups))


def test_a_shard_that_decodes_to_more_than_its_footer_declares_is_refused_while_read(graphs, tmp_path,
                                                                                    monkeypatch):
    import hashlib

    from goenv.labels import tables

    root = tmp_path / "l"
    _label(graphs, root)
    manifest = json.loads((root / "manifest.json").read_text())
    for kind in ("graphs", "labels"):
        path = root / folder.shard_file(kind, 0)
        _understate_footer(path)
        data = path.read_bytes()
        manifest["shards"][0]["files"][kind].update(bytes=len(data), sha256=hashlib.sha256(data).hexdigest())
    (root / "manifest.json").write_text(json.dumps(manifest))
    monkeypatch.setattr(tables, "MAX_EXPANSION", 0)  # a bound of 64 bytes: the declared 1 byte passes it
    monkeypatch.setattr(tables, "EXPANSION_ALLOWANCE", 64)
    monkeypatch.setattr(tables, "READ_BATCH_ROWS", 1)
    with pytest.raises(goenv.InvalidGraph, match="decodes to more than 64 bytes, more than its footer declares"):
        goenv.datasets.open_labels(root).decisions(0)


def test_a_shard_without_goenvs_columns_is_refused_before_its_values_are_decoded(graphs, tmp_path, monkeypatch):
    import pyarrow as pa

    from goenv.labels import tables

    root = tmp_path / "l"
    _label(graphs, root)
    rows = json.loads((root / "manifest.json").read_text())["shards"][0]["rows"]
    _reseal(root, 0, "labels", pa.table({"graph_id": pa.array(np.zeros(rows, np.int64))}))
    read = tables._read_bounded

    def read_graphs_only(pa, parquet, bound, what):
        assert "labels-" not in what, "the labels shard's values were decoded before its schema was checked"
        return read(pa, parquet, bound, what)

    monkeypatch.setattr(tables, "_read_bounded", read_graphs_only)
    with pytest.raises(goenv.InvalidGraph, match="no column 'decision'"):
        goenv.datasets.open_labels(root).decisions(0)


@pytest.mark.parametrize("kind, column, change, message", [
    ("labels", "placement", lambda v: v + 99, "a device the cluster does not have"),
    ("labels", "runtime", lambda v: np.where(np.arange(len(v)) == 3, np.nan, v), "runtime is not a finite"),
    ("labels", "runtime", lambda v: -v, "runtime is not a finite"),
    ("labels", "decision", lambda v: v[::-1].copy(), "decisions 0..K-1 in order"),
    ("labels", "start", lambda v: v[:, :-1], "'start' list does not have its graph's length"),
    ("labels", "device_busy", lambda v: v[:, :1], "'device_busy' list does not have its graph's length"),
    ("graphs", "graph_id", lambda v: v + 1, "graph ids are not 0..1 in order"),
    ("graphs", "edge_src", lambda v: [row * 0 + 10**6 for row in v], "'edge_src' is not a node of its graph"),
    ("graphs", "flops", lambda v: [row[:-1] for row in v], "'flops' list does not have its graph's length"),
])
def test_rows_that_disagree_with_their_graph_are_refused_on_read_and_by_verify(graphs, tmp_path, kind, column,
                                                                               change, message):
    import pyarrow as pa

    root = tmp_path / "l"
    _label(graphs, root)
    table = _shard_table(root, 0, kind)
    values = table.column(column).to_numpy(zero_copy_only=False)
    if pa.types.is_list(table.schema.field(column).type):
        values = np.stack(values) if len({len(row) for row in values}) == 1 else values
        changed = change(values)
        array = pa.array([np.asarray(row) for row in changed], table.schema.field(column).type)
    else:
        array = pa.array(change(values), table.schema.field(column).type)
    _reseal(root, 0, kind, table.set_column(table.column_names.index(column), column, array))
    labels = goenv.datasets.open_labels(root)
    assert labels.decisions(2)["runtime"].shape == (24,)  # another shard is fine
    with pytest.raises(goenv.InvalidGraph, match=message):
        labels.decisions(0)
    with pytest.raises(goenv.InvalidGraph, match=message):
        labels.verify()


def test_shards_whose_columns_differ_are_refused_when_read_as_one_table(graphs, tmp_path):
    """Each shard reads alone, but labels.table() is one table: a resealed shard without the
    optional bytes_moved column is refused there, naming it; one whose node_features are nested
    lists instead of fixed-size ones is not goenv's, and refused on read."""
    import pyarrow as pa

    root = tmp_path / "l"
    _label(graphs, root)
    rows = _shard_table(root, 1, "labels")
    _reseal(root, 1, "labels", rows.drop_columns(["bytes_moved"]))
    labels = goenv.datasets.open_labels(root)
    assert "bytes_moved" not in labels.decisions(2)  # alone, shard 1 (graphs 2 and 3) reads
    with pytest.raises(goenv.InvalidGraph, match=r"labels-00001\.parquet: not the columns of shard 0: its columns"):
        labels.table("labels")
    assert labels.table("graphs").num_rows == len(labels)
    table = _shard_table(root, 1, "graphs")
    column = table.column("node_features").combine_chunks()
    width = column.type.value_type.list_size
    nested = pa.ListArray.from_arrays(column.offsets, pa.ListArray.from_arrays(
        pa.array(np.arange(0, len(column.values) * width + 1, width, dtype=np.int32)), column.values.flatten()))
    _reseal(root, 1, "graphs", table.set_column(table.column_names.index("node_features"), "node_features", nested))
    with pytest.raises(goenv.InvalidGraph, match="column 'node_features' is list<list<float>>, goenv writes"):
        goenv.datasets.open_labels(root).graph(2)


def test_tpugraphs_export_refuses_what_its_arrays_cannot_hold_before_writing(graphs, tmp_path):
    labels = _label(graphs, tmp_path / "l", task="scheduling")
    levels = int(max(labels.decisions(i)["priority"].max() for i in range(len(labels))))
    out = tmp_path / "npz"
    with pytest.raises(goenv.InvalidArgument, match=f"priority level of {levels}, but priority_levels is 2.*"
                                                    "Nothing was written"):
        goenv.datasets.export_tpugraphs(labels, out, priority_levels=2)
    assert not out.exists() or not os.listdir(out)
    assert len(goenv.datasets.export_tpugraphs(labels, out, priority_levels=levels + 1)) == 5
