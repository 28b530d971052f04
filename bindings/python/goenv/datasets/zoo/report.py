"""The zoo's coverage report: which model types imported, which failed where and why, how big
and how costly each build was, per modality and in total.

    goenv dataset zoo --out data/zoo    # writes data/zoo/coverage.json and coverage.md

coverage.json holds one row per build of the plan that has run (model type, size, modality,
lineage and split, status, failure stage and reason, nodes, seconds, peak memory of the child,
its op counts), the totals, per modality and per failure stage, the op mix of the zoo's graphs
and the versions. Times and memory are measured, so they differ from run to run, unlike the
dataset's shards and manifest. zoo/publish.py copies a report into the docs.
"""

from __future__ import annotations

import collections
import json
import os
import statistics

from goenv._core import InvalidArgument
from goenv.files import read_json_file, write_atomic

__all__ = ["COVERAGE_FORMAT", "COVERAGE_JSON", "COVERAGE_MD", "MAX_REPORT_BYTES", "coverage", "markdown",
           "read_measurements", "summary_markdown", "write_report"]

COVERAGE_JSON = "coverage.json"
COVERAGE_MD = "coverage.md"
COVERAGE_FORMAT = "goenv-zoo-coverage"
MAX_REPORT_BYTES = 64 << 20
MEASURED = ("seconds", "peak_memory_bytes", "op_counts", "uncosted_ops")  # per build, beside its manifest record
MODALITIES = ("text", "vision", "audio", "multimodal", "other")
STAGES = ("unknown", "config", "build", "inputs", "trace", "cost", "limits")


def read_measurements(root: str) -> dict[str, dict]:
    """{"library/model_type/size": {seconds, peak_memory_bytes, op_counts}} of the report in `root`
    (empty when there is none or it is unreadable: only the kept shards' rows are reused)."""
    try:
        report = read_json_file(os.path.join(root, COVERAGE_JSON), MAX_REPORT_BYTES, what="coverage report")
    except (InvalidArgument, OSError):
        return {}
    if not isinstance(report, dict) or report.get("format") != COVERAGE_FORMAT:
        return {}
    measured = {}
    for row in report.get("builds", []):
        if isinstance(row, dict) and isinstance(row.get("key"), str):
            measured[row["key"]] = {k: row[k] for k in MEASURED if k in row}
    return measured


def _placement(builder, model_type: str, library: str) -> tuple[str, str | None, str | None]:
    """(modality, lineage, split) of a model type; lineage and split None when the committed
    split does not list it."""
    from goenv.datasets.zoo import lineages

    try:
        modality = builder.modality(model_type, library=library)
    except Exception:  # noqa: BLE001 - an unknown type is reported, not fatal
        modality = "other"
    try:
        return modality, lineages.lineage(model_type, library=library), lineages.split(model_type, library=library)
    except Exception:  # noqa: BLE001 - a type the committed list lacks shows as unsplit
        return modality, None, None


def coverage(manifest: dict, measurements: dict[str, dict], builder, run: dict | None = None) -> dict:
    """The report of a zoo dataset's manifest (its finished shards) and the builds' measurements."""
    zoo = manifest["zoo"]
    rows = []
    for record in (entry for shard in manifest["shards"] for entry in shard["builds"]):
        key = f"{record['library']}/{record['model_type']}/{record['size']}"
        modality, lineage, split = _placement(builder, record["model_type"], record["library"])
        measured = measurements.get(key, {})
        rows.append({"key": key, "model_type": record["model_type"], "size": record["size"], "modality": modality,
                     "lineage": lineage, "split": split, "status": record["status"], "stage": record["stage"],
                     "reason": record["reason"], "num_nodes": record["num_nodes"],
                     "duplicate_of": record["duplicate_of"], "graph": record["graph"],
                     "seconds": measured.get("seconds"), "peak_memory_bytes": measured.get("peak_memory_bytes"),
                     **{k: measured[k] for k in ("op_counts", "uncosted_ops") if k in measured}})
    ok = [row for row in rows if row["status"] != "failed"]
    nodes = sorted(row["num_nodes"] for row in ok)
    versions = {zoo["library"]: zoo["library_version"], "goenv": manifest.get("goenv_version")}
    provenance = next((e["provenance"] for shard in manifest["shards"] for e in shard["builds"] if e["provenance"]),
                      None)
    if provenance:
        versions["torch"] = provenance.get("torch_version")
    types_tried = sorted({row["model_type"] for row in rows})
    types_imported = sorted({row["model_type"] for row in ok})
    modalities = {}
    for modality in MODALITIES:
        mine = [row for row in rows if row["modality"] == modality]
        if mine:
            tried = {row["model_type"] for row in mine}
            imported = {row["model_type"] for row in mine if row["status"] != "failed"}
            modalities[modality] = {"types_tried": len(tried), "types_imported": len(imported),
                                    "builds": len(mine), "graphs": sum(row["status"] == "imported" for row in mine)}
    op_mix, uncosted = collections.Counter(), collections.Counter()
    for row in rows:
        op_mix.update(row.get("op_counts", {}))
        uncosted.update(row.get("uncosted_ops", ()))
    seconds = [row["seconds"] for row in rows if row["seconds"] is not None]
    memory = [row["peak_memory_bytes"] for row in rows if row["peak_memory_bytes"]]
    fewer = zoo.get("types_by_size", {})
    sizes = {size: {"builds_planned": len(fewer.get(size, zoo["model_types"])), **_size_totals(
        [row for row in rows if row["size"] == size])} for size in zoo["sizes"]}
    return {
        "format": COVERAGE_FORMAT, "format_version": 1, "library": zoo["library"], "versions": versions,
        "sizes": zoo["sizes"], "memory_limit": zoo["memory_limit"], "time_limit": zoo["time_limit"],
        "complete": bool(manifest.get("complete")), "builds_planned": zoo["num_builds"],
        "types_planned": len(zoo["model_types"]), "run": run or {},
        "totals": {
            "builds_tried": len(rows), "graphs": sum(row["status"] == "imported" for row in rows),
            "duplicates": sum(row["status"] == "duplicate" for row in rows),
            "failed": sum(row["status"] == "failed" for row in rows),
            "types_tried": len(types_tried), "types_imported": len(types_imported),
            "failed_by_stage": dict(sorted(collections.Counter(r["stage"] for r in rows
                                                               if r["status"] == "failed").items())),
            "nodes": ({"min": nodes[0], "median": statistics.median(nodes), "max": nodes[-1],
                       "total": sum(nodes)} if nodes else None),
            "build_seconds": round(sum(seconds), 3), "max_peak_memory_bytes": max(memory) if memory else None,
            "uncosted_ops": dict(sorted(uncosted.items())),  # op: builds that had it costed by the default rule
        },
        "sizes_detail": sizes,
        "modalities": modalities,
        "op_mix": dict(op_mix.most_common()),
        "builds": rows,
    }


def _size_totals(rows: list[dict]) -> dict:
    """Builds tried and imported, graphs, node counts and child seconds of one size's rows."""
    nodes = sorted(row["num_nodes"] for row in rows if row["status"] != "failed")
    return {"builds_tried": len(rows), "builds_imported": len(nodes),
            "graphs": sum(row["status"] == "imported" for row in rows),
            "nodes": {"min": nodes[0], "median": statistics.median(nodes), "max": nodes[-1]} if nodes else None,
            "build_seconds": round(sum(row["seconds"] or 0.0 for row in rows), 3)}


def _cell(text, width: int = 110) -> str:
    """One table cell: one line, at most `width` characters, no Markdown table or HTML syntax."""
    text = " ".join(str(text).split())
    text = text if len(text) <= width else text[:width - 1] + "…"
    return text.replace("|", "\\|").replace("<", "&lt;").replace(">", "&gt;")


def _mib(value) -> str:
    return "" if not value else f"{value / 2**20:,.0f}"


def summary_markdown(report: dict) -> str:
    """Totals, per modality and per failure stage: the table docs/zoo.md shows."""
    totals, versions = report["totals"], report["versions"]
    shown_versions = ", ".join(f"{name} {version}" for name, version in versions.items() if version)
    nodes = totals["nodes"]
    lines = [
        f"{'Complete run' if report['complete'] else 'Partial run'} of {', '.join(report['sizes'])} "
        f"({shown_versions}): {totals['builds_tried']:,} of {report['builds_planned']:,} builds tried, "
        f"{totals['types_imported']} of {totals['types_tried']} model types tried imported "
        f"({report['types_planned']} in the plan); {totals['graphs']:,} distinct graphs, "
        f"{totals['duplicates']} duplicates."
        + (f" Nodes per graph: {nodes['min']:,} to {nodes['max']:,} (median {nodes['median']:,.0f})." if nodes else "")
        + _timing(report),
        "",
        "| modality | types tried | types imported | share | graphs |",
        "|---|---:|---:|---:|---:|",
    ]
    for modality, row in report["modalities"].items():
        share = row["types_imported"] / row["types_tried"] if row["types_tried"] else 0.0
        lines.append(f"| {modality} | {row['types_tried']} | {row['types_imported']} | {share:.0%} | "
                     f"{row['graphs']} |")
    share = totals["types_imported"] / totals["types_tried"] if totals["types_tried"] else 0.0
    lines.append(f"| **all** | **{totals['types_tried']}** | **{totals['types_imported']}** | **{share:.0%}** | "
                 f"**{totals['graphs']}** |")
    if len(report.get("sizes_detail", {})) > 1:
        lines += ["", "| size | builds tried | imported | graphs | nodes: min | median | max | child hours |",
                  "|---|---:|---:|---:|---:|---:|---:|---:|"]
        for size, row in report["sizes_detail"].items():
            low, mid, high = ((f"{n['min']:,}", f"{n['median']:,.0f}", f"{n['max']:,}") if (n := row["nodes"])
                              else ("", "", ""))
            lines.append(f"| {size} | {row['builds_tried']:,} of {row['builds_planned']:,} | {row['builds_imported']:,} "
                         f"| {row['graphs']:,} | {low} | {mid} | {high} | {row['build_seconds'] / 3600:.2f} |")
    if totals.get("uncosted_ops"):
        ops = ", ".join(f"`{op}` ({n})" for op, n in totals["uncosted_ops"].items())
        lines += ["", f"Ops with no cost rule, costed at 1 FLOP per output element (builds): {ops}."]
    if totals["failed_by_stage"]:
        lines += ["", "| failure stage | builds |", "|---|---:|"]
        lines += [f"| {stage} | {count} |" for stage, count in totals["failed_by_stage"].items()]
    return "\n".join(lines) + "\n"


def _timing(report: dict) -> str:
    """The builds' own seconds (children, summed), and what the last run of the command did:
    a resumed folder's last run built only what was left."""
    run, seconds = report["run"], report["totals"]["build_seconds"]
    text = f" The builds took {seconds / 3600:.2f} h of child-process time in all"
    if run.get("builds"):
        text += (f"; the last run of the command built {run['builds']:,} of them in {run['wall_seconds'] / 60:.1f} min "
                 f"with {run['workers']} worker(s){' on Ray' if run.get('ray') else ''}")
    return text + "."


def markdown(report: dict) -> str:
    """The full report: the summary, then one row per build."""
    lines = ["# Zoo coverage", "", summary_markdown(report), "",
             "| model type | size | modality | split | status | nodes | seconds | peak MiB | stage: reason |",
             "|---|---|---|---|---|---:|---:|---:|---|"]
    for row in report["builds"]:
        why = (f"{row['stage']}: {_cell(row['reason'])}" if row["status"] == "failed" else
               f"same graph as {row['duplicate_of']}" if row["status"] == "duplicate" else "")
        seconds = "" if row["seconds"] is None else f"{row['seconds']:.1f}"
        lines.append(f"| {row['model_type']} | {row['size']} | {row['modality']} | {row['split'] or '-'} | "
                     f"{row['status']} | {row['num_nodes'] or ''} | {seconds} | {_mib(row['peak_memory_bytes'])} "
                     f"| {why} |")
    return "\n".join(lines) + "\n"


def write_report(root: str, manifest: dict, measurements: dict[str, dict], builder, run: dict | None = None) -> dict:
    """Writes root/coverage.json and root/coverage.md (atomically); returns the report."""
    report = coverage(manifest, measurements, builder, run)
    write_atomic(os.path.join(root, COVERAGE_JSON), (json.dumps(report, indent=1) + "\n").encode(), "coverage report")
    write_atomic(os.path.join(root, COVERAGE_MD), markdown(report).encode(), "coverage report")
    return report
