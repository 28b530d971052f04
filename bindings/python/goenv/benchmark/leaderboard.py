"""The leaderboard: validated results files as one table per benchmark (rows by score) and a
plot of score against budget (docs/benchmark.md#leaderboard)."""

from __future__ import annotations

import os
import textwrap
from pathlib import Path

from goenv._core import InvalidArgument
from goenv.benchmark.results import Results, validate


def collect(paths) -> list[Results]:
    """Every results file among `paths` (files, or folders searched for *.json), validated."""
    files = []
    for path in map(Path, paths):
        files += sorted(path.rglob("*.json")) if path.is_dir() else [path]
    if not files:
        raise InvalidArgument(f"no results files in {', '.join(map(os.fspath, paths))}")
    return [validate(file) for file in files]


def markdown(results: list[Results]) -> str:
    """One Markdown table per benchmark: method, budget, IQM [95% CI], mean [95% CI], runtime over the
    best heuristic's (geometric mean), failed runs, goenv commit; best IQM first."""
    out = []
    for benchmark in sorted({r.benchmark for r in results}):
        rows = sorted((r for r in results if r.benchmark == benchmark),
                      key=lambda r: (-r.summary["iqm"], r.budget, r.method))
        out += [f"**{benchmark}**", "",
                "| method | calls | score IQM [95% CI] | score mean [95% CI] | runtime / best heuristic | failed | commit |",
                "|---|---|---|---|---|---|---|"]
        for r in rows:
            s = r.summary
            commit = (r.made_by.get("commit") or "-")[:9] + ("+" if r.made_by.get("dirty") else "")
            out.append(f"| {r.method} | {r.budget:,} | {s['iqm']:.3f} [{s['iqm_ci'][0]:.3f}, {s['iqm_ci'][1]:.3f}] | "
                       f"{s['mean']:.3f} [{s['mean_ci'][0]:.3f}, {s['mean_ci'][1]:.3f}] | "
                       f"{s['runtime_over_best_heuristic']:.3f} | {s['failed']} | `{commit}` |")
        out.append("")
    return "\n".join(out)


def split_below(points: list[tuple], floor: float) -> tuple[list[tuple], list[tuple]]:
    """(budget, IQM, low, high) points: those drawn, and the (budget, IQM) of those far below the
    default, named under the plot instead so the rest stays readable."""
    return [p for p in points if p[1] >= floor], [(p[0], p[1]) for p in points if p[1] < floor]


def plot(results: list[Results], path: str | os.PathLike, benchmark: str) -> None:
    """Score IQM (with its interval) against the budget, one line per method, for `benchmark`."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    chosen = [r for r in results if r.benchmark == benchmark]
    if not chosen:
        raise InvalidArgument(f"no results of {benchmark} to plot")
    figure, axes = plt.subplots(figsize=(8, 4.8))
    colors = plt.get_cmap("tab20").colors
    floor, below = -0.5, []
    for index, method in enumerate(sorted({r.method for r in chosen})):
        points = sorted((r.budget, r.summary["iqm"], *r.summary["iqm_ci"]) for r in chosen if r.method == method)
        points, hidden = split_below(points, floor)
        below += [f"{method} at {budget}: {score:.1f}" for budget, score in hidden]
        if not points:
            continue
        budgets, iqm, low, high = zip(*points)
        style = {"color": colors[index % len(colors)], "label": method}
        if len(points) == 1:  # a heuristic: one decision, one point
            axes.plot(budgets, iqm, marker="s", linestyle="none", **style)
            continue
        axes.plot(budgets, iqm, marker="o", **style)
        axes.fill_between(budgets, low, high, color=style["color"], alpha=0.15)
    axes.set_ylim(floor, 1.1)
    caption = textwrap.wrap("Below the axis: " + "; ".join(below) + ".", 110) if below else []
    axes.set_xscale("log", base=2)
    axes.set_xlabel("simulator calls per case and seed")
    axes.set_ylabel("normalized score (IQM, 95% CI)")
    axes.axhline(0, color="grey", linewidth=0.8)
    axes.axhline(1, color="grey", linewidth=0.8, linestyle="--")
    axes.set_title(f"{benchmark}: 0 = compiler default, 1 = best known")
    axes.legend(fontsize=7, loc="center left", bbox_to_anchor=(1.01, 0.5))
    if caption:  # under the axes, wrapped, with room kept for it
        figure.text(0.01, 0.01, "\n".join(caption), fontsize=7, color="dimgray", va="bottom")
    figure.tight_layout(rect=(0, 0.035 * len(caption), 1, 1))
    figure.savefig(path, dpi=110)
    plt.close(figure)
