"""Labelled datasets for learned cost models: graphs x decisions x simulated outcomes.

    labels = goenv.datasets.label("data/rl", "data/rl-labels", task="placement", decisions_per_graph=64)
    labels = goenv.datasets.open_labels("data/rl-labels")     # len(labels), .graph(i), .decisions(i), .table()
    goenv.datasets.export_tpugraphs("data/rl-labels", "data/rl-npz")   # TpuGraphs' layout, one .npz per graph
    goenv dataset label data/rl --out data/rl-labels --task placement -k 64 [--workers N [--address ADDR]]

One file per job: sources (what is labelled), decisions (the mix of decisions), labeller
(one graph's decisions simulated), tables (the Parquet columns), shard (one shard's files,
labelled and written), folder (manifest, resume, reading; goenv.storage's sharded folder),
ray_workers (the Ray path), tpugraphs (the npz export), torch_dataset (a PyTorch Dataset),
command (the `goenv dataset label` and `export-tpugraphs` commands).
"""

from goenv.labels.decisions import SAMPLERS
from goenv.labels.folder import Labels, label, open_labels
from goenv.labels.tpugraphs import export_tpugraphs

__all__ = ["SAMPLERS", "Labels", "export_tpugraphs", "label", "open_labels"]
