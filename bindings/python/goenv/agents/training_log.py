"""Training logs: a metrics CSV written as training goes, and a PNG curve at the end."""

from __future__ import annotations

import csv
import os

COLUMNS = ("step", "update", "mean_reward", "mean_runtime", "best_runtime", "mean_speedup", "best_speedup",
           "invalid_fraction", "policy_loss", "value_loss", "entropy", "approx_kl", "clip_fraction", "seconds")


class TrainingLog:
    """Appends one CSV row per update to `log_dir/metrics.csv`; close() draws `log_dir/training_curve.png`."""

    def __init__(self, log_dir: str | os.PathLike):
        self.log_dir = os.fspath(log_dir)
        os.makedirs(self.log_dir, exist_ok=True)
        self.csv_path = os.path.join(self.log_dir, "metrics.csv")
        self.png_path = os.path.join(self.log_dir, "training_curve.png")
        self.rows: list[dict] = []
        self._file = open(self.csv_path, "w", newline="")
        self._writer = csv.DictWriter(self._file, fieldnames=COLUMNS, extrasaction="ignore")
        self._writer.writeheader()

    def append(self, metrics: dict) -> None:
        self.rows.append(dict(metrics))
        self._writer.writerow(metrics)
        self._file.flush()

    def close(self) -> None:
        if self._file.closed:
            return
        self._file.close()
        if self.rows:
            plot_training_curve(self.rows, self.png_path)


def plot_training_curve(rows: list[dict], path: str) -> None:
    """Reward, runtimes and losses against env steps (Agg canvas: no global matplotlib state)."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    steps = [r["step"] for r in rows]
    figure = Figure(figsize=(12, 3.6), dpi=100)
    FigureCanvasAgg(figure)
    reward, runtime, losses = figure.subplots(1, 3)
    reward.plot(steps, [r["mean_reward"] for r in rows], label="mean reward")
    reward.set_xlabel("env steps")
    reward.set_title("reward")
    runtime.plot(steps, [r["mean_runtime"] for r in rows], label="mean")
    runtime.plot(steps, [r["best_runtime"] for r in rows], label="best")
    runtime.set_xlabel("env steps")
    runtime.set_ylabel("seconds")
    runtime.set_title("simulated runtime")
    runtime.legend()
    for key in ("policy_loss", "value_loss", "entropy"):
        losses.plot(steps, [r[key] for r in rows], label=key.replace("_", " "))
    losses.set_xlabel("env steps")
    losses.set_title("losses")
    losses.legend()
    figure.tight_layout()
    tmp = f"{path}.tmp{os.getpid()}.png"
    figure.savefig(tmp)
    os.replace(tmp, path)
