"""Draws docs/architecture.svg, the layer diagram of docs/architecture.md.

    python docs/hooks/architecture_diagram.py            # writes docs/architecture.svg (replaces it)

The picture is a committed file so that it shows on GitHub and in a browser with no network (a
Mermaid diagram needs a script from a CDN); run this again after changing the layers below.
"""

from __future__ import annotations

import io
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
from matplotlib.patches import FancyBboxPatch  # noqa: E402

OUTPUT = Path(__file__).resolve().parents[1] / "architecture.svg"
NATIVE, TORCH, PYTHON, OPTIONAL = "#dbe4ff", "#ffe3c4", "#d3f9d8", "#f1f3f5"

# name -> (x, y, width, height, colour, title, detail); units are the axes' (0-16 by 0-7.2).
BOXES = {
    "core": (0.3, 5.0, 3.4, 1.7, NATIVE, "core/", "Graph, Cluster, cost model,\nsimulator, fusion, lower bound"),
    "datasets": (4.3, 5.0, 3.0, 1.7, NATIVE, "datasets/", "training-graph DSL,\none file per family"),
    "envs": (7.9, 5.0, 3.6, 1.7, NATIVE, "envs/", "Env, tasks, observation,\nVectorEnv, baselines/"),
    "agents": (12.3, 5.0, 3.4, 1.7, TORCH, "agents/", "PPO, GO, search\n(LibTorch)"),
    "_core": (7.9, 2.8, 3.6, 1.3, NATIVE, "goenv._core", "pybind11, no torch"),
    "_agents": (12.3, 2.8, 3.4, 1.3, TORCH, "goenv._agents", "pybind11 + LibTorch"),
    "python": (7.9, 0.4, 7.8, 1.5, PYTHON, "goenv (Python)", "make, make_vec, baselines, datasets, labels, CLI"),
    "extras": (3.7, 0.4, 3.6, 1.5, OPTIONAL, "extras", "distributed (Ray),\nintegrations (SB3, RLlib)"),
}
ARROWS = [("core", "datasets"), ("datasets", "envs"), ("envs", "agents"), ("envs", "_core"), ("agents", "_agents"),
          ("_core", "python"), ("_agents", "python"), ("python", "extras")]


def anchor(box: tuple, towards: tuple) -> tuple[float, float]:
    """Where an arrow between two boxes meets `box`: on the side facing `towards`, straight across
    from the middle of the two boxes' overlap (the layout keeps every linked pair overlapping in x
    or in y)."""
    x, y, w, h = box[:4]
    tx, ty, tw, th = towards[:4]
    if ty + th <= y or ty >= y + h:  # one above the other: a vertical arrow
        middle = (max(x, tx) + min(x + w, tx + tw)) / 2
        return (middle, y if ty < y else y + h)
    middle = (max(y, ty) + min(y + h, ty + th)) / 2
    return (x + w if tx > x else x, middle)


def draw() -> bytes:
    plt.rcParams["svg.hashsalt"] = "goenv"  # the same file for the same picture
    figure, axes = plt.subplots(figsize=(12, 5.4))
    axes.set_xlim(0, 16)
    axes.set_ylim(0, 7.2)
    axes.axis("off")
    axes.add_patch(FancyBboxPatch((0.1, 4.75), 11.6, 2.2, boxstyle="round,pad=0.02", facecolor="none",
                                  edgecolor="#4c6ef5", linestyle="--", linewidth=1))
    axes.text(0.2, 7.0, "C++ library goenv_lib", color="#364fc7", fontsize=9, va="bottom")
    for x, y, w, h, colour, title, detail in BOXES.values():
        axes.add_patch(FancyBboxPatch((x, y), w, h, boxstyle="round,pad=0.05", facecolor=colour,
                                      edgecolor="#495057", linewidth=1))
        axes.text(x + w / 2, y + h * 0.68, title, ha="center", va="center", fontsize=11, weight="bold",
                  family="monospace")
        axes.text(x + w / 2, y + h * 0.3, detail, ha="center", va="center", fontsize=8.5)
    for source, target in ARROWS:
        start = anchor(BOXES[source], BOXES[target])
        end = anchor(BOXES[target], BOXES[source])
        axes.annotate("", xy=end, xytext=start, arrowprops=dict(arrowstyle="-|>", color="#343a40", lw=1.2))
    buffer = io.BytesIO()
    figure.savefig(buffer, format="svg", bbox_inches="tight", metadata={"Date": None})
    plt.close(figure)
    return buffer.getvalue()


if __name__ == "__main__":
    OUTPUT.write_bytes(draw())
    print(f"wrote {OUTPUT}")
