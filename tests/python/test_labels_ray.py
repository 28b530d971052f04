"""Labelling on Ray (goenv.datasets.label(..., workers=N)): the files are byte-identical to
the single-process run whatever the worker count. One Ray session for the module."""

from __future__ import annotations

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


def test_an_actor_that_sees_the_folder_writes_its_files_and_one_that_does_not_returns_them(tmp_path):
    """Actors that see the caller's folder (its probe file: this machine, or a shared file
    system) write their shards themselves and the caller only records them; an actor that does
    not (another machine, a Ray Client cluster) sends the bytes back. The same bytes either way,
    and the probe is gone after the run."""
    from goenv.labels import folder
    from goenv.labels.ray_workers import ShardLabeller
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
        written = ShardLabeller(resolved, config, None, root, probe).label(shard)
        returned = ShardLabeller(resolved, config, None, root, probe + "-on-another-machine").label(shard)
    for kind in folder.KINDS:
        entry, data = written[kind], bytes(returned[kind])
        assert entry["file"] == folder.shard_file(kind, 0) and entry["bytes"] == len(data)
        assert (tmp_path / "out" / entry["file"]).read_bytes() == data
    assert sorted(os.listdir(root)) == sorted(folder.shard_file(kind, 0) for kind in folder.KINDS)


def test_a_probe_left_by_a_killed_run_is_cleaned_up(tmp_path):
    from goenv.labels import folder

    source = tmp_path / "ds"
    goenv.datasets.generate("random-series-parallel", 2, source, params={"num_nodes": 30}, progress=False)
    out = tmp_path / "out"
    out.mkdir()
    (out / f"{folder._PROBE}{folder._TMP_MARK}0123456789abcdef").write_bytes(b"")
    goenv.datasets.label(source, out, decisions_per_graph=3, shard_size=1, workers=1, progress=False)
    assert not [name for name in os.listdir(out) if name.startswith(".")]
