"""Labels one graph: its K decisions (decisions.py), each simulated.

A label is what goenv's simulator says of one (graph, cluster, decision): runtime (the
makespan, seconds), peak memory per device (bytes), the OOM and invalid flags, bytes moved
between devices, busy time per device (seconds) and every node's start and finish (seconds).
label_graph is a pure function of (graph, its info, graph index, config, agent bytes): the
same in any process, which is what makes a run resumable and Ray's output byte-identical.
"""

from __future__ import annotations

import numpy as np

import goenv._core as _core
from goenv.clusters import get as get_cluster
from goenv.labels.decisions import HEADS, Decider, plan


def simulate(graph, cluster, decision: dict, max_fusion_size: int):
    """goenv.simulate on a decision of env actions: priority levels as priorities; all-zero
    priorities (FIFO) and fusion levels (no fusion) as the simulator's defaults."""
    priority = decision["priority"]
    fusion = decision["fusion"]
    return _core.simulate(graph, cluster, decision["placement"].astype(np.int64),
                          priority.astype(np.float64) if priority.any() else None,
                          fusion.astype(np.int64) if fusion.any() else None, max_fusion_size)


def label_graph(graph, info: dict, graph_id: int, config: dict, agent_bytes: bytes | None = None) -> dict:
    """The graph's row and its K labelled decisions, as numpy arrays (tables.py lays them out)."""
    return label_prepared(prepare_graph(graph, info, graph_id, config), config, agent_bytes)


def prepare_graph(graph, info: dict, graph_id: int, config: dict) -> dict:
    """What label_prepared needs of a graph before it draws anything: its env, the heuristics
    of the mix (C++, the GIL released) and the graph's row. Draws nothing from the graph's
    generator, so it may run on another thread, ahead of the labelling of the graphs before."""
    cluster = get_cluster(info["cluster"])
    core = _core.make_env_on_graph(config["task"], graph, cluster, max_fusion_size=config["max_fusion_size"])
    observation, _ = core.reset(0)
    rng = np.random.default_rng([config["seed"], graph_id])
    decider = Decider(core, observation, rng, config["max_moves"])
    needs_heuristics = config["sampler"] in ("mix", "perturb")
    return {
        "graph": graph, "cluster": cluster, "observation": observation, "decider": decider,
        "heuristics": decider.heuristics() if needs_heuristics else [],
        "row": {
            "graph_id": graph_id, "name": info["name"], "family": info["family"], "params": info["params"],
            "split": info["split"], "cluster": cluster.name, "num_devices": cluster.num_devices,
            "lower_bound": _core.lower_bound(graph, cluster)["value"],
            "default_runtime": float(core.initial_runtime),
            "node_features": np.asarray(observation["node_features"], dtype=np.float32),
            "graph": graph,
        },
    }


def label_prepared(prepared: dict, config: dict, agent_bytes: bytes | None = None) -> dict:
    """label_graph's result from prepare_graph's."""
    graph, cluster, decider = prepared["graph"], prepared["cluster"], prepared["decider"]
    heuristics, observation = prepared["heuristics"], prepared["observation"]
    k, sampler = config["decisions_per_graph"], config["sampler"]
    counts = plan(sampler, k, len(heuristics), agent_bytes is not None)

    decisions = heuristics[:counts["heuristics"]]
    results = [simulate(graph, cluster, d, config["max_fusion_size"]) for _, d in decisions]
    if counts["perturb"]:
        # the best feasible heuristic; those past K are simulated here only to find it
        scored = results + [simulate(graph, cluster, d, config["max_fusion_size"])
                            for _, d in heuristics[len(decisions):]]
        feasible = [(r.runtime, i) for i, r in enumerate(scored) if not (r.oom or r.invalid)]
        base = heuristics[min(feasible)[1] if feasible else 0][1]
    decisions += [("random", decider.random()) for _ in range(counts["random"])]
    if counts["policy"]:
        from goenv.agents import load_bytes

        agent = load_bytes(agent_bytes)  # a fresh generator per graph: samples independent of the order
        decisions += [("policy", decider.policy(agent, observation)) for _ in range(counts["policy"])]
    for _ in range(counts["perturb"]):
        moves = decider.moves()
        decisions.append((f"perturb:{moves}", decider.perturb(base, moves)))
    results += [simulate(graph, cluster, d, config["max_fusion_size"]) for _, d in decisions[len(results):]]

    return {
        "graph": prepared["row"],
        "source": [name for name, _ in decisions],
        **{head: np.stack([d[head] for _, d in decisions]) for head in HEADS},
        "runtime": np.array([r.runtime for r in results], dtype=np.float64),
        "oom": np.array([r.oom for r in results], dtype=bool),
        "invalid": np.array([r.invalid for r in results], dtype=bool),
        "bytes_moved": np.array([r.bytes_moved for r in results], dtype=np.float64),
        "peak_memory": np.array([r.peak_memory for r in results], dtype=np.float64),
        "device_busy": np.array([r.device_busy for r in results], dtype=np.float64),
        "start": np.array([r.start for r in results], dtype=np.float32),
        "finish": np.array([r.finish for r in results], dtype=np.float32),
    }
