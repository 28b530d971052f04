"""examples/place_your_model.py run, and its output with what it says written between the
<!-- place-your-model:begin/end --> markers of the docs page holding them (docs/your-model.md).

    python experiments/place_your_model_section.py --readme docs/your-model.md

It takes the example's own options (--layers, --devices, --finetune ...); the example itself
only prints.
"""

from __future__ import annotations

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "examples"))
sys.path.insert(0, str(Path(__file__).resolve().parent))
import place_your_model  # noqa: E402
from doc_sections import section_file, write_section  # noqa: E402
from readme_tables import results_commit  # noqa: E402

SECTION = "place-your-model"


def reading(lines: list[str], results: dict, args) -> str:
    """The run's output and what it says, against the best heuristic (the numbers are this run's)."""
    best = results["best-heuristic"]

    def versus(value: float) -> str:
        change = (value / best - 1) * 100
        return "equal to" if abs(change) < 0.05 else f"{abs(change):.1f}% {'below' if change < 0 else 'above'}"

    greedy, searched = results["GO zero-shot (greedy)"], results[f"GO zero-shot ({args.samples}-call search)"]
    said = (f"Zero-shot, the shipped placer's greedy decision from the default is "
            f"{'the default itself' if greedy == results['default'] else versus(greedy) + ' the best heuristic'}; "
            f"its {args.samples}-call search from the best heuristic ends {versus(searched)} it")
    tuned = [v for k, v in results.items() if k.startswith("GO fine-tuned")]
    if tuned:
        said += f"; fine-tuned for {args.finetune} simulator calls it ends {versus(tuned[0])} it"
    return ("```\n" + "\n".join(lines) + "\n```\n\n" + said +
            f" (`python experiments/place_your_model_section.py --readme docs/your-model.md`, "
            f"commit {(results_commit()['commit'] or 'unknown')[:10]}).")


def main(argv: list[str] | None = None) -> dict:
    parser = place_your_model.make_parser(__doc__)
    parser.add_argument("--readme", metavar="FILE", help=f"the page to write: FILE, which holds the <!-- {SECTION}:"
                        "begin/end --> markers; README.md: the page of the README or docs/ that holds them "
                        "(default: the project's page holding them, docs/your-model.md)")
    args = parser.parse_args(argv)
    place_your_model.check_arguments(parser, args)
    page = section_file(SECTION, args.readme)  # checked before the work, not after it
    lines = []

    def say(line: str) -> None:
        place_your_model.print_line(line)
        lines.append(line)

    results = place_your_model.place(args, say)
    write_section(page, SECTION, reading(lines, results, args))
    return results


if __name__ == "__main__":
    main()
