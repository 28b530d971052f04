"""goenv.distributed on a local Ray (one session for the module, num_cpus=2).

Skipped when ray or goenv's agents are missing. Trainings are small: a
29-node branchy graph on 2 devices, PPO with hidden=32.
"""

from __future__ import annotations

import csv
import json
import os
import signal
import time

import numpy as np
import pytest

import goenv

ray = pytest.importorskip("ray")
from helpers import require_agents  # noqa: E402

agents = require_agents()

import goenv.distributed  # noqa: E402
from test_agents import placement_env  # noqa: E402

SMALL = dict(algorithm="ppo", hidden=32, envs_per_graph=8, num_threads=1, progress=False)


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    try:  # a zombie is gone for our purposes
        with open(f"/proc/{pid}/stat") as f:
            return f.read().split(") ")[1][0] != "Z"
    except OSError:
        return False


@pytest.fixture(scope="module", autouse=True)
def ray_session():
    assert not ray.is_initialized()
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False, configure_logging=False)
    node = ray._private.worker._global_node
    pids = [p.process.pid for processes in node.all_processes.values() for p in processes]
    yield
    ray.shutdown()
    deadline = time.monotonic() + 15
    while any(_alive(pid) for pid in pids) and time.monotonic() < deadline:
        time.sleep(0.2)
    assert not [pid for pid in pids if _alive(pid)], "Ray processes left behind"


def random_runtimes(env, n=200):
    rng = np.random.default_rng(0)
    out = []
    for _ in range(n):
        env.reset(seed=0)
        out.append(env.step(rng.integers(0, 2, env.core.num_nodes))[4]["runtime"])
    return np.array(out)


def test_one_worker_with_lag_zero_equals_agent_train():
    env = placement_env(seed=2)
    result = goenv.distributed.train([env], num_workers=1, total_steps=4 * 8, max_lag=0, seed=3, **SMALL)
    options = {k: v for k, v in SMALL.items() if k not in ("algorithm", "progress")}
    reference = agents.PPO(seed=3, **options)
    history = reference.train(env, 4 * 8, progress=False)
    np.testing.assert_array_equal(result.agent.weights, reference.weights)
    keys = ("step", "mean_reward", "policy_loss", "value_loss", "best_speedup")
    assert [[m[k] for k in keys] for m in result.history] == [[m[k] for k in keys] for m in history]
    assert all(m["lag_histogram"] == {0: 1} for m in result.history)


def test_two_workers_beat_random_placement_with_bounded_lag(tmp_path):
    env = placement_env(seed=1)
    baseline = random_runtimes(env)
    result = goenv.distributed.train([env], num_workers=2, total_steps=1600, max_lag=1, seed=0,
                                     log_dir=tmp_path, checkpoint=tmp_path / "ppo.agent", **SMALL)
    assert result.history[-1]["step"] >= 1600 and result.worker_restarts == 0
    greedy = result.agent.evaluate(env)[env.core.id]
    margin = 4 * baseline.std() / np.sqrt(len(baseline))
    assert greedy["runtime"] < baseline.mean() - margin, (greedy, baseline.mean())
    # Policy lag is reported and bounded by max_lag; both workers contributed.
    lags = [lag for m in result.history for lag in m["lag_histogram"]]
    assert lags and max(lags) <= 1
    rows = list(csv.DictReader(open(tmp_path / "distributed_metrics.csv")))
    assert len(rows) == len(result.history)
    made = json.loads((tmp_path / "distributed_run.json").read_text())  # what made the log
    assert made["made_by"]["goenv"] == goenv.__version__ and made["log"] == "distributed training"
    assert float(rows[-1]["samples_per_second"]) > 0 and float(rows[-1]["publish_seconds"]) >= 0
    loaded = agents.load(tmp_path / "ppo.agent")  # the learner's checkpoint, goenv.agents format
    np.testing.assert_array_equal(loaded.weights, result.agent.weights)


def test_training_goes_on_from_an_imitated_agent_as_agent_train_would():
    """agent= continues a given agent (its options, weights and kept teacher): with one worker and
    max_lag=0, bit-identical to that agent's own train() after the same imitation."""
    env = placement_env(seed=2)
    options = dict(seed=4, hidden=32, envs_per_graph=8, num_threads=1)

    def imitated():
        agent = agents.GO(**options)
        agent.imitate([env], steps=20, progress=False)
        return agent

    agent = imitated()
    imitated_weights = agent.weights.copy()
    result = goenv.distributed.train([env], num_workers=1, total_steps=2 * 8, max_lag=0, agent=agent,
                                     progress=False)
    assert result.agent is agent and not np.array_equal(agent.weights, imitated_weights)
    reference = imitated()
    history = reference.train(env, 2 * 8, progress=False)
    np.testing.assert_array_equal(agent.weights, reference.weights)
    assert [m["teacher_loss"] for m in result.history] == [m["teacher_loss"] for m in history]
    assert all(m["teacher_loss"] > 0 for m in history)  # the imitated teacher still anchors PPO
    with pytest.raises(ValueError, match="leave out hidden"):
        goenv.distributed.Trainer([env], num_workers=1, agent=agent, hidden=64)
    with pytest.raises(ValueError, match="'go' agent"):
        goenv.distributed.Trainer([env], "ppo", 1, agent=agent)


def test_a_workers_next_rollout_is_asked_for_before_the_update_unless_training_is_synchronous():
    """With max_lag > 0 the answering worker samples again while the learner updates (asked after
    the update, it idled through it, and 2 queued requests per worker made a third of the
    rollouts stale in docs/distributed.md's run); with max_lag=0 the request waits for the update's weights.
    The asynchronous case allows more lag than the run has updates: under load the worker's weight
    fetch may fall several versions behind, and what is tested here is when requests are sent, not
    how stale rollouts are dropped (the two-worker test bounds that)."""
    env = placement_env(seed=0)
    updates = 4
    for max_lag, in_flight in ((updates + 1, 1), (0, 0)):
        trainer = goenv.distributed.Trainer([env], "ppo", 1, max_lag=max_lag, seed=0, hidden=32, envs_per_graph=8,
                                            num_threads=1)
        assert trainer.requests_per_worker == 1  # the default: a second queued request only adds lag
        seen = []
        result = trainer.run(total_steps=updates * 8, callback=lambda metrics: seen.append(len(trainer._pending)),
                             progress=False)
        assert seen == [in_flight] * len(result.history) and result.dropped_rollouts == 0


def test_killed_and_crashed_workers_are_replaced_and_training_finishes():
    env = placement_env(seed=0)
    trainer = goenv.distributed.Trainer([env], "ppo", 2, max_lag=2, seed=0, hidden=32, envs_per_graph=8,
                                        num_threads=1)
    events = []

    def fail(metrics):
        if metrics["update"] == 2:  # ray.kill
            events.append("kill")
            ray.kill(trainer.workers[0], no_restart=True)
        elif metrics["update"] == 4:  # a crash inside the worker process (as a segfault in an env would)
            events.append("crash")
            os.kill(ray.get(trainer.workers[1].info.remote())["pid"], signal.SIGSEGV)

    result = trainer.run(total_steps=16 * 8, callback=fail, progress=False)
    assert events == ["kill", "crash"] and result.worker_restarts == 2
    assert result.history[-1]["step"] >= 128 and result.history[-1]["worker_restarts"] == 2
    assert trainer.workers == [None, None]  # stopped at the end

    fragile = goenv.distributed.Trainer([env], "ppo", 1, seed=0, hidden=32, envs_per_graph=8, num_threads=1,
                                        max_worker_restarts=0)
    with pytest.raises(RuntimeError, match="max_worker_restarts=0"):
        fragile.run(total_steps=10 * 8, callback=lambda m: ray.kill(fragile.workers[0]), progress=False)
    assert fragile.workers == [None]


def test_bad_addresses_are_refused_before_any_worker_starts():
    env = placement_env()
    with pytest.raises(goenv.InvalidArgument, match="bad Ray address"):
        goenv.distributed.train([env], num_workers=1, total_steps=8, address="no-port-here", **SMALL)
    with pytest.raises(goenv.InvalidArgument, match="checkpoint .*: a directory"):  # before Ray starts
        goenv.distributed.train([env], num_workers=1, total_steps=8, checkpoint=os.getcwd(), **SMALL)
    start = time.monotonic()
    with pytest.raises(ConnectionError, match="cannot reach a Ray cluster"):
        goenv.distributed.train([env], num_workers=1, total_steps=8, address="127.0.0.1:1", connect_timeout=5,
                                **SMALL)
    assert time.monotonic() - start < 30


def test_mismatched_env_specs_and_bad_options_are_refused():
    env = placement_env()
    scheduling = goenv.GraphEnv.from_graph("scheduling", env.core.graph, "2xgpu-pcie")
    with pytest.raises(goenv.InvalidArgument, match="does not fit the policy"):
        goenv.distributed.Trainer([env, scheduling], "ppo", 2, hidden=32)
    for workers in (0, 2.5, True):  # goenv.InvalidArgument, a ValueError
        with pytest.raises(goenv.InvalidArgument, match="num_workers"):
            goenv.distributed.Trainer([env], "ppo", workers)
    with pytest.raises(ValueError, match="algorithm"):
        goenv.distributed.Trainer([env], "dqn", 1)
    for options, message in (({"max_worker_restarts": -1}, "max_worker_restarts"),
                             ({"connect_timeout": -1}, "connect_timeout must be > 0"),
                             ({"max_lag": -1}, "max_lag"), ({"agent": "x"}, "agent must be a goenv.agents agent")):
        with pytest.raises(goenv.InvalidArgument, match=message):
            goenv.distributed.Trainer([env], None, 1, **options)
    with pytest.raises(KeyError):
        goenv.distributed.Trainer(["placement-nonexistent"], "ppo", 1)


def test_shares_cover_every_env():
    assert goenv.distributed.shares(5, 2) == [[0, 2, 4], [1, 3]]
    assert goenv.distributed.shares(1, 3) == [[0], [0], [0]]


def test_cli_train_with_workers(tmp_path, capsys):
    from goenv import cli

    assert cli.main(["train", "placement-random-layered", "--agent", "ppo", "--steps", "32", "--workers", "2",
                     "--log-dir", str(tmp_path), "--save", str(tmp_path / "a.agent")]) == 0
    out = capsys.readouterr().out
    assert "with 2 rollout workers" in out and "result:" in out and "best heuristic" in out
    assert (tmp_path / "distributed_metrics.csv").exists() and agents.load(tmp_path / "a.agent").steps_trained >= 32
    # --imitate runs in the learner's process, then the workers' PPO goes on from the imitated policy.
    assert cli.main(["train", "placement-random-layered", "--agent", "go", "--steps", "16", "--workers", "1",
                     "--imitate", "10", "--option", "hidden=32"]) == 0
    out = capsys.readouterr().out
    assert "imitation of" in out and "with 1 rollout workers" in out
    assert cli.main(["train", "placement-random-layered", "--workers", "1", "--address", "nowhere"]) == 2
    assert "bad Ray address" in capsys.readouterr().err


def test_registry_long_polls_and_hands_out_the_reference_unresolved():
    from goenv.distributed.registry import WeightRegistry

    registry = WeightRegistry.remote()
    assert ray.get(registry.latest.remote(-1)) is None
    waiting = registry.latest.remote(-1, 30.0)  # a worker asking before the first publish
    time.sleep(0.3)
    weights = np.arange(5, dtype=np.float32)
    ray.get(registry.publish.remote(0, [ray.put(weights)]))
    version, (reference,) = ray.get(waiting, timeout=10)  # woken by the publish, not the timeout
    assert version == 0 and isinstance(reference, ray.ObjectRef)
    np.testing.assert_array_equal(ray.get(reference), weights)
    start = time.monotonic()
    assert ray.get(registry.latest.remote(0, 0.3)) is None  # nothing newer: answers after the wait
    assert time.monotonic() - start >= 0.25
    ray.get(registry.publish.remote(0, [None]))  # versions only move forward
    assert ray.get(registry.stats.remote()) == {"version": 0, "publishes": 1, "answers": 1}
    ray.kill(registry)


def test_ray_cleanup_runs_to_its_end_through_ctrl_c(python_sigint):
    """A Ctrl-C during the trainer's cleanup (checkpoint, workers, Ray's shutdown) is held until
    the cleanup is done, then raised: cut short, Ray left its agents running after the driver."""
    from goenv.distributed.session import interrupts_held

    before = signal.getsignal(signal.SIGINT)
    done = []
    with pytest.raises(KeyboardInterrupt):
        with interrupts_held():
            os.kill(os.getpid(), signal.SIGINT)
            time.sleep(0.05)  # the handler runs here: held, not raised
            done.append("cleanup finished")
    assert done == ["cleanup finished"] and signal.getsignal(signal.SIGINT) is before
    with interrupts_held():  # nothing pressed: nothing raised
        done.append("again")
    assert done[-1] == "again"
    pressed = []  # a Ctrl-C held is given to the handler there was (goenv train's "stop after this update")
    previous = signal.signal(signal.SIGINT, lambda signum, frame: pressed.append(signum))
    try:
        with interrupts_held():
            os.kill(os.getpid(), signal.SIGINT)
            time.sleep(0.05)
            assert not pressed
        time.sleep(0.05)
        assert pressed == [signal.SIGINT]
        with interrupts_held():  # two held: both delivered (goenv train's second Ctrl-C stops at once)
            os.kill(os.getpid(), signal.SIGINT)
            time.sleep(0.05)
            os.kill(os.getpid(), signal.SIGINT)
            time.sleep(0.05)
        time.sleep(0.05)
        assert pressed == [signal.SIGINT] * 3
    finally:
        signal.signal(signal.SIGINT, previous)
