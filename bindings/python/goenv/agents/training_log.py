"""Training logs: a metrics CSV written as training goes, and a PNG curve at the end, drawn
against the runtimes that make it mean something (the compiler default, the best heuristic,
the lower bound), with run.json beside them (the goenv version and commit that made them:
goenv.provenance). All are written atomically, only over regular files (goenv.files.CsvLog
and write_atomic)."""

from __future__ import annotations

import math
import os

import goenv._core as _core
from goenv import baselines
from goenv.envs import env_options, strip_gym_id
from goenv.files import CsvLog, checked_output_path, output_folder, write_atomic
from goenv.provenance import write_run_record

COLUMNS = ("step", "update", "mean_reward", "mean_runtime", "best_runtime", "mean_speedup", "best_speedup",
           "invalid_fraction", "policy_loss", "value_loss", "entropy", "approx_kl", "clip_fraction", "teacher_loss",
           "teacher_coef", "entropy_coef", "seconds")


# Heuristics that make one decision (one simulator call each), per task; the searches are left out.
SEARCHES = ("random-search", "local-search", "genetic")


def reference_runtimes(env) -> dict[str, float]:
    """Seconds: the compiler default, the best one-shot heuristic of the env's task (named) and
    the lower bound, for the lines of the training curve and for reports."""
    core = env if isinstance(env, _core.Env) else getattr(getattr(env, "unwrapped", env), "core", None)
    if isinstance(env, str):
        core = _core.make_env(strip_gym_id(env))
    elif core is not None:  # a fresh twin: the caller's episode stays untouched
        core = _core.make_env_on_graph(core.task, core.graph, core.cluster, **env_options(core))
    else:
        raise TypeError(f"expected an env id or a goenv env, got {type(env).__name__}")
    core.reset(0)
    best_name, best = None, float("inf")
    # "best-heuristic" last: a named heuristic it ties with names the line; it wins only with a
    # combination of the heads' heuristics that no single one gives.
    names = [name for name in baselines.list(core.task) if name not in SEARCHES and name != "best-heuristic"]
    for name in names + ["best-heuristic"]:
        result = baselines.solve(core, name)
        if not (result["oom"] or result["invalid"]) and result["runtime"] < best:
            best_name, best = name, result["runtime"]
    references = {"default": core.initial_runtime, "lower bound": baselines.lower_bound(core)}
    if best_name is not None:
        references["best heuristic" if best_name == "best-heuristic" else f"best heuristic ({best_name})"] = best
    return references


class TrainingLog:
    """Appends one CSV row per update to `log_dir/metrics.csv`; close() draws `log_dir/training_curve.png`
    titled `title`, with a horizontal line per reference runtime (seconds, by label). `log_dir/run.json`
    says what made them (goenv.provenance.write_run_record)."""

    def __init__(self, log_dir: str | os.PathLike, title: str = "training", references: dict | None = None):
        self.title = title
        self.references = dict(references or {})
        self.log_dir = os.fspath(log_dir)
        output_folder(self.log_dir, "log_dir")
        self.csv_path = os.path.join(self.log_dir, "metrics.csv")
        self.png_path = os.path.join(self.log_dir, "training_curve.png")
        checked_output_path(self.png_path, "training curve")  # before training: refused now, not after it
        self._csv = CsvLog(self.csv_path, COLUMNS, "training log")
        self.run_path = write_run_record(self.log_dir, log="training", title=title,  # seconds; None: not finite
                                         references={k: v if math.isfinite(v) else None
                                                     for k, v in self.references.items()})
        self.rows: list[dict] = []
        self._closed = False

    def append(self, metrics: dict) -> None:
        self.rows.append(dict(metrics))
        self._csv.append(metrics)

    def close(self) -> None:
        if self._closed:
            return
        self._closed = True
        if self.rows:
            plot_training_curve(self.rows, self.png_path, self.title, self.references)


def plot_training_curve(rows: list[dict], path: str, title: str = "training",
                        references: dict | None = None) -> None:
    """Reward, runtimes (ms, with a dashed line per reference) and losses against env steps
    (Agg canvas: no global matplotlib state)."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    steps = [r["step"] for r in rows]
    figure = Figure(figsize=(12, 4.4), dpi=100)
    FigureCanvasAgg(figure)
    reward, runtime, losses = figure.subplots(1, 3)
    reward.plot(steps, [r["mean_reward"] for r in rows], label="mean reward")
    reward.set_xlabel("env steps")
    reward.set_title("reward")
    runtime.plot(steps, [r["mean_runtime"] * 1e3 for r in rows], label="mean sampled")
    runtime.plot(steps, [r["best_runtime"] * 1e3 for r in rows], label="best found")
    for (label, seconds), style in zip(sorted((references or {}).items()), ("--", "-.", ":")):
        runtime.axhline(seconds * 1e3, color="gray", linestyle=style, linewidth=1,
                        label=f"{label} {seconds * 1e3:.1f} ms")
    runtime.set_xlabel("env steps")
    runtime.set_ylabel("ms")
    runtime.set_title("simulated runtime of a step")
    for key in ("policy_loss", "value_loss", "entropy"):
        losses.plot(steps, [r[key] for r in rows], label=key.replace("_", " "))
    losses.set_xlabel("env steps")
    losses.set_title("losses")
    for axes in (runtime, losses):  # below the axes: a legend inside hides the curves it explains
        axes.legend(fontsize=8, loc="upper center", bbox_to_anchor=(0.5, -0.2), ncol=2, frameon=False)
    figure.suptitle(title)
    figure.tight_layout()
    write_atomic(path, lambda file: figure.savefig(file, format="png"))
