"""Golden data of the reference agents: hashes of everything they compute.

Run as a script, it prints one JSON object of SHA-256 digests: for GO and PPO,
seeds 0 and 1, on two small graphs (one with colocation groups, one two-step
improvement episode) -- collect() arrays, weights() after a short train(),
to_bytes(), imitate() metrics and weights, optimize() decisions and runtimes,
and act() of each shipped checkpoint on reset observations.

tests/python/test_agents_golden.py runs it with 1 and 2 OpenMP threads and
compares with tests/python/data/agents_golden.json. A change that alters the
agents' behaviour on purpose regenerates that file in the same commit (and
says why):

    OMP_NUM_THREADS=1 python tests/python/agents_golden.py --write

Sampled actions can differ in their last bits between CPUs of one torch kernel
capability (measured: act() and evaluate() of seed 1, sampled, on an AMD EPYC
against the Intel machine that recorded the file; everything else the same).
`--write-cpu` records, under this CPU's name, only the hashes that differ here
from the file's; the test expects those on this CPU and the others everywhere.
"""

from __future__ import annotations

import hashlib
import json
import os
import sys
from pathlib import Path

import numpy as np

import goenv
import goenv.agents

GOLDEN = Path(__file__).resolve().parent / "data" / "agents_golden.json"


def digest(*parts) -> str:
    h = hashlib.sha256()
    for part in parts:
        if isinstance(part, dict):
            for key in sorted(part):
                h.update(key.encode())
                h.update(digest(part[key]).encode())
        elif isinstance(part, (list, tuple)):
            for item in part:
                h.update(digest(item).encode())
        elif isinstance(part, bytes):
            h.update(part)
        elif isinstance(part, np.ndarray):
            h.update(str(part.dtype).encode() + str(part.shape).encode())
            h.update(np.ascontiguousarray(part).tobytes())
        else:
            h.update(repr(part).encode())
    return h.hexdigest()[:24]


# Agent options added since the data was recorded, with their defaults: at its default a new
# option changes nothing the agents do, so it is left out of a checkpoint's digest (the data of
# every CPU stays valid); set otherwise, it is digested like any option.
ADDED_OPTIONS = {"canonical_teacher": False}
# Result keys added since the data was recorded: optimize()'s decisions and runtimes are what
# must not change ("proposals" names the reading, tested in test_imitation.py).
ADDED_RESULT_KEYS = ("proposals",)


def checkpoint_digest(data: bytes, envs: list) -> str:
    """A checkpoint's content, whatever its byte format: what the loaded agent holds (options,
    spec, counters, weights, the kept teachers) and what it does next (one collect and update
    on `envs`: Adam's moments and the generators matter there)."""
    agent = goenv.agents.load_bytes(data)
    config = {k: v for k, v in agent.config.items() if not (k in ADDED_OPTIONS and v == ADDED_OPTIONS[k])}
    held = (config, agent.spec, agent.steps_trained, agent.weights_version, np.array(agent.weights),
            [agent.teacher(env) for env in envs])
    agent.set_envs(envs)
    rollouts = agent.collect()
    agent.update(rollouts)
    return digest(digest(*held), [digest(r) for r in rollouts], np.array(agent.weights))


def graphs() -> dict:
    """Two small graphs: branches with colocated pairs (one-shot), and a chain stepped twice."""
    rng = np.random.default_rng(7)
    edges, node, last = [], 1, []
    for _ in range(3):
        previous = 0
        for _ in range(5):
            edges.append((previous, node))
            previous, node = node, node + 1
        last.append(previous)
    edges += [(v, node) for v in last]
    n = node + 1
    colocation = np.full(n, -1, dtype=np.int32)
    colocation[[1, 2]] = 0
    colocation[[6, 7]] = 1
    branchy = goenv.Graph.from_arrays(
        np.array(edges, dtype=np.int64).T.copy(), flops=rng.uniform(2e9, 6e9, n),
        output_bytes=rng.integers(8_000_000, 16_000_000, n), op_type=["MatMul"] * n, name="golden-branchy",
        colocation=colocation)
    chain_nodes = 12
    chain = goenv.Graph.from_arrays(
        np.array([(i, i + 1) for i in range(chain_nodes - 1)] + [(0, 5), (3, 9)], dtype=np.int64).T.copy(),
        flops=rng.uniform(1e9, 4e9, chain_nodes), output_bytes=rng.integers(1_000_000, 4_000_000, chain_nodes),
        op_type=["Conv2D"] * chain_nodes, name="golden-chain")
    return {
        "branchy": lambda: goenv.GraphEnv.from_graph("placement", branchy, "2xgpu-pcie"),
        "chain": lambda: goenv.GraphEnv.from_graph("placement", chain, "2xgpu-pcie", horizon=2),
    }


def agent_cases(out: dict) -> None:
    envs = graphs()
    for algorithm in ("go", "ppo"):
        for seed in (0, 1):
            def fresh():
                return goenv.agents.make_agent(algorithm, hidden=16, sage_layers=1, attention_layers=1,
                                               attention_heads=2, segment_length=8, seed=seed, num_threads=1,
                                               envs_per_graph=4, epochs=2)
            tag = f"{algorithm}-seed{seed}"
            envs_now = [envs["branchy"](), envs["chain"]()]
            agent = fresh()
            agent.set_envs(envs_now)
            out[f"{tag}/collect"] = digest([digest(r) for r in agent.collect()])
            metrics = agent.update(agent.collect())
            out[f"{tag}/update"] = digest(metrics.get("policy_loss"), metrics.get("value_loss"),
                                          metrics.get("mean_runtime"), metrics.get("approx_kl"))
            agent = fresh()
            history = agent.train(envs_now, total_steps=16, progress=False)
            out[f"{tag}/train-metrics"] = digest([{k: v for k, v in m.items() if k != "seconds"} for m in history])
            out[f"{tag}/train-weights"] = digest(np.array(agent.weights))
            out[f"{tag}/to_bytes"] = checkpoint_digest(agent._agent.to_bytes(), envs_now)
            agent.imitate(envs_now, steps=2, progress=False)
            out[f"{tag}/to_bytes-teachers"] = checkpoint_digest(agent._agent.to_bytes(), envs_now)
            agent = fresh()
            steps = agent.imitate(envs_now, steps=3, progress=False)
            out[f"{tag}/imitate"] = digest([{k: v for k, v in m.items() if k != "seconds"} for m in steps],
                                           np.array(agent.weights))
            result = agent.optimize(envs["branchy"](), budget=4, local_search_budget=8)
            out[f"{tag}/optimize"] = digest({k: v for k, v in result.items() if k not in ADDED_RESULT_KEYS})
            obs, _ = envs["chain"]().reset(seed=0)
            out[f"{tag}/act"] = digest(agent.act(obs, deterministic=True), agent.act(obs))
            out[f"{tag}/evaluate"] = digest(agent.evaluate(envs["chain"](), episodes=2, deterministic=False))


def shipped_cases(out: dict) -> None:
    folder = Path(goenv.agents.__file__).resolve().parent / "shipped"
    for path in sorted(folder.glob("*.agent")):
        agent = goenv.agents.load(path)
        devices = agent.spec["choices"][0] if agent.spec else 2
        # A policy for any cluster (choices 0) is pinned on a mixed one.
        preset = {0: "cpu+2xgpu", 2: "2xgpu-pcie", 4: "4xgpu-nvlink", 8: "8xgpu-nvlink"}[devices]
        obs, _ = goenv.make("placement-rnnlm-2", cluster=preset).reset(seed=0)
        out[f"shipped/{path.name}/act"] = digest(agent.act(obs, deterministic=True))
        env = [goenv.make("placement-rnnlm-2", cluster=preset)]
        out[f"shipped/{path.name}/round-trip"] = str(
            checkpoint_digest(agent._agent.to_bytes(), env) == checkpoint_digest(path.read_bytes(), env))


def _cpuinfo() -> dict:
    fields: dict = {}
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            key, _, value = line.partition(":")
            fields.setdefault(key.strip(), value.strip())
    except OSError:
        pass
    return fields


def cpu_name() -> str:
    """Vendor and model of this CPU ("AuthenticAMD AMD EPYC"), from /proc/cpuinfo where there is one."""
    import platform

    fields = _cpuinfo()
    name = " ".join(part for part in (fields.get("vendor_id"), fields.get("model name")) if part)
    return name or platform.processor() or platform.machine()


def cpu_generation() -> str:
    """cpu_name() with the family and model numbers: CPUs of one name but another generation
    ("AMD EPYC" of family 25 and of family 26) run other math-library kernels, so other last bits."""
    fields = _cpuinfo()
    if "cpu family" not in fields or "model" not in fields:
        return cpu_name()
    return f"{cpu_name()} (family {fields['cpu family']}, model {fields['model']})"


def expected_hashes(golden: dict) -> dict:
    """The file's hashes, with this CPU's own where it has recorded some (--write-cpu): those of
    its name, then those of its generation."""
    recorded = golden.get("cpu_hashes", {})
    return {**golden["hashes"], **recorded.get(cpu_name(), {}), **recorded.get(cpu_generation(), {})}


def compute() -> dict:
    out: dict = {}
    agent_cases(out)
    shipped_cases(out)
    return out


if __name__ == "__main__":
    import torch

    result = {"cpu_capability": torch.backends.cpu.get_cpu_capability(), "hashes": compute()}
    if "--write" in sys.argv:  # a change of behaviour: every CPU's hashes are new
        GOLDEN.parent.mkdir(exist_ok=True)
        GOLDEN.write_text(json.dumps(result, indent=1, sort_keys=True) + "\n")
    elif "--write-cpu" in sys.argv:  # the same behaviour, other last bits on this CPU's generation
        golden = json.loads(GOLDEN.read_text())
        golden.setdefault("cpu_hashes", {}).pop(cpu_generation(), None)
        known = expected_hashes(golden)  # the file's and this CPU name's
        golden["cpu_hashes"][cpu_generation()] = {k: v for k, v in result["hashes"].items() if known.get(k) != v}
        GOLDEN.write_text(json.dumps(golden, indent=1, sort_keys=True) + "\n")
    print(json.dumps(result, sort_keys=True))
    sys.stdout.flush()
    os._exit(0)  # skip torch's slow interpreter teardown
