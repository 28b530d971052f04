"""Reference agents (goenv.agents, LibTorch): learning, acting, masking, checkpoints.

Skipped as a whole when torch or goenv._agents is missing; the no-torch import
test runs in a subprocess that hides torch.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest

import goenv

from helpers import require_agents

agents = require_agents()
torch = pytest.importorskip("torch")


def branchy_graph(seed: int, branches: int = 4, depth: int = 7) -> goenv.Graph:
    """A layered DAG with parallel branches: source -> `branches` chains of `depth`
    heavy ops (with a few cross links) -> sink. On 2 devices, splitting the branches
    pays; a random placement sends many tensors back and forth."""
    rng = np.random.default_rng(seed)
    edges = []
    node = 1
    last = []
    for _ in range(branches):
        previous = 0
        for _ in range(depth):
            edges.append((previous, node))
            previous = node
            node += 1
        last.append(previous)
    sink = node
    edges += [(v, sink) for v in last]
    n = sink + 1
    flops = rng.uniform(2e9, 6e9, n)
    flops[[0, sink]] = 1e6
    return goenv.Graph.from_arrays(
        np.array(edges, dtype=np.int64).T.copy(), flops=flops,
        output_bytes=rng.integers(8_000_000, 16_000_000, n), op_type=["MatMul"] * n, name=f"branchy{seed}")


def placement_env(seed: int = 0, **options) -> goenv.GraphEnv:
    return goenv.GraphEnv.from_graph("placement", branchy_graph(seed), "2xgpu-pcie", **options)


def small(cls=agents.PPO, **options):
    defaults = dict(hidden=32, seed=0, num_threads=1, envs_per_graph=8)
    defaults.update(options)
    return cls(**defaults)


def test_import_goenv_works_without_torch():
    code = textwrap.dedent("""
        import sys
        sys.modules["torch"] = None          # any `import torch` now raises ImportError
        import goenv, goenv.agents
        env = goenv.make("placement-inception")
        try:
            goenv.agents.PPO()
        except ImportError as error:
            print("IMPORT-ERROR:", error)
    """)
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert "IMPORT-ERROR:" in out.stdout and "torch" in out.stdout


def test_one_libtorch_is_mapped():
    small(env=placement_env())
    with open("/proc/self/maps") as maps:
        paths = {os.path.realpath(line.split()[-1]) for line in maps if len(line.split()) >= 6 and "/" in line}
    def mapped(prefix):
        return {p for p in paths if os.path.basename(p).startswith(prefix)}
    torch_cpu, c10, gomp = mapped("libtorch_cpu.so"), mapped("libc10.so"), mapped("libgomp")
    assert len(torch_cpu) == 1 and len(c10) == 1 and len(gomp) == 1, (torch_cpu, c10, gomp)
    assert next(iter(torch_cpu)).startswith(os.path.realpath(os.path.dirname(torch.__file__)))


def test_ppo_beats_random_placement():
    env = placement_env(seed=1)
    obs, info = env.reset(seed=0)
    rng = np.random.default_rng(0)
    random_runtimes = []
    for _ in range(200):
        env.reset(seed=0)
        random_runtimes.append(env.step(rng.integers(0, 2, env.core.num_nodes))[4]["runtime"])
    random_runtimes = np.array(random_runtimes)

    agent = small(envs_per_graph=16)
    history = agent.train(env, total_steps=1600, progress=False)
    assert len(history) == 100 and history[-1]["step"] == 1600
    greedy = agent.evaluate(env)[env.core.id]
    sampled = agent.evaluate(env, episodes=64, deterministic=False)[env.core.id]
    margin = 4 * random_runtimes.std() / np.sqrt(len(random_runtimes))
    # Better than random on average (sampled) and greedily, by a statistical margin.
    assert sampled["runtime"] < random_runtimes.mean() - margin, (sampled, random_runtimes.mean())
    assert greedy["runtime"] < random_runtimes.mean() - margin, (greedy, random_runtimes.mean())
    # And better than the compiler default (all on device 0): the branches are split.
    assert greedy["speedup"] > 1.1 and greedy["invalid_fraction"] == 0, greedy
    # Learning happened: late rollouts beat early ones.
    early = np.mean([m["mean_runtime"] for m in history[:10]])
    late = np.mean([m["mean_runtime"] for m in history[-10:]])
    assert late < early


def test_training_is_seeded():
    env = placement_env()
    runs = [small(seed=5).train(env, 64, progress=False) for _ in range(2)]
    keys = ("mean_reward", "policy_loss", "value_loss", "entropy")
    assert [[m[k] for k in keys] for m in runs[0]] == [[m[k] for k in keys] for m in runs[1]]


@pytest.mark.parametrize("cls", [agents.PPO, agents.GO])
def test_save_load_gives_identical_deterministic_actions(tmp_path, cls):
    env = placement_env()
    agent = small(cls, segment_length=8)
    agent.train(env, 32, progress=False)
    obs, _ = env.reset(seed=0)
    path = tmp_path / "agent.goenv-agent"
    agent.save(path)
    assert sorted(os.listdir(tmp_path)) == ["agent.goenv-agent"]  # no temporary left behind
    with pytest.raises(goenv.InvalidArgument, match="does not exist; create it first"):  # not a FileNotFoundError
        agent.save(tmp_path / "missing" / "agent.goenv-agent")
    for loaded in (agents.load(path), cls().load(path)):
        assert type(loaded) is cls
        assert loaded.config == agent.config and loaded.spec == agent.spec
        assert loaded.steps_trained == 32
        np.testing.assert_array_equal(loaded.act(obs, deterministic=True), agent.act(obs, deterministic=True))


def test_bad_checkpoints_raise_clear_errors(tmp_path):
    env = placement_env()
    agent = small(env=env)
    good = tmp_path / "good"
    agent.save(good)
    data = good.read_bytes()
    cases = {
        "garbage": b"this is not a checkpoint",
        "empty": b"",
        "truncated": data[: len(data) // 2],
        "flipped": data[:-100] + bytes([data[-100] ^ 0xFF]) + data[-99:],
    }
    for name, content in cases.items():
        path = tmp_path / name
        path.write_bytes(content)
        with pytest.raises(goenv.InvalidArgument, match="checkpoint"):
            agents.load(path)
        with pytest.raises(goenv.InvalidArgument, match="checkpoint"):
            agents.PPO().load(path)
    with pytest.raises(goenv.InvalidArgument, match="'ppo' agent, not 'go'"):
        agents.GO().load(good)
    with pytest.raises(FileNotFoundError):
        agents.load(tmp_path / "missing")
    obs, _ = env.reset(seed=0)
    before = agent.act(obs, deterministic=True)
    with pytest.raises(goenv.InvalidArgument):
        agent.load(tmp_path / "flipped")
    np.testing.assert_array_equal(agent.act(obs, deterministic=True), before)  # unchanged


def test_act_accepts_env_and_vector_observations():
    env = placement_env()
    agent = small(agents.GO, env=env, segment_length=8)
    n = env.core.num_nodes
    obs, _ = env.reset(seed=0)
    action = agent.act(obs)
    assert action.shape == (n,) and action.dtype == np.int64 and set(np.unique(action)) <= {0, 1}
    env.step(action)  # the env takes it as is
    with pytest.raises(goenv.InvalidArgument, match="node_state"):
        agent.act({**obs, "node_state": obs["node_state"][:, :3]})


def _make_vec():
    make_vec = getattr(goenv, "make_vec", None)
    if make_vec is None:
        make_vec = getattr(pytest.importorskip("goenv.vector"), "make_vec", None)
    if make_vec is None:
        pytest.skip("goenv.make_vec is not available")
    return make_vec


def test_act_accepts_vector_observations():
    make_vec = _make_vec()
    env = placement_env()
    agent = small(agents.GO, env=env, segment_length=8)
    n = env.core.num_nodes
    obs, _ = env.reset(seed=0)
    venv = make_vec(env, num_envs=3)
    vobs, _ = venv.reset(seed=0)
    batched = agent.act(vobs, deterministic=True)
    assert batched.shape == (3, n)
    np.testing.assert_array_equal(batched[1], agent.act(obs, deterministic=True))
    venv.step(batched)

    other = goenv.GraphEnv.from_graph("placement", branchy_graph(3, branches=3, depth=4), "2xgpu-pcie")
    mixed = make_vec([env, other])
    mobs, _ = mixed.reset(seed=0)
    concatenated = agent.act(mobs, deterministic=True)
    assert concatenated.shape == (n + other.core.num_nodes,)
    np.testing.assert_array_equal(concatenated[:n], agent.act(obs, deterministic=True))
    mixed.step(concatenated)

    m = other.core.num_nodes
    padded = make_vec([env, other], pad_to=(max(n, m) + 3, 200))
    pobs, _ = padded.reset(seed=0)
    action = agent.act(pobs, deterministic=True)
    assert action.shape == (2, max(n, m) + 3)
    np.testing.assert_array_equal(action[0, :n], agent.act(obs, deterministic=True))
    np.testing.assert_array_equal(action[1, :m], concatenated[n:])
    padded.step(action)


def test_masked_actions_are_never_sampled():
    env = goenv.GraphEnv.from_graph("joint", branchy_graph(0), "2xgpu-pcie")
    agent = small(env=env)
    obs, _ = env.reset(seed=0)
    mask = obs["action_mask"].copy()
    n = mask.shape[0]
    forbidden_device = np.arange(n) % 2 == 0
    mask[forbidden_device, 1] = 0                # even nodes may not go to device 1
    mask[:, 2 + 3:2 + 16] = 0                    # priorities 3..15 forbidden everywhere
    obs = {**obs, "action_mask": mask}
    for _ in range(50):
        action = agent.act(obs)
        assert set(action) == {"placement", "priority", "fusion"}
        assert not np.any(action["placement"][forbidden_device] == 1)
        assert action["priority"].max() <= 2
    batched = {**obs, "node_state": np.stack([obs["node_state"]] * 4), "action_mask": np.stack([mask] * 4),
               "globals": np.stack([obs["globals"]] * 4)}
    action = agent.act(batched)
    assert action["placement"].shape == (4, n)
    assert not np.any(action["placement"][:, forbidden_device] == 1)


def test_reference_lines_name_the_heuristic_not_best_heuristic():
    """best-heuristic ties the heuristic it picked: the curve's line names that one (m-etf here);
    a task whose heads combine heuristics gets the plain "best heuristic"."""
    from goenv.agents.training_log import reference_runtimes

    placement = reference_runtimes("placement-transformer-xl-2")
    assert set(placement) == {"default", "lower bound", "best heuristic (m-etf)"}
    assert placement["best heuristic (m-etf)"] == goenv.baselines.solve(
        goenv.make("placement-transformer-xl-2"), "best-heuristic")["runtime"]
    assert not any("best-heuristic" in label for label in reference_runtimes("joint-transformer-xl-2"))


def test_train_logs_callback_and_evaluate(tmp_path):
    env = placement_env()
    seen = []
    agent = small(agents.GO, segment_length=16)
    history = agent.train([env, "placement-inception"], 10_000, callback=lambda m: seen.append(m) or len(seen) < 3,
                          log_dir=tmp_path / "log", progress=False)
    assert len(history) == len(seen) == 3  # the callback stopped training
    lines = (tmp_path / "log" / "metrics.csv").read_text().splitlines()
    assert lines[0].startswith("step,update,mean_reward,mean_runtime,best_runtime")
    assert len(lines) == 4
    assert (tmp_path / "log" / "training_curve.png").read_bytes()[:4] == b"\x89PNG"
    assert sorted(os.listdir(tmp_path / "log")) == ["metrics.csv", "run.json", "training_curve.png"]  # no temporaries
    made = json.loads((tmp_path / "log" / "run.json").read_text())  # what made the log
    assert made["made_by"]["goenv"] == goenv.__version__ and made["log"] == "training"
    assert made["made_by"]["commit"] == subprocess.run(["git", "rev-parse", "HEAD"], cwd=Path(goenv.__file__).parent,
                                                       capture_output=True, text=True).stdout.strip()
    assert made["title"].startswith("GO on") and made["references"] == {}  # no single graph: no lines
    os.mkfifo(tmp_path / "log" / "fifo")
    os.replace(tmp_path / "log" / "fifo", tmp_path / "log" / "metrics.csv")
    steps = agent.steps_trained
    with pytest.raises(goenv.InvalidArgument, match="metrics.csv: a FIFO"):  # refused before training
        agent.train(env, 10_000, log_dir=tmp_path / "log", progress=False)
    assert agent.steps_trained == steps
    results = agent.evaluate([env, "placement-inception"])
    assert set(results) == {env.core.id, "placement-inception"}
    for r in results.values():
        assert r["runtime"] > 0 and r["speedup"] > 0 and r["initial_runtime"] > 0


def test_bad_options_and_envs():
    with pytest.raises(goenv.InvalidArgument, match="unknown agent option 'learning_rat'"):
        agents.PPO(learning_rat=1e-3)
    with pytest.raises(goenv.InvalidArgument, match="attention_heads"):
        agents.GO(hidden=30, attention_heads=4)
    with pytest.raises(ValueError):
        agents.PPO(algorithm="go")
    agent = small(env=placement_env())
    with pytest.raises(goenv.InvalidArgument, match="does not fit the policy"):
        agent.train("scheduling-inception", 8, progress=False)
    with pytest.raises(goenv.NotFound):
        agent.train("placement-nonexistent", 8, progress=False)
    with pytest.raises(goenv.InvalidArgument, match="no policy yet"):
        agents.PPO().act(placement_env().reset(seed=0)[0])


def test_act_with_colocation_keeps_groups_on_one_device():
    env = goenv.make("placement-transformer-xl-2")
    obs, _ = env.reset(seed=0)
    colocation = np.asarray(env.unwrapped.graph.colocation)
    agent = small(agents.GO, env=env)
    grouped = colocation >= 0
    for seed in range(3):
        action = agent.act(obs, colocation=colocation)
        for group in np.unique(colocation[grouped]):
            assert len(np.unique(action[colocation == group])) == 1
        assert not env.step(action)[4]["invalid"]
        env.reset(seed=seed)
    # Per node, an untrained policy splits groups (the check above can fail): "strict" rejects that.
    strict = goenv.make("placement-transformer-xl-2", colocation="strict")
    strict_obs, _ = strict.reset(seed=0)
    assert strict.step(agent.act(strict_obs))[4]["invalid"]
    # Vector batches take one colocation array per env.
    stacked = {k: np.stack([v, v]) for k, v in obs.items()}
    assert agent.act(stacked, colocation=colocation).shape == (2, len(colocation))
    with pytest.raises(ValueError, match="shape"):
        agent.act(obs, colocation=colocation[:-1])


def test_act_refuses_a_colocation_group_whose_members_share_no_allowed_device():
    # Every choice of such a group is masked: act returned one of them anyway.
    env = goenv.make("placement-transformer-xl-2")
    obs, _ = env.reset(seed=0)
    colocation = np.asarray(env.unwrapped.graph.colocation)
    group = colocation[colocation >= 0][0]
    first, last = np.flatnonzero(colocation == group)[[0, -1]]
    bad = {k: np.array(v, copy=True) for k, v in obs.items()}
    bad["action_mask"][first] = [1, 0]
    bad["action_mask"][last] = [0, 1]
    agent, twin = small(agents.GO, env=env), small(agents.GO, env=env)
    message = (rf"colocation group {group} {{}}has no device all its members allow: the members before node {last} "
               r"allow \[0\], its action_mask allows \[1\]")
    with pytest.raises(goenv.InvalidArgument, match=message.format("")):
        agent.act(bad, colocation=colocation)
    with pytest.raises(goenv.InvalidArgument, match=message.format("of observation 1 ")):
        agent.act({k: np.stack([obs[k], bad[k]]) for k in obs}, colocation=colocation)
    # Nothing drawn: the refused agent samples as its twin does; node by node the mask is kept.
    np.testing.assert_array_equal(agent.act(obs, colocation=colocation), twin.act(obs, colocation=colocation))
    alone = agent.act(bad)
    assert alone[first] == 0 and alone[last] == 1


def test_train_is_collect_then_update_and_splits_across_agents():
    """train() == set_envs + collect/update in turn, also when a second agent (a
    rollout worker) samples with the first one's published weights."""
    env = placement_env(seed=2)
    reference = small(seed=4)
    reference.train(env, 3 * 8, progress=False)

    learner, worker = small(seed=4), small(seed=4)
    learner.set_envs(env, sampled=[])
    worker.set_envs(env)
    assert learner.weights_version == 0 and learner.weights.dtype == np.float32
    assert learner.weights.size == learner.num_parameters and not learner.weights.flags.writeable
    for version in range(3):
        worker.set_weights(learner.weights, learner.weights_version)
        rollouts = worker.collect()
        assert [r["policy_version"] for r in rollouts] == [version]
        r = rollouts[0]
        assert r["node_state"].shape[1:] == (env.core.num_nodes, learner.spec["node_state_dim"])
        assert r["log_prob"].shape == r["reward"].shape == (8,) and r["done"].dtype == np.bool_
        metrics = learner.update(rollouts)
        assert metrics["update"] == version + 1 and learner.weights_version == version + 1
    np.testing.assert_array_equal(learner.weights, reference.weights)
    assert learner.steps_trained == reference.steps_trained == 24


def test_weights_are_a_live_view_and_set_weights_checks_size():
    env = placement_env()
    a, b = small(seed=1, env=env), small(seed=2, env=env)
    view = a.weights
    assert not np.array_equal(view, b.weights)
    b.set_weights(np.array(view), 7)
    np.testing.assert_array_equal(a.weights, b.weights)
    assert b.weights_version == 7
    obs, _ = env.reset(seed=0)
    assert np.array_equal(a.act(obs, deterministic=True), b.act(obs, deterministic=True))
    before = np.array(view)
    a.set_envs(env)
    a.update(a.collect())
    assert not np.array_equal(view, before)  # the view follows the update (no copy)
    with pytest.raises(goenv.InvalidArgument, match="parameters"):
        b.set_weights(np.zeros(3, np.float32), 1)
    with pytest.raises(goenv.InvalidArgument, match="set_envs"):
        small(seed=1, env=env).collect()


def test_update_refuses_rollouts_of_other_graphs():
    env = placement_env(seed=0)
    learner = small(seed=0)
    learner.set_envs([env], sampled=[])
    sampler = small(seed=0)
    sampler.set_envs([goenv.GraphEnv.from_graph("placement", branchy_graph(3, depth=5), "2xgpu-pcie")])
    with pytest.raises(goenv.InvalidArgument, match="nodes"):
        learner.update(sampler.collect())
    rollout = small(seed=0, env=env)
    rollout.set_envs(env)
    bad = rollout.collect()
    bad[0]["reward"] = bad[0]["reward"][:3]
    with pytest.raises(goenv.InvalidArgument, match="reward"):
        learner.update(bad)


def test_algorithms_are_registered_and_made_by_name():
    assert agents.algorithms() == ["go", "ppo"]
    agent = agents.make_agent("go", seed=1, hidden=16)
    assert type(agent) is agents.GO and agent.config["hidden"] == 16
    with pytest.raises(ValueError, match=r"algorithm must be one of \['go', 'ppo'\], got 'dqn'"):
        agents.make_agent("dqn")
    with pytest.raises(ValueError, match="already registered"):
        agents.registry.register("go", agents.PPO, "another class under a taken name")
    agents.registry.register("go", agents.GO, "the same class again is a no-op")
    assert agents.registry.describe("go").agent_class is agents.GO


def test_act_refuses_non_finite_observations_and_empty_masks():
    env = placement_env()
    agent = small(env=env)
    obs, _ = env.reset(seed=0)
    for key in ("node_state", "globals", "node_features"):
        bad = {k: np.array(v, copy=True) for k, v in obs.items()}
        bad[key].flat[0] = np.inf if key == "globals" else np.nan
        with pytest.raises(goenv.InvalidArgument, match=f"{key} holds a non-finite value"):
            agent.act(bad)
    bad = {k: np.array(v, copy=True) for k, v in obs.items()}
    bad["action_mask"][3] = 0
    with pytest.raises(goenv.InvalidArgument, match="allows no placement choice for node 3"):
        agent.act(bad)
    assert agent.act(obs).shape == (env.core.num_nodes,)  # the good observation still acts


@pytest.mark.parametrize("version", [1, 2])
def test_act_refuses_node_mode_observations(version):
    # decision_mode="node" takes one Discrete choice per step; act() answered with a whole-graph array.
    env = placement_env(observation_version=version)
    agent = small(env=env)
    node_env = placement_env(decision_mode="node", observation_version=version)
    obs, _ = node_env.reset(seed=0)
    first = int(np.asarray(node_env.graph.topological_order)[0])  # the node a node-mode episode decides first
    with pytest.raises(goenv.InvalidArgument, match=rf"observation is of an env with decision_mode='node' \(its "
                                                    rf"node_state marks node {first} as the one to decide\).*"
                                                    r"decision_mode='graph' \(the default\)"):
        agent.act(obs)
    with pytest.raises(goenv.InvalidArgument, match="node .* of observation 0 as the one to decide"):
        agent.act({k: np.stack([v, v]) for k, v in obs.items()})  # a stacked batch too
    assert agent.act(env.reset(seed=0)[0]).shape == (env.core.num_nodes,)


def test_an_agent_is_not_built_for_a_node_mode_env():
    # GO(env) on a decision_mode="node" env used to build a policy that every later call refused.
    with pytest.raises(goenv.InvalidArgument, match="decide whole graphs; decision_mode='node' is not supported"):
        small(env=placement_env(decision_mode="node"))


def test_num_threads_is_bounded_by_the_shared_thread_limit():
    limit = goenv._core.MAX_THREADS
    small(num_threads=limit)  # the limit itself is fine
    for bad in (limit + 1, 2_000_000_000, -1):
        with pytest.raises(goenv.InvalidArgument, match=rf"num_threads must be in \[0, {limit}\]"):
            agents.PPO(num_threads=bad)


def test_a_callback_cannot_replace_what_training_holds(tmp_path):
    # load() from a train() or imitate() callback freed the model and sampler training was
    # using (a segfault); now refused, and the agent stays usable. Reading it still works.
    agent = small(agents.GO, envs_per_graph=2, hidden=16)
    agent.set_envs([placement_env()])
    agent.save(tmp_path / "self.agent")
    seen = []
    with pytest.raises(goenv.InvalidArgument, match=r"load\(\) from a train\(\) callback"):
        agent.train(placement_env(), 4, progress=False,
                    callback=lambda m: seen.append(agent.save(tmp_path / "during.agent", overwrite=True)) or agent.load(tmp_path / "self.agent"))
    assert seen and (tmp_path / "during.agent").exists()  # the callback could save it
    for call in (lambda: agent.set_envs([placement_env()]), lambda: agent.collect(),
                 lambda: agent.imitate(placement_env(), 1, progress=False)):
        with pytest.raises(goenv.InvalidArgument, match=r"from a imitate\(\) callback|from a train\(\) callback"):
            agent.train(placement_env(), 4, progress=False, callback=lambda m, call=call: call())
    with pytest.raises(goenv.InvalidArgument, match=r"load\(\) from a imitate\(\) callback"):
        agent.imitate(placement_env(), 2, progress=False, callback=lambda m: agent.load(tmp_path / "self.agent"))
    assert agent.train(placement_env(), 4, progress=False)  # usable afterwards


def test_non_finite_rollouts_and_diverged_updates_are_refused_and_change_nothing(tmp_path):
    agent = small(agents.GO, envs_per_graph=2, hidden=16)
    agent.set_envs([placement_env()])
    rollouts = agent.collect()
    weights = np.array(agent.weights)
    for key in ("reward", "value", "log_prob", "node_state", "globals"):
        bad = [dict(r) for r in rollouts]
        bad[0][key] = np.array(bad[0][key], copy=True)
        bad[0][key].flat[0] = np.nan if key != "globals" else np.inf
        with pytest.raises(goenv.InvalidArgument, match=f"{key} holds (nan|inf)"):
            agent.update(bad)
    bad = [dict(r) for r in rollouts]
    actions = {head: np.array(a, copy=True) for head, a in bad[0]["actions"].items()} \
        if isinstance(bad[0]["actions"], dict) else [np.array(a, copy=True) for a in bad[0]["actions"]]
    first = next(iter(actions.values())) if isinstance(actions, dict) else actions[0]
    first.flat[0] = 99
    bad[0]["actions"] = actions
    with pytest.raises(goenv.InvalidArgument, match="is 99, not a choice in"):
        agent.update(bad)
    np.testing.assert_array_equal(np.array(agent.weights), weights)
    # Weights whose forward pass overflows make the update diverge: it is undone and said.
    wild = small(agents.GO, envs_per_graph=2, hidden=16)
    wild.set_envs([placement_env()])
    rollouts = wild.collect()
    extreme = np.full_like(np.array(wild.weights), 300.0)
    wild.set_weights(extreme, wild.weights_version)
    with pytest.raises(goenv.InvalidArgument, match="became NaN or infinite"):
        wild.update(rollouts)
    np.testing.assert_array_equal(np.array(wild.weights), extreme)
    # A checkpoint whose weights are not finite is refused when read.
    agent.set_weights(weights, 1)
    agent.save(tmp_path / "good.agent")
    data = (tmp_path / "good.agent").read_bytes()
    import struct
    header_size = struct.unpack("<Q", data[:8])[0]
    header = json.loads(data[8:8 + header_size])
    name = next(n for n in header if n.startswith("policy."))
    begin = 8 + header_size + header[name]["data_offsets"][0]
    poisoned = data[:begin] + np.float32(np.nan).tobytes() + data[begin + 4:]
    with pytest.raises(goenv.InvalidArgument, match="corrupt agent checkpoint"):
        agents.load_bytes(poisoned)


def test_a_failed_first_call_leaves_the_agent_without_a_policy():
    # imitate() built a 4-device policy, then failed on the teacher's name: the agent was stuck
    # with it, and refused 2-device envs afterwards.
    agent = small(agents.GO, envs_per_graph=2, hidden=16)
    with pytest.raises(goenv.InvalidArgument, match="unknown teacher"):
        agent.imitate("placement-transformer-xl-4", 1, teacher="heftt", progress=False)
    assert agent.num_parameters == 0
    with pytest.raises(goenv.InvalidArgument):
        agent.train(["placement-transformer-xl-4", "placement-transformer-xl-2"], 4, progress=False)
    assert agent.num_parameters == 0
    agent.imitate("placement-transformer-xl-2", 1, progress=False)  # serves 2 devices now
    assert agent.num_parameters > 0
    with pytest.raises(goenv.InvalidArgument, match="pass env= when creating it"):
        small(agents.GO).act(goenv.make("placement-transformer-xl-2").reset(seed=0)[0])
    with pytest.raises(goenv.InvalidArgument, match="teacher must be 'best' or a baseline's name"):
        agents.GO(teacher="heftt")  # when made, not at the first imitate()
    with pytest.raises(goenv.InvalidArgument, match="teacher 'critical-path' decides none of the heads of"):
        agent.imitate("placement-transformer-xl-2", 1, teacher="critical-path", progress=False)


def test_integer_options_are_exact_and_typed():
    # Integers went through a C++ double: seeds 2**53 and 2**53 + 1 made the same agent, and
    # 2**63 - 1 was refused; a float for an integer option and a number for a bool were taken.
    assert agents.GO(seed=2**53 + 1).config["seed"] == 2**53 + 1
    assert agents.GO(seed=2**63 - 1).config["seed"] == 2**63 - 1
    assert agents.GO(hidden=np.int64(16)).config["hidden"] == 16 and agents.GO(learning_rate=1).config[
        "learning_rate"] == 1.0
    for options, message in (({"hidden": 8.0}, "'hidden' must be an integer, got float"),
                             ({"seed": 1.0}, "'seed' must be an integer, got float"),
                             ({"normalize_advantages": 1}, "must be a bool, got int"),
                             ({"learning_rate": True}, "must be a number, got bool"),
                             ({"seed": 2**64}, "'seed' is out of range: 18446744073709551616"),
                             ({"hidden": 2**40}, "'hidden' is out of range")):
        with pytest.raises(goenv.InvalidArgument, match=message):
            agents.GO(**options)
    agent = small(agents.GO, seed=2**53 + 1)  # and through a checkpoint's text, exactly
    agent.set_envs([placement_env()])
    assert agents.load_bytes(agent._agent.to_bytes()).config["seed"] == 2**53 + 1
