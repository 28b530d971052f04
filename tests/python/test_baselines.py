"""goenv.baselines: listing, solving (every method on a small graph and on
Inception), the table, and the errors bad names and wrong tasks raise."""

from __future__ import annotations

import numpy as np
import pytest

import goenv
from goenv import baselines

ALL = ["best-heuristic", "critical-path", "expert", "fifo", "genetic", "heft", "heft-rank", "local-search", "m-etf",
       "m-topo", "metis", "none", "random-search", "round-robin", "single", "xla"]
SEARCHES = ["random-search", "local-search", "genetic"]


@pytest.fixture(scope="module")
def placement_env():
    return goenv.make("placement-inception")


def small_graph():
    """A fork-join graph: 6 parallel chains of 2 matmuls, cheap tensors."""
    matmul = goenv.op_type_names().index("MatMul")
    edges = [(0, 2 + 2 * i) for i in range(6)] + [(2 + 2 * i, 3 + 2 * i) for i in range(6)] + \
            [(3 + 2 * i, 1) for i in range(6)]
    n = 14
    return goenv.Graph.from_arrays(np.array(edges).T, flops=np.full(n, 2e11), output_bytes=np.full(n, 4096),
                                   param_bytes=np.zeros(n, dtype=np.int64), op_type=np.full(n, matmul))


def test_list_and_info():
    assert baselines.list() == ALL
    assert "heft" not in baselines.list("scheduling")
    assert set(baselines.list("scheduling")) == {"fifo", "critical-path", "heft-rank", "best-heuristic", "random-search",
                                                 "local-search", "genetic"}
    assert baselines.list("joint") == ALL
    heft = baselines.info("heft")
    assert heft["name"] == "heft" and heft["heads"] == ["placement"] and heft["description"]
    assert baselines.info("local-search")["heads"] == ["placement", "priority", "fusion"]


def test_unknown_names_raise_not_found(placement_env):
    with pytest.raises(goenv.NotFound, match="heft"):
        baselines.solve(placement_env, "no-such-method")
    with pytest.raises(KeyError):
        baselines.info("no-such-method")
    with pytest.raises(goenv.NotFound):
        baselines.list("no-such-task")


@pytest.mark.parametrize("disabled", [False, True])
def test_progress_bars_follow_tqdm_disable(disabled, tmp_path):
    """A bar asked for (progress=True) is tqdm's with its own defaults, so TQDM_DISABLE=1 turns it
    off (an explicit disable=False overrode the variable); progress=False draws none either way."""
    import os
    import subprocess
    import sys

    script = ("import goenv, sys; from goenv import baselines\n"
              "baselines.table('placement-transformer-xl-2', methods='single', progress=True)\n"
              "baselines.table('placement-transformer-xl-2', methods='expert', progress=False)\n"
              "goenv.datasets.generate('random-series-parallel', 2, sys.argv[1], params={'num_nodes': 20}, progress=True)\n")
    env = {k: v for k, v in os.environ.items() if not k.startswith("TQDM_")}
    if disabled:
        env["TQDM_DISABLE"] = "1"
    err = subprocess.run([sys.executable, "-c", script, str(tmp_path / "d")], env=env, capture_output=True, text=True,
                         check=True).stderr
    assert ("baselines on placement-transformer-xl-2" in err) is not disabled, err
    assert ("generate random-series-parallel" in err) is not disabled, err
    assert "expert" not in err


def test_an_env_id_a_single_method_and_a_bad_name_are_taken_as_meant():
    # As the agents' methods: an env id is an env; one method name is one method (table iterated
    # its letters: "unknown baseline 'h'"); a name that is no string is a clear error.
    env_id = "placement-transformer-xl-2"
    assert baselines.solve(env_id, "heft")["runtime"] == baselines.solve(goenv.make(env_id), "heft")["runtime"]
    assert baselines.lower_bound(env_id) == baselines.lower_bound(goenv.make(env_id))
    assert [row["method"] for row in baselines.table(env_id, methods="heft", progress=False)] == ["heft"]
    for bad in (None, 3):
        with pytest.raises(goenv.InvalidArgument, match="a baseline's name must be a string"):
            baselines.solve(env_id, bad)
        with pytest.raises(goenv.InvalidArgument, match="a baseline's name must be a string"):
            baselines.table(env_id, methods=[bad], progress=False)
    with pytest.raises(TypeError, match="an env id, a GraphEnv or its core"):
        baselines.solve(3, "heft")


def test_placement_baseline_on_scheduling_env_raises_value_error():
    env = goenv.make("scheduling-inception")
    with pytest.raises(ValueError, match="decides placement"):
        baselines.solve(env, "heft")
    with pytest.raises(ValueError):
        baselines.solve(env, "fifo", budget=-1)


@pytest.mark.parametrize("keywords, message", [
    ({"budget": "10"}, r"budget must be an integer in \[0, 2\*\*63\)"), ({"budget": 10.5}, r"budget must be an integer in \[0, 2\*\*63\)"),
    ({"budget": True}, r"budget must be an integer in \[0, 2\*\*63\)"), ({"budget": None}, r"budget must be an integer in \[0, 2\*\*63\)"),
    ({"budget": 2**63}, r"budget must be an integer in \[0, 2\*\*63\)"), ({"seed": -1}, r"seed must be an integer in \[0, 2\*\*64\)"),
    ({"seed": 2**64}, "seed must be an integer"), ({"seed": 1.0}, "seed must be an integer"),
])
def test_solve_refuses_budgets_and_seeds_that_are_not_integers_in_range(placement_env, keywords, message):
    # Not coerced with int(): "10", 10.5 and True are not budgets.
    with pytest.raises(goenv.InvalidArgument, match=message):
        baselines.solve(placement_env, "random-search", **keywords)
    assert baselines.solve(placement_env, "random-search", budget=np.int64(3), seed=np.uint64(2**64 - 1))[
        "simulator_calls"] == 3


def test_table_checks_every_name_before_running_any(placement_env, monkeypatch):
    ran = []
    monkeypatch.setattr(baselines, "solve", lambda *args, **kwargs: ran.append(args))
    with pytest.raises(goenv.NotFound, match="unknown baseline ''"):
        baselines.table(placement_env, ["heft", ""], progress=False)
    with pytest.raises(goenv.InvalidArgument, match="seed"):
        baselines.table(placement_env, ["heft"], seed=-2, progress=False)
    assert ran == []


@pytest.mark.parametrize("task", ["placement", "scheduling", "fusion", "joint"])
def test_every_method_on_a_small_graph(task):
    env = goenv.GraphEnv.from_graph(task, small_graph(), "4xgpu-nvlink")
    n = env.core.num_nodes
    for name in baselines.list(task):
        r = baselines.solve(env, name, budget=15, seed=1)
        assert r["method"] == name
        for key, dtype in (("placement", np.int32), ("priority", np.float64), ("fusion", np.int32)):
            assert r[key].shape == (n,) and r[key].dtype == dtype
        assert 0 <= r["simulator_calls"] <= 15
        assert r["runtime"] > 0 and r["seconds"] >= 0
        if not (r["oom"] or r["invalid"]):  # fusion and joint: the bound with fusion
            assert r["runtime"] >= r["lower_bound"] * (1 - 1e-9)
        # The action steps the env (priorities quantized to levels) and gives the same runtime, or close.
        env.reset(seed=0)
        _, _, _, _, info = env.step(r["action"])
        if task != "scheduling" and task != "joint":
            assert info["runtime"] == pytest.approx(r["runtime"])
        else:
            assert info["runtime"] == pytest.approx(r["runtime"], rel=0.25)


def test_solve_accepts_the_core_and_leaves_the_episode_alone(placement_env):
    placement_env.reset(seed=0)
    before = placement_env.core.placement.copy()
    a = baselines.solve(placement_env, "heft")
    b = baselines.solve(placement_env.core, "heft")
    np.testing.assert_array_equal(a["placement"], b["placement"])
    np.testing.assert_array_equal(placement_env.core.placement, before)
    assert a["speedup"] == pytest.approx(a["initial_runtime"] / a["runtime"])
    assert a["lower_bound"] == pytest.approx(baselines.lower_bound(placement_env))
    assert a["simulator_calls"] == 0


def test_search_is_deterministic_and_within_budget(placement_env):
    a = baselines.solve(placement_env, "local-search", budget=20, seed=3)
    b = baselines.solve(placement_env, "local-search", budget=20, seed=3)
    assert a["simulator_calls"] == 20
    np.testing.assert_array_equal(a["placement"], b["placement"])
    assert a["runtime"] == b["runtime"]
    assert a["runtime"] <= a["initial_runtime"]


@pytest.mark.parametrize("name", SEARCHES)
def test_search_curve_is_the_running_best_of_exactly_its_budget(placement_env, name):
    for budget in (0, 1, 37):
        r = baselines.solve(placement_env, name, budget=budget, seed=2)
        curve = r["curve"]
        assert r["simulator_calls"] == budget
        assert isinstance(curve, np.ndarray) and curve.dtype == np.float64 and curve.shape == (budget,)
        if budget:
            assert np.all(np.diff(curve) <= 0)
            assert curve[0] == r["initial_runtime"]  # the start is simulated first
            assert curve[-1] == r["runtime"]
    assert baselines.solve(placement_env, "heft")["curve"].shape == (0,)


@pytest.mark.parametrize("env_id", ["placement-transformer-xl-2", "joint-inception"])
def test_local_search_never_gets_worse_with_more_budget(env_id):
    env = goenv.make(env_id)
    runs = [baselines.solve(env, "local-search", budget=budget, seed=1) for budget in (10, 128, 300, 1000)]
    for shorter, longer in zip(runs, runs[1:]):
        assert longer["runtime"] <= shorter["runtime"]
        n = shorter["simulator_calls"]
        np.testing.assert_array_equal(longer["curve"][:n], shorter["curve"])  # the shorter run is its prefix


@pytest.mark.parametrize("name", SEARCHES)
def test_search_never_ends_above_its_start(name):
    found = baselines.solve(goenv.make("placement-transformer-xl-2"), "local-search", budget=500, seed=7)
    env = goenv.make("placement-transformer-xl-2", placement=found["placement"])
    assert found["runtime"] < baselines.solve(env, "best-heuristic")["runtime"]  # a start the heuristics do not reach
    for budget in (1, 20):
        r = baselines.solve(env, name, budget=budget, seed=0)
        assert r["initial_runtime"] == pytest.approx(found["runtime"])
        assert r["runtime"] <= found["runtime"]
    # From an episode's decisions (after a step), too.
    env = goenv.make("placement-transformer-xl-2")
    env.reset(seed=0)
    _, _, _, _, info = env.step(found["placement"].astype(np.int64))
    r = baselines.solve(env, name, budget=5, seed=0)
    assert r["runtime"] <= info["runtime"]


def test_genetic_beats_random_search_at_equal_budget():
    for env_id in ("placement-transformer-xl-2", "placement-inception"):
        env = goenv.make(env_id)
        median = {name: np.median([baselines.solve(env, name, budget=300, seed=s)["runtime"] for s in range(3)])
                  for name in ("genetic", "random-search")}
        assert median["genetic"] < 0.98 * median["random-search"], env_id


def test_genetic_is_deterministic_per_seed(placement_env):
    a = baselines.solve(placement_env, "genetic", budget=60, seed=4)
    b = baselines.solve(placement_env, "genetic", budget=60, seed=4)
    np.testing.assert_array_equal(a["placement"], b["placement"])
    np.testing.assert_array_equal(a["curve"], b["curve"])
    assert a["runtime"] == b["runtime"]
    c = baselines.solve(placement_env, "genetic", budget=60, seed=5)
    assert not np.array_equal(a["curve"], c["curve"]) or not np.array_equal(a["placement"], c["placement"])


def test_table_and_format(placement_env):
    rows = baselines.table(placement_env, methods=["single", "heft", "metis", "random-search"], budget=5,
                           progress=False)
    assert [r["method"] for r in rows] == ["single", "heft", "metis", "random-search"]
    for r in rows:
        assert set(r) == {"method", "runtime_ms", "speedup", "lower_bound_ratio", "oom", "invalid",
                          "simulator_calls", "seconds"}
        assert r["lower_bound_ratio"] >= 1 - 1e-9
    assert rows[0]["speedup"] == pytest.approx(1.0)  # the initial placement is everything on device 0
    assert rows[3]["simulator_calls"] == 5
    text = baselines.format_table(rows)
    lines = text.splitlines()
    assert lines[0].split()[0] == "method" and len(lines) == 2 + len(rows)
    assert "heft" in text and "metis" in text


def test_table_defaults_to_the_tasks_methods_with_a_progress_bar(capsys):
    env = goenv.GraphEnv.from_graph("fusion", small_graph(), "2xgpu-nvlink")
    rows = baselines.table(env, budget=3)
    assert [r["method"] for r in rows] == baselines.list("fusion")
    assert "baselines on" in capsys.readouterr().err


def test_quantize_priorities():
    q = baselines.quantize_priorities([0.5, 2.0, 0.5, 1.0], 16)
    assert q.dtype == np.int64 and q.tolist() == [0, 15, 0, 7]
    with pytest.raises(ValueError):
        baselines.quantize_priorities([np.nan], 4)
    for levels in (2.5, 0, True, "4"):  # 2.5 was truncated to 2
        with pytest.raises(goenv.InvalidArgument, match="levels must be an integer"):
            baselines.quantize_priorities([0.5, 2.0], levels)


@pytest.mark.parametrize("seed", range(4))
def test_the_lower_bound_holds_under_any_fusion(seed):
    """A fused kernel pays one launch and touches only its boundary's bytes, so the unfused bound
    is no bound for fusion (a chain of 16 ReLUs: 5 us fused against an 80 us "bound"); the
    fusion tasks' bound holds for every decision, and never exceeds the unfused one."""
    relus = goenv.Graph.from_arrays(np.array([list(range(15)), list(range(1, 16))]), flops=[1e3] * 16,
                                    op_type=["Relu"] * 16)
    env = goenv.GraphEnv.from_graph("fusion", relus, "1xgpu")
    _, info = env.reset(seed=0)
    assert info["runtime"] >= info["lower_bound"] * (1 - 1e-9)
    assert info["lower_bound"] == goenv.lower_bound(relus, "1xgpu", fusion=True) < goenv.lower_bound(relus, "1xgpu")
    rng = np.random.default_rng(seed)
    graph = goenv.datasets.load("random-layered", num_layers=8, width=6, seed=seed)
    for task in ("fusion", "joint"):
        env = goenv.make(task, graph=graph, cluster="2xgpu-nvlink", horizon=64)
        _, info = env.reset(seed=seed)
        bound = info["lower_bound"]
        assert bound == baselines.lower_bound(env) <= goenv.lower_bound(graph, "2xgpu-nvlink")
        for _ in range(16):
            _, _, _, _, info = env.step(env.action_space.sample())
            if not info["invalid"]:
                assert info["runtime"] >= bound * (1 - 1e-9)
    assert baselines.lower_bound(goenv.make("placement", graph=graph)) == goenv.lower_bound(graph, "4xgpu-nvlink")
