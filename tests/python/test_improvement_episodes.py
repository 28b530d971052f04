"""Observation version 2 (per-device arrays, slack) and improvement episodes (docs/environments.md).

- devices are entities: `device_features` (static) and `device_state` (the decisions in
  force), the same numbers under any labelling of the devices;
- `reset(options={"start": ...})` starts from the default, a baseline or given decisions;
  each step of a horizon > 1 episode changes the decisions in force, and the next
  observation shows their schedule; info keeps the best decisions seen;
- `-v1` ids keep the old layout, which is a prefix of version 2.
"""

from __future__ import annotations

import json
import random

import gymnasium
import numpy as np
import pytest
from gymnasium.utils.env_checker import check_env

import goenv
import goenv._core as _core
from helpers import permuted_cluster, random_graph_arrays

DEVICE_FEATURES = _core.device_feature_names()
DEVICE_STATE = _core.device_state_names()
STATE = _core.node_state_names()


def column(env, name: str) -> int:
    """node_state's column of `name` (after the one-hot device columns)."""
    return env.unwrapped.core.num_devices + STATE.index(name)


def test_version_2_observation_has_device_arrays_and_passes_check_env():
    env = goenv.make("placement-inception", horizon=3)
    obs, _ = env.reset(seed=0)
    d = env.unwrapped.core.num_devices
    assert obs["device_features"].shape == (d, len(DEVICE_FEATURES))
    assert obs["device_state"].shape == (d, len(DEVICE_STATE))
    assert obs["node_state"].shape[1] == d + len(STATE)
    assert env.observation_space.contains(obs)
    assert not obs["device_features"].flags.writeable
    check_env(goenv.make("joint-inception", horizon=2), skip_render_check=True)


def test_version_1_ids_keep_the_old_layout_a_prefix_of_version_2():
    v1 = gymnasium.make("goenv/placement-inception-v1")
    v2 = gymnasium.make("goenv/placement-inception-v2")
    o1, _ = v1.reset(seed=0)
    o2, _ = v2.reset(seed=0)
    assert "device_state" not in o1 and "device_features" not in o1
    assert v1.unwrapped.core.observation_version == 1 and v2.unwrapped.core.observation_version == 2
    width = o1["node_state"].shape[1]
    assert width == o2["node_state"].shape[1] - (len(STATE) - len(_core.node_state_names(1)))
    np.testing.assert_array_equal(o1["node_state"], o2["node_state"][:, :width])
    assert goenv.make("goenv/placement-inception-v1").core.observation_version == 1
    with pytest.raises(goenv.InvalidArgument, match="contradicts"):
        goenv.make("goenv/placement-inception-v1", observation_version=2)
    with pytest.raises(goenv.InvalidArgument, match="observation_version"):
        goenv.make("placement-inception", observation_version=3)


def test_device_features_describe_the_cluster():
    env = goenv.make("placement-inception", cluster="cpu+2xgpu")
    obs, _ = env.reset(seed=0)
    f = obs["device_features"]
    kinds = f[:, [DEVICE_FEATURES.index(k) for k in ("cpu", "gpu", "tpu")]]
    np.testing.assert_array_equal(kinds, [[1, 0, 0], [0, 1, 0], [0, 1, 0]])
    flops = f[:, DEVICE_FEATURES.index("relative_peak_flops")]
    assert flops[1] == flops[2] == 1.0 and 0 < flops[0] < 1  # the GPUs are the fastest
    np.testing.assert_array_equal(f[1], f[2])  # two identical GPUs, identical rows


def test_device_state_is_the_schedule_of_the_decisions_in_force():
    env = goenv.make("placement-inception", horizon=2)
    obs, info = env.reset(seed=0)
    placement = np.arange(env.unwrapped.core.num_nodes) % 2
    obs, _, _, _, info = env.step(placement)
    result = env.unwrapped.core.last_result
    runtime, busy = result.runtime, np.asarray(result.device_busy)
    state = obs["device_state"]
    np.testing.assert_allclose(state[:, DEVICE_STATE.index("busy")], busy / runtime, rtol=1e-6)
    np.testing.assert_allclose(state[:, DEVICE_STATE.index("idle")], 1 - busy / runtime, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(state[:, DEVICE_STATE.index("node_fraction")],
                               np.bincount(env.unwrapped.core.placement, minlength=2) / len(placement), rtol=1e-6)
    capacity = np.array([dev.memory_bytes for dev in env.unwrapped.cluster.devices])
    np.testing.assert_allclose(state[:, DEVICE_STATE.index("memory_fraction")], info["peak_memory"] / capacity,
                               rtol=1e-5)


@pytest.mark.parametrize("preset", ["2xgpu-nvlink", "cpu+2xgpu"])
def test_relabelling_devices_permutes_the_device_arrays(preset):
    """Same graph, devices listed in another order, the same decisions under the new labels:
    every per-device row moves with its device. (The simulator breaks ties between
    simultaneous events by device and link order, so only decisions without cross-device
    traffic are guaranteed the same schedule; all nodes on one device is such a decision.)"""
    cluster = goenv.clusters.get(preset)
    d = cluster.num_devices
    perm = np.roll(np.arange(d), 1)  # new device i is old device perm[i]
    inverse = np.argsort(perm)  # old device k is new device inverse[k]
    relabelled = permuted_cluster(cluster, perm)
    graph = goenv.datasets.load("inception")
    a = goenv.make("placement", graph=graph, cluster=cluster, horizon=2)
    b = goenv.make("placement", graph=graph, cluster=relabelled, horizon=2)
    oa, _ = a.reset(seed=0)
    ob, _ = b.reset(seed=0)
    np.testing.assert_array_equal(oa["device_features"][perm], ob["device_features"])
    for device in range(d):
        placement = np.full(a.unwrapped.core.num_nodes, device)
        oa, _, _, _, ia = a.step(placement)
        ob, _, _, _, ib = b.step(inverse[placement])
        a.reset(seed=0)
        b.reset(seed=0)
        if ia["invalid"] or ib["invalid"]:
            continue
        assert ia["runtime"] == ib["runtime"]
        np.testing.assert_array_equal(oa["device_state"][perm], ob["device_state"])
        np.testing.assert_array_equal(oa["node_state"][:, d:], ob["node_state"][:, d:])  # start, finish, slack...
        np.testing.assert_array_equal(oa["node_state"][:, :d][:, perm], ob["node_state"][:, :d])


def test_reset_from_a_baseline_start_and_the_reward_of_a_step():
    env = goenv.make("placement-inception", horizon=3)
    best = goenv.baselines.solve(env, "best-heuristic")
    obs, info = env.reset(seed=0, options={"start": "best-heuristic"})
    assert info["runtime"] == pytest.approx(best["runtime"], rel=1e-12)
    default_runtime = info["initial_runtime"]
    assert default_runtime == goenv.make("placement-inception").reset(seed=0)[1]["runtime"]  # speedup's reference
    np.testing.assert_array_equal(env.unwrapped.core.placement, best["placement"])
    np.testing.assert_array_equal(info["best"]["placement"], best["placement"])
    worse = np.zeros(env.unwrapped.core.num_nodes, dtype=np.int64)  # everything on device 0
    obs, reward, terminated, _, info2 = env.step(worse)
    assert reward == pytest.approx((info["runtime"] - info2["runtime"]) / default_runtime)
    assert info2["best_runtime"] == info["runtime"] < info2["runtime"]  # a worse step is adopted, best kept
    np.testing.assert_array_equal(info2["best"]["placement"], best["placement"])
    column = dict(zip(_core.global_names(), obs["globals"]))  # the globals say what their names say
    assert column["runtime"] == pytest.approx(info2["runtime"] / default_runtime, rel=1e-6)
    assert column["simulated_runtime"] == pytest.approx(info2["runtime"] / default_runtime, rel=1e-6)
    assert column["last_reward"] == pytest.approx(reward, rel=1e-6)
    assert not terminated
    # The next reset without options starts from the default again (Gymnasium: options are per reset).
    _, info3 = env.reset(seed=1)
    assert info3["runtime"] == default_runtime


def test_the_observation_after_a_step_shows_that_steps_schedule():
    env = goenv.make("joint-inception", horizon=4)
    env.reset(seed=0, options={"start": "best-heuristic"})
    core = env.unwrapped.core
    rng = np.random.default_rng(1)
    for _ in range(3):
        action = env.action_space.sample()
        action["placement"] = rng.integers(0, core.num_devices, core.num_nodes)
        obs, _, _, _, info = env.step(action)
        if info["invalid"]:
            continue
        res = goenv.simulate(env.unwrapped.graph, env.unwrapped.cluster, placement=core.placement,
                             priority=core.priority, fusion=core.fusion)
        runtime = res.runtime
        assert info["runtime"] == runtime
        np.testing.assert_allclose(obs["node_state"][:, column(env, "start")], np.asarray(res.start) / runtime,
                                   rtol=1e-6)
        np.testing.assert_allclose(obs["node_state"][:, column(env, "finish")], np.asarray(res.finish) / runtime,
                                   rtol=1e-6)
        np.testing.assert_array_equal(obs["node_state"][:, column(env, "critical")], res.critical)
        np.testing.assert_array_equal(obs["node_state"][:, :core.num_devices].argmax(1), core.placement)


def test_given_decisions_as_start_and_set_start_for_every_episode():
    env = goenv.make("placement-inception", horizon=2)
    unit, _ = goenv.wrappers.decision_units(env.unwrapped.graph.colocation)
    placement = unit % 2  # colocation groups kept whole: the "follow" rule moves nothing
    _, info = env.reset(seed=0, options={"start": placement})
    np.testing.assert_array_equal(env.unwrapped.core.placement, placement)
    _, info_dict = env.reset(seed=0, options={"start": {"placement": placement}})
    assert info_dict["runtime"] == info["runtime"]
    env.set_start("heft")
    heft = goenv.baselines.solve(env, "heft")
    for seed in (0, 1):
        _, info = env.reset(seed=seed)
        assert info["runtime"] == pytest.approx(heft["runtime"], rel=1e-12)
    made = goenv.make("placement-inception", start="heft")
    assert made.reset(seed=0)[1]["runtime"] == info["runtime"]
    assert made.unwrapped.core.config["start"] == "heft"


def test_vector_envs_start_where_their_option_says_and_batch_device_arrays():
    venv = goenv.make_vec("placement-inception", num_envs=2, start="best-heuristic", horizon=2)
    obs, info = venv.reset(seed=0)
    single = goenv.make("placement-inception", start="best-heuristic", horizon=2)
    o, i = single.reset(seed=0)
    np.testing.assert_allclose(info["runtime"], [i["runtime"]] * 2)
    np.testing.assert_array_equal(obs["device_state"][0], o["device_state"])
    np.testing.assert_array_equal(obs["device_features"][1], o["device_features"])
    np.testing.assert_array_equal(obs["node_state"][1], o["node_state"])
    assert venv.observation_space.contains(obs)
    np.testing.assert_allclose(info["best_runtime"], info["runtime"])
    v1 = gymnasium.make_vec("goenv/placement-inception-v1", num_envs=2)
    assert "device_state" not in v1.reset(seed=0)[0]


def test_a_vector_reset_takes_a_start_for_that_reset_only():
    """docs/environments.md reset(options={"start": ...}), in the vector env: a name, given decisions, or one
    (or None: the env's own) per env; checked before any env changes; autoresets and later resets
    begin from each env's own start again."""
    venv = goenv.make_vec("placement-inception", num_envs=3, horizon=1)
    _, info = venv.reset(seed=0)
    default = info["runtime"].copy()
    single = goenv.make("placement-inception", horizon=1)
    heft = single.reset(seed=0, options={"start": "heft"})[1]
    best = single.reset(seed=0, options={"start": "best-heuristic"})[1]
    obs, info = venv.reset(seed=0, options={"start": "heft"})
    np.testing.assert_array_equal(info["runtime"], [heft["runtime"]] * 3)
    np.testing.assert_array_equal(obs["node_state"][2], single.reset(seed=0, options={"start": "heft"})[0]["node_state"])
    n = single.unwrapped.core.num_nodes
    placement = single.unwrapped.core.placement % 2
    _, info = venv.reset(seed=0, options={"start": ["best-heuristic", None, {"placement": placement}]})
    given = single.reset(seed=0, options={"start": placement})[1]
    np.testing.assert_array_equal(info["runtime"], [best["runtime"], default[1], given["runtime"]])
    before = venv.get_state()
    for start, error in ((["heft"], goenv.InvalidArgument), (3, goenv.InvalidArgument),
                         ([None, None, "no-such-start"], goenv.NotFound),
                         ([None, None, {"placement": np.full(n, 9)}], goenv.InvalidArgument)):
        with pytest.raises(error):
            venv.reset(seed=0, options={"start": start})
    assert venv.get_state() == before  # a refused start changes no env
    _, _, terminated, _, _ = venv.step(np.zeros((3, n), dtype=np.int64))  # one-shot: every episode ends
    assert terminated.all()
    _, _, _, _, info = venv.step(np.zeros((3, n), dtype=np.int64))  # the autoreset: each env's own start
    np.testing.assert_array_equal(info["runtime"], default)
    np.testing.assert_array_equal(venv.reset(seed=1)[1]["runtime"], default)


def test_a_bad_start_is_refused_and_changes_nothing():
    env = goenv.make("placement-inception", horizon=3)
    env.reset(seed=0, options={"start": "best-heuristic"})
    before = env.unwrapped.core.get_state()
    n = env.unwrapped.core.num_nodes
    with pytest.raises(goenv.NotFound, match="best-heuristic"):  # the message lists the known names
        env.reset(seed=0, options={"start": "no-such-baseline"})
    with pytest.raises(goenv.InvalidArgument, match="placement"):
        env.reset(seed=0, options={"start": np.zeros(n + 1, dtype=np.int64)})
    with pytest.raises(goenv.InvalidArgument, match="device 7"):
        env.reset(seed=0, options={"start": np.full(n, 7)})
    with pytest.raises(goenv.InvalidArgument, match="unknown reset option"):
        env.reset(seed=0, options={"begin": "heft"})
    with pytest.raises(goenv.InvalidArgument, match="keys placement, priority and fusion"):
        env.reset(seed=0, options={"start": {"devices": np.zeros(n)}})
    scheduling = goenv.make("scheduling-inception")
    with pytest.raises(goenv.InvalidArgument, match="not a level"):
        scheduling.reset(seed=0, options={"start": {"priority": np.full(scheduling.unwrapped.core.num_nodes, 0.5)}})
    with pytest.raises(goenv.InvalidArgument, match="start"):
        goenv.make("placement-inception", start=3)
    # A head the task does not decide keeps the initial decisions: other values are refused,
    # not dropped without a word; so is a start that gives no head at all.
    m = scheduling.unwrapped.core.num_nodes
    with pytest.raises(goenv.InvalidArgument, match="does not decide placement, so a start keeps the initial"):
        scheduling.reset(seed=0, options={"start": {"placement": np.full(m, 7)}})
    with pytest.raises(goenv.InvalidArgument, match="does not decide priority"):
        env.reset(seed=0, options={"start": {"priority": np.full(n, 1e300)}})
    with pytest.raises(goenv.InvalidArgument, match="an empty start"):
        env.reset(seed=0, options={"start": {}})
    scheduling.reset(seed=0)
    scheduling.reset(seed=0, options={"start": {"placement": scheduling.unwrapped.core.placement}})  # the initial
    # A named start gives only the task's heads: an env whose initial priorities are no levels
    # (quantizing them would change them) still starts from a baseline, keeping those priorities.
    custom = np.linspace(0, 1, m)
    own = goenv.make("placement-inception", priority=custom, horizon=2)
    own.reset(seed=0, options={"start": "heft"})
    np.testing.assert_array_equal(own.unwrapped.core.priority, custom)
    assert env.unwrapped.core.get_state() == before  # the episode goes on untouched
    env.step(env.action_space.sample())


def test_an_infeasible_start_names_the_device_out_of_memory():
    env = goenv.make("placement-amoebanet", horizon=2)  # does not fit on one device: the default is the expert's
    env.reset(seed=0)
    before = env.get_state()
    everything_on_one = np.zeros(env.unwrapped.core.num_nodes, dtype=np.int64)
    assert goenv.simulate(env.unwrapped.graph, env.unwrapped.cluster, placement=everything_on_one).oom
    with pytest.raises(goenv.InvalidArgument, match="infeasible: out of memory on device 0"):
        env.reset(seed=0, options={"start": everything_on_one})
    with pytest.raises(goenv.InvalidArgument, match="infeasible"):
        env.unwrapped.set_start(everything_on_one)
    assert env.get_state() == before
    # The fusion task starts from the same default placement (docs/environments.md: device 0 when it fits,
    # else the expert's): it started out of memory, and then rejected every fusion step.
    fusion = goenv.make("fusion-amoebanet", horizon=2)
    _, info = fusion.reset(seed=0)
    assert not info["oom"]
    np.testing.assert_array_equal(fusion.unwrapped.core.placement, env.unwrapped.core.placement)
    _, _, _, _, info = fusion.step(np.ones(fusion.unwrapped.core.num_nodes, dtype=np.int64))
    assert not info["invalid"]


def test_best_decisions_survive_get_state_and_set_state():
    env = goenv.make("placement-inception", horizon=3)
    env.reset(seed=0, options={"start": "best-heuristic"})
    n = env.unwrapped.core.num_nodes
    env.step(np.zeros(n, dtype=np.int64))  # worse than the start: adopted, the start stays best
    copy = goenv.make("placement-inception", horizon=3)
    copy.set_state(env.get_state())
    a = env.step(np.ones(n, dtype=np.int64))
    b = copy.step(np.ones(n, dtype=np.int64))
    assert a[4]["best_runtime"] == b[4]["best_runtime"] < a[4]["runtime"]
    np.testing.assert_array_equal(a[4]["best"]["placement"], b[4]["best"]["placement"])
    np.testing.assert_array_equal(a[0]["node_state"], b[0]["node_state"])


def test_slack_is_zero_on_the_critical_path_and_the_gap_elsewhere():
    """A diamond a -> {b (long), c (short)} -> d on one device: c can wait for b's extra time."""
    edge_index = np.array([[0, 0, 1, 2], [1, 2, 3, 3]])
    cost = np.array([10.0, 50.0, 20.0, 10.0])  # microseconds
    g = goenv.Graph.from_arrays(edge_index, flops=np.ones(4), cost_us=cost, output_bytes=np.ones(4))
    env = goenv.make("placement", graph=g, cluster="2xgpu-nvlink", horizon=2)
    obs, info = env.reset(seed=0)  # everything on device 0: a, b, c, d in sequence (or a, c, b, d)
    slack = obs["node_state"][:, column(env, "slack")] * info["runtime"]
    critical = obs["node_state"][:, column(env, "critical")]
    assert np.all(slack >= 0)
    assert np.all(slack[critical == 1] < 1e-9)
    rng = random.Random(3)
    for _ in range(10):  # property: slack in [0, 1] of the runtime on random graphs and decisions
        arrays = random_graph_arrays(rng)
        graph = goenv.Graph.from_arrays(**arrays)
        e = goenv.make("placement", graph=graph, cluster=rng.choice(["2xgpu-pcie", "cpu+2xgpu"]), horizon=2)
        e.reset(seed=0)
        o, _, _, _, i = e.step(e.action_space.sample())
        s = o["node_state"][:, column(e, "slack")]
        assert np.all((s >= 0) & (s <= 1 + 1e-6))
        # The node that finishes last cannot wait at all.
        finish = o["node_state"][:, column(e, "finish")]
        assert s[np.argmax(finish)] < 1e-6


def test_env_options_round_trip_with_start_and_version(tmp_path):
    import pickle

    env = goenv.make("placement-inception", horizon=2, start="best-heuristic", observation_version=1)
    env.reset(seed=0)
    env.step(env.action_space.sample())
    clone = pickle.loads(pickle.dumps(env))
    assert clone.unwrapped.core.config["start"] == "best-heuristic"
    assert clone.unwrapped.core.observation_version == 1
    assert clone.get_state() == env.get_state()
    json.dumps({k: v for k, v in clone.unwrapped.core.config.items() if not hasattr(v, "shape")})
