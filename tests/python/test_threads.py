"""Issue 23: one env or vector env used from several threads at once serializes (docs/architecture.md):
every step gets its own result, never another thread's, a zero runtime or a crash; and
num_threads is bounded by one limit (goenv._core.MAX_THREADS) with a clear error."""

from __future__ import annotations

import threading
import time

import numpy as np
import pytest

import goenv
from goenv import _core
from helpers import require_agents

ENV_ID = "joint-transformer-xl-2"  # three heads, colocation groups: every part of a step is exercised
THREADS, STEPS, POOL = 4, 120, 6
DEADLINE_S = 120


def _outcome(info: dict, k: int | None = None) -> tuple:
    """(rejected, runtime): the runtime of the step's own decision, adopted or not."""
    if k is None:
        rejected = "rejected_runtime" in info
        return rejected, float(info["rejected_runtime"] if rejected else info["runtime"])
    rejected = not np.isnan(info["rejected_runtime"][k])
    return rejected, float(info["rejected_runtime"][k] if rejected else info["runtime"][k])


def _action_pools(env: goenv.GraphEnv, seed: int) -> list[list[dict]]:
    rng = np.random.default_rng(seed)
    n = env.core.num_nodes
    return [[{head: rng.integers(0, choices, n) for head, choices in zip(env.core.heads, env.core.head_choices)}
             for _ in range(POOL)] for _ in range(THREADS)]


def _replayed(pools) -> list[list[tuple]]:
    """Each action's outcome and node_state on a fresh env (a step's result depends only on its
    whole-graph decision, whatever came before)."""
    results = []
    for pool in pools:
        row = []
        for action in pool:
            fresh = goenv.make(ENV_ID, horizon=1)
            fresh.reset(seed=0)
            obs, _, _, _, info = fresh.step(action)
            row.append((_outcome(info), obs["node_state"]))
        results.append(row)
    return results


def _run(workers) -> list[str]:
    """Runs the thread functions, bounded in time; returns every failure they recorded."""
    failures: list[str] = []
    threads = [threading.Thread(target=w, args=(failures,), daemon=True) for w in workers]
    started = time.monotonic()
    for t in threads:
        t.start()
    for t in threads:
        t.join(max(1.0, DEADLINE_S - (time.monotonic() - started)))
    assert not any(t.is_alive() for t in threads), "a thread hung (deadlock?)"
    return failures


def test_threads_stepping_one_env_each_get_their_own_step():
    env = goenv.make(ENV_ID, horizon=10**6)
    env.reset(seed=0)
    pools = _action_pools(env, 1)
    expected = _replayed(pools)
    assert any(not e[0][0] for row in expected for e in row), "every sampled decision was rejected"
    state = env.get_state()

    def stepper(t):
        def work(failures):
            for k in range(STEPS):
                obs, reward, terminated, _, info = env.step(pools[t][k % POOL])
                (invalid, runtime), node_state = expected[t][k % POOL]
                if _outcome(info) != (invalid, runtime) or terminated or not np.isfinite(reward):
                    failures.append(f"thread {t} step {k}: {_outcome(info)}, replay {(invalid, runtime)}")
                elif not invalid and not np.array_equal(obs["node_state"], node_state):
                    failures.append(f"thread {t} step {k}: the observation is not this step's")
        return work

    def meddler(failures):  # everything else that reads or changes the episode, meanwhile
        for k in range(STEPS):
            try:
                [lambda: env.reset(seed=k), lambda: env.set_state(state), env.get_state, env.render,
                 lambda: env.core.placement, lambda: env.core.last_result, lambda: pickle_round_trip(env),
                 lambda: goenv.baselines.solve(env, "single")][k % 8]()
            except Exception as error:  # noqa: BLE001 - any error is a failure here
                failures.append(f"meddler call {k}: {type(error).__name__}: {error}")

    failures = _run([stepper(t) for t in range(THREADS)] + [meddler])
    assert not failures, failures[:5]


def pickle_round_trip(env):
    import pickle

    return pickle.loads(pickle.dumps(env))


def test_threads_stepping_one_vector_env_each_get_their_own_batch():
    num_envs = 3
    venv = goenv.make_vec(ENV_ID, num_envs=num_envs, num_threads=2, horizon=10**6)
    try:
        venv.reset(seed=0)
        single = goenv.make(ENV_ID)
        pools = _action_pools(single, 2)
        expected = _replayed(pools)
        batches = [[{head: np.stack([pools[t][(k + i) % POOL][head] for i in range(num_envs)])
                     for head in single.core.heads} for k in range(POOL)] for t in range(THREADS)]
        state = venv.get_state()

        def stepper(t):
            def work(failures):
                for k in range(STEPS):
                    _, _, _, _, info = venv.step(batches[t][k % POOL])
                    for i in range(num_envs):
                        want = expected[t][(k % POOL + i) % POOL][0]
                        if _outcome(info, i) != want:
                            failures.append(f"thread {t} step {k} env {i}: {_outcome(info, i)}, replay {want}")
            return work

        def meddler(failures):
            for k in range(STEPS // 4):
                try:
                    [lambda: venv.set_state(state), venv.get_state, lambda: venv.reset(seed=k),
                     lambda: setattr(venv, "num_threads", 1 + k % 2)][k % 4]()
                except Exception as error:  # noqa: BLE001
                    failures.append(f"meddler call {k}: {type(error).__name__}: {error}")

        failures = _run([stepper(t) for t in range(THREADS)] + [meddler])
        assert not failures, failures[:5]
    finally:
        venv.close()


def test_vector_env_made_from_an_env_another_thread_steps():
    env = goenv.make(ENV_ID, horizon=10**6)
    env.reset(seed=0)
    action = _action_pools(env, 3)[0][0]
    stop = threading.Event()

    def stepper(failures):
        while not stop.is_set():
            env.step(action)

    thread = threading.Thread(target=stepper, args=([],), daemon=True)
    thread.start()
    try:
        for _ in range(20):
            goenv.make_vec(env, num_envs=2, num_threads=1).close()
    finally:
        stop.set()
        thread.join(30)


# -- num_threads: one limit ------------------------------------------------------

def test_num_threads_is_bounded_by_max_threads():
    assert _core.MAX_THREADS == 1024
    for bad in (0, -1, 2_000_000_000, _core.MAX_THREADS + 1):
        with pytest.raises(goenv.InvalidArgument, match=r"num_threads must be (an integer )?in \[1, 1024\]"):
            goenv.make_vec("placement-transformer-xl-2", num_envs=2, num_threads=bad)
    for bad in (2**70, True, 2.5, "4"):
        with pytest.raises(goenv.InvalidArgument, match="num_threads"):
            goenv.make_vec("placement-transformer-xl-2", num_envs=2, num_threads=bad)
    venv = goenv.make_vec("placement-transformer-xl-2", num_envs=2, num_threads=_core.MAX_THREADS)
    try:
        venv.reset(seed=0)
        with pytest.raises(goenv.InvalidArgument, match="1024"):
            venv.num_threads = 2_000_000_000
        with pytest.raises(goenv.InvalidArgument, match="num_threads"):
            venv.core.num_threads = 2**64
        assert venv.num_threads == _core.MAX_THREADS  # unchanged by the refused values
    finally:
        venv.close()


def test_dataset_workers_are_bounded_by_max_threads(tmp_path):
    for bad in (0, 2_000_000_000, True, 2.5):
        with pytest.raises(goenv.InvalidArgument, match=r"workers must be an integer in \[1, 1024\]"):
            goenv.datasets.generate("random-layered", 2, tmp_path / "ds", workers=bad, progress=False)


def test_threads_using_one_agent_serialize(tmp_path):
    # One agent from several threads (search, acting, training, loading, weights) serializes
    # like an env: every call sees a whole policy (a load never frees what another call reads),
    # and a search's result is its own, the same as alone.
    agents = require_agents()  # skips where goenv._agents is not built (the sanitizer run)
    env = goenv.make("placement-transformer-xl-2", horizon=2)
    observation, _ = env.reset(seed=0)
    agent = agents.GO(env, seed=0, hidden=16, num_threads=1, envs_per_graph=2)
    path = tmp_path / "same.agent"
    agent.save(path)  # loading it again keeps the same policy: a search's result stays comparable
    alone = agent.optimize(env, budget=8, seed=3)["runtime"]
    errors, searched = [], []

    def run(body):
        try:
            body()
        except Exception as error:  # noqa: BLE001 - reported below
            errors.append(f"{type(error).__name__}: {error}")

    def searching():
        for _ in range(10):
            searched.append(agent.optimize(env, budget=8, seed=3)["runtime"])

    def loading():
        for _ in range(40):
            agent.load(path)

    def acting():
        for _ in range(40):
            agent.act(observation)
            assert np.isfinite(agent.weights).all()

    threads = [threading.Thread(target=run, args=(body,)) for body in (searching, loading, acting, loading)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(DEADLINE_S)
    assert not any(thread.is_alive() for thread in threads) and errors == []
    assert searched == [alone] * 10


def test_agent_weights_outlive_a_load(tmp_path):
    # agent.weights is a live view of the policy until a load replaces the parameters; the
    # array then keeps the values it had (it owns their storage), never freed memory.
    agents = require_agents()  # skips where goenv._agents is not built (the sanitizer run)
    env = goenv.make("placement-transformer-xl-2")
    agent, other = agents.GO(env, seed=0, hidden=16), agents.GO(env, seed=1, hidden=16)
    other.save(tmp_path / "other.agent")
    view, before = agent.weights, np.array(agent.weights)
    agent.load(tmp_path / "other.agent")
    junk = [np.full(100_000, 7.0) for _ in range(20)]  # would reuse freed memory
    assert np.array_equal(view, before) and not np.array_equal(view, agent.weights) and len(junk) == 20
    assert np.array_equal(agent.weights, other.weights) and not view.flags.writeable


def test_a_step_while_another_thread_imports_numpy_ma_is_not_an_error():
    """A first render imports matplotlib, hence numpy.ma: while that import is under way the
    module is in sys.modules without its MaskedArray, and a step in another thread must not fail
    on it (it looked the class up and raised AttributeError). Checked in a fresh process, the
    half-imported module stood in for by an empty one."""
    import subprocess
    import sys
    import textwrap

    script = textwrap.dedent("""
        import sys, types
        import numpy as np
        import goenv
        real = sys.modules.pop("numpy.ma", None)
        sys.modules["numpy.ma"] = types.ModuleType("numpy.ma")  # as during its import: no MaskedArray yet
        env = goenv.make("placement-transformer-xl-2", horizon=10)
        env.reset(seed=0)
        env.step(np.zeros(env.core.num_nodes, int))
        goenv.simulate(env.graph, env.cluster, placement=np.zeros(env.core.num_nodes, int))
        del sys.modules["numpy.ma"]
        if real is not None:
            sys.modules["numpy.ma"] = real
        import importlib
        ma = importlib.import_module("numpy.ma")
        try:
            env.step(ma.masked_array(np.zeros(env.core.num_nodes, int)))
        except goenv.InvalidAction as e:
            assert "masked array" in str(e)
            print("refused")
    """)
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0 and done.stdout.strip() == "refused", done.stderr
