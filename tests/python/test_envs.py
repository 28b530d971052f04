"""The Gymnasium face of every registered env, and the env contract (docs/environments.md):
check_env, rollouts, seeded determinism, new memory for every observation array
(zero-copy static arrays with share_static=True), node mode, info, rewards, and
the exceptions bad input raises. Colocation and invalid steps: test_valid_actions.py.

Registered ids (real graphs of 200 to 80,000 nodes) are used where the id matters:
by default the full check_env (with rendering) runs on one id per task and the
seeded rollouts on every id of at most 10,000 nodes; `--run-slow` runs both on
every id. Everything else runs on a 10-node graph built here, to stay fast.
"""

from __future__ import annotations

import functools
import math
import pickle

import gymnasium
import numpy as np
import pytest
from gymnasium.utils import env_checker

import goenv

ENV_IDS = goenv.list_envs()
TASKS = goenv._core.task_names()
# Full check_env (with rendering) runs by default on one id per task; on every id with --run-slow.
REPRESENTATIVE_IDS = [f"{task}-inception" if f"{task}-inception" in ENV_IDS
                      else next(i for i in ENV_IDS if i.startswith(task + "-")) for task in TASKS]
# Rollouts run by default on every id whose graph has at most this many nodes.
DEFAULT_MAX_NODES = 10_000
# env id -> reason, for ids that fail because of a known C++ bug (run as strict xfails).
KNOWN_BUGS: dict[str, str] = {}
STATIC_KEYS = ("node_features", "edge_index", "edge_features")
DYNAMIC_KEYS = ("node_state", "action_mask", "globals")
INFO_KEYS = ("runtime", "initial_runtime", "speedup", "peak_memory", "oom")


def env_id_params(ids, slow_unless=None):
    """pytest params for env ids: known C++ bugs as strict xfails; ids outside
    `slow_unless` (when given) marked slow."""
    params = []
    for env_id in ids:
        marks = []
        if env_id in KNOWN_BUGS:
            marks.append(pytest.mark.xfail(strict=True, reason=KNOWN_BUGS[env_id]))
        if slow_unless is not None and env_id not in slow_unless:
            marks.append(pytest.mark.slow)
        params.append(pytest.param(env_id, marks=marks, id=env_id))
    return params


@functools.lru_cache(maxsize=None)
def graph_nodes(graph_name: str) -> int:
    return goenv.datasets.load(graph_name).num_nodes


def skip_if_large(env_id: str, slow_enabled: bool) -> None:
    n = graph_nodes(env_id.split("-", 1)[1])
    if n > DEFAULT_MAX_NODES and not slow_enabled:
        pytest.skip(f"slow: {n} nodes (run with --run-slow or GOENV_RUN_SLOW=1)")


def small_graph() -> goenv.Graph:
    """Ten ops in a diamond-rich DAG; nodes 1 and 2 form a colocation group."""
    edges = np.array([[0, 0, 1, 2, 3, 4, 4, 5, 6, 7, 8],
                      [1, 2, 3, 3, 4, 5, 6, 7, 7, 8, 9]])
    return goenv.Graph.from_arrays(
        edges,
        flops=[2e9, 1e9, 3e9, 5e8, 4e9, 1e9, 2e9, 0.0, 6e9, 1e8],
        output_bytes=[4 << 20, 1 << 20, 2 << 20, 8 << 20, 1 << 20, 3 << 20, 3 << 20, 0, 5 << 20, 1 << 10],
        param_bytes=[0, 1 << 24, 0, 1 << 22, 0, 0, 1 << 20, 0, 1 << 25, 0],
        op_type=["Input", "Conv2D", "Conv2D", "Add", "MatMul", "Relu", "Relu", "Concat", "MatMul", "Softmax"],
        colocation=[-1, 0, 0, -1, -1, -1, -1, -1, -1, -1],
        name="small")


def small_env(task: str = "placement", cluster="2xgpu-pcie", **options) -> goenv.GraphEnv:
    return goenv.GraphEnv.from_graph(task, small_graph(), cluster, **options)


def sample_action(env: gymnasium.Env, seed: int):
    env.action_space.seed(seed)
    return env.action_space.sample()


def assert_same_observation(a: dict, b: dict) -> None:
    assert a.keys() == b.keys()
    for key in a:
        assert a[key].dtype == b[key].dtype and np.array_equal(a[key], b[key]), key


def assert_same_info(a: dict, b: dict) -> None:
    assert a.keys() == b.keys()
    for key in a:
        if isinstance(a[key], dict):  # info["best"]: {head: values}
            assert_same_info(a[key], b[key])
        elif isinstance(a[key], np.ndarray):
            assert np.array_equal(a[key], b[key]), key
        else:
            assert a[key] == b[key], key


# ------------------------------------------------------------ every registered id


def test_there_are_envs_for_every_task():
    assert ENV_IDS == sorted(ENV_IDS) and len(ENV_IDS) == len(set(ENV_IDS))
    assert {i.split("-", 1)[0] for i in ENV_IDS} == set(TASKS)
    assert "placement-inception" in ENV_IDS


@pytest.mark.filterwarnings("ignore::UserWarning")  # check_env warns about the unbounded Box spaces
@pytest.mark.parametrize("env_id", env_id_params(ENV_IDS, slow_unless=REPRESENTATIVE_IDS))
def test_check_env(env_id):
    """Gymnasium's own check_env, unmodified."""
    env = gymnasium.make(f"goenv/{env_id}-v2")
    assert env.spec.id == f"goenv/{env_id}-v2"
    assert isinstance(env.unwrapped, goenv.GraphEnv)
    env_checker.check_env(env.unwrapped, skip_render_check=False)
    env.close()


def shares_any_memory(first: dict, second: dict) -> bool:
    """Whether two observations share memory in any array."""
    return any(np.shares_memory(first[key], second[key]) for key in first)


def test_observations_share_no_memory_unless_share_static():
    # Gymnasium 1.4's check_env also checks this (check_returned_data_not_reused); Gymnasium
    # 1.2, which ray[rllib] 2.60 pins, has no such check: then only ours runs.
    check_not_reused = getattr(env_checker, "check_returned_data_not_reused", None)
    env = small_env(horizon=2)
    first, _ = env.reset(seed=0)
    second = env.step(sample_action(env, 0))[0]
    assert not shares_any_memory(first, second)
    if check_not_reused is not None:
        check_not_reused(env)
    shared = small_env(horizon=2, share_static=True)
    first, _ = shared.reset(seed=0)
    second = shared.step(sample_action(shared, 0))[0]
    assert shares_any_memory(first, second)  # by design: the same read-only static arrays
    for key in STATIC_KEYS:
        assert np.shares_memory(first[key], second[key])
    if check_not_reused is not None:
        with pytest.raises(AssertionError):
            check_not_reused(shared)


@pytest.mark.filterwarnings("ignore::UserWarning")  # gymnasium's passive checker, as above
@pytest.mark.parametrize("env_id", env_id_params(ENV_IDS))
def test_random_rollout_is_deterministic(env_id, slow_enabled):
    """Twice the same seeded rollout, once through gymnasium.make and once through
    goenv.make: identical observations, rewards and infos."""
    skip_if_large(env_id, slow_enabled)
    horizon = 3
    runs = []
    for make in (lambda: gymnasium.make(f"goenv/{env_id}-v2", horizon=horizon),
                 lambda: goenv.make(env_id, horizon=horizon)):
        env = make()
        env.action_space.seed(7)
        obs, info = env.reset(seed=7)
        trajectory = [(obs, 0.0, info)]
        assert obs in env.observation_space
        for step in range(horizon):
            obs, reward, terminated, truncated, info = env.step(env.action_space.sample())
            assert obs in env.observation_space
            assert isinstance(reward, float) and math.isfinite(reward)
            assert terminated == (step == horizon - 1) and truncated is False
            assert set(INFO_KEYS) <= info.keys()
            trajectory.append((obs, reward, info))
        runs.append(trajectory)
    for (obs_a, reward_a, info_a), (obs_b, reward_b, info_b) in zip(*runs):
        assert_same_observation(obs_a, obs_b)
        assert reward_a == reward_b
        assert_same_info(info_a, info_b)


def test_gymnasium_make_passes_options_and_goenv_accepts_gym_ids():
    env = gymnasium.make("goenv/placement-inception-v1", cluster="4xgpu-nvlink", horizon=2)
    assert env.unwrapped.cluster.name == "4xgpu-nvlink"
    assert env.action_space.nvec.tolist() == [4] * env.unwrapped.core.num_nodes
    env.reset(seed=0)
    assert env.step(env.action_space.sample())[2] is False  # horizon 2
    assert goenv.make("goenv/placement-inception-v1").core.id == "placement-inception"


def test_render_is_an_rgb_image():
    env = small_env(render_mode="rgb_array")
    env.reset(seed=0)
    image = env.render()
    assert image.ndim == 3 and image.shape[2] == 3 and image.dtype == np.uint8
    assert small_env(render_mode=None).render() is None
    with pytest.raises(ValueError):
        small_env(render_mode="human")


# ------------------------------------------------------------ observations


@pytest.mark.parametrize("make", [lambda: small_env(horizon=3, share_static=True),
                                  lambda: goenv.make("placement-inception", horizon=3, share_static=True)],
                         ids=["small", "inception"])
def test_shared_static_arrays_are_read_only_views(make):
    env = make()
    observations = [env.reset(seed=0)[0]]
    for seed in range(2):
        observations.append(env.step(sample_action(env, seed))[0])
    first = observations[0]
    for key in STATIC_KEYS:
        assert not first[key].flags.writeable, key
        with pytest.raises(ValueError):
            first[key][...] = 0
        with pytest.raises(ValueError):
            first[key].setflags(write=True)
        for later in observations[1:]:
            assert np.shares_memory(first[key], later[key]), f"{key} was copied"
    # One static observation per graph: the graph's own edge_index, and every env on it.
    assert np.shares_memory(first["edge_index"], env.graph.edge_index)
    assert np.array_equal(first["edge_index"], env.graph.edge_index)
    twin = goenv.GraphEnv.from_graph(env.core.task, env.graph, env.cluster, share_static=True)
    assert np.shares_memory(first["node_features"], twin.reset(seed=0)[0]["node_features"])


def test_static_arrays_are_new_memory_by_default():
    env = goenv.make("placement-inception", horizon=2)
    observations = [env.reset(seed=0)[0]] + [env.step(sample_action(env, seed))[0] for seed in range(2)]
    for key in STATIC_KEYS:
        for i, a in enumerate(observations):
            assert not a[key].flags.writeable, key  # new memory, still read-only: it describes the graph
            for b in observations[i + 1:]:
                assert not np.shares_memory(a[key], b[key]), key
        assert not np.shares_memory(observations[0][key], env.unwrapped.core.reset(0)[0][key])
    assert np.array_equal(observations[0]["edge_index"], env.graph.edge_index)


def test_dynamic_arrays_are_fresh_every_step():
    env, twin = small_env(horizon=3), small_env(horizon=3)
    obs, _ = env.reset(seed=0)
    twin_obs, _ = twin.reset(seed=0)
    for step in range(3):
        action = sample_action(env, step)
        for key in DYNAMIC_KEYS:
            assert obs[key].flags.writeable
            obs[key][...] = 99  # the caller owns what it was given
        next_obs = env.step(action)[0]
        twin_next = twin.step(action)[0]
        for key in DYNAMIC_KEYS:
            assert not np.shares_memory(obs[key], next_obs[key]), key
        assert_same_observation(next_obs, twin_next)
        obs = next_obs


def test_observation_shapes_match_the_spaces():
    env = small_env("joint") if "joint" in TASKS else small_env()
    obs, _ = env.reset(seed=0)
    core = env.core
    n, e = core.num_nodes, core.num_edges
    assert obs["node_features"].shape == (n, core.node_feature_dim)
    assert obs["edge_index"].shape == (2, e)
    assert obs["edge_features"].shape == (e, core.edge_feature_dim)
    assert obs["node_state"].shape == (n, core.node_state_dim)
    assert obs["action_mask"].shape == (n, core.action_mask_width)
    assert obs["globals"].shape == (core.global_dim,)
    for key, space in env.observation_space.spaces.items():
        assert obs[key].shape == space.shape and obs[key].dtype == space.dtype, key


# ------------------------------------------------------------ episodes, info, rewards


def test_info_after_reset_and_step():
    env = small_env(horizon=2)
    _, info = env.reset(seed=0)
    assert set(INFO_KEYS) <= info.keys()
    assert info["runtime"] == info["initial_runtime"] > 0 and info["speedup"] == 1.0
    assert info["peak_memory"].shape == (env.cluster.num_devices,) and info["oom"] is False
    action = np.array([0, 1, 1, 0, 1, 0, 1, 0, 1, 0])
    _, reward, _, _, info = env.step(action)
    assert info["speedup"] == info["initial_runtime"] / info["runtime"]
    # The env simulates exactly what goenv.simulate does with the same decisions.
    direct = goenv.simulate(env.graph, env.cluster, placement=action, priority=np.zeros(10))
    assert info["runtime"] == direct.runtime
    assert info["peak_memory"].tolist() == direct.peak_memory.tolist()
    assert info["oom"] == direct.oom and info["invalid"] == direct.invalid


def test_rewards_are_runtime_improvements_over_the_initial_runtime():
    env = small_env(horizon=4)
    _, info = env.reset(seed=0)
    initial = previous = info["initial_runtime"]
    for step in range(4):
        _, reward, terminated, _, info = env.step(np.full(10, step % 2))
        assert not info["invalid"]
        assert reward == (previous - info["runtime"]) / initial
        previous = info["runtime"]
    assert terminated


def test_invalid_decision_is_penalized_and_not_adopted():
    env = small_env(horizon=3, invalid_penalty=-5.0, colocation="strict")
    env.reset(seed=0)
    good = np.zeros(10, dtype=np.int64)
    _, _, _, _, before = env.step(good)
    assert not before["invalid"] and "rejected_runtime" not in before
    kept = env.core.placement.copy()
    split = good.copy()
    split[2] = 1  # nodes 1 and 2 must share a device
    obs, reward, terminated, _, info = env.step(split)
    assert info["invalid"] and "colocation" in info["invalid_reason"]
    assert reward == -5.0 and not terminated
    assert np.array_equal(env.core.placement, kept)
    assert np.array_equal(obs["node_state"][:, :2].argmax(axis=1), kept)
    # runtime, speedup and memory describe the decisions in force; the rejected one has its own key.
    assert info["runtime"] == before["runtime"] == env.core.last_result.runtime
    assert info["speedup"] == before["speedup"]
    assert info["rejected_runtime"] == goenv.simulate(env.graph, env.cluster, placement=split).runtime


def test_out_of_memory_is_penalized():
    # Device 1 holds 40 MB; the graph's weights alone are 53 MiB.
    devices = [goenv.Device(f"gpu:{i}", "gpu", peak_flops=1e13, memory_bandwidth=1e12, memory_bytes=memory)
               for i, memory in enumerate([1e9, 40e6])]
    links = [goenv.Link(0, 1, bandwidth=1e10, channel=0), goenv.Link(1, 0, bandwidth=1e10, channel=1)]
    cluster = goenv.Cluster("small-memory", devices, links)
    env = small_env(cluster=cluster, invalid_penalty=-2.0, horizon=2)
    _, info = env.reset(seed=0)
    assert not info["oom"]
    _, reward, _, _, info = env.step(np.ones(10, dtype=np.int64))
    assert info["oom"] and info["invalid"] and reward == -2.0
    assert "out of memory on device 1" in info["invalid_reason"]
    assert info["peak_memory"][1] == 0 and info["runtime"] == info["initial_runtime"]  # the decisions in force
    assert info["rejected_runtime"] > 0
    assert env.core.placement.tolist() == [0] * 10  # not adopted


@pytest.mark.parametrize("horizon", [1, 2])
def test_node_mode_decides_one_node_per_step(horizon):
    env = small_env(decision_mode="node", horizon=horizon, colocation="strict")
    assert isinstance(env.action_space, gymnasium.spaces.Discrete) and env.action_space.n == 2
    env.reset(seed=0)
    steps = horizon * env.graph.num_nodes
    order = env.graph.topological_order.tolist()
    for step in range(steps):
        obs, reward, terminated, truncated, info = env.step(step % 2)
        assert terminated == (step == steps - 1) and truncated is False
        assert set(INFO_KEYS) <= info.keys()
    # Every node got the decision made at its turn in topological order (last pass).
    expected = [0] * env.graph.num_nodes
    for step in range(steps - env.graph.num_nodes, steps):
        expected[order[step % env.graph.num_nodes]] = step % 2
    placement = env.core.placement.tolist()
    # A decision that split the colocation group was penalized and not adopted.
    assert all(placement[v] == expected[v] for v in range(10) if v not in (1, 2))
    with pytest.raises(goenv.ResetNeeded):
        env.step(0)
    env.reset(seed=0)
    env.step(np.int64(1))  # a numpy scalar is a fine Discrete action
    for bad in (2, -1, 0.5, math.nan):
        with pytest.raises(goenv.InvalidAction):
            env.step(bad)
    with pytest.raises(ValueError):
        env.step(np.array([0, 1]))


def test_reset_restarts_the_episode():
    env = small_env(horizon=1)
    first, _ = env.reset(seed=0)
    env.step(np.ones(10, dtype=np.int64))
    again, _ = env.reset(seed=0)
    assert_same_observation(first, again)
    env.step(np.ones(10, dtype=np.int64))  # a new episode may step again


def test_pickle_and_state_round_trip():
    env = small_env(horizon=3)
    env.reset(seed=0)
    env.step(np.ones(10, dtype=np.int64))
    copy = pickle.loads(pickle.dumps(env))
    restored = small_env(horizon=3)
    restored.reset(seed=1)
    restored.set_state(env.get_state())
    action = sample_action(env, 3)
    expected = env.step(action)
    for other in (copy, restored):
        result = other.step(action)
        assert_same_observation(result[0], expected[0])
        assert result[1:4] == expected[1:4]
        assert_same_info(result[4], expected[4])


def test_a_start_of_decisions_survives_pickling():
    """set_start's decisions travel with a pickled env (copies, Ray workers): they were
    dropped, and the copy's resets began from the default."""
    env = goenv.make("placement-transformer-xl-2")
    n = env.unwrapped.graph.num_nodes
    split = np.arange(n) % 2
    env.unwrapped.set_start(split)
    _, info = env.reset(seed=0)
    copy = pickle.loads(pickle.dumps(env))
    assert copy.unwrapped.core.has_start
    np.testing.assert_array_equal(copy.unwrapped.start["placement"], env.unwrapped.start["placement"])  # as adopted
    assert copy.reset(seed=0)[1]["runtime"] == info["runtime"] != info["initial_runtime"]
    assert not pickle.loads(pickle.dumps(goenv.make("placement-transformer-xl-2"))).unwrapped.core.has_start


# ------------------------------------------------------------ bad input


BAD_ACTIONS = {
    "too long": np.zeros(11, dtype=np.int64),
    "too short": np.zeros(9, dtype=np.int64),
    "2-D": np.zeros((10, 1), dtype=np.int64),
    "scalar": 0,
    "None": None,
    "fractional float": np.full(10, 0.5),
    "NaN": np.array([math.nan] + [0.0] * 9),
    "infinite": np.array([math.inf] + [0.0] * 9),
    "bool": np.zeros(10, dtype=bool),
    "object": np.array([None] * 10),
    "string": "0000000000",
    "out of range": np.array([2] + [0] * 9),
    "negative": np.array([0] * 9 + [-1]),
    "huge": np.array([2**62] + [0] * 9),
}


@pytest.mark.parametrize("name", list(BAD_ACTIONS))
def test_bad_actions_raise_invalid_action(name):
    env, twin = small_env(horizon=2), small_env(horizon=2)
    env.reset(seed=0)
    twin.reset(seed=0)
    with pytest.raises(goenv.InvalidAction):
        env.step(BAD_ACTIONS[name])
    # The failed step changed nothing: the env goes on like one that never saw it.
    action = np.array([1, 0, 0, 1, 1, 0, 0, 1, 1, 0])
    a, b = env.step(action), twin.step(action)
    assert_same_observation(a[0], b[0])
    assert a[1:4] == b[1:4]


def test_a_joint_action_with_one_bad_head_changes_nothing():
    env, twin = small_env("joint", horizon=2), small_env("joint", horizon=2)
    env.reset(seed=0)
    twin.reset(seed=0)
    good = sample_action(env, 1)
    last = env.core.heads[-1]
    limit = int(env.core.head_choices[-1])
    for value, node in ((limit, 9), (-1, 0)):
        bad = {head: np.array(values, copy=True) for head, values in good.items()}
        bad[last][node] = value
        with pytest.raises(goenv.InvalidAction, match=f"{last} action for node {node} is {value}, outside"):
            env.step(bad)
    a, b = env.step(good), twin.step(good)  # the heads before the bad one were not applied either
    assert_same_observation(a[0], b[0])
    assert a[1:4] == b[1:4]


def test_integral_actions_of_any_numeric_type_are_accepted():
    results = []
    for action in ([1, 0] * 5, tuple([1, 0] * 5), np.array([1, 0] * 5, dtype=np.uint8),
                   np.array([1, 0] * 5, dtype=np.int32), np.array([1.0, 0.0] * 5)):
        env = small_env()
        env.reset(seed=0)
        results.append(env.step(action)[4]["runtime"])
    assert len(set(results)) == 1


def test_bad_input_errors_are_standard_exceptions():
    env = small_env()
    with pytest.raises(RuntimeError):
        env.step(np.zeros(10, dtype=np.int64))  # before reset
    env.reset(seed=0)
    with pytest.raises(ValueError):
        env.step(np.zeros(3, dtype=np.int64))
    with pytest.raises(KeyError):
        goenv.make("placement-no-such-graph")


def test_step_before_reset_and_after_termination():
    env = small_env(horizon=1)
    with pytest.raises(goenv.ResetNeeded, match="reset"):
        env.step(np.zeros(10, dtype=np.int64))
    env.reset(seed=0)
    assert env.step(np.zeros(10, dtype=np.int64))[2] is True
    with pytest.raises(goenv.ResetNeeded):
        env.step(np.zeros(10, dtype=np.int64))


@pytest.mark.parametrize("env_id", ["placement-no-such-graph", "no-such-task-inception", "garbage", "", "placement-"])
def test_unknown_env_id(env_id):
    with pytest.raises(goenv.NotFound):
        goenv.make(env_id)


def test_unknown_task_on_a_graph():
    with pytest.raises(goenv.NotFound, match="task"):
        goenv.GraphEnv.from_graph("no-such-task", small_graph(), "2xgpu-pcie")


def test_a_cluster_object_serves_env_ids_as_it_serves_graphs():
    # goenv.make(id, cluster=Cluster) said "option 'cluster' has the wrong type: Cluster".
    cluster = goenv.clusters.get("4xgpu-nvlink")
    env = goenv.make("placement-transformer-xl-2", cluster=cluster, horizon=3)
    by_name = goenv.make("placement-transformer-xl-2", cluster="4xgpu-nvlink", horizon=3)
    assert env.core.id == by_name.core.id and env.core.num_devices == 4 and env.core.config["horizon"] == 3
    assert env.reset(seed=0)[1]["runtime"] == by_name.reset(seed=0)[1]["runtime"]
    venv = goenv.make_vec("placement-transformer-xl-2", num_envs=2, cluster=cluster)
    assert venv.core.num_devices == 4


def test_unknown_cluster_preset():
    with pytest.raises(goenv.NotFound, match="no-such-cluster"):
        goenv.make("placement-inception", cluster="no-such-cluster")
    with pytest.raises(goenv.NotFound, match="no-such-cluster"):
        small_env(cluster="no-such-cluster")


def test_unknown_graph_parameter():
    with pytest.raises(goenv.InvalidArgument, match="no_such_param"):
        goenv.make("placement-inception", no_such_param=3)
    with pytest.raises(goenv.InvalidArgument, match="batch_size"):
        goenv.make("placement-inception", batch_size=-1)
    with pytest.raises(goenv.InvalidArgument):
        goenv.make("placement-inception", no_such_option="a string")


@pytest.mark.parametrize("options, message", [
    (dict(horizon=0), "horizon"),
    (dict(horizon=-3), "horizon"),
    (dict(decision_mode="bogus"), "decision_mode"),
    (dict(priority_levels=1), "priority_levels"),
    (dict(invalid_penalty=math.nan), "invalid_penalty"),
    (dict(max_fusion_size=0), "max_fusion_size must be >= 1, got 0$"),  # the value was not shown
    (dict(max_fusion_size=-7), "max_fusion_size must be >= 1, got -7$"),
])
def test_bad_env_options(options, message):
    with pytest.raises(goenv.InvalidArgument, match=message):
        small_env(**options)
    with pytest.raises(goenv.InvalidArgument, match=message):
        goenv.make("placement-inception", **options)


def test_empty_graph_is_refused():
    empty = goenv.Graph.from_arrays(np.zeros((2, 0), dtype=np.int64), flops=[])
    with pytest.raises(goenv.InvalidArgument, match="no nodes"):
        goenv.GraphEnv.from_graph("placement", empty, "2xgpu-pcie")


@pytest.mark.parametrize("options", [dict(cluster=3), dict(horizon="3")], ids=["cluster=3", "horizon='3'"])
def test_option_of_the_wrong_type(options):
    with pytest.raises((TypeError, ValueError), match=next(iter(options))):
        goenv.make("placement-inception", **options)


def test_huge_float_action_is_reported_as_given():
    env = small_env()
    env.reset(seed=0)
    with pytest.raises(goenv.InvalidAction, match="1e\\+300"):
        env.step(np.array([1e300] + [0.0] * 9))


@pytest.mark.skipif("joint" not in TASKS, reason="no joint task registered")
def test_joint_actions_are_dicts_of_heads():
    env = small_env("joint")
    env.reset(seed=0)
    assert isinstance(env.action_space, gymnasium.spaces.Dict)
    action = sample_action(env, 0)
    assert set(action) == set(env.core.heads)
    env.step(action)
    env.reset(seed=0)
    with pytest.raises(goenv.InvalidAction, match="dict"):
        env.step(np.zeros(10, dtype=np.int64))
    missing = dict(action)
    missing.pop(env.core.heads[0])
    with pytest.raises(goenv.InvalidAction, match=env.core.heads[0]):
        env.step(missing)
    wrong = dict(action)
    wrong[env.core.heads[-1]] = np.zeros(3, dtype=np.int64)
    with pytest.raises(goenv.InvalidAction, match=env.core.heads[-1]):
        env.step(wrong)
    out_of_range = dict(action)
    out_of_range["placement"] = np.full(10, env.cluster.num_devices)
    with pytest.raises(goenv.InvalidAction):
        env.step(out_of_range)
    # A key that is no head (a typo, a head of another task) is refused, not ignored.
    state = env.get_state()
    with pytest.raises(goenv.InvalidAction, match=r"key\(s\) 'placment' that are not heads of the task; "
                                                   r"its heads: placement, priority, fusion"):
        env.step({**action, "placment": action["placement"]})
    assert env.get_state() == state  # nothing happened


@pytest.mark.parametrize("task", TASKS)
def test_every_task_runs_on_a_custom_graph(task):
    env = small_env(task, horizon=2)
    obs, info = env.reset(seed=0)
    for step in range(2):
        obs, reward, terminated, truncated, info = env.step(sample_action(env, step))
        assert obs in env.observation_space and math.isfinite(reward)
    assert terminated


def test_explicit_initial_placement_and_priority():
    """Scheduling (or fusion) for a given placement: the env starts from it and keeps it."""
    base = goenv.make("scheduling-transformer-xl-2")
    n = base.graph.num_nodes
    placement = goenv.baselines.solve(goenv.make("placement-transformer-xl-2"), "heft")["action"]
    env = goenv.make("scheduling-transformer-xl-2", placement=placement, priority=np.arange(n, dtype=float))
    _, info = env.reset(seed=0)
    expected = goenv.simulate(env.graph, env.cluster, placement=placement, priority=np.arange(n, dtype=float))
    assert info["initial_runtime"] == pytest.approx(expected.runtime)
    np.testing.assert_array_equal(env.unwrapped.core.config["placement"], placement)
    clone = pickle.loads(pickle.dumps(env))
    assert clone.reset(seed=0)[1]["initial_runtime"] == info["initial_runtime"]
    assert base.unwrapped.core.config["placement"] == "" and base.unwrapped.core.config["priority"] is None
    bad = {"placement has 212 values": dict(placement=placement[:-1]),
           "device 9": dict(placement=np.full(n, 9)),
           "not an integer": dict(placement=np.full(n, 0.5)),
           "not finite": dict(priority=np.full(n, np.nan)),
           "priority has 3 values": dict(priority=[1.0, 2.0, 3.0])}
    for message, options in bad.items():
        with pytest.raises(goenv.InvalidArgument, match=message):
            goenv.make("scheduling-transformer-xl-2", **options)
