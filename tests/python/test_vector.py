"""goenv.make_vec: the C++/OpenMP vector engine behind gymnasium.vector.VectorEnv.

Determinism across thread counts, NEXT_STEP autoreset, the stacked /
concatenated / padded layouts, checks at the boundary, snapshots, and the
gymnasium.make_vec entry point.
"""

from __future__ import annotations

import random

import gymnasium
import numpy as np
import pytest
from gymnasium.vector import AutoresetMode

import goenv
from goenv.vector import GraphVectorEnv, make_vec
from helpers import random_graph

CLUSTER = "4xgpu-nvlink"


def graph_envs(sizes=(12, 30, 21), horizon=3, task="placement", seed=0, **options):
    """GraphEnvs on small random DAGs of the given sizes (no colocation groups)."""
    rng = random.Random(seed)
    envs = []
    for n in sizes:
        while True:
            g = random_graph(rng, num_nodes=n)
            if not (g.colocation >= 0).any():
                break
        envs.append(goenv.GraphEnv.from_graph(task, g, CLUSTER, horizon=horizon, **options))
    return envs


def random_actions(venv, rng, concatenated=False):
    """In-range actions for every env: (B, max_nodes) rows, or (sum N,) when concatenated."""
    core = venv.core
    if concatenated:
        return rng.integers(0, core.num_devices, core.total_nodes)
    return rng.integers(0, core.num_devices, (core.num_envs, core.max_nodes))


def rollout(venv, steps=8, seed=0, concatenated=False):
    rng = np.random.default_rng(seed)
    trace = []
    obs, info = venv.reset(seed=3)
    trace.append((obs, info))
    for _ in range(steps):
        trace.append(venv.step(random_actions(venv, rng, concatenated)))
    return trace


def assert_same(a, b, path="result"):
    if isinstance(a, dict):
        assert a.keys() == b.keys(), path
        for k in a:
            assert_same(a[k], b[k], f"{path}[{k!r}]")
    elif isinstance(a, (tuple, list)):
        assert len(a) == len(b), path
        for i, (x, y) in enumerate(zip(a, b)):
            assert_same(x, y, f"{path}[{i}]")
    else:
        np.testing.assert_array_equal(a, b, err_msg=path)
        assert np.asarray(a).dtype == np.asarray(b).dtype, path


# -- the gymnasium face ---------------------------------------------------------


def test_make_vec_on_one_graph_stacks_the_single_spaces():
    venv = make_vec("placement-inception", num_envs=3, num_threads=2)
    assert isinstance(venv, gymnasium.vector.VectorEnv)
    assert venv.metadata["autoreset_mode"] == AutoresetMode.NEXT_STEP
    assert venv.layout == "stacked" and venv.num_envs == 3
    single = goenv.make("placement-inception")
    assert venv.single_observation_space == single.observation_space
    assert venv.single_action_space == single.action_space
    assert venv.observation_space == gymnasium.vector.utils.batch_space(single.observation_space, 3)
    obs, info = venv.reset(seed=0)
    assert venv.observation_space.contains(obs)
    assert set(info) >= {"runtime", "initial_runtime", "speedup", "peak_memory", "oom", "invalid", "_runtime",
                         "colocation_moved", "rejected_runtime", "_rejected_runtime"}
    obs, reward, terminated, truncated, info = venv.step(venv.action_space.sample())
    assert venv.observation_space.contains(obs)
    assert reward.shape == (3,) and reward.dtype == np.float64
    assert terminated.dtype == np.bool_ and truncated.dtype == np.bool_
    assert info["runtime"].shape == (3,) and info["peak_memory"].shape == (3, venv.core.num_devices)
    # Static parts: one read-only copy broadcast over the batch.
    for key in ("node_features", "edge_index", "edge_features"):
        assert obs[key].strides[0] == 0 and not obs[key].flags.writeable
    venv.close()
    with pytest.raises(RuntimeError):
        venv.step(np.zeros((3, 1121), np.int64))


def test_gymnasium_make_vec_uses_the_cpp_engine():
    venv = gymnasium.make_vec("goenv/placement-transformer-xl-2-v1", num_envs=4, num_threads=2)
    assert isinstance(venv.unwrapped, GraphVectorEnv)
    assert venv.num_envs == 4 and venv.num_threads == 2
    obs, _ = venv.reset(seed=1)
    assert obs["node_state"].shape[0] == 4
    venv.step(venv.action_space.sample())
    # Options reach the envs like goenv.make's.
    venv = gymnasium.make_vec("goenv/placement-transformer-xl-2-v1", num_envs=2, horizon=3, cluster="4xgpu-nvlink")
    assert venv.unwrapped.core.num_devices == 4
    venv.reset(seed=0)
    for _ in range(2):
        _, _, terminated, _, _ = venv.step(venv.action_space.sample())
        assert not terminated.any()
    assert venv.step(venv.action_space.sample())[2].all()


def test_matches_the_single_env_step_by_step():
    envs = graph_envs(sizes=(15,), horizon=2)
    venv = make_vec(envs[0], num_envs=2, num_threads=2)
    single = graph_envs(sizes=(15,), horizon=2)[0]
    obs, _ = venv.reset(seed=0)
    expected, _ = single.reset(seed=0)
    rng = np.random.default_rng(4)
    for step in range(5):
        for key in expected:
            np.testing.assert_array_equal(obs[key][1], expected[key], err_msg=f"{key} at step {step}")
        actions = random_actions(venv, rng)
        obs, reward, terminated, truncated, info = venv.step(actions)
        if step == 2:  # horizon 2: the step after the episode's end resets
            expected, _ = single.reset(seed=0)
            assert reward[1] == 0 and not terminated[1]
        else:
            expected, r, t, _, single_info = single.step(actions[1])
            assert reward[1] == r and terminated[1] == t
            assert info["runtime"][1] == single_info["runtime"]


# -- determinism and autoreset -------------------------------------------------


@pytest.mark.parametrize("pad_to", [None, (40, 400)])
def test_identical_for_any_thread_count(pad_to):
    traces = []
    for threads in (1, 2, 4):
        venv = make_vec(graph_envs(), num_envs=7, num_threads=threads, pad_to=pad_to)
        traces.append(rollout(venv, steps=10))
    assert_same(traces[0], traces[1])
    assert_same(traces[0], traces[2])


def test_next_step_autoreset_ignores_the_action():
    venv = make_vec(graph_envs(horizon=1), num_envs=3, num_threads=2, pad_to=(40, 400))
    reset_obs, _ = venv.reset(seed=0)
    rng = np.random.default_rng(0)
    obs, reward, terminated, truncated, _ = venv.step(random_actions(venv, rng))
    assert terminated.all() and not truncated.any()
    out_of_range = np.full((3, 40), 99, np.int64)  # ignored: every env resets on this step
    obs, reward, terminated, truncated, _ = venv.step(out_of_range)
    assert (reward == 0).all() and not terminated.any() and not truncated.any()
    assert_same(obs, reset_obs)
    with pytest.raises(ValueError, match="outside"):  # the action counts again
        venv.step(out_of_range)


def test_max_episode_steps_truncates():
    venv = make_vec(graph_envs(horizon=50), num_envs=3, max_episode_steps=2)
    venv.reset(seed=0)
    rng = np.random.default_rng(0)
    assert not venv.step(random_actions(venv, rng))[3].any()
    _, _, terminated, truncated, _ = venv.step(random_actions(venv, rng))
    assert truncated.all() and not terminated.any()
    _, reward, _, truncated, _ = venv.step(random_actions(venv, rng))
    assert not truncated.any() and (reward == 0).all()


def test_reset_seeds_and_reset_mask():
    venv = make_vec(graph_envs(horizon=4), num_envs=3)
    with pytest.raises(ValueError, match="num_envs=3"):
        venv.reset(seed=[1, 2])
    with pytest.raises(ValueError):
        venv.reset(seed=-1)
    first, _ = venv.reset(seed=[5, None, 7])
    rng = np.random.default_rng(0)
    stepped, *_ = venv.step(random_actions(venv, rng))
    mask = np.array([False, True, False])
    obs, info = venv.reset(options={"reset_mask": mask})
    rows = np.cumsum([0] + venv.core.num_nodes)
    for i in range(3):
        want = first if mask[i] else stepped
        np.testing.assert_array_equal(obs["node_state"][rows[i]:rows[i + 1]], want["node_state"][rows[i]:rows[i + 1]])
        np.testing.assert_array_equal(obs["globals"][i], want["globals"][i])
    with pytest.raises(ValueError, match="reset_mask"):
        venv.reset(options={"reset_mask": [True, False, True]})
    with pytest.raises(ValueError, match="unknown reset options"):
        venv.reset(options={"bogus": 1})


# -- multi-graph layouts ---------------------------------------------------------


def test_concatenated_observation_is_pyg_style():
    envs = graph_envs(sizes=(12, 30, 21))
    venv = make_vec(envs, num_threads=2)
    assert venv.layout == "concatenated"
    obs, _ = venv.reset(seed=0)
    assert venv.observation_space.contains(obs)
    sizes = [e.core.num_nodes for e in envs]
    edges = [e.core.num_edges for e in envs]
    offsets = np.cumsum([0] + sizes)
    edge_offsets = np.cumsum([0] + edges)
    assert obs["node_features"].shape[0] == obs["node_state"].shape[0] == obs["action_mask"].shape[0] == sum(sizes)
    np.testing.assert_array_equal(obs["num_nodes"], sizes)
    np.testing.assert_array_equal(obs["num_edges"], edges)
    np.testing.assert_array_equal(obs["batch"], np.repeat(np.arange(3), sizes))
    assert obs["globals"].shape == (3, venv.core.global_dim)
    for i, env in enumerate(envs):
        single, _ = env.reset(seed=0)
        np.testing.assert_array_equal(obs["edge_index"][:, edge_offsets[i]:edge_offsets[i + 1]],
                                      single["edge_index"] + offsets[i])
        np.testing.assert_array_equal(obs["node_features"][offsets[i]:offsets[i + 1]], single["node_features"])
        np.testing.assert_array_equal(obs["node_state"][offsets[i]:offsets[i + 1]], single["node_state"])
    assert not obs["node_features"].flags.writeable


def test_concatenated_and_padded_actions_agree():
    envs = graph_envs(sizes=(12, 30, 21))
    a, b = make_vec(envs), make_vec(envs)
    a.reset(seed=0)
    b.reset(seed=0)
    rng = np.random.default_rng(1)
    for _ in range(4):
        rows = random_actions(a, rng)  # (3, 30): padded
        flat = np.concatenate([rows[i, :n] for i, n in enumerate(a.core.num_nodes)])
        rows[0, 12:] = 1234  # padding: ignored
        assert_same(a.step(rows), b.step(flat))


def test_padded_shapes_and_padding():
    envs = graph_envs(sizes=(12, 30, 21))
    venv = make_vec(envs, pad_to=(32, 200), num_threads=2)
    assert venv.layout == "padded"
    obs, _ = venv.reset(seed=0)
    assert venv.observation_space.contains(obs)
    assert venv.single_observation_space["node_state"].shape == (32, venv.core.node_state_dim)
    assert obs["node_features"].shape == (3, 32, venv.core.node_feature_dim)
    assert obs["edge_index"].shape == (3, 2, 200)
    rng = np.random.default_rng(2)
    actions = venv.action_space.sample()
    assert actions.shape == (3, 32)
    for i, env in enumerate(envs):
        n, e = env.core.num_nodes, env.core.num_edges
        actions[i, n:] = -5  # padding: ignored
        assert obs["num_nodes"][i] == n and obs["num_edges"][i] == e
        assert (obs["edge_index"][i, :, e:] == -1).all()
        np.testing.assert_array_equal(obs["edge_index"][i, :, :e], env.reset(seed=0)[0]["edge_index"])
    obs, *_ = venv.step(actions)
    for i, env in enumerate(envs):
        n = env.core.num_nodes
        assert (obs["node_state"][i, n:] == 0).all() and (obs["action_mask"][i, n:] == 0).all()
        assert (obs["node_features"][i, n:] == 0).all()
    assert venv.observation_space.contains(obs)
    with pytest.raises(ValueError, match=r"too small for env 1"):
        make_vec(envs, pad_to=(29, 200))
    del rng


def test_one_graph_padded_is_broadcast():
    venv = make_vec(graph_envs(sizes=(12,))[0], num_envs=4, pad_to=(16, 100))
    obs, _ = venv.reset(seed=0)
    assert obs["node_features"].shape == (4, 16, venv.core.node_feature_dim)
    assert obs["node_features"].strides[0] == 0


def test_mixed_ids_round_robin():
    venv = make_vec(["placement-transformer-xl-2", "placement-transformer-xl-4"], num_envs=4,
                    cluster="2xgpu-pcie")
    assert venv.ids == ["placement-transformer-xl-2", "placement-transformer-xl-4"] * 2
    obs, _ = venv.reset(seed=0)
    assert venv.observation_space.contains(obs)
    obs, *_ = venv.step(venv.action_space.sample())
    assert venv.observation_space.contains(obs)


def test_multi_head_and_node_mode():
    envs = graph_envs(sizes=(10, 14), task="joint", horizon=2)
    venv = make_vec(envs, num_envs=4, pad_to=(16, 100))
    venv.reset(seed=0)
    actions = venv.action_space.sample()
    assert set(actions) == {"placement", "priority", "fusion"}
    venv.step(actions)
    with pytest.raises(ValueError, match="no 'fusion' entry"):
        venv.step({k: v for k, v in actions.items() if k != "fusion"})
    with pytest.raises(goenv.InvalidAction, match=r"actions has key\(s\) 'extra' that are not heads of the task"):
        venv.step({**actions, "extra": actions["fusion"]})
    node = make_vec(graph_envs(sizes=(10, 14), decision_mode="node", horizon=1), num_envs=2)
    node.reset(seed=0)
    obs, reward, terminated, *_ = node.step(np.array([1, 0]))
    assert obs["node_state"].shape[0] == 24
    with pytest.raises(ValueError, match=r"\(2,\)"):
        node.step(np.zeros((2, 14), np.int64))


# -- checks at the boundary --------------------------------------------------------


def test_bad_actions_raise_clear_value_errors():
    venv = make_vec(graph_envs(sizes=(12,))[0], num_envs=3)
    venv.reset(seed=0)
    good = np.zeros((3, 12), np.int64)
    with pytest.raises(ValueError, match=r"shape \(3, 12\).*got \(3, 11\)"):
        venv.step(good[:, :11])
    with pytest.raises(ValueError, match=r"shape \(3, 12\)"):
        venv.step(good.ravel())
    with pytest.raises(ValueError, match="integer dtype"):
        venv.step(good.astype(bool))
    with pytest.raises(ValueError, match="not an integer"):
        venv.step(good + 0.5)
    with pytest.raises(ValueError, match="not an integer"):
        venv.step(np.full((3, 12), np.nan))
    bad = good.copy()
    bad[2, 5] = 4
    state = venv.get_state()
    with pytest.raises(goenv.InvalidAction, match=r"env 2 of the batch.*outside \[0, 4\)"):
        venv.step(bad)
    assert venv.get_state() == state  # nothing stepped
    # Other integer dtypes, non-contiguous arrays, integral floats and lists are fine.
    venv.step(good.astype(np.int8))
    venv.step(np.asfortranarray(good))
    venv.step(good.astype(np.float32))
    venv.step(good.tolist())
    multi = make_vec(graph_envs(sizes=(12, 30)))
    multi.reset(seed=0)
    with pytest.raises(ValueError, match=r"\(42,\) \[total nodes, concatenated\] or \(2, 30\)"):
        multi.step(np.zeros(41, np.int64))


def test_step_before_reset_and_bad_construction():
    venv = make_vec(graph_envs(sizes=(12,))[0], num_envs=2)
    with pytest.raises(goenv.ResetNeeded):
        venv.step(np.zeros((2, 12), np.int64))
    with pytest.raises(ValueError, match="num_envs"):
        make_vec("placement-inception", num_envs=0)
    with pytest.raises(ValueError, match="num_threads"):
        make_vec("placement-transformer-xl-2", num_threads=0)
    with pytest.raises(ValueError, match="placement choices"):
        make_vec(["placement-transformer-xl-2", "placement-transformer-xl-8"])  # 2 vs 8 devices
    with pytest.raises(ValueError, match="one task"):
        make_vec(graph_envs(sizes=(12,)) + graph_envs(sizes=(12,), task="scheduling"))
    with pytest.raises(KeyError):
        make_vec("placement-no-such-graph")
    # One graph under two observation versions is two observations: refused, as with GraphEnvs
    # (each id's version used to come from the first entry of its graph).
    with pytest.raises(ValueError, match="observation_version 2, env 0 has 1"):
        make_vec(["goenv/placement-transformer-xl-2-v1", "goenv/placement-transformer-xl-2-v2"])
    assert make_vec(["goenv/placement-transformer-xl-2-v2"] * 2).core.observation_version == 2


def test_a_single_space_is_built_without_the_batched_ones():
    # The batched Boxes hold bounds per element: 8,192 envs' observation space took gigabytes,
    # which reading single_action_space paid for.
    venv = make_vec("placement-random-layered", num_envs=8192)
    assert venv.single_action_space.shape == (venv.core.num_nodes[0],)
    assert set(venv._spaces) == {"single_action_space"}
    assert venv.action_space.shape == (8192, venv.core.num_nodes[0])
    assert set(venv._spaces) == {"single_action_space", "action_space"}


# -- buffers, copies and snapshots ----------------------------------------------


def test_copy_true_never_overwrites_a_kept_observation():
    venv = make_vec(graph_envs(sizes=(12,))[0], num_envs=2)
    rng = np.random.default_rng(0)
    first, _ = venv.reset(seed=0)
    kept = {k: v.copy() for k, v in first.items()}
    second, *_ = venv.step(random_actions(venv, rng))
    venv.step(random_actions(venv, rng))
    assert_same(first, kept)
    assert not np.shares_memory(first["node_state"], second["node_state"])


@pytest.mark.parametrize("layout", ["stacked", "concatenated", "padded"])
def test_copy_true_gives_new_static_arrays_unless_share_static(layout):
    """Gymnasium's vector copy semantics: copy=True returns new memory for every array, the
    static ones too (one copy per step, still broadcast over the batch); share_static=True
    and copy=False hand out the same static arrays every step."""
    entries = {"stacked": graph_envs(sizes=(12,))[0], "concatenated": graph_envs(sizes=(12, 20)),
               "padded": graph_envs(sizes=(12, 20))}[layout]
    options = {"pad_to": (24, 200)} if layout == "padded" else {}
    static = ("node_features", "edge_index", "edge_features")
    for copy, share_static, shared in ((True, False, False), (True, True, True), (False, False, True)):
        venv = make_vec(entries, num_envs=2, copy=copy, share_static=share_static, **options)
        rng = np.random.default_rng(0)
        first, _ = venv.reset(seed=0)
        second = venv.step(random_actions(venv, rng))[0]
        for key in static:
            assert np.shares_memory(first[key], second[key]) == shared, (key, copy, share_static)
            assert np.array_equal(first[key], second[key])
        if layout == "stacked" and not shared:
            assert first["node_features"].strides[0] == 0  # still one copy per step, broadcast
    with pytest.raises(ValueError, match="share_static"):
        make_vec(entries, num_envs=2, share_static="no", **options)


def test_copy_false_reuses_buffers_with_the_same_values():
    reused = make_vec(graph_envs(sizes=(12, 20)), copy=False)
    fresh = make_vec(graph_envs(sizes=(12, 20)))
    a, _ = reused.reset(seed=0)
    fresh.reset(seed=0)
    rng = np.random.default_rng(0)
    for _ in range(3):
        actions = random_actions(reused, rng)
        b = reused.step(actions)
        assert_same(b, fresh.step(actions))
        assert np.shares_memory(a["node_state"], b[0]["node_state"])
    reused.copy = True
    c = reused.step(random_actions(reused, rng))
    assert not np.shares_memory(c[0]["node_state"], b[0]["node_state"])


def test_snapshot_reproduces_the_future():
    venv = make_vec(graph_envs(horizon=3), num_envs=5, num_threads=2)
    rng = np.random.default_rng(0)
    venv.reset(seed=0)
    for _ in range(4):
        venv.step(random_actions(venv, rng))
    snapshot = venv.get_state()
    actions = [random_actions(venv, rng) for _ in range(6)]
    expected = [venv.step(a) for a in actions]
    venv.set_state(snapshot)
    assert_same([venv.step(a) for a in actions], expected)
    other = make_vec(graph_envs(horizon=3), num_envs=5, num_threads=1)  # a fresh engine on the same envs
    other.set_state(snapshot)
    assert_same([other.step(a) for a in actions], expected)
    with pytest.raises(ValueError, match="holds 5 envs"):
        make_vec(graph_envs(horizon=3), num_envs=4).set_state(snapshot)
    with pytest.raises(ValueError):
        make_vec(graph_envs(horizon=3, seed=1), num_envs=5).set_state(snapshot)  # other graphs


def test_num_threads_can_change_between_steps():
    venv = make_vec(graph_envs(), num_envs=6, num_threads=1)
    reference = rollout(make_vec(graph_envs(), num_envs=6, num_threads=3))
    venv.num_threads = 3
    assert venv.num_threads == 3
    assert_same(rollout(venv), reference)
    with pytest.raises(ValueError):
        venv.num_threads = 0


def test_render_and_per_env_state():
    envs = graph_envs(sizes=(12, 20), horizon=3)
    venv = make_vec(envs, render_mode="rgb_array")
    venv.reset(seed=0)
    rng = np.random.default_rng(0)
    venv.step(random_actions(venv, rng))
    frames = venv.render()
    assert len(frames) == 2 and frames[0].ndim == 3 and frames[0].dtype == np.uint8
    # An env's snapshot continues in a single GraphEnv exactly as in the batch.
    single = graph_envs(sizes=(12, 20), horizon=3)[1]
    single.set_state(venv.core.env_state(1))
    actions = random_actions(venv, rng)
    obs, reward, terminated, _, info = venv.step(actions)
    expected, r, t, _, single_info = single.step(actions[1, :20])
    np.testing.assert_array_equal(obs["node_state"][12:], expected["node_state"])
    assert reward[1] == r and terminated[1] == t and info["runtime"][1] == single_info["runtime"]
    assert make_vec(envs).render() is None
    with pytest.raises(goenv.ResetNeeded, match=r"env 0 .*render\(\) called before reset\(\)"):  # as GraphEnv
        make_vec(graph_envs(sizes=(12, 20)), render_mode="rgb_array").render()


def test_a_vector_env_too_big_for_memory_is_refused_before_anything_is_allocated(monkeypatch):
    with pytest.raises(goenv.InvalidArgument, match=r"num_envs must be an integer in \[1, 65536\]"):
        make_vec("placement-transformer-xl-2", num_envs=10**9)
    monkeypatch.setattr(goenv.vector, "MAX_TOTAL_NODES", 213 * 4)  # the same rule at a size a test can reach
    assert make_vec("placement-transformer-xl-2", num_envs=4).num_envs == 4
    with pytest.raises(goenv.InvalidArgument, match="5 envs of 1,065 nodes in all; at most 852 nodes"):
        make_vec("placement-transformer-xl-2", num_envs=5)


def test_best_gives_each_envs_best_decisions_of_its_episode_as_a_graph_env_does():
    """venv.best(i) is info["best"] of the same env stepped alone: the best adopted decisions,
    not the last ones, kept until the episode's autoreset."""
    venv = make_vec("joint-transformer-xl-2", num_envs=2, horizon=3)
    single = goenv.make("joint-transformer-xl-2", horizon=3)
    venv.reset(seed=0)
    single.reset(seed=0)
    rng = np.random.default_rng(0)
    for _ in range(3):
        actions = {head: np.stack([rng.integers(0, space.nvec) for _ in range(2)])
                   for head, space in single.action_space.spaces.items()}
        _, _, terminated, _, info = venv.step(actions)
        *_, single_info = single.step({head: a[1] for head, a in actions.items()})
        assert set(venv.best(1)) == {"placement", "priority", "fusion"}
        for head, values in single_info["best"].items():
            np.testing.assert_array_equal(venv.best(1)[head], values)
        assert info["best_runtime"][1] == single_info["best_runtime"]
    assert terminated.all()  # the episode ended: its best is still there until the autoreset
    np.testing.assert_array_equal(venv.best(1)["placement"], single_info["best"]["placement"])
    for index in (-1, 2, 1.0, "0"):
        with pytest.raises(goenv.InvalidArgument, match="index must be an integer in"):
            venv.best(index)


def test_after_close_every_call_says_closed_and_options_are_not_coerced():
    venv = make_vec("placement-transformer-xl-2", num_envs=2)
    venv.reset(seed=0)
    actions = venv.action_space.sample()
    venv.close()
    for call in (lambda: venv.step(actions), lambda: venv.num_threads, lambda: venv.ids, lambda: venv.copy,
                 lambda: venv.reset(seed=0), lambda: venv.get_state(), lambda: venv.best(0)):
        with pytest.raises(RuntimeError, match="the vector env is closed"):
            call()
        with pytest.raises(gymnasium.error.ClosedEnvironmentError):  # Gymnasium's error for it too
            call()
    fresh = make_vec("placement-transformer-xl-2", num_envs=2)
    with pytest.raises(RuntimeError, match="closed"):  # closed before its spaces were ever built
        fresh.close(), fresh.action_space
    for options, message in (({"num_threads": 2.7}, "num_threads must be an integer"),
                             ({"num_threads": "3"}, "num_threads must be an integer"),
                             ({"num_threads": True}, "num_threads must be an integer"),
                             ({"copy": "no"}, "copy must be True or False"),
                             ({"max_episode_steps": 2.5}, r"max_episode_steps \(or None\) must be an integer >= 0")):
        with pytest.raises(goenv.InvalidArgument, match=message):
            make_vec("placement-transformer-xl-2", num_envs=2, **options)
    venv = make_vec("placement-transformer-xl-2", num_envs=2)
    with pytest.raises(goenv.InvalidArgument, match="copy must be True or False"):
        venv.copy = "False"
    with pytest.raises(goenv.InvalidArgument, match="set_state takes the bytes"):
        venv.set_state("x")
