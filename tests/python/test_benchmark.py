"""goenv.benchmark: the catalog, the charging of simulator calls, the normalized score's ends,
failures that do not stop a run, results files that validate and tampered ones that do not,
each method adapter, the CLI and the leaderboard."""

from __future__ import annotations

import json

import numpy as np
import pytest

import goenv
import goenv.benchmark
from goenv.benchmark import catalog, decisions, leaderboard, references, scores
from goenv.cli import main as cli

QUICK = "placement-quick-v0"


def in_force(obs):
    """The decision in force: the device of each node's one-hot in node_state (the default at reset)."""
    devices = obs["device_features"].shape[0]
    return np.asarray(obs["node_state"])[:, :devices].argmax(axis=1)


def best_known(case):
    reference = references.of(case)["best"]
    env = case.make()
    return decisions.as_action(decisions.decode(reference["decisions"], env.unwrapped.graph.num_nodes, case.id),
                               case.task)


@pytest.fixture(scope="module")
def local_search():
    return goenv.benchmark.evaluate("local-search", QUICK, budget=16)


def test_every_benchmark_is_versioned_and_its_test_lineages_are_not_in_the_training_split():
    from goenv.datasets.zoo.lineages import ZooEntry, split

    train = {goenv.datasets.lineage(e.graph) for e in goenv.datasets.suite("transfer")["train"]}
    for name in goenv.benchmark.names():
        benchmark = goenv.benchmark.get(name)
        assert name.endswith(f"-v{benchmark.version}") and benchmark.default_budget in benchmark.budgets
        ids = [case.id for case in benchmark.cases]
        assert len(ids) == len(set(ids)) and len(benchmark.seeds) >= 3
        zoo = [case.entry for case in benchmark.cases if isinstance(case.entry, ZooEntry)]
        assert all(entry.split == split(entry.model_type) == "test" for entry in zoo)
        assert len({entry.lineage for entry in zoo}) == len(zoo)  # one case per test lineage
        assert not {goenv.datasets.lineage(case.entry.graph) for case in benchmark.cases
                    if not isinstance(case.entry, ZooEntry)} & train
        for case in benchmark.cases:  # every case has its anchors, the best below the default
            anchors = references.of(case)
            assert anchors["best"]["runtime"] < anchors["default"]
    with pytest.raises(goenv.NotFound, match="placement-quick-v0"):
        goenv.benchmark.get("placement-quick-v9")


def test_the_default_scores_0_and_the_best_known_decision_scores_1():
    benchmark = goenv.benchmark.get(QUICK)
    default = goenv.benchmark.evaluate(in_force, QUICK, budget=1)
    assert [r["score"] for r in default.records] == pytest.approx([0.0] * len(default.records), abs=1e-12)
    by_graph = {case.entry.graph: best_known(case) for case in benchmark.cases}

    def replay_reference(obs):
        return by_graph["wavenet-2" if obs["node_features"].shape[0] == 540 else "transformer-xl-2"]

    best = goenv.benchmark.evaluate(replay_reference, QUICK, budget=1)
    assert [r["score"] for r in best.records] == pytest.approx([1.0] * len(best.records))
    assert best.summary["iqm"] == pytest.approx(1.0) and best.summary["iqm_ci"] == pytest.approx([1.0, 1.0])


def test_a_policy_is_called_once_per_call_of_the_budget_and_charged_for_each():
    calls = []

    def counting(obs):
        calls.append(1)
        return in_force(obs)

    results = goenv.benchmark.evaluate(counting, QUICK, budget=16)
    runs = len(goenv.benchmark.get(QUICK).cases) * len(goenv.benchmark.get(QUICK).seeds)
    assert len(calls) == 16 * runs
    assert all(r["simulator_calls"] == 16 for r in results.records)
    assert results.summary["simulator_calls"] == 16 * runs


def test_searches_and_heuristics_are_charged_their_own_calls(local_search):
    assert all(r["simulator_calls"] == 16 for r in local_search.records)
    heft = goenv.benchmark.evaluate("heft", QUICK, budget=1)
    assert all(r["simulator_calls"] == 1 for r in heft.records)
    assert local_search.summary["iqm"] > heft.summary["iqm"] - 1.0  # both scored on the same anchors
    with pytest.raises(goenv.InvalidArgument, match="budgets"):
        goenv.benchmark.evaluate("heft", QUICK, budget=2)
    with pytest.raises(goenv.InvalidArgument, match="unknown baseline"):
        goenv.benchmark.evaluate("no-such-search", QUICK)


@pytest.mark.parametrize("benchmark, heuristic", [("scheduling-transfer-v0", "critical-path"),
                                                  ("joint-transfer-v0", "best-heuristic")])
def test_scheduling_and_joint_decisions_are_recorded_per_head_and_validate(benchmark, heuristic):
    results = goenv.benchmark.evaluate(heuristic, benchmark, budget=16)
    assert results.summary["failed"] == 0 and results.summary["iqm"] > 0.5  # well above the default
    record = results.records[0]
    heads = decisions.decode(record["decisions"], 1121, record["case"])  # inception: 1,121 nodes
    assert sorted(heads) == sorted(decisions.heads_of(goenv.benchmark.get(benchmark).cases[0].task))
    goenv.benchmark.validate(results)


def test_a_goenv_agent_decides_greedily_at_one_call_and_searches_within_the_budget():
    agent = goenv.agents.GO(hidden=16, seed=0, env=goenv.make("placement-transformer-xl-2"))
    one_shot = goenv.benchmark.evaluate(agent, QUICK, budget=1)
    searched = goenv.benchmark.evaluate(agent, QUICK, budget=16)
    assert all(r["simulator_calls"] == 1 and not r["failed"] for r in one_shot.records)
    assert all(r["simulator_calls"] <= 16 and not r["failed"] for r in searched.records)
    assert all(r["score"] >= -1e-12 for r in searched.records)  # its search starts from the default
    goenv.benchmark.validate(searched)


def test_a_stable_baselines3_model_is_evaluated_through_its_policy():
    pytest.importorskip("stable_baselines3")
    from stable_baselines3 import PPO

    import goenv.integrations.sb3

    env = goenv.make("placement-transformer-xl-2")
    model = PPO(goenv.integrations.sb3.GraphPolicy, env, n_steps=8, batch_size=8, seed=0,
                policy_kwargs=goenv.integrations.sb3.policy_kwargs(env))
    results = goenv.benchmark.evaluate(model, QUICK, budget=1)
    assert results.method == "PPO"
    for record in results.records:  # SB3 fixes its action space's size: the other graph's runs fail, said so
        if record["case"].startswith("placement:transformer-xl-2"):
            assert not record["failed"] and record["simulator_calls"] == 1
        else:
            assert "decides 213 values per step" in record["failed"] and "540 nodes" in record["failed"]


def test_an_rllib_module_is_evaluated_greedily_on_graphs_of_any_size():
    pytest.importorskip("ray.rllib")
    from ray.rllib.core.rl_module.rl_module import RLModuleSpec

    import goenv.integrations.rllib

    env = goenv.make("placement-transformer-xl-2")
    module = RLModuleSpec(module_class=goenv.integrations.rllib.GraphModule, observation_space=env.observation_space,
                          action_space=env.action_space).build()
    results = goenv.benchmark.evaluate(module, QUICK, budget=1)
    assert results.method == "GraphModule" and results.summary["failed"] == 0
    assert all(r["simulator_calls"] == 1 for r in results.records)


def test_a_policy_that_raises_or_returns_garbage_fails_its_case_and_the_run_goes_on():
    def flaky(obs):
        if obs["node_features"].shape[0] == 540:
            raise RuntimeError("boom")
        return in_force(obs)

    results = goenv.benchmark.evaluate(flaky, QUICK, budget=1)
    failed = [r for r in results.records if r["failed"]]
    assert len(failed) == 3 and all("boom" in r["failed"] and r["score"] == 0 for r in failed)
    assert results.summary["failed"] == 3
    goenv.benchmark.validate(results)  # a failed run stands as the default and validates

    wrong_length = goenv.benchmark.evaluate(lambda obs: np.zeros(3, dtype=int), QUICK, budget=1)
    assert wrong_length.summary["failed"] == wrong_length.summary["runs"]

    def masked_out(obs):  # a device the mask forbids: the env rejects it and charges the call
        return np.full(obs["node_features"].shape[0], 99)

    rejected = goenv.benchmark.evaluate(masked_out, QUICK, budget=1)
    assert all(r["simulator_calls"] <= 1 for r in rejected.records)


def test_results_files_round_trip_and_validate(local_search, tmp_path):
    path = tmp_path / "ls.json"
    local_search.save(path)
    with pytest.raises(goenv.InvalidArgument, match="exists"):
        local_search.save(path)
    checked = goenv.benchmark.validate(path)
    assert checked.summary["iqm"] == pytest.approx(local_search.summary["iqm"])
    assert checked.made_by["goenv"] == goenv.__version__


def _tampered(local_search, tmp_path, change) -> str:
    document = json.loads(json.dumps({"format": 1, "benchmark": local_search.benchmark, "method": "x",
                                      "budget": local_search.budget, "made_by": local_search.made_by,
                                      "summary": local_search.summary, "records": local_search.records}))
    change(document)
    path = tmp_path / "tampered.json"
    path.write_text(json.dumps(document))
    return str(path)


@pytest.mark.parametrize("change, message", [
    (lambda d: d["records"][0].update(runtime=d["records"][0]["runtime"] * 0.9), "simulates to"),
    (lambda d: d["records"][1].update(score=2.0), "score"),
    (lambda d: d["records"][2].update(simulator_calls=17), "budget"),
    (lambda d: d["records"].pop(), "missing"),
    (lambda d: d["records"].append(d["records"][0]), "repeated"),
    (lambda d: d.update(benchmark="placement-quick-v9"), "unknown benchmark"),
    (lambda d: d.update(budget=256), "budget 256"),
    (lambda d: d["records"][0].update(decisions=decisions.encode({"placement": np.zeros(5, dtype=int)})), "213 values"),
    (lambda d: d["records"][0].update(decisions={"placement": "not base64!"}), "not encoded"),
    (lambda d: d.pop("records"), "records"),
])
def test_a_tampered_results_file_is_refused_naming_the_case(local_search, tmp_path, change, message):
    path = _tampered(local_search, tmp_path, change)
    with pytest.raises((goenv.InvalidArgument, goenv.NotFound), match=message):
        goenv.benchmark.validate(path)


def test_a_truncated_results_file_is_refused(local_search, tmp_path):
    path = tmp_path / "ls.json"
    local_search.save(path)
    path.write_bytes(path.read_bytes()[:-100])
    with pytest.raises(goenv.InvalidArgument, match="not a valid results file"):
        goenv.benchmark.validate(path)


def test_decisions_decode_no_more_than_the_graph_holds():
    packed = decisions.encode({"placement": np.zeros(10**6, dtype=int)})  # a small text, a million values
    with pytest.raises(goenv.InvalidArgument, match="213 values"):
        decisions.decode(packed, 213, "case")


def test_the_aggregates_are_the_interquartile_mean_and_mean_with_bootstrap_intervals():
    matrix = np.random.default_rng(0).random((8, 5))
    summary = scores.aggregate(matrix)
    flat = np.sort(matrix.ravel())
    assert summary["iqm"] == pytest.approx(flat[10:30].mean())
    assert summary["mean"] == pytest.approx(matrix.mean())
    for name in ("iqm", "mean"):
        low, high = summary[f"{name}_ci"]
        assert low < summary[name] < high
    assert scores.normalized(2.0, 2.0, 1.0) == 0 and scores.normalized(1.0, 2.0, 1.0) == 1
    assert scores.geometric_mean([2.0, 0.5]) == pytest.approx(1.0)


def test_the_cli_runs_validates_and_makes_the_leaderboard(tmp_path, capsys):
    out = tmp_path / "heft.json"
    assert cli(["benchmark", "run", "heft", QUICK, "--budget", "1", "--out", str(out), "--no-progress"]) == 0
    assert cli(["benchmark", "run", "heft", QUICK, "--budget", "1", "--out", str(out), "--no-progress"]) == 2
    assert "--overwrite" in capsys.readouterr().err
    assert cli(["benchmark", "validate", str(out), "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["runs"] == 6
    png = tmp_path / "board.png"
    assert cli(["benchmark", "leaderboard", str(tmp_path), "--plot", str(png), "--benchmark", QUICK]) == 0
    assert "| heft | 1 |" in capsys.readouterr().out and png.stat().st_size > 1000
    assert cli(["benchmark", "run", "no.such.module:policy", QUICK]) == 2
    assert cli(["benchmark", "list"]) == 0


def test_the_leaderboard_orders_rows_by_score(local_search):
    heft = goenv.benchmark.evaluate("heft", QUICK, budget=1)
    table = leaderboard.markdown([heft, local_search])
    rows = [line for line in table.splitlines() if line.startswith("| heft") or line.startswith("| local-search")]
    first = "heft" if heft.summary["iqm"] > local_search.summary["iqm"] else "local-search"
    assert rows[0].startswith(f"| {first}")


def test_a_search_steps_the_case_env_and_is_stopped_at_the_budget():
    steps = []

    def sample_forever(env, seed):  # never stops by itself
        obs, _ = env.reset(seed=seed)
        while True:
            steps.append(1)
            obs, _, terminated, truncated, _ = env.step(env.action_space.sample())
            if terminated or truncated:  # one-shot episodes: one decision each
                obs, _ = env.reset()
            if len(steps) > 10**6:
                raise AssertionError("the harness did not stop the search")

    results = goenv.benchmark.evaluate(goenv.benchmark.Search(sample_forever), QUICK, budget=16)
    assert all(r["simulator_calls"] == 16 and not r["failed"] for r in results.records)
    assert len(steps) == 17 * len(results.records)  # the 17th step of each run is refused
    goenv.benchmark.validate(results)

    def gives_up(env, seed):
        raise ValueError("no idea")

    failed = goenv.benchmark.evaluate(goenv.benchmark.Search(gives_up), QUICK, budget=16)
    assert failed.summary["failed"] == failed.summary["runs"] and failed.method == "gives_up"
    with pytest.raises(goenv.InvalidArgument, match="Search takes a function"):
        goenv.benchmark.Search("local-search")
    with pytest.raises(goenv.InvalidArgument, match="evaluate\\(\\) takes"):
        goenv.benchmark.evaluate(42, QUICK)


def test_a_zoo_case_is_built_once_and_refused_when_its_graph_is_not_the_pinned_one(monkeypatch):
    from goenv.datasets.zoo.dataset import structural_hash

    benchmark = goenv.benchmark.get("placement-zoo-v0")
    assert len(benchmark.cases) == len(catalog.ZOO_CASES) and benchmark.train_on.startswith("the zoo's train split")
    case = next(c for c in benchmark.cases if c.entry.model_type == "vit")
    builds = []
    chain = goenv.Graph.from_arrays(np.array([[0, 1], [1, 2]]), flops=np.full(3, 1e9), output_bytes=np.full(3, 1e6),
                                    op_type=["MatMul"] * 3, name="not-vit")
    monkeypatch.setattr(type(case.entry), "load", lambda entry, **limits: builds.append(entry) or chain)
    catalog._pinned_zoo_graph.cache_clear()
    try:
        with pytest.raises(goenv.InvalidGraph, match="the benchmark pins 89df4cb9f52590bd"):
            case.make()
        monkeypatch.setattr(catalog, "ZOO_CASES", {"vit": structural_hash(chain)})
        assert case.make().unwrapped.graph.num_nodes == case.make().unwrapped.graph.num_nodes == 3
        assert len(builds) == 2  # the refused build, then one build for every later make()
    finally:
        catalog._pinned_zoo_graph.cache_clear()


def test_the_plot_draws_a_methods_points_in_range_and_names_the_rest():
    points = [(16, -1.4, -1.5, -1.3), (256, 0.05, -0.1, 0.17)]
    drawn, below = leaderboard.split_below(points, -0.5)
    assert drawn == [(256, 0.05, -0.1, 0.17)] and below == [(16, -1.4)]


def test_references_take_only_better_decisions_from_a_results_file(local_search, tmp_path, monkeypatch, capsys):
    import shutil

    copy = tmp_path / "references.json"
    shutil.copy(references.PATH, copy)
    monkeypatch.setattr(references, "PATH", copy)  # the committed anchors stay untouched
    references.load.cache_clear()
    try:
        out = tmp_path / "ls.json"
        local_search.save(out)
        assert cli(["benchmark", "references", "--add", str(out)]) == 0
        assert "references improved: none" in capsys.readouterr().out  # 16 calls beat no committed best
        assert cli(["benchmark", "references"]) == 2
        assert "--write" in capsys.readouterr().err
    finally:
        references.load.cache_clear()
