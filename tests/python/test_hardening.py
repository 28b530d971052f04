"""Regression tests for issue 14 (hardening): hostile files, states and options
end in a clean goenv exception or a correct, finite result (never a crash, a
memory blow-up, a UnicodeDecodeError or a silent NaN)."""

from __future__ import annotations

import json
import os
import pickle
import resource
import struct
import warnings

import numpy as np
import pytest

import goenv
from goenv import dataset_files

HEADER = 28  # magic[8] | version u32 | payload size u64 | checksum64 u64


def checksum64(data: bytes) -> int:
    """core/serialization.cc's checksum64: FNV-1a mixing over little-endian 64-bit words, then the tail."""
    h, prime, mask = 14695981039346656037, 1099511628211, 2**64 - 1
    words = len(data) // 8
    for (word,) in struct.iter_unpack("<Q", data[:words * 8]):
        h = ((h ^ word) * prime) & mask
    for byte in data[words * 8:]:
        h = ((h ^ byte) * prime) & mask
    return h


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


def test_bad_state_fields_are_invalid_argument_naming_the_field():
    env = goenv.GraphEnv.from_graph("scheduling", small_graph(), "2xgpu-pcie", horizon=4)
    env.reset(seed=0)
    env.step(np.array([1, 2, 3, 4]))
    state = bytearray(env.get_state())
    rng = np.random.default_rng(0)
    for _ in range(300):
        flipped = bytearray(state)
        bit = int(rng.integers(len(state) * 8))
        flipped[bit // 8] ^= 1 << (bit % 8)
        try:
            env.set_state(bytes(flipped))
        except goenv.InvalidAction as error:  # an action error for a state would be the wrong type
            pytest.fail(f"bit {bit}: {error}")
        except goenv.InvalidArgument as error:
            assert "state" in str(error)
            continue
        assert env.get_state() == bytes(flipped)  # accepted: a valid state that round-trips
    env.set_state(bytes(state))


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
    # Shards of other parameters are not adopted.
    (root / "manifest.json").write_bytes(b"{")
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        dataset_files.generate("random-layered", 6, str(root), shard_size=2, seed=4, progress=False,
                               params={"num_layers": 3, "width": 2})
    assert any("kept 0 of 3 shards" in str(w.message) for w in caught)
