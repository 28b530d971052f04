"""Regression tests for hardening: hostile files, states and options
end in a clean goenv exception or a correct, finite result (never a crash, a
memory blow-up, a UnicodeDecodeError or a silent NaN); outputs never replace what
is not a regular file; datasets never delete without overwrite=True. Threads:
test_threads.py."""

from __future__ import annotations

import json
import os
import pickle
import resource
import stat
import struct
import warnings

import numpy as np
import pytest

import goenv
from goenv import dataset_files, files
from helpers import checksum64, require_agents, reseal_snapshot

HEADER = 28  # magic[8] | version u32 | payload size u64 | checksum64 u64


def reseal(file: bytes) -> bytes:
    """A graph file whose envelope (size, checksum) matches its edited payload."""
    payload = file[HEADER:]
    return file[:12] + struct.pack("<QQ", len(payload), checksum64(payload)) + payload


def small_graph(name: str = "g", names=None, cost_us=None) -> goenv.Graph:
    edge_index = np.array([[0, 1, 2], [1, 2, 3]])
    return goenv.Graph.from_arrays(edge_index, flops=np.full(4, 1e9), output_bytes=np.full(4, 1e6),
                                   param_bytes=np.full(4, 1e3), names=names, cost_us=cost_us, name=name)


def max_rss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


# -- files -----------------------------------------------------------------

def test_deeply_nested_json_is_a_clean_error(tmp_path):
    path = tmp_path / "deep.json"
    path.write_text("[" * 200_000 + "]" * 200_000)
    with pytest.raises(goenv.InvalidGraph, match="nested deeper"):
        goenv.Graph.load(str(path))
    with pytest.raises(goenv.InvalidArgument) as caught:
        goenv.Cluster.from_json("[" * 200_000 + "]" * 200_000)
    assert not isinstance(caught.value, goenv.InvalidGraph), "a cluster error is not a graph error"


def test_huge_count_in_a_resealed_binary_file_fails_without_allocating():
    data = small_graph("g").to_bytes()
    names_count = HEADER + 1 + 4 + 8 + len("g")  # endianness, version, name, then the names count
    before = max_rss_mb()
    for count in (2**28, 2**62, 2**64 - 1):
        corrupt = reseal(data[:names_count] + struct.pack("<Q", count) + data[names_count + 8:])
        with pytest.raises(goenv.InvalidGraph, match="corrupt size"):
            goenv.Graph.from_bytes(corrupt)
    assert max_rss_mb() - before < 100


def test_only_regular_files_are_read(tmp_path):
    with pytest.raises(goenv.InvalidArgument, match="not a regular file"):
        goenv.Graph.load("/dev/zero")
    with pytest.raises(goenv.InvalidArgument, match="not a regular file"):
        goenv.Graph.load(str(tmp_path))


def test_non_utf8_names_are_invalid_graphs(tmp_path):
    text = small_graph("g", names=["a", "bb", "c", "d"]).to_bytes()
    at = text.index(b"bb")
    corrupt = reseal(text[:at] + b"\xff\xfe" + text[at + 2:])
    with pytest.raises(goenv.InvalidGraph, match="not UTF-8"):
        goenv.Graph.from_bytes(corrupt)
    path = tmp_path / "bad.goenv"
    path.write_bytes(corrupt)
    with pytest.raises(goenv.InvalidGraph):  # not a UnicodeDecodeError escaping `except InvalidGraph`
        goenv.Graph.load(str(path))
    json_path = tmp_path / "bad.json"
    small_graph("g", names=["a", "bb", "c", "d"]).save(str(json_path))
    json_path.write_bytes(json_path.read_bytes().replace(b'"bb"', b'"b\xff"'))
    with pytest.raises(goenv.InvalidGraph, match="not UTF-8"):
        goenv.Graph.load(str(json_path))


# -- finite numbers ----------------------------------------------------------

@pytest.mark.parametrize("task", ["placement", "scheduling", "fusion", "joint"])
def test_zero_time_graph_gives_finite_rewards_and_observations(task):
    env = goenv.GraphEnv.from_graph(task, small_graph(cost_us=np.zeros(4)), "2xgpu-pcie")
    obs, info = env.reset(seed=0)
    assert info["initial_runtime"] == 0.0
    for _ in range(3):
        obs, reward, terminated, truncated, info = env.step(env.action_space.sample())
        assert np.isfinite(reward) and np.isfinite(info["speedup"])
        for key in ("node_state", "globals"):
            assert np.isfinite(obs[key]).all(), key
        if terminated:
            env.reset()


def test_env_options_are_bounded_and_typed():
    graph = small_graph()
    for options, needle in [({"priority_levels": 2**20}, "priority_levels"),
                            ({"priority_levels": 2**31 - 1}, "priority_levels"),
                            ({"fusion_levels": 2**20}, "fusion_levels"),
                            ({"horizon": True}, "horizon"),
                            ({"horizon": 2**40}, "horizon"),
                            ({"horizon": 1.5}, "horizon"),
                            ({"invalid_penalty": -1e300}, "invalid_penalty")]:
        with pytest.raises(goenv.InvalidArgument, match=needle):
            goenv.GraphEnv.from_graph("joint", graph, "2xgpu-pcie", **options)
    env = goenv.GraphEnv.from_graph("joint", graph, "2xgpu-pcie", horizon=np.int64(2), priority_levels=4096)
    assert env.core.action_mask_width == 2 + 4096 + 4


def test_builder_parameters_that_ask_for_millions_of_nodes_are_refused():
    with pytest.raises(goenv.InvalidArgument, match="num_layers \\* width"):
        goenv._core.build_graph("random-layered", {"num_layers": 65536, "width": 64})


# -- actions -----------------------------------------------------------------

def test_node_mode_action_of_the_wrong_size_is_an_invalid_action():
    env = goenv.GraphEnv.from_graph("placement", small_graph(), "2xgpu-pcie", decision_mode="node")
    env.reset(seed=0)
    for action in (np.array([0, 1]), np.zeros((2, 2), dtype=np.int64), [], [[0], [1]]):
        with pytest.raises(goenv.InvalidAction):
            env.step(action)
    env.step(np.array([1]))
    env.step(0)


def test_huge_and_masked_actions_are_reported_as_given():
    env = goenv.GraphEnv.from_graph("placement", small_graph(), "2xgpu-pcie")
    env.reset(seed=0)
    with pytest.raises(goenv.InvalidAction, match="18446744073709551615"):
        env.step(np.full(4, 2**64 - 1, dtype=np.uint64))
    with pytest.raises(goenv.InvalidAction, match="masked"):
        env.step(np.ma.masked_array([0, 1, 5, 0], mask=[0, 0, 1, 0]))


# -- states --------------------------------------------------------------------

def test_pickling_an_env_that_was_never_reset():
    env = goenv.GraphEnv.from_graph("joint", small_graph(), "2xgpu-pcie")
    clone = pickle.loads(pickle.dumps(env))
    with pytest.raises(goenv.ResetNeeded):
        clone.step(clone.action_space.sample())
    clone.reset(seed=0)


def stepped_scheduling_env():
    env = goenv.GraphEnv.from_graph("scheduling", small_graph(), "2xgpu-pcie", horizon=4)
    env.reset(seed=0)
    env.step(np.array([1, 2, 3, 4]))
    return env


def test_every_bit_flip_of_a_snapshot_is_refused_by_its_checksum():
    env = stepped_scheduling_env()
    state = env.get_state()
    for bit in range(len(state) * 8):
        flipped = bytearray(state)
        flipped[bit // 8] ^= 1 << (bit % 8)
        with pytest.raises(goenv.InvalidArgument, match="env state") as error:
            env.set_state(bytes(flipped))
        assert not isinstance(error.value, goenv.InvalidAction)
        assert env.get_state() == state  # nothing restored
    with pytest.raises(goenv.InvalidArgument, match="checksum mismatch"):
        env.set_state(state[:40] + bytes([state[40] ^ 4]) + state[41:])


def test_bad_state_fields_are_invalid_argument_naming_the_field():
    """Edits resealed with a matching checksum reach the field checks, which refuse them or accept a
    valid state."""
    env = stepped_scheduling_env()
    body = env.get_state()[:-8]
    rng = np.random.default_rng(0)
    for _ in range(300):
        flipped = bytearray(body)
        bit = int(rng.integers(len(body) * 8))
        flipped[bit // 8] ^= 1 << (bit % 8)
        resealed = reseal_snapshot(bytes(flipped))
        try:
            env.set_state(resealed)
        except goenv.InvalidAction as error:  # an action error for a state would be the wrong type
            pytest.fail(f"bit {bit}: {error}")
        except goenv.InvalidArgument as error:
            assert "state" in str(error)
            continue
        assert env.get_state() == resealed  # accepted: a valid state that round-trips
    env.set_state(reseal_snapshot(body))


# -- vector envs -----------------------------------------------------------------

def test_make_vec_seeds_and_pad_to_are_checked_like_the_single_env():
    venv = goenv.make_vec("placement-inception", num_envs=2, num_threads=1)
    try:
        venv.reset(seed=2**64)
        venv.reset(seed=[2**64 + 5, None])
        for bad in (1.5, "7", True):
            with pytest.raises(ValueError, match="seed"):
                venv.reset(seed=bad)
    finally:
        venv.close()
    for pad_to in ((2**31, 2**31), (0, 5), (5,), "ab", (1.5, 2)):
        with pytest.raises(ValueError, match="pad_to"):
            goenv.make_vec("placement-inception", num_envs=1, pad_to=pad_to)


def test_vector_env_actions_out_of_int64_or_masked_are_invalid_actions():
    venv = goenv.make_vec("placement-transformer-xl-2", num_envs=2, num_threads=1)
    try:
        venv.reset(seed=0)
        n = venv.single_action_space.shape[0]
        with pytest.raises(goenv.InvalidAction, match="18446744073709551615"):  # not wrapped to -1
            venv.step(np.full((2, n), 2**64 - 1, dtype=np.uint64))
        with pytest.raises(goenv.InvalidAction, match="int64 range"):  # not an undefined float-to-int cast
            venv.step(np.full((2, n), 1e300))
        with pytest.raises(goenv.InvalidAction, match="masked"):
            venv.step(np.ma.masked_array(np.zeros((2, n), dtype=np.int64), mask=True))
    finally:
        venv.close()


# -- datasets ----------------------------------------------------------------------

def test_truncated_manifest_does_not_block_resuming(tmp_path):
    root = tmp_path / "ds"
    dataset_files.generate("random-layered", 6, str(root), shard_size=2, seed=3, progress=False,
                           params={"num_layers": 3, "width": 2})
    shards = sorted(p.name for p in root.iterdir() if p.name.endswith(".goenv-shard"))
    stamps = {name: os.stat(root / name).st_mtime_ns for name in shards}
    manifest = (root / "manifest.json").read_bytes()
    (root / "manifest.json").write_bytes(manifest[: len(manifest) // 2])
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        ds = dataset_files.generate("random-layered", 6, str(root), shard_size=2, seed=3, progress=False,
                                    params={"num_layers": 3, "width": 2})
    assert any("kept 3 of 3 shards" in str(w.message) for w in caught)
    assert {name: os.stat(root / name).st_mtime_ns for name in shards} == stamps  # nothing rewritten
    assert len(ds) == 6 and json.loads((root / "manifest.json").read_text())["complete"]
    # Shards of other parameters are neither adopted nor replaced: the command stops.
    (root / "manifest.json").write_bytes(b"{")
    with pytest.raises(goenv.InvalidArgument, match="3 of 3 shard files.*nothing was changed.*overwrite=True"):
        dataset_files.generate("random-layered", 6, str(root), shard_size=2, seed=4, progress=False,
                               params={"num_layers": 3, "width": 2})
    assert {name: os.stat(root / name).st_mtime_ns for name in shards} == stamps


# -- datasets never delete without overwrite=True, stay in their folder ------

DATASET = {"shard_size": 2, "seed": 3, "progress": False, "params": {"num_layers": 3, "width": 2}}


def _dataset(root, count=6, **kwargs):
    return dataset_files.generate("random-layered", count, str(root), **{**DATASET, **kwargs})


def _contents(root):
    return {name: (root / name).read_bytes() for name in sorted(os.listdir(root)) if name != "manifest.json"}


@pytest.mark.parametrize("manifest", ["missing", "truncated", "huge integer"])
def test_a_damaged_manifest_never_leads_to_deletion(tmp_path, manifest):
    root = tmp_path / "ds"
    _dataset(root)
    shards = _contents(root)
    if manifest == "missing":
        os.unlink(root / "manifest.json")
    elif manifest == "truncated":
        (root / "manifest.json").write_bytes((root / "manifest.json").read_bytes()[:40])
    else:  # more digits than Python converts: json's ValueError is a damaged manifest too
        (root / "manifest.json").write_text('{"count": ' + "9" * 5000 + "}")
    damaged = (root / "manifest.json").read_bytes() if manifest != "missing" else None
    for other in ({"count": 2}, {"seed": 4}, {"params": {"num_layers": 4, "width": 2}}):
        with pytest.raises(goenv.InvalidArgument, match="nothing was changed.*overwrite=True"):
            _dataset(root, **other)
        assert _contents(root) == shards  # count 6 -> 2 deleted four graphs; another seed replaced six
        assert ((root / "manifest.json").read_bytes() if damaged is not None else None) == damaged
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        ds = _dataset(root)  # the same arguments: rebuilt from the shards that verify
    assert _contents(root) == shards and len(ds) == 6
    ds.verify()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        os.unlink(root / "manifest.json")
        assert len(_dataset(root, count=2, overwrite=True)) == 2  # asked for: replaced
    assert sorted(_contents(root)) == ["shard-00000.goenv-shard"]


def test_a_manifest_json_that_is_not_a_dataset_is_not_replaced(tmp_path):
    root = tmp_path / "project"
    root.mkdir()
    (root / "manifest.json").write_text('{"name": "my web app"}')
    with pytest.raises(goenv.InvalidArgument, match="no shard file there.*nothing was changed.*overwrite=True"):
        _dataset(root)
    assert (root / "manifest.json").read_text() == '{"name": "my web app"}' and os.listdir(root) == ["manifest.json"]


def test_manifest_entries_cannot_point_outside_the_folder(tmp_path):
    root = tmp_path / "ds"
    _dataset(root)
    outside = tmp_path / "secret"
    outside.write_bytes(b"not yours")
    manifest = json.loads((root / "manifest.json").read_text())
    for file in (str(outside), "../secret", "shard-00001.goenv-shard"):  # the last: another record's file
        bad = json.loads(json.dumps(manifest))
        bad["shards"][0]["file"] = file
        (root / "manifest.json").write_text(json.dumps(bad))
        with pytest.raises(goenv.InvalidGraph, match="names file"):
            goenv.datasets.open(root)
    (root / "manifest.json").write_text(json.dumps(manifest))
    os.unlink(root / "shard-00000.goenv-shard")
    os.symlink(outside, root / "shard-00000.goenv-shard")  # a link out of the folder
    with pytest.raises(goenv.InvalidGraph, match="outside the dataset folder"):
        goenv.datasets.open(root)
    with pytest.raises(goenv.InvalidGraph, match="outside the dataset folder"):
        _dataset(root)
    assert outside.read_bytes() == b"not yours"


@pytest.mark.parametrize("change", ["count", "index", "sha256", "params", "nesting", "huge", "fifo"])
def test_malformed_manifests_are_invalid_graph(tmp_path, change):
    root = tmp_path / "ds"
    _dataset(root)
    path = root / "manifest.json"
    manifest = json.loads(path.read_text())
    if change == "count":
        manifest["shards"][0]["count"] = "2"
    elif change == "index":
        manifest["shards"][1]["index"] = 0
    elif change == "sha256":
        manifest["shards"][0]["sha256"] = 5
    elif change == "params":
        manifest["params"] = {"width": {"x": 1}}
    if change == "nesting":
        path.write_text("[" * 100_000 + "]" * 100_000)
    elif change == "huge":
        with open(path, "wb") as f:
            f.truncate(dataset_files.MAX_MANIFEST_BYTES + 1)
    elif change == "fifo":
        os.unlink(path)
        os.mkfifo(path)
    else:
        path.write_text(json.dumps(manifest))
    with pytest.raises(goenv.InvalidGraph):
        goenv.datasets.open(root)


def test_shards_are_read_only_as_regular_files(tmp_path):
    root = tmp_path / "ds"
    _dataset(root)
    os.unlink(root / "shard-00001.goenv-shard")
    os.mkfifo(root / "shard-00001.goenv-shard")
    with pytest.raises(goenv.InvalidGraph):
        ds = goenv.datasets.open(root)
        ds[3]  # would block forever on the FIFO
    with pytest.raises(goenv.InvalidArgument, match="FIFO"):
        _dataset(root)  # the manifest vouches for the shard, the writer refuses the FIFO


# -- outputs are written only over regular files --------------------------

def device_node(tmp_path):
    """A character device of our own (a copy of /dev/null's numbers): a test that regresses replaces
    it, never the system's /dev/null (as root, a broken writer did exactly that). Needs root."""
    import stat

    path = tmp_path / "device"
    try:
        os.mknod(path, 0o600 | stat.S_IFCHR, os.makedev(1, 3))
    except PermissionError:
        return None
    return path


def test_csv_logs_grow_atomically_and_only_over_regular_files(tmp_path):
    """Training metrics (goenv.files.CsvLog, behind metrics.csv and distributed_metrics.csv):
    each row lands whole, a FIFO at the path is refused when the log is made (it would block a
    plain open() forever), and nothing temporary is left beside it."""
    path = tmp_path / "metrics.csv"
    log = files.CsvLog(path, ("step", "loss"))
    assert path.read_bytes() == b"step,loss\r\n"  # as csv writes a file opened with newline=""
    log.append({"step": 1, "loss": 0.5, "ignored": "x"})
    log.append({"step": 2, "loss": 0.25})
    assert path.read_text().splitlines() == ["step,loss", "1,0.5", "2,0.25"]
    assert sorted(os.listdir(tmp_path)) == ["metrics.csv"]
    fifo = tmp_path / "fifo.csv"
    os.mkfifo(fifo)
    with pytest.raises(goenv.InvalidArgument, match="a FIFO, not a regular file"):
        files.CsvLog(fifo, ("step",))
    with pytest.raises(goenv.InvalidArgument, match="a directory"):
        files.CsvLog(tmp_path, ("step",))


def test_write_atomic_refuses_what_is_not_a_regular_file(tmp_path):
    fifo, folder, dangling = tmp_path / "fifo", tmp_path / "folder", tmp_path / "dangling"
    os.mkfifo(fifo)
    folder.mkdir()
    os.symlink(tmp_path / "nowhere", dangling)
    os.symlink(fifo, tmp_path / "link-to-fifo")
    device = device_node(tmp_path)
    for target, kind in ((fifo, "FIFO"), (folder, "directory"), (device, "character device"),
                         (tmp_path / "link-to-fifo", "FIFO"), (dangling, "dangling")):
        if target is None:
            continue
        with pytest.raises(goenv.InvalidArgument, match=kind):
            files.write_atomic(target, b"x")
    assert device is None or stat_kind(device) == "device"
    assert not os.path.lexists(tmp_path / "nowhere") and sorted(os.listdir(folder)) == []
    regular = tmp_path / "regular"
    regular.write_bytes(b"old")
    os.symlink(regular, tmp_path / "link")
    assert files.write_atomic(tmp_path / "link", b"new") == str(regular)  # the link stays, its target changes
    assert os.path.islink(tmp_path / "link") and regular.read_bytes() == b"new"
    files.write_atomic(tmp_path / "new", lambda f: f.write(b"made"))
    assert (tmp_path / "new").read_bytes() == b"made"
    kept = tmp_path / "read-only"
    kept.write_bytes(b"old")
    os.chmod(kept, 0o444)  # a file replaced keeps its permissions
    files.write_atomic(kept, b"newer")
    assert kept.read_bytes() == b"newer" and stat.S_IMODE(os.stat(kept).st_mode) == 0o444
    graph_file = tmp_path / "graph.json"
    small_graph().save(str(graph_file))
    os.chmod(graph_file, 0o640)
    small_graph().save(str(graph_file), overwrite=True)  # the C++ writer keeps them too
    assert stat.S_IMODE(os.stat(graph_file).st_mode) == 0o640
    assert not [name for name in os.listdir(tmp_path) if ".tmp-" in name]
    with pytest.raises(FileNotFoundError) as missing:  # named by the path asked for, not the temporary's name
        files.write_atomic(tmp_path / "no-such-folder" / "x.png", b"x")
    assert missing.value.filename == str(tmp_path / "no-such-folder" / "x.png")
    with pytest.raises(goenv.InvalidArgument, match="a FIFO, not a regular file"):
        small_graph().save(str(fifo))  # the C++ writer: the same rule
    with pytest.raises(goenv.InvalidArgument, match="FIFO"):
        files.read_regular_file(fifo)
    with pytest.raises(goenv.InvalidArgument, match="limit"):
        files.read_regular_file(regular, limit=2)
    import tracemalloc  # fuzz finding (ASan): read(limit + 1) allocated 2 GiB for every small file

    tracemalloc.start()
    try:
        assert files.read_regular_file(regular) == b"new"
        assert tracemalloc.get_traced_memory()[1] < 1 << 20
    finally:
        tracemalloc.stop()


def test_cli_outputs_refuse_fifos_devices_and_directories(tmp_path, capsys):
    from goenv import cli

    fifo, folder = tmp_path / "fifo", tmp_path / "folder"
    os.mkfifo(fifo)
    folder.mkdir()
    os.symlink(fifo, tmp_path / "link-to-fifo")
    cases = [["render", "placement-transformer-xl-2", "-o", str(fifo)],
             ["render", "placement-transformer-xl-2", "-o", str(folder)],
             ["train", "placement-transformer-xl-2", "--save", str(fifo)],
             ["train", "placement-transformer-xl-2", "--decision", str(tmp_path / "link-to-fifo")],
             ["train", "placement-transformer-xl-2", "--decision", str(folder)]]
    device = device_node(tmp_path)
    if device is not None:
        cases.append(["train", "placement-transformer-xl-2", "--save", str(device)])
    for argv in cases:  # refused before anything runs (no training)
        assert cli.main(argv) == 2, argv
        err = capsys.readouterr().err
        assert err.startswith("goenv: error: ") and err.count("\n") == 1 and "not a regular file" in err, err
    assert stat_kind(fifo) == "fifo" and sorted(os.listdir(folder)) == []
    assert device is None or stat_kind(device) == "device"
    assert not (tmp_path / "folder.npz").exists()  # --decision DIR wrote DIR.npz beside it


def stat_kind(path) -> str:
    import stat

    mode = os.lstat(path).st_mode
    return ("fifo" if stat.S_ISFIFO(mode) else "dir" if stat.S_ISDIR(mode) else
            "device" if stat.S_ISCHR(mode) else "file")


# -- ONNX -------------------------------------------------------------------

def _onnx_model(nodes, inputs=("x",), outputs=("y",), initializers=()):
    onnx = pytest.importorskip("onnx")
    from onnx import TensorProto, helper

    graph = helper.make_graph(nodes, "g", [helper.make_tensor_value_info(n, TensorProto.FLOAT, [2, 3]) for n in inputs],
                              [helper.make_tensor_value_info(n, TensorProto.FLOAT, None) for n in outputs],
                              list(initializers))
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])


def test_onnx_nodes_are_imported_in_topological_order():
    from onnx import helper

    nodes = [helper.make_node("Relu", ["a"], ["y"], name="last"), helper.make_node("Exp", ["x"], ["a"], name="first")]
    unsorted = _onnx_model(nodes)
    graph = goenv.datasets.from_onnx(unsorted, training=False)
    ordered = goenv.datasets.from_onnx(_onnx_model(nodes[::-1]), training=False)
    assert graph.to_bytes() == ordered.to_bytes()  # the edge first -> last is kept (it was dropped)
    assert [n.name for n in unsorted.graph.node] == ["last", "first"]  # the caller's model is untouched


@pytest.mark.parametrize("case, message", [
    ("cycle", r"node 'b' \(Relu\) is on a cycle|node 'a' \(Exp\) is on a cycle"),
    ("undefined", r"node 'a' \(Exp\) reads 'nowhere', which no node"),
    ("twice", r"node 'b' \(Relu\) produces 'y', which node 'a' \(Exp\) already defines"),
])
def test_onnx_cycles_and_undefined_inputs_are_invalid_graphs(case, message):
    from onnx import helper

    nodes = {"cycle": [helper.make_node("Exp", ["x", "c"], ["y"], name="a"),
                       helper.make_node("Relu", ["y"], ["c"], name="b")],
             "undefined": [helper.make_node("Exp", ["nowhere"], ["y"], name="a")],
             "twice": [helper.make_node("Exp", ["x"], ["y"], name="a"),
                       helper.make_node("Relu", ["x"], ["y"], name="b")]}[case]
    with pytest.raises(goenv.InvalidGraph, match=message):
        goenv.datasets.from_onnx(_onnx_model(nodes), training=False)


def test_onnx_constant_folding_checks_the_output_size_first(monkeypatch):
    from onnx import TensorProto, helper
    from onnx.reference import ReferenceEvaluator

    computed = []
    run = ReferenceEvaluator.run
    monkeypatch.setattr(ReferenceEvaluator, "run", lambda self, *a, **k: (
        computed.append([n.op_type for n in self.proto_.graph.node] if hasattr(self.proto_, "graph")
                        else [self.proto_.op_type]), run(self, *a, **k))[1])
    huge = helper.make_tensor("huge_shape", TensorProto.INT64, [2], [12_000, 10_000])  # 480 MB of float32
    small = helper.make_tensor("small_shape", TensorProto.INT64, [2], [4, 4])
    nodes = [helper.make_node("ConstantOfShape", ["huge_shape"], ["big"], name="huge"),
             helper.make_node("ConstantOfShape", ["small_shape"], ["little"], name="small"),
             helper.make_node("Relu", ["x"], ["y"], name="r")]
    model = _onnx_model(nodes, initializers=[huge, small], outputs=("y", "big", "little"))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        graph = goenv.datasets.from_onnx(model, training=False)
    assert ["ConstantOfShape"] in computed and len(computed) == 1  # the small one folded, the huge one never run
    assert graph.num_nodes >= 2


def test_onnx_files_are_read_only_as_regular_files(tmp_path):
    os.mkfifo(tmp_path / "model.onnx")
    with pytest.raises(goenv.InvalidGraph, match="FIFO"):
        goenv.datasets.from_onnx(tmp_path / "model.onnx")
    with pytest.raises(goenv.InvalidGraph, match="not a regular file"):
        goenv.datasets.from_onnx("/dev/zero")


# -- set_state takes no info or reward field on trust -----------------------

@pytest.mark.parametrize("task", ["placement", "joint"])
def test_set_state_recomputes_or_checks_every_info_and_reward_field(task):
    env = goenv.make(f"{task}-transformer-xl-2", horizon=8)
    env.reset(seed=0)
    rng = np.random.default_rng(0)
    n = env.core.num_nodes
    for _ in range(3):
        action = {h: rng.integers(0, c, n) for h, c in zip(env.core.heads, env.core.head_choices)}
        _, _, _, _, info = env.step(action if len(action) > 1 else next(iter(action.values())))
    state = env.get_state()
    body = state[:-8]  # edits are resealed, so that the field checks are what refuse them
    # What the state cannot prove is only bounded: a rejected step's oom flag, the last reward
    # (>= -runtime / initial runtime after an adopted step), the nodes colocation moved (<= N),
    # the best decisions (any feasible ones of this env no slower than those in force).
    unprovable = {"info_colocation_moved", "last_reward", "best_priority"}
    unprovable |= {"info_oom"} if info["invalid"] else set()
    for field, (offset, size) in _trailing_layout(env, body).items():
        for value in _tampered_values(size):
            tampered = reseal_snapshot(body[:offset] + value + body[offset + size:])
            if tampered == state:
                continue
            try:
                env.set_state(tampered)
            except goenv.InvalidArgument as error:
                assert "env state field '" in str(error), (field, str(error))
                continue
            assert field in unprovable, (field, value)
            if field == "last_reward":
                reward = struct.unpack("<d", value)[0]
                assert np.isfinite(reward) and reward >= -info["runtime"] / info["initial_runtime"]
    env.set_state(state)
    assert env.get_state() == state


def _trailing_layout(env, state: bytes) -> dict:
    """Offsets of the info fields at the end of an env state without its closing checksum (EnvState
    in envs/env.cc, cereal portable binary): ... last_reward f64, steps i64, cursor i32, started, done, info_runtime f64,
    info_peak_memory (u64 size + D f64), info_bytes_moved f64, info_oom, info_invalid,
    info_invalid_reason (u64 size + bytes), info_rejected_runtime f64, info_colocation_moved i32,
    then (format 3) the episode's best decisions: best_placement (u64 + N i32), best_fusion
    (u64 + N i32), best_priority (u64 + N f64)."""
    d, n = env.core.num_devices, env.core.num_nodes
    best_priority = len(state) - 8 * n
    end = len(state) - best_decisions_bytes(n)
    colocation = end - 4
    rejected = colocation - 8
    # the reason's length is unknown from the end: find it by trying every position that decodes
    for reason_len in range(0, 4097):
        reason = rejected - reason_len
        length_at = reason - 8
        if length_at < 0:
            break
        if struct.unpack_from("<Q", state, length_at)[0] == reason_len:
            invalid = length_at - 1
            oom = invalid - 1
            bytes_moved = oom - 8
            peak = bytes_moved - 8 * d
            peak_len = peak - 8
            if struct.unpack_from("<Q", state, peak_len)[0] != d:
                continue
            info_runtime = peak_len - 8
            done = info_runtime - 1
            started = done - 1
            cursor = started - 4
            steps = cursor - 8
            last_reward = steps - 8
            return {"last_reward": (last_reward, 8), "info_runtime": (info_runtime, 8),
                    "info_peak_memory": (peak, 8 * d), "info_bytes_moved": (bytes_moved, 8),
                    "info_oom": (oom, 1), "info_invalid": (invalid, 1), "info_rejected_runtime": (rejected, 8),
                    "info_colocation_moved": (colocation, 4), "best_priority": (best_priority, 8 * n)}
    raise AssertionError("cannot find the info fields in the env state")


def best_decisions_bytes(num_nodes: int) -> int:
    """Size of an env state's best decisions (the last fields of format 3)."""
    return 3 * 8 + 16 * num_nodes


def _tampered_values(size: int) -> list[bytes]:
    if size == 1:
        return [b"\x00", b"\x01"]
    if size == 4:
        return [struct.pack("<i", v) for v in (1, 3, -1)]
    doubles = [0.0, 1e-3, 0.5, 2.0, -1.0, float("nan"), 1e300]
    return [struct.pack("<d", v) * (size // 8) for v in doubles]


def stepped_vector(b: int):
    """(a vector env of b envs, nodes per env, its snapshot after one step, the last env's state
    then, its snapshot one step later): the caller closes it."""
    venv = goenv.make_vec("placement-transformer-xl-2", num_envs=b, num_threads=2, horizon=4)
    venv.reset(seed=0)
    n = venv.single_action_space.shape[0]
    venv.step(np.zeros((b, n), dtype=np.int64))
    snapshot, last_env = venv.get_state(), venv.core.env_state(b - 1)
    venv.step(np.ones((b, n), dtype=np.int64))
    return venv, n, snapshot, last_env, venv.get_state()


def test_vector_set_state_checks_every_env_before_changing_any():
    b = 3
    venv, n, snapshot, last_env, now = stepped_vector(b)
    try:
        body = snapshot[:-8]  # edits are resealed: the checks behind the checksums are what refuse them
        tail = 32 + 21 * b  # autoreset (u64 + B), seed and episode (u64 + 8B each), episode_steps (u64 + 4B)
        last_env_end = len(body) - tail
        assert body[last_env_end - len(last_env):last_env_end] == last_env
        colocation_end = len(last_env) - 8 - best_decisions_bytes(n)
        bad_env = reseal_snapshot(last_env[:colocation_end - 4] + struct.pack("<i", -1)
                                  + last_env[colocation_end:-8])
        bad_last_env = reseal_snapshot(body[:last_env_end - len(last_env)] + bad_env + body[last_env_end:])
        with pytest.raises(goenv.InvalidArgument, match="env 2: .*info_colocation_moved"):
            venv.set_state(bad_last_env)
        assert venv.get_state() == now  # envs 0 and 1 were restored before env 2 failed: not any more
        autoreset_at = len(body) - tail + 8
        bad_flag = reseal_snapshot(body[:autoreset_at] + b"\x01" + body[autoreset_at + 1:])
        with pytest.raises(goenv.InvalidArgument, match="env 0 has autoreset flag 1"):
            venv.set_state(bad_flag)
        steps_at = len(body) - 4 * b
        bad_steps = reseal_snapshot(body[:steps_at] + struct.pack("<i", 3) + body[steps_at + 4:])
        with pytest.raises(goenv.InvalidArgument, match="episode step count 3"):
            venv.set_state(bad_steps)
        assert venv.get_state() == now
        venv.set_state(snapshot)
        assert venv.get_state() == snapshot
    finally:
        venv.close()


def test_a_vector_snapshot_with_one_flipped_byte_in_any_env_is_refused_and_changes_nothing():
    b = 6
    venv, _, snapshot, env5, now = stepped_vector(b)
    try:
        for offset in range(0, len(snapshot), 7):
            flipped = bytearray(snapshot)
            flipped[offset] ^= 0x10
            with pytest.raises(goenv.InvalidArgument, match="vector env"):
                venv.set_state(bytes(flipped))
            assert venv.get_state() == now
        # Env 5's own checksum refuses a flip in its state even when the batch's is resealed.
        body = snapshot[:-8]
        tail = 32 + 21 * b
        env5_at = len(body) - tail - len(env5)
        assert body[env5_at:env5_at + len(env5)] == env5
        inner = bytearray(body)
        inner[env5_at + len(env5) // 2] ^= 1
        with pytest.raises(goenv.InvalidArgument, match="env 5: .*checksum mismatch"):
            venv.set_state(reseal_snapshot(bytes(inner)))
        assert venv.get_state() == now
    finally:
        venv.close()


def test_onnx_shape_inference_never_materializes_huge_values():
    """Fuzz finding: ONNX's data propagation built the 7e11 values of Expand(c, c) (2.7 GB
    before it failed); a child process keeps this test's own memory out of the measure."""
    pytest.importorskip("onnx")
    import subprocess
    import sys

    child = """if True:
        import resource, warnings
        from onnx import TensorProto, helper
        import goenv
        c = helper.make_tensor("c", TensorProto.INT64, [1], [739229564240])
        empty = helper.make_tensor("e", TensorProto.INT64, [0], [])
        nodes = [helper.make_node("Expand", ["c", "c"], ["v"], name="expand"),
                 helper.make_node("Gather", ["v", "e"], ["g"], name="gather"),
                 helper.make_node("Relu", ["g"], ["y"], name="relu")]
        graph = helper.make_graph(nodes, "g", [], [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)],
                                  [c, empty])
        model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
        before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            goenv.datasets.from_onnx(model, training=False)
        print((resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before) // 1024)
    """
    done = subprocess.run([sys.executable, "-c", child], capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    assert int(done.stdout.split()[-1]) < 200, done.stdout  # MB of peak growth


def test_early_sync_flushes_while_the_writer_goes_on_and_stops_before_the_file_closes(tmp_path, monkeypatch):
    """EarlySync (the labels shards' writer uses it): written() gets the file's descriptor
    synced on its own thread; close() joins that thread, after which nothing touches the
    descriptor; a file system that cannot sync stops it quietly (write_atomic's own fsync,
    which still runs, is the one that reports)."""
    import threading

    from goenv import files

    synced, ready = [], threading.Event()

    def fake_sync(fd):
        synced.append((fd, threading.current_thread().name))
        ready.set()

    monkeypatch.setattr(os, "fdatasync", fake_sync)

    def write(file):
        early = files.EarlySync(file)
        file.write(b"x" * 1000)
        file.flush()
        early.written()
        assert ready.wait(10)
        early.close()
        assert synced == [(file.fileno(), "goenv-early-sync")]
        early.written()  # after close: nothing more
        assert not any(t.name == "goenv-early-sync" for t in threading.enumerate())

    files.write_atomic(tmp_path / "out", write)
    assert (tmp_path / "out").read_bytes() == b"x" * 1000 and len(synced) == 1

    def failing_sync(fd):
        raise OSError(22, "Invalid argument")

    monkeypatch.setattr(os, "fdatasync", failing_sync)

    def write_again(file):
        early = files.EarlySync(file)
        file.write(b"y")
        early.written()
        early.close()

    files.write_atomic(tmp_path / "out", write_again)
    assert (tmp_path / "out").read_bytes() == b"y"


def test_an_output_folder_that_is_a_file_is_named_as_such(tmp_path):
    # os.makedirs would say "File exists"; every folder output says what is wrong, and the file stays.
    afile = tmp_path / "afile"
    afile.write_text("mine")
    with pytest.raises(goenv.InvalidArgument, match="dataset folder .*afile: a file .* is there, not a folder"):
        dataset_files.generate("random-layered", 1, str(afile), progress=False, params={"num_layers": 3, "width": 2})
    with pytest.raises(goenv.InvalidArgument, match="dataset folder .*sub: a file"):
        dataset_files.generate("random-layered", 1, str(afile / "sub"), progress=False)
    source = tmp_path / "ds"
    dataset_files.generate("random-layered", 2, str(source), progress=False, params={"num_layers": 3, "width": 2})
    with pytest.raises(goenv.InvalidArgument, match="labels folder .*afile: a file"):
        goenv.datasets.label(source, afile, decisions_per_graph=2, progress=False)
    with pytest.raises(goenv.InvalidArgument, match="log_dir .*afile: a file"):
        require_agents().PPO(seed=0).train(goenv.make("placement-transformer-xl-2"), total_steps=4, log_dir=afile,
                                           progress=False)
    assert afile.read_text() == "mine"


def test_decisions_beyond_int32_are_refused_with_their_value_not_wrapped():
    # 2**32 + 1 was device 1 (the int64 copied into an int32), and a start of it said "device -1".
    env = goenv.make("placement-transformer-xl-2")
    n, big = env.core.num_nodes, 2**32 + 1
    with pytest.raises(goenv.InvalidAction, match=r"placement\[0\] is 4294967297, out of range"):
        goenv.simulate(env.graph, env.cluster, placement=np.full(n, big, np.int64))
    with pytest.raises(goenv.InvalidAction, match=r"fusion\[0\] is 4294967299"):
        goenv.simulate(env.graph, env.cluster, fusion=np.full(n, big + 2, np.int64))
    with pytest.raises(goenv.InvalidAction, match="4294967297, out of range"):
        goenv._core.simulate_batch(env.graph, env.cluster, np.full((2, n), big, np.int64))
    with pytest.raises(goenv.InvalidArgument, match=r"start placement\[0\] is 4294967297"):
        env.reset(options={"start": {"placement": np.full(n, big, np.int64)}})
    with pytest.raises(goenv.InvalidArgument, match=r"placement\[0\] is 4294967297"):
        goenv.make("placement-transformer-xl-2", placement=np.full(n, big, np.int64))
    assert env.reset(seed=0)[1]["runtime"] > 0  # the env is usable after the refusals


def test_a_long_name_is_refused_before_it_is_copied():
    """Outside-probe finding: 4,000 references to one 1 MiB name took +4 GB before the name limit
    refused them (every name was copied first)."""
    long_name, n = "x" * (1 << 20), 4000
    before = max_rss_mb()
    with pytest.raises(goenv.InvalidGraph, match=r"names\[0\] is 1048576 bytes of UTF-8, at most 4096"):
        goenv.Graph.from_arrays(np.zeros((2, 0), np.int64), flops=np.ones(n), names=[long_name] * n)
    assert max_rss_mb() - before < 100


def test_an_op_type_that_is_not_utf8_is_invalid_argument():
    """Outside-probe finding: a lone surrogate raised pybind11's RuntimeError."""
    with pytest.raises(goenv.InvalidArgument, match=r"op_type\[0\] is not UTF-8 text"):
        goenv.Graph.from_arrays(np.zeros((2, 0), np.int64), flops=np.ones(1), op_type=["\udc00"])


def test_broadcast_arrays_that_claim_too_many_nodes_or_edges_cost_nothing_to_refuse():
    """A stride-0 view claims millions of entries in a few bytes: its size is refused from its
    shape, before any conversion copies it."""
    before = max_rss_mb()
    huge = np.broadcast_to(np.float64(1e9), (200_000_000,))
    with pytest.raises(goenv.InvalidGraph, match=r"too many nodes \(flops\): 200000000 \(at most 2097152\)"):
        goenv.Graph.from_arrays(np.zeros((2, 0), np.int64), flops=huge)
    edges = np.broadcast_to(np.int64(0), (2, 100_000_000))
    with pytest.raises(goenv.InvalidGraph, match=r"too many edges \(edge_index\): 100000000"):
        goenv.Graph.from_arrays(edges, flops=np.ones(4))
    with pytest.raises(goenv.InvalidGraph, match="too many nodes"):  # one over the limit, before any node is made
        goenv.Graph.from_arrays(np.zeros((2, 0), np.int64), flops=np.broadcast_to(1.0, (2_097_153,)))
    assert max_rss_mb() - before < 64
    # A small broadcast array is a graph like any other.
    graph = goenv.Graph.from_arrays(np.broadcast_to(np.int64(0), (2, 0)), flops=np.broadcast_to(1e9, (4,)))
    assert graph.num_nodes == 4 and graph.num_edges == 0
