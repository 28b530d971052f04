"""MkDocs hook: fills the reference tables of the site from the code at build time.

A page asks for a table with a line of its own, `<!-- table: NAME -->`; the hook replaces it with
the Markdown table NAME's generator returns (TABLES below). Every number and name in those tables
comes from goenv itself (a made env's spaces, a real reset and step, the registries), so the pages
cannot drift from the code. An unknown NAME fails the build.
"""

from __future__ import annotations

import re
from functools import cache

import goenv
import goenv._core
import goenv.agents
import numpy as np

MARKER = re.compile(r"^<!-- table: ([a-z0-9-]+) -->$", re.MULTILINE)
# Two envs whose sizes differ in every dimension that depends on the graph or the cluster:
# comparing their shapes tells the symbolic dimensions (N nodes, E edges, D devices) from fixed ones.
SHAPE_PROBES = (("transformer-xl-2", "2xgpu-nvlink"), ("transformer-xl-4", "8xgpu-nvlink"))


def markdown_table(header: list[str], rows: list[list[str]]) -> str:
    lines = ["| " + " | ".join(header) + " |", "|" + "|".join("---" for _ in header) + "|"]
    lines += ["| " + " | ".join(cell.replace("|", "\\|") for cell in row) + " |" for row in rows]
    return "\n".join(lines)


def code(text: object) -> str:
    return f"`{text}`"


@cache
def probe_envs(task: str) -> tuple:
    return tuple(goenv.make(f"{task}-{graph}", cluster=cluster) for graph, cluster in SHAPE_PROBES)


def symbolic(sizes: list[int], envs: tuple) -> str:
    """One dimension of a shape seen on both probe envs, as N, E, D, D + k or a number."""
    symbols = {
        "N": [env.graph.num_nodes for env in envs],
        "E": [env.graph.num_edges for env in envs],
        "D": [env.cluster.num_devices for env in envs],
    }
    if len(set(sizes)) == 1:
        return str(sizes[0])
    for name, values in symbols.items():
        if sizes == values:
            return name
    offsets = {size - devices for size, devices in zip(sizes, symbols["D"])}
    if len(offsets) == 1:
        return f"D + {offsets.pop()}"
    raise ValueError(f"no symbol for a dimension of sizes {sizes}")


def shape_of(spaces: list, envs: tuple) -> str:
    dims = [symbolic([space.shape[axis] for space in spaces], envs) for axis in range(len(spaces[0].shape))]
    return "(" + ", ".join(dims) + ("," if len(dims) == 1 else "") + ")"


FIELDS = {field["name"]: field for field in goenv._core.observation_fields()}  # envs/spec.h


def columns(key: str, limit: int = 14) -> str:
    names = (FIELDS[key]["columns"] or []) if key in FIELDS else []
    shown = ", ".join(code(name) for name in names[:limit])
    return shown + (f", ... ({len(names)} in all)" if len(names) > limit else "")


def observation_table() -> str:
    rows = []
    for task in goenv._core.task_names():
        envs = probe_envs(task)
        for key in envs[0].observation_space.spaces:
            spaces = [env.observation_space[key] for env in envs]
            rows.append((key, shape_of(spaces, envs), str(spaces[0].dtype), task))
    # The layout is the same for every task but the action mask's width: one row per key,
    # the tasks listed where they differ.
    by_key: dict[str, dict[tuple, list[str]]] = {}
    for key, shape, dtype, task in rows:
        by_key.setdefault(key, {}).setdefault((shape, dtype), []).append(task)
    table = []
    for key, variants in by_key.items():
        for (shape, dtype), tasks in variants.items():
            where = "" if len(variants) == 1 else " (" + ", ".join(tasks) + ")"
            meaning = FIELDS[key]["doc"] if key in FIELDS else ""
            table.append([code(key) + where, code(shape), code(dtype), meaning, columns(key)])
    return markdown_table(["key", "shape", "dtype", "meaning", "columns"], table)


def action_space_text(space, envs: tuple) -> str:
    if hasattr(space, "spaces"):
        return "Dict(" + ", ".join(f"{name}: {action_space_text(sub, envs)}" for name, sub in space.spaces.items()) + ")"
    choices = sorted({int(n) for n in np.asarray(space.nvec).ravel()})
    devices = envs[0].cluster.num_devices
    choice = "D" if choices == [devices] else str(choices[0])
    return f"MultiDiscrete([{choice}] * N)"


def action_table() -> str:
    rows = []
    for task in goenv._core.task_names():
        envs = probe_envs(task)
        spaces = [env.action_space for env in envs]
        described = {action_space_text(space, (env,)) for space, env in zip(spaces, envs)}
        if len(described) != 1:
            raise ValueError(f"{task}: the action space's form depends on the graph: {described}")
        # A Dict's parts as separate code spans, so that the cell can wrap between them.
        text = described.pop()
        cell = ("`Dict(` " + ", ".join(code(part) for part in text[len("Dict("):-1].split(", ")) + " `)`"
                if text.startswith("Dict(") else code(text))
        rows.append([code(task), cell,
                     ", ".join(code(name) for name in goenv.baselines.list(task) if name != "none")])
    return markdown_table(["task", "action space", "baselines that decide it"], rows)


def info_table() -> str:
    """The info keys of envs/spec.h (goenv.info_fields())."""
    rows = [[code(f["name"]), code(f["type"]), f["present"], f["doc"],
             code(f["vector"]) + (f" ({f['vector_note']})" if f["vector_note"] else "") if f["vector"]
             else f"— ({f['vector_note']})"]
            for f in goenv.info_fields()]
    return markdown_table(["key", "type", "present", "meaning", "vector env"], rows)


def env_options_table() -> str:
    """The options of envs/spec.h (goenv.option_fields()), with a made env's defaults."""
    defaults = goenv.make("placement-transformer-xl-2").unwrapped.core.config
    rows = [[code(f["name"]), code(f["type"]),
             code(repr(defaults[f["name"]])) if defaults[f["name"]] not in ("", None) else "—", f["doc"]]
            for f in goenv.option_fields()]
    return markdown_table(["option", "type", "default (placement-transformer-xl-2)", "meaning"], rows)


def env_ids_table() -> str:
    ids = goenv.list_envs()
    rows = []
    for task in goenv._core.task_names():
        graphs = [env_id[len(task) + 1:] for env_id in ids if env_id.startswith(task + "-")]
        rows.append([code(task), str(len(graphs)), ", ".join(code(f"{task}-{graph}") for graph in graphs[:3]) + ", ..."])
    rows.append(["all", str(len(ids)), "`goenv.list_envs()`"])
    return markdown_table(["task", "ids", "examples"], rows)


def graph_families_table() -> str:
    rows = []
    for name in goenv.datasets.list():
        info = goenv.datasets.info(name)
        graph = goenv.datasets.load(name)
        rows.append([code(name), f"{graph.num_nodes:,}", f"{graph.num_edges:,}",
                     f"{graph.total_flops / 1e9:,.0f}", f"{graph.total_param_bytes / 4 / 1e6:,.1f}",
                     code(info["default_cluster"]), info["description"]])
    return markdown_table(["graph", "nodes", "edges", "GFLOPs / step", "params (M)", "default cluster",
                           "what it is"], rows)


def graph_parameters_table() -> str:
    rows = []
    for name in goenv.datasets.list():
        params = goenv.datasets.info(name)["params"]
        rows.append([code(name), ", ".join(f"{key}={value:g}" for key, value in params.items())])
    return markdown_table(["graph", "parameters and their defaults (keywords of goenv.make and datasets.load)"], rows)


def si(value: float, unit: str) -> str:
    for factor, prefix in ((1e12, "T"), (1e9, "G"), (1e6, "M"), (1e3, "k")):
        if value >= factor:
            return f"{value / factor:g} {prefix}{unit}"
    return f"{value:g} {unit}"


def device_text(device) -> str:
    text = (f"{device.kind} ({si(device.peak_flops, 'FLOP/s')}, {si(device.memory_bandwidth, 'B/s')}, "
            f"{device.memory_bytes / 2**30:g} GiB, {device.launch_overhead * 1e6:g} µs launch")
    if device.op_gap:
        text += f", {device.op_gap * 1e6:g} µs gap after each op"
    return text + ")"


def clusters_table() -> str:
    rows = []
    for name in goenv.clusters.list():
        cluster = goenv.clusters.get(name)
        kinds: dict[str, int] = {}
        for device in cluster.devices:
            kinds[device_text(device)] = kinds.get(device_text(device), 0) + 1
        devices = "; ".join(f"{count} × {text}" for text, count in kinds.items())
        links = {(si(link.bandwidth, "B/s"), f"{link.latency * 1e6:g} µs") for link in cluster.links}
        channels = len({link.channel for link in cluster.links})
        link_text = "; ".join(f"{bandwidth} + {latency}" for bandwidth, latency in sorted(links))
        rows.append([code(name), str(cluster.num_devices), devices,
                     f"{len(cluster.links)} links, {channels} channels: {link_text}" if cluster.links else "—"])
    return markdown_table(["preset", "devices", "each device", "links (bandwidth + latency per transfer)"], rows)


def baselines_table() -> str:
    rows = []
    for name in goenv.baselines.list():
        info = goenv.baselines.info(name)
        rows.append([code(name), ", ".join(info["heads"]) or "—", info["description"]])
    return markdown_table(["baseline", "decides", "what it does"], rows)


OPTION_TYPES = {"s": "str", "i": "int", "d": "float", "b": "bool"}


def agent_options_table() -> str:
    rows = [[code(name), OPTION_TYPES.get(kind, kind), code(repr(default)), meaning]
            for name, kind, default, meaning in goenv.agents.options()]
    return markdown_table(["option", "type", "default", "meaning"], rows)


def benchmarks_table() -> str:
    import goenv.benchmark

    rows = []
    for name in goenv.benchmark.names():
        benchmark = goenv.benchmark.get(name)
        graphs = ", ".join(dict.fromkeys(case.entry.label for case in benchmark.cases))
        rows.append([code(name), str(len(benchmark.cases)), graphs,
                     ", ".join(f"**{b:,}**" if b == benchmark.default_budget else f"{b:,}" for b in benchmark.budgets),
                     ", ".join(map(str, benchmark.seeds))])
    return markdown_table(["benchmark", "cases", "graphs on clusters", "budgets (default in bold)", "seeds"], rows)


TABLES = {
    "benchmarks": benchmarks_table,
    "env-ids": env_ids_table,
    "observation": observation_table,
    "actions": action_table,
    "info": info_table,
    "env-options": env_options_table,
    "graph-families": graph_families_table,
    "graph-parameters": graph_parameters_table,
    "clusters": clusters_table,
    "baselines": baselines_table,
    "agent-options": agent_options_table,
}


@cache
def generated(name: str) -> str:
    return TABLES[name]()


def on_page_markdown(markdown: str, page, **_) -> str:
    def table(match: re.Match) -> str:
        name = match.group(1)
        if name not in TABLES:
            raise KeyError(f"{page.file.src_path}: no generated table {name!r}; known: {', '.join(TABLES)}")
        return generated(name)

    return MARKER.sub(table, markdown)
