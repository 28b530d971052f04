"""`goenv benchmark list | run | validate | leaderboard | references` (docs/benchmark.md)."""

from __future__ import annotations

import argparse
import importlib
import json
import os

import goenv
from goenv._core import InvalidArgument
from goenv.benchmark import catalog, evaluate, leaderboard, references, validate
from goenv.files import new_output_path


def add_arguments(parser: argparse.ArgumentParser) -> None:
    commands = parser.add_subparsers(dest="benchmark_command", required=True, metavar="COMMAND")
    commands.add_parser("list", help="the benchmarks: cases, budgets, seeds, what to train on").set_defaults(run=_list)
    run = commands.add_parser("run", help="score a method on a benchmark and write a results file")
    run.add_argument("method", help="a baseline's name (local-search, heft, ...), 'go-placement' (the shipped "
                                    "placer), a checkpoint file, or MODULE:FUNCTION (a callable obs -> action)")
    run.add_argument("benchmark", help="a benchmark's name (goenv benchmark list)")
    run.add_argument("--budget", type=int, help="simulator calls per case and seed (default: the benchmark's)")
    run.add_argument("--name", help="the method's name in the results (default: from METHOD)")
    run.add_argument("--out", help="write the results file here")
    run.add_argument("--overwrite", action="store_true", help="replace an existing --out file")
    run.add_argument("--json", action="store_true", help="print the summary as JSON")
    run.add_argument("--no-progress", action="store_true", help="no progress bar")
    run.set_defaults(run=_run)
    check = commands.add_parser("validate", help="re-simulate every decision of a results file")
    check.add_argument("file")
    check.add_argument("--json", action="store_true", help="print the summary as JSON")
    check.set_defaults(run=_validate)
    board = commands.add_parser("leaderboard", help="the table of validated results files (yours beside ours)")
    board.add_argument("paths", nargs="+", help="results files or folders of them (docs/results/benchmark)")
    board.add_argument("--plot", metavar="PNG", help="also draw score against budget for --benchmark")
    board.add_argument("--benchmark", default="placement-transfer-v0", help="the benchmark to plot")
    board.set_defaults(run=_leaderboard)
    anchors = commands.add_parser("references", help="regenerate the committed anchors of every case, or take the "
                                                     "better decisions of a results file")
    anchors.add_argument("--write", action="store_true", help="regenerate every case's references and write them")
    anchors.add_argument("--fresh", action="store_true", help="forget the committed best decisions")
    anchors.add_argument("--benchmark", metavar="NAME",
                         help="only this benchmark's cases (the others stay as committed)")
    anchors.add_argument("--add", metavar="FILE", help="take the better decisions of a results file (validated first)")
    anchors.set_defaults(run=_references)


def _list(args) -> None:
    for name in catalog.names():
        benchmark = catalog.get(name)
        print(f"{name}: {benchmark.description}\n  {len(benchmark.cases)} cases x seeds "
              f"{','.join(map(str, benchmark.seeds))}; budgets {', '.join(map(str, benchmark.budgets))} "
              f"(default {benchmark.default_budget}); train on {benchmark.train_on}")


def method_from(text: str):
    """What `goenv benchmark run METHOD` names, as evaluate() takes it."""
    if text in goenv.baselines.list():
        return text
    if text == "go-placement":
        return goenv.agents.pretrained("go-placement")
    if os.path.isfile(text):
        return goenv.agents.load(text)
    module, _, function = text.partition(":")
    if not function:
        raise InvalidArgument(f"{text!r} is neither a baseline ({', '.join(goenv.baselines.list())}), go-placement, "
                              f"a checkpoint file nor MODULE:FUNCTION")
    try:
        return getattr(importlib.import_module(module), function)
    except (ImportError, AttributeError) as problem:
        raise InvalidArgument(f"cannot import {text}: {problem}") from None


def _print_summary(results, as_json: bool) -> None:
    s = results.summary
    if as_json:
        print(json.dumps({"benchmark": results.benchmark, "method": results.method, "budget": results.budget,
                          **s}, indent=1))
        return
    print(results.table())
    print(f"{results.method} on {results.benchmark} at {results.budget} calls: score IQM {s['iqm']:.3f} "
          f"[{s['iqm_ci'][0]:.3f}, {s['iqm_ci'][1]:.3f}], mean {s['mean']:.3f}; runtime / best heuristic "
          f"{s['runtime_over_best_heuristic']:.3f}; {s['failed']} of {s['runs']} runs failed; "
          f"{s['simulator_calls']:,} simulator calls")


def _run(args) -> None:
    if args.out:  # refused before the work, not after it
        new_output_path(args.out, "results file", args.overwrite, flag="--overwrite", folder_must_exist=True)
    results = evaluate(method_from(args.method), args.benchmark, budget=args.budget, name=args.name,
                       progress=not args.no_progress)
    if args.out:
        results.save(args.out, overwrite=args.overwrite)
    _print_summary(results, args.json)


def _validate(args) -> None:
    results = validate(args.file)
    _print_summary(results, args.json)
    if not args.json:
        print(f"{args.file}: valid ({len(results.records)} decisions re-simulated)")


def _leaderboard(args) -> None:
    results = leaderboard.collect(args.paths)
    print(leaderboard.markdown(results))
    if args.plot:
        leaderboard.plot(results, args.plot, args.benchmark)


def _references(args) -> None:
    """Improves the committed references: from a validated results file (--add), or by regenerating
    them (--write); a reference never gets worse."""
    if args.add:
        cases = json.loads(json.dumps(references.load()))
        improved = references.add(cases, validate(args.add))
        references.save(cases)
        print(f"{len(improved)} references improved: {', '.join(improved) or 'none'}")
        return
    if not args.write:
        raise InvalidArgument("say --write (regenerate) or --add FILE")
    kept = {} if args.benchmark is None or not references.PATH.exists() else dict(references.load())
    references.save({**kept, **references.regenerate(fresh=args.fresh, benchmark=args.benchmark)})
    print(f"wrote {references.PATH}")
