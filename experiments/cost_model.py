"""A learned cost model on goenv labels, in one file of plain PyTorch (CleanRL style).

Labels K placements per graph of the training families (random layered and series-parallel
DAGs, ENAS cells, RNN language models, GPT-2) and of held-out model families never seen in
training, trains a small GNN
to predict each placement's simulated runtime, and ranks the held-out graphs' placements:
Kendall's tau and ordered-pair accuracy per graph, next to two analytic models computed
from the same decisions:
  - sum of op costs: every op's cost on its device plus every cross-device transfer
    (latency + bytes / bandwidth), as if nothing overlapped;
  - the decision's lower bound: max(busiest device's op costs, the critical path with those
    op costs and transfers), i.e. the simulator without contention and memory.

    python experiments/cost_model.py [--quick] [--seeds 0 1 2] [--json docs/results/cost_model.json]
                                  [--plot docs/cost_model.png] [--readme docs/datasets.md]
    python experiments/cost_model.py --from-json docs/results/cost_model.json --readme docs/datasets.md

--readme FILE writes the table between FILE's <!-- cost-model:begin/end --> markers; with
README.md, into whichever page of the README and docs/ holds them (docs/datasets.md).
"""

from __future__ import annotations

import argparse
import json
import os
import tempfile
import time
from pathlib import Path

import numpy as np
import torch
from torch import nn

import goenv
from doc_sections import section_file, write_section  # noqa: E402  (experiments/ is the script's folder)
from readme_tables import results_commit  # noqa: E402

CLUSTER = "2xgpu-nvlink"
TRAIN = [("random-layered", {"num_layers": (5, 30), "width": (3, 12)}),
         ("random-series-parallel", {"num_nodes": (50, 600)}),
         ("enas-cnn", {}), ("enas-rnn", {"seq_len": (5, 20)}),
         ("rnnlm-2", {"batch_size": (16, 128), "seq_len": (5, 20)}), ("gpt2-small", {"batch_size": (1, 8)})]
HELD_OUT = [("transformer-xl-2", {}), ("transformer-xl-4", {}), ("wavenet-2", {}), ("resnet50", {"batch_size": 32}),
            ("inception", {"batch_size": 32}), ("bert-base", {"batch_size": 16})]


# ---------------------------------------------------------------------------- data

def label_data(folder: str, graphs_per_family: int, k: int, seed: int):
    train = []
    for family, params in TRAIN:
        source = os.path.join(folder, family)
        goenv.datasets.generate(family, graphs_per_family, source, params=params, seed=seed, progress=False)
        train.append(goenv.datasets.label(source, source + "-labels", cluster=CLUSTER, decisions_per_graph=k,
                                          seed=seed, progress=False))
    files = []
    for family, params in HELD_OUT:
        files.append(os.path.join(folder, f"{family}.goenv"))
        goenv.datasets.load(family, **params).save(files[-1])
    test = goenv.datasets.label(files, os.path.join(folder, "held-out-labels"), cluster=CLUSTER,
                                decisions_per_graph=k, seed=seed + 1, progress=False)
    return [g for labels in train for g in graphs_of(labels)], graphs_of(test)


def graphs_of(labels) -> list[dict]:
    out = []
    for i in range(len(labels)):
        graph, decisions = labels.graph(i), labels.decisions(i)
        keep = ~decisions["oom"]  # an OOM placement has no runtime to rank
        out.append({"name": graph["name"], "family": graph["family"], "graph": graph, "num_devices":
                    graph["num_devices"], **{key: value[keep] for key, value in decisions.items()}})
    return out


def tensors(item: dict, cluster) -> dict:
    g = item["graph"]
    serial, bound = analytic(item, cluster)  # the two analytic models, inputs of the readout
    devices = torch.from_numpy(item["placement"].astype(np.int64))
    edge_bytes = g["edge_bytes"].astype(np.float64)
    return {"x": torch.from_numpy(np.array(g["node_features"], dtype=np.float32)),
            "src": torch.from_numpy(g["edge_src"].astype(np.int64)),
            "dst": torch.from_numpy(g["edge_dst"].astype(np.int64)),
            "edge_share": torch.from_numpy(edge_bytes / max(edge_bytes.sum(), 1.0)).float(),
            "device": nn.functional.one_hot(devices, item["num_devices"]).float(),
            "analytic": torch.from_numpy(np.log(np.stack([serial, bound], 1) / g["lower_bound"])).float(),
            "target": torch.from_numpy(np.log(item["runtime"] / g["lower_bound"])).float()}


# ---------------------------------------------------------------------------- the model

class CostModel(nn.Module):
    """Per (decision, node): embed features and device; rounds of mean messages from
    producers and consumers, split by whether they sit on the same device or not (a
    transfer). Readout: per-device sums of node embeddings (the load), pooled by max and
    mean; and three decision statistics: the busiest device's share of learned per-node
    costs, and the shares of edge bytes and of edges crossing devices -> log runtime."""

    def __init__(self, features: int, devices: int, hidden: int = 48, rounds: int = 3):
        super().__init__()
        self.cost = nn.Sequential(nn.Linear(features, hidden), nn.ReLU(), nn.Linear(hidden, 1), nn.Softplus())
        self.embed = nn.Sequential(nn.Linear(features + devices, hidden), nn.ReLU())
        self.rounds = nn.ModuleList(nn.Sequential(nn.Linear(5 * hidden, hidden), nn.ReLU()) for _ in range(rounds))
        self.readout = nn.Sequential(nn.Linear(3 * hidden + 5, hidden), nn.ReLU(), nn.Linear(hidden, 1))
        # A correction of the analytic models: starts as the sum of op costs, learns the rest.
        self.analytic_weight = nn.Parameter(torch.tensor([1.0, 0.0]))
        nn.init.zeros_(self.readout[-1].weight)
        nn.init.zeros_(self.readout[-1].bias)

    def forward(self, x, src, dst, edge_share, analytic, device):  # x (N, F), device (K, N, D) -> (K,)
        k, n, d = device.shape
        h = self.embed(torch.cat([x.expand(k, n, -1), device], dim=2))
        same = (device[:, src] * device[:, dst]).sum(2, keepdim=True)  # (K, E, 1): 1 when no transfer
        degree_in = torch.zeros(n).index_add_(0, dst, torch.ones(len(dst))).clamp(min=1)[None, :, None]
        degree_out = torch.zeros(n).index_add_(0, src, torch.ones(len(src))).clamp(min=1)[None, :, None]
        for layer in self.rounds:
            def mean(values, index, degree):
                return torch.zeros(k, n, h.shape[2]).index_add_(1, index, values) / degree
            parts = [h, mean(h[:, src] * same, dst, degree_in), mean(h[:, src] * (1 - same), dst, degree_in),
                     mean(h[:, dst] * same, src, degree_out), mean(h[:, dst] * (1 - same), src, degree_out)]
            h = h + layer(torch.cat(parts, dim=2))
        load = torch.einsum("knd,knh->kdh", device, h)  # (K, D, H): what each device runs
        cost = self.cost(x)[:, 0]  # (N,) learned op costs
        busiest = torch.einsum("knd,n->kd", device, cost).max(1).values / cost.sum()
        crossing = 1 - same[:, :, 0]
        statistics = torch.stack([busiest, (crossing * edge_share).sum(1), crossing.mean(1)], dim=1)
        pooled = torch.cat([load.max(1).values, load.mean(1), h.mean(1), statistics, analytic], dim=1)
        return analytic @ self.analytic_weight + self.readout(pooled).squeeze(1)


def pairwise_loss(prediction, target):
    """Logistic loss over ordered pairs of one graph's decisions (as TpuGraphs' baselines rank)."""
    diff_t = target[:, None] - target[None, :]
    diff_p = prediction[:, None] - prediction[None, :]
    mask = diff_t.abs() > 1e-9
    return nn.functional.softplus(-torch.sign(diff_t[mask]) * diff_p[mask]).mean()


# ---------------------------------------------------------------------------- the analytic models

def analytic(item: dict, cluster) -> tuple[np.ndarray, np.ndarray]:
    """(sum of op costs, the decision's lower bound) per decision, in seconds. An op's cost
    is its duration in the simulated schedule (finish - start), the same on every device of
    this homogeneous cluster; a transfer costs latency + bytes / bandwidth."""
    g = item["graph"]
    cost = (item["finish"] - item["start"])[0]
    link = cluster.links[0]
    src, dst, nbytes = g["edge_src"], g["edge_dst"], g["edge_bytes"].astype(np.float64)
    placement = item["placement"]
    cut = placement[:, src] != placement[:, dst]  # (K, E)
    transfer = cut * (link.latency + nbytes / link.bandwidth)
    serial = cost.sum() + transfer.sum(1)
    busy = np.stack([(cost * (placement == dev)).sum(1) for dev in range(item["num_devices"])], 1).max(1)
    finish = np.zeros(placement.shape)
    order = np.asarray(g["goenv_graph"].topological_order)
    incoming = [[] for _ in range(len(cost))]
    for e, v in enumerate(dst):
        incoming[v].append(e)
    for v in order:
        ready = np.zeros(placement.shape[0])
        for e in incoming[v]:
            ready = np.maximum(ready, finish[:, src[e]] + transfer[:, e])
        finish[:, v] = ready + cost[v]
    return serial, np.maximum(busy, finish.max(1))


def kendall_tau(a: np.ndarray, b: np.ndarray) -> float:
    """Kendall's tau-b (ties in either ranking handled)."""
    da, db = np.sign(a[:, None] - a[None, :]), np.sign(b[:, None] - b[None, :])
    upper = np.triu(np.ones_like(da, dtype=bool), 1)
    concordant = (da * db)[upper].sum()
    pairs_a, pairs_b = (da[upper] != 0).sum(), (db[upper] != 0).sum()
    return float(concordant / np.sqrt(pairs_a * pairs_b)) if pairs_a and pairs_b else 0.0


def pair_accuracy(prediction: np.ndarray, runtime: np.ndarray) -> float:
    """Of the pairs whose runtimes differ, the share the prediction orders the same way (a tie: half)."""
    dt, dp = np.sign(runtime[:, None] - runtime[None, :]), np.sign(prediction[:, None] - prediction[None, :])
    mask = np.triu(dt != 0, 1)
    return float(np.mean(np.where(dp[mask] == 0, 0.5, dp[mask] == dt[mask]))) if mask.any() else 1.0


# ---------------------------------------------------------------------------- main

def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--graphs-per-family", type=int, default=8)
    parser.add_argument("-k", type=int, default=48, help="decisions per graph")
    parser.add_argument("--epochs", type=int, default=15)
    parser.add_argument("--seeds", type=int, nargs="+",
                        help="one run per seed (its labels, the GNN's initialization and its order of graphs); "
                             "the table gives the median and range (default: 0 1 2; with --quick, 0)")
    parser.add_argument("--quick", action="store_true", help="a smoke run: 2 graphs per family, K=12, 2 epochs")
    parser.add_argument("--json", help="write the results here")
    parser.add_argument("--plot", help="write predicted vs simulated runtime (held-out graphs, the first seed) here, PNG")
    parser.add_argument("--readme", metavar="FILE", help="write the table between FILE's <!-- cost-model:begin/end "
                        "--> markers; README.md: the page of the README or docs/ that holds them (docs/datasets.md)")
    parser.add_argument("--from-json", metavar="FILE", help="run nothing: write --readme from an earlier --json")
    args = parser.parse_args()
    if args.from_json and not args.readme:
        parser.error("--from-json writes --readme from an earlier run: give --readme docs/datasets.md")
    if args.readme:
        args.readme = str(section_file("cost-model", args.readme))
    try:  # every output checked before any work, so a finished run never fails on one
        for path in (args.json, args.plot, args.readme):
            if path:
                goenv.files.checked_output_path(path, "output")
                if not Path(path).resolve().parent.is_dir():
                    raise goenv.InvalidArgument(f"output {path}: its folder does not exist")
    except goenv.InvalidArgument as error:
        parser.error(str(error))
    if args.from_json:
        write_readme(args.readme, json.loads(Path(args.from_json).read_text()))
        return
    if args.quick:
        if any(getattr(args, key) != parser.get_default(key) for key in ("graphs_per_family", "k", "epochs")):
            parser.error("--quick sets --graphs-per-family, -k and --epochs itself; give one or the other")
        args.graphs_per_family, args.k, args.epochs = 2, 12, 2
    if min(args.graphs_per_family, args.k, args.epochs) < 1:
        parser.error("--graphs-per-family, -k and --epochs must be >= 1")
    args.seeds = args.seeds or ([0] if args.quick else [0, 1, 2])
    if len(set(args.seeds)) != len(args.seeds):
        parser.error(f"--seeds repeats a seed: {args.seeds}")
    torch.set_num_threads(1)
    made_at = results_commit()
    started = time.perf_counter()
    runs, points = [], None
    for seed in args.seeds:
        run, seed_points = run_seed(args, seed)
        runs.append(run)
        points = points or seed_points
        print(json.dumps({"seed": seed, **run["mean"]}), flush=True)
    results = {**made_at, "args": vars(args), "cluster": CLUSTER, "train_graphs": runs[0]["train_graphs"],
               "train_families": [f for f, _ in TRAIN], "runs": runs, **summary(runs),
               "seconds": {"total": time.perf_counter() - started}}
    print(json.dumps(results["mean"]))
    if args.json:
        goenv.files.write_atomic(args.json, (json.dumps(results, indent=1) + "\n").encode())
    if args.plot:
        plot(points, args.plot)
    if args.readme:
        write_readme(args.readme, results)


METHODS = ("gnn", "sum_of_op_costs", "lower_bound")


def run_seed(args, seed: int) -> tuple[dict, list]:
    """One seed's run: label, train, rank the held-out graphs. Its rows, means and seconds, and
    the held-out points of the figure."""
    torch.manual_seed(seed)
    started = time.perf_counter()
    with tempfile.TemporaryDirectory() as folder:
        train, test = label_data(folder, args.graphs_per_family, args.k, seed)
    labelled = time.perf_counter() - started
    model = CostModel(train[0]["graph"]["node_features"].shape[1], train[0]["num_devices"])
    optimizer = torch.optim.Adam(model.parameters(), lr=2e-3)
    cluster = goenv.clusters.get(CLUSTER)
    batches = [tensors(item, cluster) for item in train]
    rng = np.random.default_rng(seed)
    for epoch in range(args.epochs):
        losses = []
        for i in rng.permutation(len(batches)):
            b = batches[i]
            prediction = model(b["x"], b["src"], b["dst"], b["edge_share"], b["analytic"], b["device"])
            loss = pairwise_loss(prediction, b["target"]) + 0.1 * nn.functional.mse_loss(prediction, b["target"])
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
            losses.append(loss.item())
        print(f"seed {seed}, epoch {epoch + 1}/{args.epochs}: loss {np.mean(losses):.4f}", flush=True)

    rows, points = [], []
    with torch.no_grad():
        for item in test:
            b = tensors(item, cluster)
            predicted = model(b["x"], b["src"], b["dst"], b["edge_share"], b["analytic"], b["device"]).numpy()
            serial, bound = analytic(item, cluster)
            runtime = item["runtime"]
            predictions = {"gnn": predicted, "sum_of_op_costs": serial, "lower_bound": bound}
            rows.append({"graph": item["name"], "nodes": int(item["graph"]["num_nodes"]), "decisions": len(runtime),
                         **{f"tau_{m}": kendall_tau(predictions[m], runtime) for m in METHODS},
                         **{f"pairs_{m}": pair_accuracy(predictions[m], runtime) for m in METHODS}})
            points.append((item["name"], runtime / item["graph"]["lower_bound"], np.exp(predicted)))
    means = {key: float(np.mean([r[key] for r in rows])) for key in rows[0] if key.startswith(("tau_", "pairs_"))}
    return {"seed": seed, "train_graphs": len(train), "held_out": rows, "mean": means,
            "seconds": {"labelling": labelled, "total": time.perf_counter() - started}}, points


def summary(runs: list[dict]) -> dict:
    """Over the seeds: each held-out graph's and the mean's median and range of every score, and
    on how many seeds the GNN's mean tau beats each analytic model's."""
    def spread(values):
        return {"median": float(np.median(values)), "min": float(min(values)), "max": float(max(values))}

    scores = [key for key in runs[0]["mean"]]
    held_out = []
    for i, row in enumerate(runs[0]["held_out"]):
        held_out.append({"graph": row["graph"], "nodes": row["nodes"],
                         "decisions": [run["held_out"][i]["decisions"] for run in runs],
                         **{key: spread([run["held_out"][i][key] for run in runs]) for key in scores}})
    return {"held_out": held_out,
            "mean": {key: float(np.median([run["mean"][key] for run in runs])) for key in scores},
            "mean_range": {key: spread([run["mean"][key] for run in runs]) for key in scores},
            "gnn_wins": {m: sum(run["mean"]["tau_gnn"] > run["mean"][f"tau_{m}"] for run in runs)
                         for m in METHODS[1:]}}


def write_readme(readme: str, results: dict) -> None:
    write_section(Path(readme), "cost-model", table(results))


def plot(points, path: str) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    figure, axis = plt.subplots(figsize=(6, 5))
    for name, simulated, predicted in points:
        axis.scatter(simulated, predicted, s=10, alpha=0.7, label=name)
    low = min(min(p[1].min(), p[2].min()) for p in points)
    high = max(max(p[1].max(), p[2].max()) for p in points)
    axis.plot([low, high], [low, high], color="gray", linewidth=0.8)
    axis.set_xscale("log")
    axis.set_yscale("log")
    axis.set_xlabel("simulated runtime / graph's lower bound")
    axis.set_ylabel("predicted runtime / graph's lower bound")
    axis.set_title(f"GNN cost model, held-out graphs' placements ({CLUSTER}, first seed)", fontsize=10)
    axis.legend(fontsize=8)
    figure.tight_layout()
    figure.savefig(path, dpi=110)


def table(results: dict) -> str:
    if "runs" not in results:
        raise SystemExit("this results file was made before cost_model.py ran several seeds; make it again: "
                         "python experiments/cost_model.py --json docs/results/cost_model.json --plot "
                         "docs/cost_model.png --readme docs/datasets.md")
    a = results["args"]
    seeds = [run["seed"] for run in results["runs"]]
    commit = results["commit"][:10] + (" (uncommitted changes)" if results["dirty"] else "")
    seconds = results["seconds"]["total"]
    took = f"{seconds / 60:.0f} min" if seconds >= 120 else f"{seconds:.0f} s"

    def cell(score: dict) -> str:
        if len(seeds) == 1:
            return f"{score['median']:.2f}"
        return f"{score['median']:.2f} [{score['min']:.2f}–{score['max']:.2f}]"

    lines = [f"Made at commit `{commit}` by `python experiments/cost_model.py --json docs/results/cost_model.json "
             f"--plot docs/cost_model.png --readme docs/datasets.md` ({results['train_graphs']} training graphs of "
             f"{', '.join(results['train_families'])}; {a['k']} placements per graph on `{results['cluster']}`, "
             f"{a['epochs']} epochs; seeds {', '.join(map(str, seeds))}, each its own labels and initialization; "
             f"{took} on 2 shared cores). Kendall's tau of each held-out graph's placements (OOM ones "
             f"left out), median [range] over the seeds, and the ordered-pair accuracy's median:", "",
             "| held-out graph | nodes | GNN | sum of op costs | decision's lower bound |",
             "|---|---|---|---|---|"]
    for r in results["held_out"]:
        lines.append(f"| `{r['graph']}` | {r['nodes']:,} | "
                     + " | ".join(f"{cell(r['tau_' + m])} / {r['pairs_' + m]['median']:.2f}" for m in METHODS) + " |")
    m = results["mean_range"]
    lines.append("| **mean** | | " + " | ".join(f"**{cell(m['tau_' + k])}** / {m['pairs_' + k]['median']:.2f}"
                                             for k in METHODS) + " |")
    wins = results["gnn_wins"]
    lines += ["", f"The GNN's mean tau is above the sum of op costs' on {wins['sum_of_op_costs']} of {len(seeds)} "
                  f"seeds and above the decision's lower bound's on {wins['lower_bound']} of {len(seeds)}."]
    return "\n".join(lines)


if __name__ == "__main__":
    main()
