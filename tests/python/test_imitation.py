"""GO agents that start from the heuristics: imitation, teacher-anchored fine-tuning,
search with the policy (optimize), checkpoint resume, the shipped pretrained placer.

Skipped as a whole when torch or goenv._agents is missing.
"""

from __future__ import annotations

import pickle

import numpy as np
import pytest

import goenv

# test_agents skips its module, and so this one, where torch or goenv._agents is missing.
from test_agents import agents, branchy_graph, torch


def heavy_graph() -> goenv.Graph:
    """A chain of six ops whose parameters fill 1.8 devices of 2xgpu-nvlink: one device OOMs."""
    memory = goenv.clusters.get("2xgpu-nvlink").devices[0].memory_bytes
    n = 6
    return goenv.Graph.from_arrays(np.array([range(n - 1), range(1, n)], dtype=np.int64), flops=np.full(n, 1e9),
                                   output_bytes=np.full(n, 1000), param_bytes=np.full(n, int(memory * 0.3)),
                                   op_type=["MatMul"] * n, name="heavy")


@pytest.fixture(scope="module")
def branchy_env():
    return goenv.make("placement", graph=branchy_graph(0), cluster="2xgpu-nvlink")


def test_best_heuristic_is_the_best_of_the_four_and_local_search_starts_there(branchy_env):
    env = goenv.make("placement-transformer-xl-2")
    best = goenv.baselines.solve(env, "best-heuristic")
    each = [goenv.baselines.solve(env, m)["runtime"] for m in ("expert", "metis", "m-etf", "heft")]
    assert best["simulator_calls"] == 4
    assert best["runtime"] == pytest.approx(min(each), rel=1e-9)
    for budget in (5, 64):
        assert goenv.baselines.solve(env, "local-search", budget=budget)["runtime"] <= best["runtime"]


def test_imitation_makes_the_greedy_decision_the_teachers(branchy_env):
    agent = agents.GO(seed=0, learning_rate=3e-3, num_threads=1)
    history = agent.imitate(branchy_env, steps=150, progress=False)
    assert history[-1]["accuracy"] == 1.0
    assert history[-1]["loss"] < history[0]["loss"]
    teacher = agent.teacher(branchy_env)
    assert teacher["method"] == "best-heuristic" and teacher["simulator_calls"] == 5  # 4 heuristics + 1 step
    obs, _ = branchy_env.reset(seed=0)
    greedy = agent.act(obs, deterministic=True, colocation=branchy_env.unwrapped.graph.colocation)
    np.testing.assert_array_equal(greedy, teacher["decisions"]["placement"])
    _, _, _, _, info = branchy_env.step(greedy)
    assert info["runtime"] == pytest.approx(teacher["runtime"], rel=1e-12)
    assert agent.config["teacher"] == "best"


def test_any_baseline_can_teach_and_dagger_counts_its_rollouts():
    env = goenv.make("scheduling-transformer-xl-2", horizon=2)
    agent = agents.PPO(seed=0, num_threads=1)
    history = agent.imitate(env, steps=3, teacher="critical-path", progress=False)
    assert agent.teacher(env)["method"] == "critical-path"
    assert agent.config["teacher"] == "critical-path"
    # The teacher (1 step) plus one 2-step policy episode per imitation step.
    assert history[-1]["simulator_calls"] == agent.teacher(env)["simulator_calls"] + 3 * 2


def test_bad_teachers_raise_and_leave_the_agent_unchanged(branchy_env):
    agent = agents.GO(seed=0, env=branchy_env, num_threads=1)
    before = np.array(agent.weights)
    with pytest.raises(goenv.InvalidArgument, match=r"unknown teacher 'fastest'.*best, .*heft"):
        agent.imitate(branchy_env, steps=2, teacher="fastest", progress=False)
    heavy = goenv.make("placement", graph=heavy_graph(), cluster="2xgpu-nvlink")
    with pytest.raises(goenv.InvalidArgument, match=r"teacher 'single' is infeasible on placement-heavy.*best"):
        agent.imitate([branchy_env, heavy], steps=2, teacher="single", progress=False)
    np.testing.assert_array_equal(np.array(agent.weights), before)
    assert agent.teacher(branchy_env) is None and agent.config["teacher"] == "best"
    with pytest.raises(ValueError, match="steps"):
        agent.imitate(branchy_env, steps=0)


def test_fine_tuning_anchors_to_the_teacher_and_its_weight_decays(branchy_env):
    agent = agents.GO(seed=0, learning_rate=3e-3, envs_per_graph=8, teacher_decay_steps=32, entropy_coef=0.02,
                      entropy_coef_final=0.0, entropy_decay_steps=16, num_threads=1)
    agent.imitate(branchy_env, steps=60, progress=False)
    teacher_runtime = agent.teacher(branchy_env)["runtime"]
    history = agent.train(branchy_env, 48, progress=False)
    assert [m["teacher_coef"] for m in history] == pytest.approx([1.0, 0.75, 0.5, 0.25, 0.0, 0.0][:len(history)])
    assert [m["entropy_coef"] for m in history] == pytest.approx([0.02, 0.01, 0.0, 0.0, 0.0, 0.0][:len(history)])
    assert all(m["teacher_loss"] > 0 for m in history)
    # The teacher's decisions were simulated: what training found is never worse.
    assert all(m["best_runtime"] <= teacher_runtime for m in history)
    assert agent.teacher(branchy_env)["runtime"] == pytest.approx(min(m["best_runtime"] for m in history))


def test_checkpoint_resume_continues_exactly(tmp_path, branchy_env):
    options = dict(seed=3, learning_rate=3e-3, envs_per_graph=8, teacher_decay_steps=64, num_threads=1)
    uninterrupted = agents.GO(**options)
    uninterrupted.imitate(branchy_env, steps=20, progress=False)
    uninterrupted.train(branchy_env, 16, progress=False)
    expected = uninterrupted.train(branchy_env, 16, progress=False)

    first = agents.GO(**options)
    first.imitate(branchy_env, steps=20, progress=False)
    first.train(branchy_env, 16, progress=False)
    first.save(tmp_path / "go.agent")
    resumed = agents.load(tmp_path / "go.agent")
    assert resumed.teacher(branchy_env)["runtime"] == first.teacher(branchy_env)["runtime"]
    got = resumed.train(branchy_env, 16, progress=False)
    for a, b in zip(expected, got):
        for key in ("mean_runtime", "best_runtime", "policy_loss", "teacher_loss", "teacher_coef", "approx_kl"):
            assert a[key] == b[key], key
    np.testing.assert_array_equal(np.array(uninterrupted.weights), np.array(resumed.weights))


def test_optimize_is_never_worse_than_its_start_and_counts_every_call(branchy_env):
    agent = agents.GO(seed=0, learning_rate=3e-3, num_threads=1)
    agent.imitate(branchy_env, steps=40, progress=False)
    sampled = agent.optimize(branchy_env, budget=8)
    # Measuring the default, then the better decisions training kept (the teacher): the search starts there.
    assert sampled["start"] == "default" and sampled["start_calls"] == 2
    assert sampled["simulator_calls"] == 8 + sampled["start_calls"] and len(sampled["curve"]) == 8
    assert sampled["runtime"] <= min(sampled["greedy_runtime"], sampled["start_runtime"])
    assert sampled["source"] in ("start", "greedy", "policy", "training")
    assert sampled["runtime"] <= agent.teacher(branchy_env)["runtime"]  # proposal 1 is the kept teacher
    assert np.all(np.diff(sampled["curve"]) <= 0) and sampled["curve"][-1] == sampled["runtime"]
    heuristic = goenv.baselines.solve(branchy_env, "best-heuristic")
    from_best = agent.optimize(branchy_env, budget=8, start="best-heuristic")
    assert from_best["start_runtime"] == pytest.approx(heuristic["runtime"], rel=1e-12)
    assert from_best["start_calls"] == heuristic["simulator_calls"] + 2  # + measuring, + the start's episode
    assert from_best["runtime"] <= from_best["start_runtime"]
    polished = agent.optimize(branchy_env, budget=8, local_search_budget=40)
    assert polished["runtime"] <= sampled["runtime"]
    start_calls = polished["start_calls"]
    assert 8 + start_calls + 1 + 5 <= polished["simulator_calls"] <= 8 + start_calls + 1 + 40 + 1
    branchy_env.reset(seed=0)
    _, _, _, _, info = branchy_env.step(polished["decisions"]["placement"])
    assert info["runtime"] == pytest.approx(polished["runtime"], rel=1e-12)
    with pytest.raises(goenv.NotFound, match="best-heuristic"):
        agent.optimize(branchy_env, budget=4, start="fastest")
    # A seeded run is reproducible and leaves the agent's own generator alone.
    obs, _ = branchy_env.reset(seed=0)
    runs = [agent.optimize(branchy_env, budget=12, seed=3) for _ in range(2)]
    assert runs[0]["curve"].tolist() == runs[1]["curve"].tolist() and runs[0]["runtime"] == runs[1]["runtime"]
    twin = agents.load_bytes(agent._agent.to_bytes())  # the same generators
    twin.optimize(branchy_env, budget=12, seed=5)
    np.testing.assert_array_equal(twin.act(obs), agent.act(obs))  # sampled: the same draws
    with pytest.raises(ValueError, match="seed"):
        agent.optimize(branchy_env, budget=4, seed=-2)
    with pytest.raises(ValueError, match="budget"):
        agent.optimize(branchy_env, budget=0)


def test_the_proposals_ablation_spends_the_same_calls_with_the_same_moves(branchy_env):
    agent = agents.GO(seed=0, learning_rate=3e-3, num_threads=1)
    agent.imitate(branchy_env, steps=40, progress=False)
    runs = {p: agent.optimize(branchy_env, budget=12, seed=2, proposals=p) for p in ("learned", "untrained", "uniform")}
    for name, run in runs.items():
        assert run["proposals"] == name and len(run["curve"]) == 12
        assert run["simulator_calls"] == 12 + run["start_calls"]
    # Only the learned search starts from the decisions training kept (measured: one more start call).
    assert runs["learned"]["start_calls"] == 2
    assert runs["untrained"]["start_calls"] == runs["uniform"]["start_calls"] == 1
    assert runs["uniform"]["policy_reads"] == 0 < runs["untrained"]["policy_reads"]
    # "untrained" is exactly the search of the network as training started it.
    fresh = agents.GO(**agent.config).optimize(branchy_env, budget=12, seed=2)
    assert runs["untrained"]["curve"].tolist() == fresh["curve"].tolist()
    np.testing.assert_array_equal(runs["untrained"]["decisions"]["placement"], fresh["decisions"]["placement"])
    # Drawing the fresh weights leaves the process's torch generator as it was.
    torch.manual_seed(7)
    expected = torch.rand(3)
    torch.manual_seed(7)
    agent.optimize(branchy_env, budget=4, seed=0, proposals="untrained")
    assert torch.equal(torch.rand(3), expected)
    for bad in ("random", "", None, 1):
        with pytest.raises(goenv.InvalidArgument, match="'learned', 'untrained' or 'uniform'"):
            agent.optimize(branchy_env, budget=4, proposals=bad)


def test_move_gains_label_every_single_move_and_teach_the_reading(branchy_env):
    agent = agents.GO(seed=0, learning_rate=3e-3, num_threads=1)
    history = agent.learn_moves(branchy_env, steps=80, states=1, progress=False)
    # The best heuristic (4 heuristics + 1 step), its decision (1 step), then one call per unit
    # and other device: 30 units on 2 devices.
    assert [m["simulator_calls"] for m in history] == [5 + 1 + 30] * 80
    assert history[-1]["loss"] < history[0]["loss"] and history[-1]["accuracy"] >= 0.9 > history[0]["accuracy"]
    assert agent.teacher(branchy_env) is None  # no teacher kept: train() is not pulled toward one
    again = agents.GO(seed=0, learning_rate=3e-3, num_threads=1)
    again.learn_moves(branchy_env, steps=80, states=1, progress=False)
    np.testing.assert_array_equal(np.array(again.weights), np.array(agent.weights))
    # Perturbed decisions are labelled too: more calls, the same steps.
    more = agents.GO(seed=0, num_threads=1).learn_moves(branchy_env, steps=1, states=3, progress=False)
    assert more[-1]["simulator_calls"] > 5 + 1 + 30


def test_bad_move_gain_arguments_raise_and_leave_the_agent_unchanged(branchy_env):
    agent = agents.GO(seed=0, env=branchy_env, num_threads=1)
    before = np.array(agent.weights)
    for states in (0, 51):
        with pytest.raises(goenv.InvalidArgument, match="states"):
            agent.learn_moves(branchy_env, steps=2, states=states, progress=False)
    for temperature in (0, -0.01, float("nan"), float("inf")):
        with pytest.raises(goenv.InvalidArgument, match="temperature must be a finite number > 0"):
            agent.learn_moves(branchy_env, steps=2, temperature=temperature, progress=False)
    with pytest.raises(TypeError, match="temperature must be a number"):
        agent.learn_moves(branchy_env, steps=2, temperature="warm", progress=False)
    scheduling = agents.GO(seed=0, num_threads=1)
    with pytest.raises(goenv.InvalidArgument, match="no placement head"):
        scheduling.learn_moves("scheduling-transformer-xl-2", steps=2, progress=False)
    np.testing.assert_array_equal(np.array(agent.weights), before)


def test_a_canonical_teacher_renumbers_interchangeable_devices_by_first_use():
    graph = branchy_graph(3)
    for cluster in ("4xgpu-nvlink", "cpu+2xgpu"):
        env = goenv.make("placement", graph=graph, cluster=cluster)
        teachers = {}
        for canonical in (False, True):
            agent = agents.GO(seed=0, num_threads=1, canonical_teacher=canonical)
            agent.imitate(env, steps=1, teacher="heft", progress=False)
            teachers[canonical] = agent.teacher(env)
        plain, renumbered = (teachers[c]["decisions"]["placement"] for c in (False, True))
        # The same partition of the ops, as good, its devices renamed within each class of equal devices.
        mapping = dict(zip(plain.tolist(), renumbered.tolist()))
        assert len(set(mapping.values())) == len(mapping) and [mapping[d] for d in plain.tolist()] == renumbered.tolist()
        assert teachers[True]["runtime"] == pytest.approx(teachers[False]["runtime"], rel=1e-9)
        assert teachers[True]["simulator_calls"] == teachers[False]["simulator_calls"] + 1
        if cluster == "4xgpu-nvlink":  # one class: devices numbered 0, 1, ... as the topological order meets them
            seen = list(dict.fromkeys(renumbered[graph.topological_order].tolist()))
            assert seen == list(range(len(seen)))
        else:  # the CPU (device 0) has other features than the GPUs: never renamed
            assert (plain == 0).tolist() == (renumbered == 0).tolist()


def test_optimize_start_budget_bounds_the_calls_a_named_start_spends(branchy_env):
    """A search baseline named as the start spent a fixed 1,000 calls the caller could not set:
    start_budget sets it, outside budget, and start_calls reports it."""
    agent = agents.GO(branchy_env, seed=0, num_threads=1)
    for start_budget in (10, 0):
        searched = goenv.baselines.solve(branchy_env, "local-search", budget=start_budget)
        result = agent.optimize(branchy_env, budget=4, start="local-search", start_budget=start_budget, seed=0)
        assert result["start_calls"] == searched["simulator_calls"] + 2 == start_budget + 2  # + measuring, + episode
        assert result["simulator_calls"] == 4 + result["start_calls"] and len(result["curve"]) == 4
        assert result["start_runtime"] == pytest.approx(searched["runtime"], rel=1e-12)
    default = agent.optimize(branchy_env, budget=4, start="local-search", seed=0)
    assert default["start_calls"] == goenv.baselines.solve(branchy_env, "local-search")["simulator_calls"] + 2
    heft = agent.optimize(branchy_env, budget=4, start="heft", start_budget=7, seed=0)
    assert heft["start_calls"] == 2  # a heuristic makes no call: the budget only bounds
    n = branchy_env.unwrapped.graph.num_nodes
    for start, shown in ((None, "None"), ("", "''"), (np.zeros(n, dtype=np.int64), "decisions")):
        with pytest.raises(goenv.InvalidArgument, match=f"start_budget applies to a start given by name .*"
                                                         f"got start={shown} with start_budget=5"):
            agent.optimize(branchy_env, budget=4, start=start, start_budget=5)
    for bad in (-1, 2.5, True):
        with pytest.raises(goenv.InvalidArgument, match=r"start_budget must be an integer in \[0, 2\*\*63\)"):
            agent.optimize(branchy_env, budget=4, start="local-search", start_budget=bad)


def test_optimize_starts_from_given_decisions_or_the_envs_own_start():
    """A start of decisions, given to optimize or set on the env (set_start), is where the search
    starts (it used to be dropped on the way to the C++ agent, which then started from the
    default); a malformed or infeasible one is a clear error and changes nothing."""
    agent = agents.pretrained("go-placement")
    env = goenv.make("placement", graph=branchy_graph(5), cluster="2xgpu-nvlink")
    env.reset(seed=0)
    n = env.unwrapped.graph.num_nodes
    split = np.arange(n) % 2  # not a decision any heuristic or the default makes
    _, _, _, _, info = env.step(split)
    given = agent.optimize(env, budget=6, start=split, seed=0)
    assert given["start"] == "given" and given["start_runtime"] == pytest.approx(info["runtime"], rel=1e-12)
    assert given["runtime"] <= given["start_runtime"] and given["simulator_calls"] == 6 + given["start_calls"]
    assert agent.optimize(env, budget=6, start={"placement": split}, seed=0)["curve"].tolist() == \
        given["curve"].tolist()
    assert not env.unwrapped.core.has_start  # optimize searched a copy: the env's start is unchanged
    env.unwrapped.set_start(split)  # the env's own start, used when start is None
    own = agent.optimize(env, budget=6, seed=0)
    assert own["start"] == "given" and own["curve"].tolist() == given["curve"].tolist()
    with pytest.raises(goenv.InvalidArgument, match="start placement"):
        agent.optimize(env, budget=6, start=split[:-1])
    with pytest.raises(goenv.InvalidArgument, match="keys placement, priority and fusion"):
        agent.optimize(env, budget=6, start={"devices": split})
    assert env.unwrapped.core.has_start  # the bad starts changed nothing


def test_a_replaced_start_is_reported_under_its_own_name():
    """The env's config names the start in force: a start named at make() and then replaced
    with decisions is "given" (it used to be reported under the old name), one set by name keeps
    that name, and both survive pickling."""
    agent = agents.pretrained("go-placement")
    env = goenv.make("placement", graph=branchy_graph(5), cluster="2xgpu-nvlink", start="heft")
    env.reset(seed=0)
    core = env.unwrapped.core
    assert core.config["start"] == "heft" and agent.optimize(env, budget=2, seed=0)["start"] == "heft"
    split = np.arange(env.unwrapped.graph.num_nodes) % 2
    env.unwrapped.set_start(split)
    assert core.config["start"] == "given" and agent.optimize(env, budget=2, seed=0)["start"] == "given"
    copied = pickle.loads(pickle.dumps(env.unwrapped))
    assert copied.core.config["start"] == "given" and np.array_equal(copied.start["placement"], split)
    env.unwrapped.set_start("best-heuristic")
    assert agent.optimize(env, budget=2, seed=0)["start"] == "best-heuristic"
    copied = pickle.loads(pickle.dumps(env.unwrapped))
    assert copied.core.config["start"] == "best-heuristic"
    assert np.array_equal(copied.start["placement"], env.unwrapped.start["placement"])
    env.unwrapped.set_start(None)
    assert agent.optimize(env, budget=2, seed=0)["start"] == "default"
    assert pickle.loads(pickle.dumps(env.unwrapped)).core.config["start"] == "default"
    with pytest.raises(goenv.InvalidArgument):
        env.unwrapped.set_start(split[:-1])
    assert core.config["start"] == "default"  # a refused start changes nothing, its name included


def test_the_shipped_pretrained_placer_loads_and_places_a_new_graph():
    agent = agents.pretrained("go-placement")
    assert isinstance(agent, agents.GO) and agent.spec["heads"] == ["placement"]
    env = goenv.make("placement", graph=branchy_graph(5), cluster="2xgpu-nvlink")
    result = agent.optimize(env, budget=4)
    assert np.isfinite(result["runtime"]) and result["simulator_calls"] == 4 + result["start_calls"]
    # One checkpoint for any cluster: num_devices is accepted, and the same policy acts on 3 devices.
    assert agent.spec["any_devices"] and agents.pretrained("go-placement", num_devices=4).spec == agent.spec
    three = goenv.make("placement", graph=branchy_graph(5), cluster="cpu+2xgpu")
    assert agent.optimize(three, budget=2, start="best-heuristic")["runtime"] <= \
        goenv.baselines.solve(three, "best-heuristic")["runtime"]
    with pytest.raises(goenv.InvalidArgument, match=r"unknown pretrained agent 'go-fusion'.*go-placement"):
        agents.pretrained("go-fusion")
    for count in (0, 257, True, 2.0):  # a device count no cluster has
        with pytest.raises(goenv.InvalidArgument, match=r"num_devices \(a cluster's device count\) must be an integer in \[1, 256\]"):
            agents.pretrained("go-placement", num_devices=count)


def test_the_shipped_move_gain_placer_moves_ops_in_one_shot_where_it_pays():
    agent = agents.pretrained("go-moves")
    assert isinstance(agent, agents.GO) and agent.spec["any_devices"]
    env = goenv.make("placement-transformer-xl-2")  # a better placement than the default exists
    _, info = env.reset(seed=0)
    one_shot = agent.optimize(env, budget=1, start="default")  # the greedy decision from the default
    assert one_shot["greedy_runtime"] < info["initial_runtime"] and one_shot["source"] == "greedy"
    assert len(np.unique(one_shot["decisions"]["placement"])) > 1


def test_the_cuda_path_or_a_clear_refusal_without_a_gpu(tmp_path, branchy_env):
    if not torch.cuda.is_available():
        with pytest.raises(goenv.InvalidArgument, match="no CUDA device"):
            agents.GO(device="cuda")
        pytest.skip("no CUDA device here: the CUDA path runs where torch sees a GPU")
    agent = agents.GO(seed=0, device="cuda", learning_rate=3e-3, envs_per_graph=8)
    assert agent.device == "cuda"
    assert agent.imitate(branchy_env, steps=150, progress=False)[-1]["accuracy"] == 1.0
    history = agent.train(branchy_env, 32, progress=False)
    assert history[-1]["best_runtime"] <= agent.teacher(branchy_env)["runtime"] * (1 + 1e-12)
    agent.save(tmp_path / "cuda.agent")
    loaded = agents.load(tmp_path / "cuda.agent")
    assert loaded.teacher(branchy_env)["runtime"] == agent.teacher(branchy_env)["runtime"]


def test_on_cuda_the_shipped_placer_decides_as_on_cpu_and_optimize_spends_its_budget():
    if not torch.cuda.is_available():
        pytest.skip("no CUDA device here: the CUDA path runs where torch sees a GPU")
    shipped = agents.pretrained("go-placement")
    env = goenv.make("placement", graph=branchy_graph(3), cluster="4xgpu-pcie")

    def on(device):
        options = {**shipped.config, "device": device}
        agent = agents.make_agent(options.pop("algorithm"), **options)
        agent.set_envs([env])
        agent.set_weights(shipped.weights, shipped.weights_version)
        return agent

    cpu, cuda = on("cpu"), on("cuda")
    assert cuda.device == "cuda" and cpu.device == "cpu"
    obs, _ = env.reset(seed=0)
    np.testing.assert_array_equal(cuda.act(obs, deterministic=True), cpu.act(obs, deterministic=True))
    result = cuda.optimize(env, budget=16, start="best-heuristic")
    assert result["simulator_calls"] == 16 + result["start_calls"]
    assert result["runtime"] <= result["start_runtime"]
