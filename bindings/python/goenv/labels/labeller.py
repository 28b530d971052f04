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
from goenv.agents import load_bytes
from goenv.clusters import get as get_cluster
from goenv.labels.decisions import HEADS, Decider, check_size, plan


def stack(decisions: list[dict]) -> dict:
    """Decisions as {head: (count, nodes) array}."""
    return {head: np.stack([d[head] for d in decisions]) for head in HEADS}


def simulate_all(graph, cluster, decisions: dict, max_fusion_size: int) -> dict:
    """goenv's simulator on each of the stacked decisions (env actions), in one C++ call with the
    GIL released: priority levels as priorities, a row of zero priorities (FIFO) or fusion levels
    (no fusion) as the simulator's default. The outcomes as stacked arrays, start and finish
    rounded to float32 as label rows store them."""
    priority, fusion = decisions["priority"], decisions["fusion"]
    return _core.simulate_batch(graph, cluster, decisions["placement"], priority if priority.any() else None,
                                fusion if fusion.any() else None, max_fusion_size)


def label_graph(graph, info: dict, graph_id: int, config: dict, agent_bytes: bytes | None = None) -> dict:
    """The graph's row and its K labelled decisions, as numpy arrays (tables.py lays them out)."""
    return label_drawn(draw(prepare_graph(graph, info, graph_id, config), config, agent_bytes), config)


def prepare_graph(graph, info: dict, graph_id: int, config: dict) -> dict:
    """What draw needs of a graph: its env, the heuristics of the mix (C++, the GIL released)
    and the graph's row. Draws nothing from the graph's generator."""
    check_size(config["decisions_per_graph"], graph.num_nodes, info["name"])
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
            "lower_bound": core.lower_bound["value"],  # the task's: with fusion where it decides it
            "default_runtime": float(core.initial_runtime),
            "node_features": np.asarray(observation["node_features"], dtype=np.float32),
            "edge_index": observation["edge_index"],  # the env's, already made (Graph.edge_index makes it anew)
            "defaults": decider.defaults, "decided": decider.heads,
            "graph": graph,
        },
    }


def draw(prepared: dict, config: dict, agent_bytes: bytes | None = None) -> dict:
    """Everything of a graph's labelling but simulating the drawn decisions: its K decisions
    (the heuristics simulated, to find the base of the perturbations) from the graph's own
    generator, so it may run on another thread than label_drawn, ahead of it."""
    graph, cluster, decider = prepared["graph"], prepared["cluster"], prepared["decider"]
    heuristics, observation = prepared["heuristics"], prepared["observation"]
    k, sampler = config["decisions_per_graph"], config["sampler"]
    counts = plan(sampler, k, len(heuristics), agent_bytes is not None)

    # The heuristics first; past K they are simulated only to find the base of the perturbations.
    first = counts["heuristics"]
    scored = heuristics if counts["perturb"] else heuristics[:first]
    outcomes = simulate_all(graph, cluster, stack([d for _, d in scored]), config["max_fusion_size"]) \
        if scored else None
    groups = [([name for name, _ in heuristics[:first]], stack([d for _, d in heuristics[:first]]))] if first else []
    if counts["perturb"]:
        feasible = [(runtime, i) for i, (runtime, oom, invalid) in
                    enumerate(zip(outcomes["runtime"], outcomes["oom"], outcomes["invalid"])) if not (oom or invalid)]
        base = heuristics[min(feasible)[1] if feasible else 0][1]
    drawn = []  # (sources, stacked decisions)
    if counts["random"]:
        drawn.append((["random"] * counts["random"], decider.random(counts["random"])))
    if counts["policy"]:
        agent = load_bytes(agent_bytes)  # a fresh generator per graph: samples independent of the order
        drawn.append((["policy"] * counts["policy"],
                      stack([decider.policy(agent, observation) for _ in range(counts["policy"])])))
    if counts["perturb"]:
        moves = decider.moves(counts["perturb"])
        drawn.append(([f"perturb:{m}" for m in moves], decider.perturb(base, moves)))
    return {"prepared": prepared, "groups": groups + drawn,
            "known": {key: value[:first] for key, value in outcomes.items()} if first else None,
            "drawn": {head: np.concatenate([d[head] for _, d in drawn]) for head in HEADS} if drawn else None}


def label_drawn(drawn: dict, config: dict) -> dict:
    """draw's decisions with their outcomes: the drawn ones simulated in one call, after the
    heuristics' outcomes draw already has. Only the heads the task decides are kept: the
    others are the env's defaults, in the graph's row."""
    prepared, groups = drawn["prepared"], drawn["groups"]
    parts = [drawn["known"]] if drawn["known"] is not None else []
    if drawn["drawn"] is not None:
        parts.append(simulate_all(prepared["graph"], prepared["cluster"], drawn["drawn"], config["max_fusion_size"]))
    return {
        "graph": prepared["row"],
        "source": [name for names, _ in groups for name in names],
        **{head: np.concatenate([d[head] for _, d in groups]) for head in prepared["row"]["decided"]},
        **{key: np.concatenate([part[key] for part in parts]) for key in parts[0]},
    }
