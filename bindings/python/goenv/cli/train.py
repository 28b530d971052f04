"""`goenv train`: a reference agent trained on one env, here or on Ray workers; Ctrl-C stops it
after the update under way and still saves."""

from __future__ import annotations

import argparse
import contextlib
import io
import signal
import sys
import threading
from typing import Callable, Sequence

import numpy as np

import goenv
import goenv.agents
import goenv.distributed
from goenv.agents.training_log import reference_runtimes
from goenv.files import write_atomic
from goenv.cli.common import ID_HELP, MS, bars, make_env, new_output, print_table


def _agent_options(items: Sequence[str]) -> dict:
    """--option KEY=VALUE pairs, each value read as its option's type: an integer, a number,
    true/false/1/0 for a bool, text for a string (the agent checks the ranges, agents/config.cc)."""
    types = {name: kind for name, kind, *_ in goenv.agents.options()}
    readers = {"i": int, "d": float, "b": lambda text: {"true": True, "1": True, "false": False, "0": False}[text.lower()],
               "s": str}
    options = {}
    for item in items:
        key, sep, value = item.partition("=")
        key, value = key.strip().replace("-", "_"), value.strip()
        if not sep or key not in types:
            raise goenv.InvalidArgument(f"--option takes KEY=VALUE with KEY one of {', '.join(sorted(types))}; "
                                        f"got {item!r}")
        try:
            options[key] = readers[types[key]](value)
        except (KeyError, ValueError):
            kind = {"i": "an integer", "d": "a number", "b": "true or false", "s": "text"}[types[key]]
            raise goenv.InvalidArgument(f"--option {key} takes {kind}, got {value!r}") from None
    return options


def _agent_options_help() -> str:
    """The agent options, for `goenv train --help` (made only when help is shown: it loads torch)."""
    try:
        fields = goenv.agents.options()
    except ImportError as error:
        return f"\nagent options: unavailable ({error})\n"
    width = max(len(name) for name, *_ in fields)
    lines = [f"  {name:<{width}}  {default!s:>8}  {meaning}" for name, _, default, meaning in fields]
    return "\nagent options (--option KEY=VALUE, repeatable; default, meaning):\n" + "\n".join(lines) + "\n"


class StopOnInterrupt:
    """While training: the first Ctrl-C asks it to stop after the update under way (the agent
    then gets its search and --save as after a full run: hours of training are not lost to one
    key), a second one interrupts at once. Signals reach only the main thread: elsewhere
    (a test calling main() on a thread) Ctrl-C keeps its usual meaning."""

    def __init__(self) -> None:
        self.requested = False
        self._previous = None

    def __enter__(self) -> "StopOnInterrupt":
        if threading.current_thread() is threading.main_thread():
            self._previous = signal.signal(signal.SIGINT, self._handle)
        return self

    def __exit__(self, *exc) -> None:
        if self._previous is not None:
            signal.signal(signal.SIGINT, self._previous)

    def _handle(self, signum, frame) -> None:
        if self.requested:
            raise KeyboardInterrupt
        self.requested = True
        print("\ngoenv: Ctrl-C: training stops after this update, then saves and searches as usual "
              "(Ctrl-C again to stop at once)", file=sys.stderr, flush=True)

    def go_on(self, metrics: dict) -> bool:
        """The training callback: False (stop) once Ctrl-C was pressed."""
        return not self.requested


@contextlib.contextmanager
def _saved_when_interrupted(agent, path: str | None, trained: Callable[[], bool]):
    """A second Ctrl-C stops training at once; what it trained is still saved to `path` (the
    update under way is either done or not begun: the agent is whole), if it trained at all
    (`trained()`: an untrained agent replaces no file)."""
    try:
        yield
    except KeyboardInterrupt:
        if path and trained():
            agent.save(path, overwrite=True)  # checked before training (--overwrite)
            print(f"goenv: agent saved to {path} ({agent.steps_trained} steps trained)", file=sys.stderr)
        raise


def _train(args: argparse.Namespace) -> None:
    env, options = _train_setup(args)
    agent = goenv.agents.make_agent(args.agent, **{"seed": args.seed, **options})
    history, saved, stopped = _trained(args, env, agent)
    steps_done = args.steps
    if stopped:
        steps_done = history[-1]["step"] if history else 0
        print(f"training stopped by Ctrl-C after {steps_done} of {args.steps} steps")
    if args.save:  # before the search: the trained agent is kept whatever happens next
        if not saved:
            agent.save(args.save, overwrite=True)  # checked before training (--overwrite)
        print(f"agent saved to {args.save}")
    final = _search_result(args, env, agent, steps_done)
    if args.decision:
        core = env.core
        npz = io.BytesIO()  # the path as given: np.savez would add .npz (DIR -> DIR.npz beside DIR)
        np.savez(npz, placement=core.placement, priority=core.priority, fusion=core.fusion, runtime=final)
        write_atomic(args.decision, npz.getvalue(), what="--decision")
        print(f"decision saved to {args.decision} (placement, priority, fusion per node)")
    if args.log_dir:
        print(f"metrics{'' if args.workers or args.address else ' and training curve'}: {args.log_dir}")


def _train_setup(args: argparse.Namespace) -> tuple[goenv.GraphEnv, dict]:
    """The env and the agent options, every flag checked before any training."""
    for flag, path in (("--save", args.save), ("--decision", args.decision)):
        if path is not None:  # refused now, not after training
            new_output(path, flag, args.overwrite, folder_must_exist=True)
    for flag, count in (("--steps", args.steps), ("--samples", args.samples)):
        if count < 1:  # refused now, not after training
            raise goenv.InvalidArgument(f"{flag} must be a positive integer, got {count}")
    env = make_env(args.id, args.cluster, args.task)
    options = _agent_options(args.option)
    if args.workers < 0:
        raise goenv.InvalidArgument(f"--workers must be >= 0, got {args.workers}")
    if args.imitate < 0:
        raise goenv.InvalidArgument(f"--imitate takes a number of steps >= 0, got {args.imitate}")
    if args.teacher != "best" and not args.imitate:
        raise goenv.InvalidArgument(f"--teacher {args.teacher} is what --imitate copies; add --imitate [STEPS]")
    return env, options


def _trained(args: argparse.Namespace, env: goenv.GraphEnv, agent) -> tuple[list[dict], bool, bool]:
    """Imitation (--imitate), then PPO here or on Ray workers, until done or Ctrl-C. Returns the
    training history, whether the agent was already saved to --save, and whether Ctrl-C stopped it."""
    imitated = []
    saved = False  # by the distributed trainer, which writes checkpoint= when it ends after an update
    with StopOnInterrupt() as stop, _saved_when_interrupted(agent, args.save,
                                                             lambda: bool(imitated) or agent.steps_trained > 0):
        if args.imitate:  # in this process; PPO then continues from the imitated policy, here or on the workers
            history = agent.imitate([env], steps=args.imitate, teacher=args.teacher, progress=bars(),
                                    callback=lambda metrics: imitated.append(metrics) or stop.go_on(metrics))
            print(f"imitation of {agent.teacher(env)['method']}: {history[-1]['accuracy']:.1%} of the decisions "
                  f"equal the teacher's after {len(history)} steps")
        if stop.requested:
            history = []
        elif args.workers > 0 or args.address:
            history = _trained_on_ray(args, env, agent, stop)
            saved = bool(args.save and history)
        else:
            history = agent.train([env], total_steps=args.steps, log_dir=args.log_dir, callback=stop.go_on,
                                  progress=bars())
    return history, saved, stop.requested


def _trained_on_ray(args: argparse.Namespace, env: goenv.GraphEnv, agent, stop: StopOnInterrupt) -> list[dict]:
    """PPO on --workers Ray rollout workers; the history of its updates."""
    try:
        result = goenv.distributed.train([env], num_workers=max(1, args.workers), total_steps=args.steps,
                                         address=args.address, log_dir=args.log_dir, agent=agent,
                                         callback=stop.go_on, checkpoint=args.save, progress=bars(),
                                         overwrite=True)  # --save was checked before training
    except ValueError as error:  # a malformed address: one line, like other bad input
        raise goenv.InvalidArgument(str(error)) from error
    print(f"{len(result.history)} updates with {max(1, args.workers)} rollout workers: "
          f"{result.samples_per_second:.0f} samples/s, {result.worker_restarts} worker restarts, "
          f"{result.dropped_rollouts} stale rollouts dropped")
    return result.history


def _search_result(args: argparse.Namespace, env: goenv.GraphEnv, agent, steps_done: int) -> float:
    """The trained agent's result, put in force in `env` and printed beside the references;
    returns its runtime (the default's when the policy's decision is not better)."""
    # Policy-guided search from the default with --samples simulator calls (the greedy
    # decision, the policy's moves and samples, the best decisions training found): never worse
    # than any of them, nor than the default it starts from.
    found = agent.optimize(env, budget=args.samples)
    how = {"start": "no proposal beat the default", "greedy": "greedy",
           "policy": f"policy-guided search, {args.samples} calls",
           "training": "best found in training"}.get(found["source"], found["source"])
    references = reference_runtimes(env)
    env.reset(seed=0)
    kept_default = not found["runtime"] <= references["default"]  # also when nothing was valid (inf)
    if not kept_default:  # put the decisions in force (the default's are after reset)
        decisions = found["decisions"]
        env.step(decisions if len(decisions) > 1 else next(iter(decisions.values())))
    final = references["default"] if kept_default else found["runtime"]
    rows = [[label, f"{seconds * MS:.3f}"] for label, seconds in references.items()]
    rows.append([f"{args.agent} ({how})", f"{found['runtime'] * MS:.3f}" if np.isfinite(found["runtime"])
                 else "— (invalid)"])
    print(f"\n{args.agent} after {steps_done} steps on {args.id}:\n")
    print_table(["decisions", "runtime ms"], rows, align="lr")
    print(f"\nresult: {final * MS:.3f} ms, " + ("the compiler default (the policy's decision is not better)"
                                                  if kept_default else
                                                  f"the policy's decision ({references['default'] / final:.3f}x "
                                                  f"the default)"))
    return final


def add_train_command(commands: argparse._SubParsersAction, options: argparse.ArgumentParser) -> None:
    train = commands.add_parser("train", parents=[options], help="train a reference agent (LibTorch) on an env",
                                extra_help=_agent_options_help)
    train.add_argument("id", help=ID_HELP)
    train.add_argument("--agent", choices=goenv.agents.algorithms(), default="go",
                       help="GO policy or the PPO baseline policy")
    train.add_argument("--steps", type=int, default=2000, help="simulated environment steps (default: %(default)s)")
    train.add_argument("--log-dir", help="folder for metrics.csv and training_curve.png (with --workers: "
                                         "distributed_metrics.csv)")
    train.add_argument("--save", help="checkpoint path, written when training ends (also when Ctrl-C stops it: "
                                      "the first Ctrl-C ends training after the update under way, a second "
                                      "one stops at once)")
    train.add_argument("--option", action="append", default=[], metavar="KEY=VALUE",
                       help="an agent option, repeatable (listed below)")
    train.add_argument("--decision", metavar="FILE",
                       help="save the result's decisions to FILE, as given (.npz data: placement, priority, "
                            "fusion per node)")
    train.add_argument("--overwrite", action="store_true", help="replace the --save and --decision files if they exist")
    train.add_argument("--imitate", type=int, nargs="?", const=200, default=0, metavar="STEPS",
                       help="first imitate the teacher for STEPS Adam steps (default when given: %(const)s); "
                            "with --workers the learner imitates, then PPO on the workers goes on from it")
    train.add_argument("--teacher", default="best",
                       help="what --imitate copies: a baseline name or 'best', the best heuristic (default)")
    train.add_argument("--samples", type=int, default=1,
                       help="simulator calls of the policy-guided search that gives the result (agent.optimize "
                            "from the default: the greedy decision first, then the policy's moves; default 1)")
    train.add_argument("--workers", type=int, default=0,
                       help="Ray rollout workers (goenv.distributed; needs ray); 0 trains in this process "
                            "(default: %(default)s)")
    train.add_argument("--address", help="join the Ray cluster at ADDR (`ray start --head` prints it) "
                                         "instead of starting a local Ray")
    train.set_defaults(run=_train)
