"""Publishing a zoo folder's coverage report into the docs:

    python -m goenv.datasets.zoo.publish data/zoo --docs docs

copies the report to docs/zoo/coverage.md and docs/results/zoo_coverage.json (with the source
commit, goenv.provenance), draws docs/zoo/statistics.png and rewrites the summary in docs/zoo.md
between its <!-- zoo-coverage:begin --> and <!-- zoo-coverage:end --> markers. Another library
than transformers has files and markers of its own ("-diffusers"). `goenv dataset zoo --docs`
does the same after a run.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from typing import Sequence

from goenv._core import InvalidArgument
from goenv.datasets.zoo.report import COVERAGE_FORMAT, COVERAGE_JSON, MAX_REPORT_BYTES, markdown, summary_markdown
from goenv.files import read_json_file, write_atomic

__all__ = ["BEGIN", "END", "draw_statistics", "markers", "publish", "replace_between_markers"]

BEGIN, END = "<!-- zoo-coverage:begin -->", "<!-- zoo-coverage:end -->"


def _suffix(library: str) -> str:
    """What tells a library's published files apart: nothing for transformers (the first), else
    "-diffusers"."""
    return "" if library == "transformers" else f"-{library}"


def markers(library: str = "transformers") -> tuple[str, str]:
    """The markers in docs/zoo.md between which `library`'s summary table is written."""
    return BEGIN.replace("zoo-coverage", f"zoo-coverage{_suffix(library)}"), \
        END.replace("zoo-coverage", f"zoo-coverage{_suffix(library)}")


def replace_between_markers(text: str, body: str, where: str = "page", library: str = "transformers") -> str:
    """`text` with what lies between `library`'s zoo-coverage markers replaced by `body`."""
    begin, finish = markers(library)
    start, end = text.find(begin), text.find(finish)
    if start < 0 or end < start:
        raise InvalidArgument(f"{where} has no {begin} ... {finish} markers to write the coverage table between")
    return text[:start + len(begin)] + "\n" + body.rstrip("\n") + "\n" + text[end:]


def publish(root: str, docs: str) -> dict:
    """Copies the report of the zoo folder `root` into the docs folder `docs`: zoo/coverage.md,
    zoo/statistics.png, results/zoo_coverage.json (with the source commit, without the per-build
    op counts) and the summary in zoo.md between its markers; another library than transformers
    gets its own files and markers ("-diffusers"). Returns the written paths."""
    from goenv.provenance import source_commit

    report = read_json_file(os.path.join(root, COVERAGE_JSON), MAX_REPORT_BYTES, what="coverage report")
    if not isinstance(report, dict) or report.get("format") != COVERAGE_FORMAT:
        raise InvalidArgument(f"{os.path.join(root, COVERAGE_JSON)}: not a zoo coverage report")
    page = os.path.join(docs, "zoo.md")
    with open(page, encoding="utf-8") as file:
        text = replace_between_markers(file.read(), summary_markdown(report), page, report["library"])
    os.makedirs(os.path.join(docs, "zoo"), exist_ok=True)
    os.makedirs(os.path.join(docs, "results"), exist_ok=True)
    suffix = _suffix(report["library"])
    paths = {"page": page, "table": os.path.join(docs, "zoo", f"coverage{suffix}.md"),
             "figure": os.path.join(docs, "zoo", f"statistics{suffix}.png"),
             "results": os.path.join(docs, "results", f"zoo_coverage{suffix.replace('-', '_')}.json")}
    committed = {**source_commit(), **report,
                 "builds": [{k: v for k, v in row.items() if k != "op_counts"} for row in report["builds"]]}
    write_atomic(paths["results"], (json.dumps(committed, indent=1) + "\n").encode(), "results file")
    write_atomic(paths["table"], markdown(report).encode(), "coverage table")
    draw_statistics(report, paths["figure"])
    write_atomic(page, text.encode(), "docs page")
    return paths


def draw_statistics(report: dict, path: str) -> None:
    """docs/zoo/statistics.png: nodes per graph by size, model types imported and failed per
    modality, and the op mix of the zoo's graphs."""
    import matplotlib

    matplotlib.use("Agg")
    import numpy as np
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    figure = Figure(figsize=(15, 4.6), layout="constrained")
    FigureCanvasAgg(figure)
    sizes_axis, modality_axis, ops_axis = figure.subplots(1, 3)
    imported = [row for row in report["builds"] if row["status"] == "imported"]
    counts = [row["num_nodes"] for row in imported]
    if counts:
        bins = np.logspace(np.log10(max(1, min(counts))), np.log10(max(counts) + 1), 30)
        for size in report["sizes"]:
            mine = [row["num_nodes"] for row in imported if row["size"] == size]
            if mine:
                sizes_axis.hist(mine, bins=bins, alpha=0.6, label=f"{size} ({len(mine)})")
        sizes_axis.set_xscale("log")
        sizes_axis.legend()
    sizes_axis.set(title="nodes per graph", xlabel="nodes (ops of the training step)", ylabel="graphs")
    names = list(report["modalities"])
    good = [report["modalities"][m]["types_imported"] for m in names]
    bad = [report["modalities"][m]["types_tried"] - report["modalities"][m]["types_imported"] for m in names]
    modality_axis.bar(names, good, label="imported", color="tab:green")
    modality_axis.bar(names, bad, bottom=good, label="failed", color="tab:red")
    modality_axis.set(title="model types per modality", ylabel="model types")
    modality_axis.legend()
    total = sum(report["op_mix"].values())
    top = list(report["op_mix"].items())[:15]
    if total:
        ops_axis.barh([name for name, _ in top][::-1], [100 * n / total for _, n in top][::-1], color="tab:blue")
    ops_axis.set(title=f"op mix ({total:,} ops in all; top 15)", xlabel="% of ops")
    write_atomic(path, lambda file: figure.savefig(file, format="png", dpi=90), "figure")


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m goenv.datasets.zoo.publish",
                                     description="Publish a zoo folder's coverage report into the docs.")
    parser.add_argument("folder", help="a folder written by `goenv dataset zoo`")
    parser.add_argument("--docs", default="docs", help="the docs folder (default: %(default)s)")
    args = parser.parse_args(argv)
    for name, path in publish(args.folder, args.docs).items():
        print(f"{name}: {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
