"""Valid actions for any RL algorithm (docs/environments.md, colocation): colocation="follow"
turns every per-node placement into a valid one; node-mode masks keep groups
together; rejected steps are reported unmistakably; the adapters of goenv.wrappers."""

from __future__ import annotations

import math
import pickle

import gymnasium
from gymnasium.utils.env_checker import check_env
import numpy as np
import pytest

import goenv
from goenv.wrappers import CurrentNodeObservation, GroupedPlacement, decision_units

# The five real training graphs on which uniformly random placements were 98-100% invalid
# before colocation="follow" (each variable is colocated with its update op).
TRAINING_GRAPHS = ["transformer-xl-2", "inception", "wavenet-2", "resnet50", "rnnlm-2"]


def grouped_graph() -> goenv.Graph:
    """A chain of six ops; group 0 = {0, 2, 4}, group 1 = {1, 5}, node 3 alone."""
    edges = np.array([[0, 1, 2, 3, 4], [1, 2, 3, 4, 5]])
    return goenv.Graph.from_arrays(edges, flops=[1e9] * 6, output_bytes=[1 << 20] * 6,
                                   colocation=[0, 1, 0, -1, 0, 1], name="grouped")


@pytest.mark.parametrize("graph", TRAINING_GRAPHS)
def test_random_placements_are_valid(graph):
    env = goenv.make(f"placement-{graph}", horizon=50)
    env.reset(seed=0)
    env.action_space.seed(0)
    valid = 0
    for _ in range(50):
        _, reward, _, _, info = env.step(env.action_space.sample())
        valid += not info["invalid"]
        assert info["colocation_moved"] > 0  # random placements split groups: the rule mended them
        assert math.isfinite(reward)
    assert valid >= 0.95 * 50
    strict = goenv.make(f"placement-{graph}", colocation="strict")
    strict.reset(seed=0)
    strict.action_space.seed(0)
    assert strict.step(strict.action_space.sample())[4]["invalid"]  # what "follow" saves an agent from


def test_follow_moves_groups_to_their_majority_device():
    env = goenv.make("placement", graph=grouped_graph(), cluster="4xgpu-nvlink")
    env.reset(seed=0)
    _, _, _, _, info = env.step(np.array([3, 1, 3, 2, 0, 2]))  # group 0: 3, 3, 0 -> 3; group 1: 1, 2 -> tie: 1
    assert env.unwrapped.core.placement.tolist() == [3, 1, 3, 2, 3, 1]
    assert info["colocation_moved"] == 2 and not info["invalid"]
    expected = goenv.simulate(env.graph, env.cluster, placement=[3, 1, 3, 2, 3, 1])
    assert info["runtime"] == expected.runtime


def test_node_mode_masks_keep_every_group_on_one_device():
    """Masked random sampling in node mode is always valid (it was invalid 7.7% of the time)."""
    rng = np.random.default_rng(0)
    env = goenv.make("placement-transformer-xl-2", decision_mode="node")
    obs, _ = env.reset(seed=0)
    invalid = 0
    for _ in range(env.graph.num_nodes):
        mask = env.unwrapped.action_masks()
        action = rng.choice(np.flatnonzero(mask))
        obs, _, terminated, _, info = env.step(action)
        invalid += info["invalid"]
    assert terminated and invalid == 0
    placement = env.unwrapped.core.placement
    colocation = env.graph.colocation
    for group in np.unique(colocation[colocation >= 0]):
        assert len(np.unique(placement[colocation == group])) == 1


def test_node_mode_first_member_decides_for_its_group():
    env = goenv.make("placement", graph=grouped_graph(), cluster="2xgpu-nvlink", decision_mode="node")
    obs, _ = env.reset(seed=0)
    _, _, _, _, info = env.step(1)  # node 0 (first of group 0) goes to device 1: 2 and 4 follow
    assert env.unwrapped.core.placement.tolist() == [1, 0, 1, 0, 1, 0] and info["colocation_moved"] == 2
    mask = env.unwrapped.action_masks()  # node 1 (group 1, nothing decided yet): free
    assert mask.tolist() == [True, True]
    env.step(0)
    assert env.unwrapped.action_masks().tolist() == [False, True]  # node 2 must follow group 0 to device 1


def test_oom_stays_a_penalized_outcome_under_follow():
    devices = [goenv.Device(f"gpu:{i}", "gpu", peak_flops=1e13, memory_bandwidth=1e12, memory_bytes=memory)
               for i, memory in enumerate([1e9, 1e6])]
    links = [goenv.Link(0, 1, bandwidth=1e10, channel=0), goenv.Link(1, 0, bandwidth=1e10, channel=1)]
    env = goenv.make("placement", graph=grouped_graph(), cluster=goenv.Cluster("tiny", devices, links),
                     invalid_penalty=-3.0)
    _, start = env.reset(seed=0)
    _, reward, _, _, info = env.step(np.ones(6, dtype=np.int64))
    assert reward == -3.0 and info["oom"] and info["invalid"] and info["runtime"] == start["runtime"]
    assert info["rejected_runtime"] > 0 and "out of memory" in info["invalid_reason"]


def test_explicit_initial_placement_follows_colocation():
    env = goenv.make("scheduling", graph=grouped_graph(), cluster="2xgpu-nvlink", placement=[1, 0, 0, 0, 1, 0])
    env.reset(seed=0)
    assert env.unwrapped.core.placement.tolist() == [1, 0, 1, 0, 1, 0]
    strict = goenv.make("scheduling", graph=grouped_graph(), cluster="2xgpu-nvlink", colocation="strict",
                        placement=[1, 0, 0, 0, 1, 0])
    assert strict.reset(seed=0)[1]["invalid"]  # strict keeps the split start, and says so


@pytest.mark.parametrize("value", ["loose", "", "FOLLOW"])
def test_unknown_colocation_mode(value):
    with pytest.raises(goenv.InvalidArgument, match="colocation"):
        goenv.make("placement-transformer-xl-2", colocation=value)


@pytest.mark.parametrize("value", [1, None, "yes"])
def test_share_static_must_be_a_bool(value):
    with pytest.raises(goenv.InvalidArgument, match="share_static"):
        goenv.make("placement-transformer-xl-2", share_static=value)


def test_info_of_a_rejected_step_survives_snapshots():
    env = goenv.make("placement", graph=grouped_graph(), cluster="2xgpu-nvlink", colocation="strict", horizon=3)
    env.reset(seed=0)
    _, _, _, _, info = env.step(np.array([0, 0, 1, 0, 0, 0]))
    assert info["invalid"]
    copy = pickle.loads(pickle.dumps(env))
    assert copy.unwrapped.core.config["colocation"] == "strict"
    action = np.array([1, 1, 1, 0, 1, 1])
    assert env.step(action)[1:4] == copy.step(action)[1:4]


def test_vector_info_reports_moves_and_rejected_runtimes():
    venv = goenv.make_vec("placement-transformer-xl-2", num_envs=3, colocation="strict")
    venv.reset(seed=0)
    venv.action_space.seed(0)
    _, _, _, _, info = venv.step(venv.action_space.sample())
    assert info["invalid"].all() and info["_rejected_runtime"].all() and (info["rejected_runtime"] > 0).all()
    assert (info["colocation_moved"] == 0).all()
    follow = goenv.make_vec("placement-transformer-xl-2", num_envs=3)
    follow.reset(seed=0)
    _, _, _, _, info = follow.step(venv.action_space.sample())
    assert not info["invalid"].any() and not info["_rejected_runtime"].any() and (info["colocation_moved"] > 0).all()


# ------------------------------------------------------------ goenv.wrappers


def test_decision_units_number_groups_by_their_first_node():
    units, count = decision_units(np.array([-1, 0, 1, 0, -1, 1]))
    assert units.tolist() == [0, 1, 2, 1, 3, 2] and count == 4


@pytest.mark.filterwarnings("ignore::UserWarning")  # check_env on a wrapper, on purpose; unbounded Boxes
def test_grouped_placement_decides_per_group():
    env = GroupedPlacement(goenv.make("placement", graph=grouped_graph(), cluster="4xgpu-nvlink"))
    assert env.num_units == 3 and env.action_space.nvec.tolist() == [4, 4, 4]
    env.reset(seed=0)
    _, _, _, _, info = env.step(np.array([2, 3, 1]))  # units: group 0, group 1, node 3
    assert env.unwrapped.core.placement.tolist() == [2, 3, 2, 1, 2, 3] and info["colocation_moved"] == 0
    assert env.action_masks().shape == (12,) and env.action_masks().all()
    with pytest.raises(goenv.InvalidAction, match="decision unit"):
        env.step(np.zeros(6, dtype=np.int64))
    before = env.unwrapped.get_state()
    for action, message in ((np.ma.array([1, 1, 1], mask=[True] * 3), "masked array"),
                            (np.array([0.5, 1, 1]), "integer devices"), (np.array(["x"] * 3), "integer devices"),
                            (np.array([0, 4, 1]), r"devices must be in \[0, 4\)"), (np.array([-1, 0, 0]), "devices must be")):
        with pytest.raises(goenv.InvalidAction, match=message):  # as the env refuses its own actions
            env.step(action)
        with pytest.raises(goenv.InvalidArgument, match=message):
            env.node_placement(action)
    assert env.unwrapped.get_state() == before
    assert env.node_placement(np.array([2.0, 3.0, 1.0])).tolist() == [2, 3, 2, 1, 2, 3]  # 1.0 is device 1
    check_env(GroupedPlacement(goenv.make("placement-transformer-xl-2")), skip_render_check=True)


@pytest.mark.parametrize("make", [lambda: goenv.make("scheduling-transformer-xl-2"),
                                  lambda: goenv.make("placement-transformer-xl-2", decision_mode="node"),
                                  lambda: gymnasium.make("CartPole-v1"), lambda: None],
                         ids=["scheduling", "node-mode", "cartpole", "none"])
def test_grouped_placement_refuses_envs_it_does_not_fit(make):
    with pytest.raises(goenv.InvalidArgument, match="GroupedPlacement"):
        GroupedPlacement(make())


@pytest.mark.filterwarnings("ignore:Your observation .* has an unconventional shape")  # (N, F) arrays: by design
def test_stable_baselines3_check_env_passes():
    sb3_checker = pytest.importorskip("stable_baselines3.common.env_checker")
    sb3_checker.check_env(goenv.make("placement-transformer-xl-2"), warn=True)
    sb3_checker.check_env(GroupedPlacement(goenv.make("placement-transformer-xl-2")), warn=True)


@pytest.mark.filterwarnings("ignore::UserWarning")  # check_env on a wrapper, on purpose; unbounded Boxes
def test_current_node_observation_is_the_row_to_decide():
    env = CurrentNodeObservation(goenv.make("placement", graph=grouped_graph(), cluster="2xgpu-nvlink",
                                            decision_mode="node"))
    core = env.unwrapped.core
    assert env.observation_space.shape == (core.node_feature_dim + core.node_state_dim + core.global_dim,)
    obs, _ = env.reset(seed=0)
    raw = env.unwrapped.core.reset(0)[0]
    first = int(env.unwrapped.graph.topological_order[0])
    np.testing.assert_array_equal(obs[:core.node_feature_dim], raw["node_features"][first])
    obs, *_ = env.step(1)
    assert env.action_masks().tolist() == [True, True]
    check_env(CurrentNodeObservation(goenv.make("placement-transformer-xl-2", decision_mode="node")),
              skip_render_check=True)
    with pytest.raises(goenv.InvalidArgument, match="decision_mode='node'"):
        CurrentNodeObservation(goenv.make("placement-transformer-xl-2"))
