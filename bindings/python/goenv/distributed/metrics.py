"""Per-update metrics of distributed training: a CSV written as training goes,
and the samples/s-against-workers picture the benchmark draws (both written atomically)."""

from __future__ import annotations

import os

from goenv.files import CsvLog, output_folder, write_atomic
from goenv.provenance import write_run_record

COLUMNS = ("update", "step", "version", "samples_per_second", "wait_seconds", "update_seconds", "publish_seconds",
           "lag_histogram", "dropped_rollouts", "worker_restarts", "mean_reward", "mean_speedup", "best_speedup",
           "policy_loss", "value_loss", "entropy", "approx_kl", "seconds")


def format_histogram(histogram: dict) -> str:
    """{0: 12, 1: 3} -> '0:12 1:3' (one CSV cell)."""
    return " ".join(f"{lag}:{count}" for lag, count in sorted(histogram.items()))


class MetricsLog:
    """Appends one row per update to `log_dir/distributed_metrics.csv`; `log_dir/distributed_run.json`
    says what made it (goenv.provenance.write_run_record)."""

    def __init__(self, log_dir: str | os.PathLike):
        folder = output_folder(log_dir, "log_dir")
        self.path = os.path.join(folder, "distributed_metrics.csv")
        self._csv = CsvLog(self.path, COLUMNS, "distributed metrics")
        self.run_path = write_run_record(folder, "distributed_run.json", log="distributed training")

    def append(self, metrics: dict) -> None:
        row = dict(metrics)
        row["lag_histogram"] = format_histogram(metrics.get("lag_histogram", {}))
        self._csv.append(row)

    def close(self) -> None:
        """Nothing to release: every row is on disk when append() returns."""


def plot_scaling(workers: list[float], samples_per_second: list[float], path: str, title: str,
                 labels: list[str] | None = None, cores: int | None = None) -> None:
    """samples/s against workers, with the ideal line from one worker (linear up to `cores`)."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    figure = Figure(figsize=(5.5, 3.8), dpi=100)
    FigureCanvasAgg(figure)
    axes = figure.subplots()
    axes.plot(workers, samples_per_second, "o-", label="measured")
    if workers and workers[0] == 1:
        ideal = [samples_per_second[0] * (min(w, cores) if cores else w) for w in workers]
        axes.plot(workers, ideal, "--", color="gray", label=f"linear up to {cores} cores" if cores else "linear")
    for x, y, label in zip(workers, samples_per_second, labels or []):
        if label:
            axes.annotate(label, (x, y), textcoords="offset points", xytext=(4, -12), fontsize=8)
    axes.set_xlabel("rollout workers")
    axes.set_ylabel("samples / s")
    axes.set_title(title)
    axes.legend()
    figure.tight_layout()
    write_atomic(path, lambda file: figure.savefig(file, format="png"), "scaling plot")
