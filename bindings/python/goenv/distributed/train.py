"""goenv.distributed.train: PPO/GO over Ray rollout workers, one learner.

    result = goenv.distributed.train(["placement-inception"], algorithm="go", num_workers=2,
                                     total_steps=20_000, log_dir="runs/dist", checkpoint="go.agent")

The loop keeps `requests_per_worker` sample requests in flight per worker; each
answer is checked for policy lag, and every `batches_per_update` answers the
learner updates and publishes the new version once. Everything that can be
refused (options, env ids, mismatched env specs, a malformed address) is
refused before Ray starts; an unreachable address fails within the connect
timeout. A worker that dies is replaced (and counted); Ray is shut down at the
end, on an error, or on Ctrl-C, if this call started it.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field

from goenv._core import InvalidArgument
from goenv.agents import make_agent
from goenv.agents.env_arguments import env_arguments
from goenv.agents.registry import describe
from goenv.arguments import checked_int, checked_number
from goenv.progress import progress_bar
from goenv.distributed import session
from goenv.distributed.metrics import MetricsLog
from goenv.files import new_output_path


@dataclass
class TrainingResult:
    agent: object                 # the learner's goenv.agents agent
    history: list[dict] = field(default_factory=list)  # metrics of every update
    worker_restarts: int = 0
    dropped_rollouts: int = 0
    samples: int = 0              # env steps sampled by the workers (used or dropped)
    seconds: float = 0.0          # wall time from the first request to the last update

    @property
    def samples_per_second(self) -> float:
        return self.samples / self.seconds if self.seconds > 0 else 0.0


def shares(num_envs: int, num_workers: int) -> list[list[int]]:
    """Env indices each worker samples: strided when there are enough envs, else one each, wrapping."""
    if num_envs >= num_workers:
        return [list(range(i, num_envs, num_workers)) for i in range(num_workers)]
    return [[i % num_envs] for i in range(num_workers)]


def _positive_int(name: str, value) -> int:
    return checked_int(name, value, low=1)


class Trainer:
    """Distributed training, set up and validated; run() trains. Its `workers` (Ray actor
    handles, by index) and `restarts` are public so that callers can watch or test them."""

    def __init__(self, envs, algorithm: str | None = None, num_workers: int = 2, *, agent=None,
                 address: str | None = None,
                 max_lag: int = 2, requests_per_worker: int = 1, batches_per_update: int | None = None,
                 cpus_per_worker: float = 1.0, num_cpus: float | None = None, max_worker_restarts: int = 8,
                 connect_timeout: float = 25.0, **options) -> None:
        session.require_ray()
        if agent is not None:  # go on training it (e.g. after agent.imitate): its config is the options
            if options:
                raise InvalidArgument(f"agent= continues that agent with its own options; leave out "
                                      f"{', '.join(sorted(options))}")
            if not hasattr(agent, "collect") or not hasattr(agent, "config"):
                raise InvalidArgument(f"agent must be a goenv.agents agent, got {type(agent).__name__}")
            if algorithm is not None and algorithm != agent.config["algorithm"]:
                raise InvalidArgument(f"algorithm={algorithm!r} but the agent is a {agent.config['algorithm']!r} "
                                      f"agent")
            algorithm = agent.config["algorithm"]
        algorithm = "go" if algorithm is None else algorithm
        describe(algorithm)  # ValueError naming the choices
        self.num_workers = _positive_int("num_workers", num_workers)
        self.requests_per_worker = _positive_int("requests_per_worker", requests_per_worker)
        self.batches_per_update = _positive_int("batches_per_update", batches_per_update or self.num_workers)
        self.max_lag = checked_int("max_lag", max_lag)
        if self.max_lag == 0:
            self.requests_per_worker = 1  # a second request in flight could only bring stale samples
        self.cpus_per_worker = checked_number("cpus_per_worker", cpus_per_worker)
        self.connect_timeout = checked_number("connect_timeout", connect_timeout)
        if not self.cpus_per_worker > 0 or not self.connect_timeout > 0:
            raise InvalidArgument(f"cpus_per_worker and connect_timeout must be > 0, got {cpus_per_worker!r} and "
                                  f"{connect_timeout!r}")
        self.max_worker_restarts = checked_int("max_worker_restarts", max_worker_restarts)
        self.address = session.check_address(address)
        self.num_cpus = num_cpus
        self.envs = env_arguments(envs)
        self.shares = shares(len(self.envs), self.num_workers)
        # The learner's agent: built and checked against every env before Ray starts.
        self.agent = agent if agent is not None else make_agent(algorithm, **options)
        self.agent.set_envs(self.envs, sampled=[])
        threads = max(1, int(self.cpus_per_worker))
        self.worker_options = {**self.agent.config, "device": "cpu", "num_threads": threads}
        self.workers: list = [None] * self.num_workers
        self.generations = [0] * self.num_workers
        self.restarts = 0

    # -- workers -----------------------------------------------------------------
    def _stream(self, index: int) -> int:
        """Worker 0's first incarnation samples like a single-process run; every other one differs."""
        generation = self.generations[index]
        return 0 if index == 0 and generation == 0 else 1 + index + generation * self.num_workers

    def _start(self, index: int) -> None:
        from goenv.distributed.worker import RolloutWorker

        self.workers[index] = RolloutWorker.options(num_cpus=self.cpus_per_worker, max_restarts=0).remote(
            index, self.envs, self.shares[index], self.worker_options, self._registry, self._stream(index))

    def _request(self, index: int) -> None:
        min_version = max(0, self._learner.version - self.max_lag)
        reference = self.workers[index].sample.remote(min_version)
        self._pending[reference] = (index, self.generations[index])

    def _replace(self, index: int, error: BaseException) -> None:
        import ray

        self.restarts += 1
        if self.restarts > self.max_worker_restarts:
            raise RuntimeError(f"rollout worker {index} failed and {self.restarts - 1} workers were already "
                               f"restarted (max_worker_restarts={self.max_worker_restarts}): {error}") from error
        try:
            ray.kill(self.workers[index], no_restart=True)
        except Exception:  # noqa: BLE001 (already dead)
            pass
        self.generations[index] += 1
        self._start(index)
        for _ in range(self.requests_per_worker):
            self._request(index)

    # -- the loop ----------------------------------------------------------------
    def run(self, total_steps: int, callback=None, log_dir=None, checkpoint=None, checkpoint_every: int = 0,
            progress: bool = True, overwrite: bool = False) -> TrainingResult:
        """Trains until the learner has used about `total_steps` env steps (whole updates).
        callback(metrics) after each update; returning False stops. `checkpoint`: a path
        saved every `checkpoint_every` updates (0: only at the end, also after an error); a
        file already there is refused before training unless overwrite=True."""
        from goenv.distributed.learner import Learner
        from goenv.distributed.registry import WeightRegistry

        total_steps = _positive_int("total_steps", total_steps)
        if checkpoint is not None:  # refused now, not after training (the trained weights would be lost)
            new_output_path(checkpoint, "checkpoint", overwrite, folder_must_exist=True)
        log = MetricsLog(log_dir) if log_dir is not None else None  # a bad folder is refused before Ray starts
        started = session.connect(self.address, self.num_cpus, self.connect_timeout)
        result = TrainingResult(agent=self.agent)
        bar = progress_bar(progress, total=total_steps, unit="step", desc=f"{self.num_workers} workers")
        self._pending: dict = {}
        self._registry = None
        try:
            self._registry = WeightRegistry.remote()
            self._learner = Learner(self.agent, self.envs, self._registry, self.max_lag)
            self._learner.publish()
            for index in range(self.num_workers):
                self._start(index)
            self._loop(total_steps, result, bar, log, callback, checkpoint, checkpoint_every)
        finally:
            with session.interrupts_held():  # a second Ctrl-C must not cut the cleanup short
                bar.close()
                if log is not None:
                    log.close()
                if checkpoint is not None and result.history:
                    self.agent.save(checkpoint, overwrite=True)  # the learner's state survives any ending
                self._stop()
                session.shutdown(started)
        result.worker_restarts = self.restarts
        result.dropped_rollouts = self._learner.dropped
        return result

    def _loop(self, total_steps: int, result: TrainingResult, bar, log, callback, checkpoint,
              checkpoint_every: int) -> None:
        """The loop on the started workers: each answer's rollouts go to the learner, every
        `batches_per_update` answers it updates, until `total_steps` or `callback` stops it."""
        import ray

        start = last = time.perf_counter()
        for _ in range(self.requests_per_worker):
            for index in range(self.num_workers):
                self._request(index)
        first_step = self.agent.steps_trained
        batch: list[dict] = []
        answers = interval_samples = 0
        waited = 0.0
        while self.agent.steps_trained - first_step < total_steps:
            wait_start = time.perf_counter()
            (reference,), _ = ray.wait(list(self._pending), num_returns=1)
            index, generation = self._pending.pop(reference)
            try:
                answer = ray.get(reference)
            except ray.exceptions.RayError as error:
                waited += time.perf_counter() - wait_start
                if generation == self.generations[index]:
                    self._replace(index, error)
                continue
            waited += time.perf_counter() - wait_start
            interval_samples += answer["samples"]
            result.samples += answer["samples"]
            batch.extend(self._learner.accept(answer["rollouts"]))
            answers += 1
            if self.max_lag > 0:
                # The worker's next rollout starts now, on the newest weights it has, while the
                # learner updates: asked after the update, it would idle through it.
                self._request(index)
            if answers >= self.batches_per_update and batch:
                metrics, last = self._update(batch, result, log, first_step, start, last, interval_samples, waited)
                batch, answers, interval_samples, waited = [], 0, 0, 0.0
                bar.update(min(metrics["step"], total_steps) - bar.n)
                bar.set_postfix(samples_s=f"{metrics['samples_per_second']:.0f}",
                                speedup=f"{metrics['best_speedup']:.3f}", restarts=self.restarts, refresh=False)
                if checkpoint is not None and checkpoint_every > 0 and len(result.history) % checkpoint_every == 0:
                    self._learner.save(checkpoint)
                if callback is not None and callback(metrics) is False:
                    break
            if self.max_lag == 0:  # synchronous: the next rollout waits for this update's weights
                self._request(index)

    def _update(self, batch: list[dict], result: TrainingResult, log, first_step: int, start: float, last: float,
                interval_samples: int, waited: float) -> tuple[dict, float]:
        """One learner update on `batch`, its metrics row added to the result and the log; returns
        the row and when it was made."""
        with session.interrupts_held():  # Ctrl-C after the update's row: log and checkpoint agree
            metrics = self._learner.update(batch)
            now = time.perf_counter()
            metrics.update(step=self.agent.steps_trained - first_step, seconds=now - start,
                           samples_per_second=interval_samples / max(now - last, 1e-9),
                           wait_seconds=waited, worker_restarts=self.restarts)
            result.history.append(metrics)
            result.seconds = now - start
            if log is not None:
                log.append(metrics)
        return metrics, now

    def _stop(self) -> None:
        import ray

        if not ray.is_initialized():
            return
        for handle in [*self.workers, self._registry]:
            if handle is not None:
                try:
                    ray.kill(handle, no_restart=True)
                except Exception:  # noqa: BLE001 (already gone)
                    pass
        self.workers = [None] * self.num_workers
        self._pending = {}


def train(env_ids, algorithm: str | None = None, num_workers: int = 2, total_steps: int = 10_000,
          address: str | None = None, *, agent=None, max_lag: int = 2, requests_per_worker: int = 1,
          batches_per_update: int | None = None, cpus_per_worker: float = 1.0, num_cpus: float | None = None,
          max_worker_restarts: int = 8, connect_timeout: float = 25.0, log_dir=None, checkpoint=None,
          checkpoint_every: int = 0, callback=None, progress: bool = True, overwrite: bool = False,
          **options) -> TrainingResult:
    """Distributed PPO/GO training on Ray (docs/distributed.md); returns a TrainingResult whose
    `agent` is the trained learner agent. `address=None` starts a local Ray on this
    machine (num_cpus: its CPUs, default all); otherwise joins the cluster at `address`
    (`ray start --head` prints it). `max_lag`: rollouts older than this many versions are
    dropped. A worker's next request is sent as its answer arrives, so it samples while the learner
    updates (its rollout comes back one version old, or two when another worker's answer
    completed an update meanwhile); `requests_per_worker` > 1 queues more requests per worker, and
    each queued one adds up to a version of lag (keep max_lag above it; on the run of docs/distributed.md, 2
    queued requests made a third of the rollouts stale). max_lag=0 makes training synchronous:
    the next request waits for the update. Other keywords are agent options (seed, hidden, envs_per_graph, ...)
    for a new agent of `algorithm` (default "go"); `agent=` instead goes on training that agent (one
    that imitated a teacher, or was loaded from a checkpoint) with its own options, teachers kept.
    `checkpoint`: where the agent is saved (every `checkpoint_every` updates, and at the end); a file
    already there is refused before anything starts unless overwrite=True."""
    trainer = Trainer(env_ids, algorithm, num_workers, agent=agent, address=address, max_lag=max_lag,
                      requests_per_worker=requests_per_worker, batches_per_update=batches_per_update,
                      cpus_per_worker=cpus_per_worker, num_cpus=num_cpus, max_worker_restarts=max_worker_restarts,
                      connect_timeout=connect_timeout, **options)
    return trainer.run(total_steps, callback=callback, log_dir=log_dir, checkpoint=checkpoint,
                       checkpoint_every=checkpoint_every, progress=progress, overwrite=overwrite)
