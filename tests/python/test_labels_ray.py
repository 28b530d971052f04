"""Labelling on Ray (goenv.datasets.label(..., workers=N)): the files are byte-identical to
the single-process run whatever the worker count. One Ray session for the module."""

from __future__ import annotations

import json
import os

import pytest

import goenv

ray = pytest.importorskip("ray")
pytest.importorskip("pyarrow")


@pytest.fixture(scope="module", autouse=True)
def ray_session():
    assert not ray.is_initialized()
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False, configure_logging=False)
    yield
    ray.shutdown()


def _files(root) -> dict[str, bytes]:
    return {name: (root / name).read_bytes() for name in sorted(os.listdir(root))}


def test_ray_workers_write_the_same_bytes_as_one_process(tmp_path):
    source = tmp_path / "ds"
    goenv.datasets.generate("random-layered", 7, source, params={"num_layers": 8, "width": 5}, seed=2,
                            progress=False)
    options = {"task": "joint", "decisions_per_graph": 12, "shard_size": 2, "seed": 3, "progress": False}
    goenv.datasets.label(source, tmp_path / "local", **options)
    for workers in (1, 2):
        labels = goenv.datasets.label(source, tmp_path / f"ray{workers}", workers=workers, **options)
        assert labels.num_decisions == 7 * 12
        assert _files(tmp_path / f"ray{workers}") == _files(tmp_path / "local"), workers
    assert ray.is_initialized()  # the test's session is left as it was


def test_a_resumed_ray_run_labels_only_what_is_missing(tmp_path):
    source = tmp_path / "ds"
    goenv.datasets.generate("random-series-parallel", 4, source, params={"num_nodes": 40}, progress=False)
    options = {"decisions_per_graph": 4, "shard_size": 1, "progress": False}
    full = goenv.datasets.label(source, tmp_path / "full", **options)
    os.unlink(tmp_path / "full" / "labels-00002.parquet")
    before = {name: os.stat(tmp_path / "full" / name).st_mtime_ns for name in os.listdir(tmp_path / "full")}
    goenv.datasets.label(source, tmp_path / "full", workers=2, **options)
    after = {name: os.stat(tmp_path / "full" / name).st_mtime_ns for name in os.listdir(tmp_path / "full")}
    rewritten = sorted(name for name in after if after[name] != before.get(name))
    assert rewritten == ["graphs-00002.parquet", "labels-00002.parquet", "manifest.json"]
    assert len(full) == 4
    goenv.datasets.open_labels(tmp_path / "full").verify()


def test_a_task_that_sees_the_folder_writes_its_files_and_one_that_does_not_returns_them(tmp_path):
    """Tasks that see the caller's folder (its probe file: this machine, or a shared file
    system) write their shards themselves and the caller only records them; a task that does
    not (another machine, a Ray Client cluster) sends the bytes back. The same bytes either way,
    and the probe is gone after the run."""
    from goenv.labels import folder
    from goenv.labels.ray_workers import label_shard_task
    from goenv.labels.sources import resolve

    source = tmp_path / "ds"
    goenv.datasets.generate("random-series-parallel", 2, source, params={"num_nodes": 30}, progress=False)
    resolved = resolve(str(source), None)
    config = {"task": "placement", "cluster": resolved.cluster, "decisions_per_graph": 5, "sampler": "mix", "seed": 0,
              "max_moves": 4, "max_fusion_size": 16, "agent_sha256": None}
    shard = {"index": 0, "first": 0, "count": 2}
    root = str(tmp_path / "out")
    os.makedirs(root)
    with folder._probe(root) as probe:
        written = label_shard_task(resolved, resolved.identity, config, None, root, probe, shard)
        returned = label_shard_task(resolved, resolved.identity, config, None, root, probe + "-elsewhere", shard)
    for kind in folder.KINDS:
        entry, data = written[kind], bytes(returned[kind])
        assert entry["file"] == folder.shard_file(kind, 0) and entry["bytes"] == len(data)
        assert (tmp_path / "out" / entry["file"]).read_bytes() == data
    assert sorted(os.listdir(root)) == sorted(folder.shard_file(kind, 0) for kind in folder.KINDS)


def test_a_worker_keeps_its_source_open_only_while_the_source_is_the_same(tmp_path):
    from goenv.labels.ray_workers import _opened
    from goenv.labels.sources import resolve

    source = tmp_path / "ds"
    goenv.datasets.generate("random-series-parallel", 2, source, params={"num_nodes": 30}, progress=False)
    first = resolve(str(source), None)
    assert _opened(first, first.identity) is first
    again = resolve(str(source), None)
    assert _opened(again, again.identity) is first  # the same dataset: the open one
    goenv.datasets.generate("random-series-parallel", 2, source, params={"num_nodes": 31}, progress=False,
                            overwrite=True)
    regenerated = resolve(str(source), None)
    assert _opened(regenerated, regenerated.identity) is regenerated  # new content: opened again
    other = resolve(str(source), "2xgpu-nvlink")
    assert _opened(other, other.identity) is other  # another cluster


def test_warm_workers_label_a_dataset_regenerated_in_place(tmp_path):
    """The second run of a session lands on workers that keep the first run's source open: a
    dataset regenerated in place must be read again (the same bytes as one process)."""
    source = tmp_path / "ds"
    options = {"decisions_per_graph": 3, "shard_size": 1, "progress": False}
    goenv.datasets.generate("random-series-parallel", 4, source, params={"num_nodes": 30}, progress=False)
    goenv.datasets.label(source, tmp_path / "before", workers=2, **options)
    goenv.datasets.generate("random-series-parallel", 4, source, params={"num_nodes": 30}, seed=9, progress=False,
                            overwrite=True)
    goenv.datasets.label(source, tmp_path / "after", workers=2, **options)
    goenv.datasets.label(source, tmp_path / "local", **options)
    assert _files(tmp_path / "after") == _files(tmp_path / "local")
    assert _files(tmp_path / "after") != _files(tmp_path / "before")


def test_a_failing_shard_stops_the_run_and_keeps_what_finished(tmp_path):
    graphs = []
    for i in range(3):
        path = tmp_path / f"g{i}.goenv"
        goenv.datasets.load("random-series-parallel", num_nodes=30, seed=i).save(str(path))
        graphs.append(str(path))
    damaged = bytearray(open(graphs[2], "rb").read())
    damaged[len(damaged) // 2] ^= 0xFF  # the worker's read of the last graph fails its checksum
    open(graphs[2], "wb").write(bytes(damaged))
    with pytest.raises(goenv.InvalidGraph):  # the worker's error, as Ray raises it (a subclass)
        goenv.datasets.label(graphs, tmp_path / "out", decisions_per_graph=2, shard_size=1, workers=1,
                             progress=False)
    manifest = json.loads((tmp_path / "out" / "manifest.json").read_text())
    assert not manifest["complete"] and [shard["index"] for shard in manifest["shards"]] == [0, 1]


def test_a_probe_left_by_a_killed_run_is_cleaned_up(tmp_path):
    from goenv.labels import folder
    from goenv.storage import TEMPORARY_MARK

    source = tmp_path / "ds"
    goenv.datasets.generate("random-series-parallel", 2, source, params={"num_nodes": 30}, progress=False)
    out = tmp_path / "out"
    out.mkdir()
    (out / f"{folder._PROBE}{TEMPORARY_MARK}0123456789abcdef").write_bytes(b"")
    goenv.datasets.label(source, out, decisions_per_graph=3, shard_size=1, workers=1, progress=False)
    assert not [name for name in os.listdir(out) if name.startswith(".")]
