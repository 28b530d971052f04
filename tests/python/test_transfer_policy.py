"""One policy for any cluster: the GO policy with device_head="pairs" scores (unit, device)
pairs from node, device and pair features, so one checkpoint acts on 2, 4
and 8 devices and on mixed clusters, and trains on several device counts at once."""

from __future__ import annotations

import gymnasium
import numpy as np
import pytest

import goenv
from helpers import require_agents

agents = require_agents()

CLUSTERS = ("2xgpu-nvlink", "4xgpu-nvlink", "8xgpu-pcie", "cpu+2xgpu")


@pytest.fixture(scope="module")
def trained(tmp_path_factory):
    """A pairs GO agent imitated on a 2-device graph and trained on 2 and 4 devices at once, saved."""
    agent = agents.GO(seed=0, device_head="pairs", hidden=16, segment_length=128, envs_per_graph=4)
    agent.imitate(["placement-rnnlm-2"], steps=4, progress=False)
    agent.train(["placement-rnnlm-2", goenv.make("placement-rnnlm-2", cluster="4xgpu-nvlink")], total_steps=16,
                progress=False)
    path = tmp_path_factory.mktemp("pairs") / "pairs.goenv-agent"
    agent.save(path)
    return agent, path


def test_the_spec_serves_any_device_count(trained):
    agent, _ = trained
    assert agent.spec["any_devices"] and agent.spec["choices"] == [0]
    assert agent.config["device_head"] == "pairs"


@pytest.mark.parametrize("cluster", CLUSTERS)
def test_one_checkpoint_acts_on_every_cluster(trained, cluster):
    agent, path = trained
    loaded = agents.load(path)
    env = goenv.make("placement-rnnlm-2", cluster=cluster)
    obs, _ = env.reset(seed=0)
    groups = env.unwrapped.graph.colocation
    action = loaded.act(obs, deterministic=True, colocation=groups)
    assert action.shape == (env.unwrapped.core.num_nodes,)
    assert action.min() >= 0 and action.max() < env.unwrapped.core.num_devices
    np.testing.assert_array_equal(action, agent.act(obs, deterministic=True, colocation=groups))
    result = loaded.evaluate([env])[env.unwrapped.core.id]
    assert result["invalid_fraction"] == 0 and result["runtime"] > 0
    optimized = loaded.optimize(env, budget=4)
    assert optimized["runtime"] <= result["runtime"]


def test_a_vector_batch_of_version_2_observations(trained):
    agent, _ = trained
    venv = goenv.make_vec("placement-rnnlm-2", num_envs=3, cluster="4xgpu-nvlink")
    obs, _ = venv.reset(seed=0)
    actions = agent.act(obs, deterministic=True)
    assert actions.shape == (3, obs["node_state"].shape[1])
    single = goenv.make("placement-rnnlm-2", cluster="4xgpu-nvlink")
    o, _ = single.reset(seed=0)
    np.testing.assert_array_equal(actions[0], agent.act(o, deterministic=True))


def test_a_version_1_observation_is_refused_with_what_is_missing(trained):
    agent, _ = trained
    env = gymnasium.make("goenv/placement-rnnlm-2-v1")
    obs, _ = env.reset(seed=0)
    with pytest.raises(goenv.InvalidArgument, match="device_features"):
        agent.act(obs)


def test_a_cut_down_device_features_is_named_with_both_widths(trained):
    # Fewer columns or rows than the env's were blamed on node_state_dim (or named without the width given).
    agent, _ = trained
    obs, _ = goenv.make("placement-rnnlm-2", cluster="4xgpu-nvlink").reset(seed=0)
    features = obs["device_features"]
    stacked = {k: np.stack([v, v]) for k, v in obs.items()}
    for base in (obs, stacked):
        narrow = {**base, "device_features": base["device_features"][..., :10]}
        with pytest.raises(goenv.InvalidArgument, match=rf"observation\['device_features'\] has 10 columns, this "
                                                        rf"policy .* needs {features.shape[1]} "):
            agent.act(narrow)
        for rows in (0, 3, 5):
            cut = {**base, "device_features": np.resize(base["device_features"], (*base["device_features"].shape[:-2],
                                                                                rows, features.shape[1]))}
            with pytest.raises(goenv.InvalidArgument, match=rf"observation\['device_features'\] is \(D, Fd\) = \({rows}, "
                                                            rf"{features.shape[1]}\), one row per device, but action_mask's "
                                                            r"placement columns \(one per device\) are 4 of its 4"):
                agent.act(cut)
    assert agent.act(obs).shape == (obs["node_state"].shape[0],)  # the whole one still acts


def test_absolute_device_ids_still_serve_one_device_count():
    agent = agents.GO(seed=0, hidden=16, envs_per_graph=2)
    agent.train(["placement-rnnlm-2"], total_steps=2, progress=False)
    with pytest.raises(goenv.InvalidArgument, match="does not fit the policy"):
        agent.evaluate([goenv.make("placement-rnnlm-2", cluster="4xgpu-nvlink")])


def test_bad_device_heads_are_refused():
    with pytest.raises(goenv.InvalidArgument, match="device_head must be"):
        agents.GO(device_head="relative")
    with pytest.raises(goenv.InvalidArgument, match="algorithm='go'"):
        agents.PPO(device_head="pairs")


def test_optimize_spends_its_whole_budget_where_nothing_can_move(trained):
    """On one device every proposal is the start again: repeats cost no call until too many
    come in a row, then they are simulated, so the budget is spent exactly and the start kept."""
    agent, _ = trained
    env = goenv.make("placement-rnnlm-2", cluster="1xgpu")
    result = agent.optimize(env, budget=5, start="default")
    assert len(result["curve"]) == 5 and result["simulator_calls"] == 5 + result["start_calls"]
    assert result["runtime"] == result["start_runtime"] == result["greedy_runtime"]
