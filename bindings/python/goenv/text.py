"""Aligned plain-text tables for the CLI and the baselines."""

from __future__ import annotations

from typing import Sequence


def table(header: Sequence[str], rows: Sequence[Sequence[object]], align: str | None = None) -> str:
    """Rows under a header and a rule; align has one "l" or "r" per column (default: first left, others right)."""
    align = align or "l" + "r" * (len(header) - 1)
    cells = [[str(cell) for cell in row] for row in [header, *rows]]
    widths = [max(len(row[i]) for row in cells) for i in range(len(header))]
    lines = [[cell.ljust(width) if side == "l" else cell.rjust(width) for cell, width, side in zip(row, widths, align)]
             for row in cells]
    lines.insert(1, ["-" * width for width in widths])
    return "\n".join("  ".join(line).rstrip() for line in lines)
