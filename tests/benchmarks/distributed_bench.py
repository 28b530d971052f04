"""Benchmarks of goenv.distributed (Ray): sampling throughput against workers,
weight distribution cost against workers, and weight transfers on a simulated
multi-node cluster. Ratios are measured within one run of this script.

    python tests/benchmarks/distributed_bench.py [--quick] [--json FILE] [--plot PNG]

1. samples/s of the rollout fleet (workers sampling, the learner consuming)
   with 1 and 2 workers on num_cpus=2, then 3 and 4 workers on fractional CPUs
   (2/w each): contention, reported as such. Also full training (learner
   updating in this process) with 1 and 2 workers.
2. weight distribution of a 16 MB model to 1, 4, 16, 64 workers: put once per
   version + registry reference (goenv.distributed) against every worker
   pulling from a learner actor. Reported: the learner's serving CPU time per
   version (process CPU seconds of the learner: for put-once this process's
   put and registry call) and the wall time until every worker holds the version. Workers
   are simulated by 8 fetcher processes with threads (64 processes would not
   fit this machine's memory); every fetch is its own request.
3. a simulated cluster (ray.cluster_utils.Cluster, 3 nodes of 1 CPU on this
   machine), 2 fetchers per node: where the weights' copies end up after one
   version, put-once vs pull.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import threading
import time

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
WEIGHTS_MB = 16


# -- 1. sampling throughput ------------------------------------------------------------------------
def sampling_throughput(env_id: str, workers: int, cpus_per_worker: float, seconds: float, options: dict) -> dict:
    """samples/s of `workers` RolloutWorkers kept busy (2 requests in flight each) for `seconds`,
    with the learner publishing a new version after every batch of answers but not updating
    (isolates the sampling fleet from learner compute on this 2-core machine)."""
    import ray

    from goenv.distributed.learner import Learner
    from goenv.distributed.registry import WeightRegistry
    from goenv.distributed.train import Trainer

    trainer = Trainer([env_id], options["algorithm"], workers, cpus_per_worker=cpus_per_worker,
                      **{k: v for k, v in options.items() if k != "algorithm"})
    trainer._registry = WeightRegistry.remote()
    trainer._pending = {}
    trainer._learner = Learner(trainer.agent, trainer.envs, trainer._registry, max_lag=10**9)
    trainer._learner.publish()
    try:
        for i in range(workers):
            trainer._start(i)
        ray.get([w.info.remote() for w in trainer.workers])  # started (not timed)
        for _ in range(2):
            for i in range(workers):
                trainer._request(i)
        warm, samples, start = True, 0, time.perf_counter()
        wall, cpu, answers = 0.0, 0.0, 0
        while True:
            (ref,), _ = ray.wait(list(trainer._pending), num_returns=1)
            index, _ = trainer._pending.pop(ref)
            answer = ray.get(ref)
            now = time.perf_counter()
            if warm and now - start > min(3.0, seconds / 3):  # first rollouts include lazy setup
                warm, samples, start = False, 0, now
                load = os.getloadavg()[0]
            elif not warm:
                samples += answer["samples"]
                wall += answer["sample_seconds"]
                cpu += answer["sample_cpu_seconds"]
                answers += 1
                if now - start >= seconds:
                    break
            trainer._request(index)
        return {"workers": workers, "cpus_per_worker": cpus_per_worker, "samples_per_second": samples / (now - start),
                "collect_wall_ms": 1e3 * wall / answers, "collect_cpu_ms": 1e3 * cpu / answers,
                # Share of the window the workers spent inside collect(): 1.0 = never waiting on the learner.
                "workers_busy": wall / (workers * (now - start)),
                "load_average": (load + os.getloadavg()[0]) / 2}
    finally:
        trainer._stop()


def training_throughput(env_id: str, workers: int, steps: int, options: dict) -> dict:
    import goenv.distributed

    result = goenv.distributed.train([env_id], num_workers=workers, total_steps=steps, progress=False, **options)
    late = result.history[len(result.history) // 3:]
    return {"env": env_id, "workers": workers,
            "samples_per_second": float(np.mean([m["samples_per_second"] for m in late])),
            "updates": len(result.history),
            "wait_seconds_per_update": float(np.mean([m["wait_seconds"] for m in late])),
            "update_seconds": float(np.mean([m["update_seconds"] for m in late])),
            "publish_seconds": float(np.mean([m["publish_seconds"] for m in late]))}


# -- 2. weight distribution ------------------------------------------------------------------------
def _define_actors():
    import ray

    @ray.remote(num_cpus=0)
    class PullLearner:
        """The naive alternative: every worker asks the learner for the weights."""

        def __init__(self, size: int):
            self.weights = np.random.default_rng(0).standard_normal(size).astype(np.float32)
            self.version = 0

        def set_version(self, version: int):
            self.version = version
            self.weights[0] = version  # a new version: new bytes

        def get_weights(self):
            return self.version, self.weights

        def cpu_seconds(self) -> float:
            return time.process_time()

    @ray.remote(num_cpus=0, max_concurrency=64)
    class Fetcher:
        """Stands for several rollout workers: each thread fetches like one worker."""

        def pull(self, learner, count: int) -> float:
            def one():
                version, weights = ray.get(learner.get_weights.remote())
                assert weights.nbytes == WEIGHTS_MB * 2**20

            return self._threads(one, count)

        def put_once(self, registry, count: int) -> float:
            def one():
                version, (ref,) = ray.get(registry.latest.remote(-1))
                weights = ray.get(ref)
                assert weights.nbytes == WEIGHTS_MB * 2**20

            return self._threads(one, count)

        def _threads(self, fn, count):
            start = time.perf_counter()
            threads = [threading.Thread(target=fn) for _ in range(count)]
            for t in threads:
                t.start()
            for t in threads:
                t.join()
            return time.perf_counter() - start

        def node(self) -> str:
            return ray.get_runtime_context().get_node_id()

        def cpu_seconds(self) -> float:
            return time.process_time()

    return PullLearner, Fetcher


def weight_distribution(worker_counts: list[int], versions: int, fetchers: int = 8) -> list[dict]:
    import ray

    from goenv.distributed.registry import WeightRegistry

    PullLearner, Fetcher = _define_actors()
    size = WEIGHTS_MB * 2**20 // 4
    pool = [Fetcher.remote() for _ in range(fetchers)]
    ray.get([f.node.remote() for f in pool])
    learner = PullLearner.remote(size)
    registry = WeightRegistry.remote()
    weights = np.random.default_rng(0).standard_normal(size).astype(np.float32)
    rows = []
    for workers in worker_counts:
        used = pool[:min(fetchers, workers)]
        split = [workers // len(used) + (i < workers % len(used)) for i in range(len(used))]
        put_cpu, put_wall, pull_cpu, pull_wall = [], [], [], []
        for version in range(versions):
            # put once per version: the learner's work is one put and one registry call.
            cpu, wall = time.process_time(), time.perf_counter()
            weights[0] = version
            ref = ray.put(weights)
            ray.get(registry.publish.remote(len(rows) * versions + version, [ref]))
            serving = time.process_time() - cpu
            ray.get([f.put_once.remote(registry, n) for f, n in zip(used, split)])
            put_wall.append(time.perf_counter() - wall)
            put_cpu.append(serving)
            del ref
            # pull: the learner actor serializes the weights once per request.
            ray.get(learner.set_version.remote(version))
            before = ray.get(learner.cpu_seconds.remote())
            wall = time.perf_counter()
            ray.get([f.pull.remote(learner, n) for f, n in zip(used, split)])
            pull_wall.append(time.perf_counter() - wall)
            pull_cpu.append(ray.get(learner.cpu_seconds.remote()) - before)
        rows.append({"workers": workers,
                     "put_once_learner_ms": 1e3 * float(np.median(put_cpu)),
                     "put_once_all_fetched_ms": 1e3 * float(np.median(put_wall)),
                     "pull_learner_ms": 1e3 * float(np.median(pull_cpu)),
                     "pull_all_fetched_ms": 1e3 * float(np.median(pull_wall))})
        print(f"  {workers:3d} workers: learner serving per version {rows[-1]['put_once_learner_ms']:7.1f} ms "
              f"(put once) vs {rows[-1]['pull_learner_ms']:8.1f} ms (pull); all fetched in "
              f"{rows[-1]['put_once_all_fetched_ms']:7.1f} vs {rows[-1]['pull_all_fetched_ms']:8.1f} ms", flush=True)
    for handle in [*pool, learner, registry]:
        ray.kill(handle)
    return rows


def registry_rate(calls: int = 4000) -> dict:
    """How many 'anything newer?' questions the one registry actor answers per second: the
    part of weight distribution that grows with workers (no weights travel)."""
    import ray

    from goenv.distributed.registry import WeightRegistry

    registry = WeightRegistry.remote()
    ray.get(registry.publish.remote(1, [ray.put(np.zeros(4, np.float32))]))
    ray.get([registry.latest.remote(1) for _ in range(200)])
    start = time.perf_counter()
    ray.get([registry.latest.remote(1) for _ in range(calls)])
    seconds = time.perf_counter() - start
    ray.kill(registry)
    return {"calls": calls, "answers_per_second": calls / seconds}


# -- 3. simulated multi-node cluster ---------------------------------------------------------------
def multi_node(nodes: int, fetchers_per_node: int) -> dict:
    import ray
    from ray.cluster_utils import Cluster
    from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy

    from goenv.distributed.registry import WeightRegistry

    cluster = Cluster(initialize_head=True, head_node_args={"num_cpus": 1, "object_store_memory": 200 * 2**20,
                                                            "include_dashboard": False})
    try:
        for _ in range(nodes - 1):
            cluster.add_node(num_cpus=1, object_store_memory=200 * 2**20)
        ray.init(address=cluster.address, log_to_driver=False, configure_logging=False)
        cluster.wait_for_nodes()
        PullLearner, Fetcher = _define_actors()
        node_ids = [n["NodeID"] for n in ray.nodes() if n["Alive"]]
        head = ray.get_runtime_context().get_node_id()
        pool = [Fetcher.options(scheduling_strategy=NodeAffinitySchedulingStrategy(node, soft=False)).remote()
                for node in node_ids for _ in range(fetchers_per_node)]
        assert sorted(ray.get([f.node.remote() for f in pool])) == sorted(node_ids * fetchers_per_node)
        registry = WeightRegistry.options(
            scheduling_strategy=NodeAffinitySchedulingStrategy(head, soft=False)).remote()
        weights = np.random.default_rng(0).standard_normal(WEIGHTS_MB * 2**20 // 4).astype(np.float32)
        ref = ray.put(weights)
        ray.get(registry.publish.remote(1, [ref]))
        ray.get([f.put_once.remote(registry, 1) for f in pool])
        copies = len(ray.experimental.get_object_locations([ref])[ref]["node_ids"])
        learner = PullLearner.options(scheduling_strategy=NodeAffinitySchedulingStrategy(head, soft=False)).remote(
            weights.size)
        pulled = [f.pull.remote(learner, 1) for f in pool]
        ray.get(pulled)
        # Each pull is its own object: every worker off the learner's node receives its own copy.
        pull_transfers = sum(1 for f in pool if ray.get(f.node.remote()) != head)
        return {"nodes": len(node_ids), "workers": len(pool), "put_once_copies": copies,
                "put_once_cross_node_transfers": copies - 1, "pull_cross_node_transfers": pull_transfers}
    finally:
        ray.shutdown()
        cluster.shutdown()


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--quick", action="store_true", help="short windows (a smoke run)")
    parser.add_argument("--env", default="placement-inception")
    parser.add_argument("--json", help="write the results here (merged into the file if it exists)")
    parser.add_argument("--plot", help="samples/s against workers (PNG)")
    parser.add_argument("--skip", default="", help="comma-separated parts to skip: sampling,training,weights,nodes")
    args = parser.parse_args(argv)
    import ray

    skip = set(filter(None, args.skip.split(",")))

    def save() -> None:  # after every part: a crash later keeps what was measured
        if args.json:
            with open(args.json, "w") as f:
                json.dump(out, f, indent=2)

    seconds = 5.0 if args.quick else 20.0
    options = dict(algorithm="go", seed=0, envs_per_graph=16)
    out: dict = {}
    if args.json and os.path.exists(args.json):  # parts run separately (--skip) add to one file
        with open(args.json) as f:
            out = json.load(f)
    out.update({"options": options, "cpus": os.cpu_count()})
    if "sampling" not in skip:
        out["env"] = args.env
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False, configure_logging=False)
    try:
        if "sampling" not in skip:
            print(f"1. sampling throughput on {args.env} (ray num_cpus=2, {seconds:.0f} s windows)", flush=True)
            out["sampling"] = []
            for workers, cpus in [(1, 1.0), (2, 1.0), (3, 2 / 3), (4, 0.5)]:
                row = sampling_throughput(args.env, workers, cpus, seconds, options)
                out["sampling"].append(row)
                print(f"  {workers} workers x {cpus:.2f} CPU: {row['samples_per_second']:8.1f} samples/s "
                      f"({row['samples_per_second'] / out['sampling'][0]['samples_per_second']:.2f}x one worker); "
                      f"one collect: {row['collect_wall_ms']:.0f} ms wall, {row['collect_cpu_ms']:.0f} ms CPU; "
                      f"workers busy {row['workers_busy']:.0%}; "
                      f"load average {row['load_average']:.1f}", flush=True)
                save()
        if "training" not in skip:
            steps = 256 if args.quick else 1024
            print(f"1b. full training on {args.env}, learner updating in this process ({steps} steps)", flush=True)
            out["training"] = []
            for workers in (1, 2):
                row = training_throughput(args.env, workers, steps, options)
                out["training"].append(row)
                print(f"  {workers} workers: {row['samples_per_second']:8.1f} samples/s, learner waits "
                      f"{row['wait_seconds_per_update'] * 1e3:.0f} ms/update, updates in "
                      f"{row['update_seconds'] * 1e3:.0f} ms, publishes in {row['publish_seconds'] * 1e3:.1f} ms",
                      flush=True)
                save()
        if "weights" not in skip:
            print(f"2. weight distribution, {WEIGHTS_MB} MB model", flush=True)
            out["weights"] = weight_distribution([1, 4, 16, 64], versions=2 if args.quick else 5)
            out["registry"] = registry_rate()
            print(f"  the registry actor answers {out['registry']['answers_per_second']:.0f} version questions/s",
                  flush=True)
            save()
    finally:
        ray.shutdown()
    if "nodes" not in skip:
        print("3. simulated 3-node cluster, 2 workers per node", flush=True)
        out["nodes"] = multi_node(3, 2)
        print(f"  weight copies after one version: {out['nodes']['put_once_copies']} (one per node; "
              f"{out['nodes']['put_once_cross_node_transfers']} cross-node transfers) with put-once, "
              f"{out['nodes']['pull_cross_node_transfers']} cross-node transfers with pull", flush=True)
    if args.plot and "sampling" in out:
        from goenv.distributed.metrics import plot_scaling

        rows = out["sampling"]
        plot_scaling([r["workers"] for r in rows], [r["samples_per_second"] for r in rows], args.plot,
                     f"goenv.distributed sampling, {args.env} (2 CPUs)",
                     labels=["" if r["cpus_per_worker"] >= 1 else f"{r['cpus_per_worker']:.2f} CPU each" for r in rows],
                     cores=2)
    save()
    return 0


if __name__ == "__main__":
    sys.exit(main())
