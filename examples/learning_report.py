"""What the library examples (sb3_ppo.py, sb3_maskable_ppo.py, cleanrl_gnn_ppo.py) report:
the best runtime the agent found next to the compiler default and HEFT, and whether it
learned (mean runtime of its first updates' episodes against its last updates')."""

from __future__ import annotations

import numpy as np

import goenv


def reference_runtimes(env_id: str, **options) -> dict[str, float]:
    """The compiler default's and HEFT's simulated runtimes on `env_id`, seconds."""
    env = goenv.make(env_id, **options)
    _, info = env.reset(seed=0)
    return {"default": info["initial_runtime"], "heft": goenv.baselines.solve(env, "heft")["runtime"]}


def report(title: str, env_id: str, runtimes: list[float], episodes_per_update: int, **options) -> dict:
    """Prints and returns the summary of one training run. `runtimes`: the simulated runtime
    of every episode's final decisions, in order; about `episodes_per_update` ended per update."""
    if len(runtimes) < 2 * episodes_per_update:
        raise ValueError(f"{len(runtimes)} episodes are fewer than two updates of {episodes_per_update}; "
                         f"train for more steps")
    reference = reference_runtimes(env_id, **options)
    # The first and last updates' episodes, at least a quarter of the run each: one update of
    # long (node-mode) episodes is one or two episodes, too few to tell learning from noise.
    window = max(episodes_per_update, len(runtimes) // 4)
    first = float(np.mean(runtimes[:window]))
    last = float(np.mean(runtimes[-window:]))
    result = {"env": env_id, "episodes": len(runtimes), "best": float(min(runtimes)), "first_update_mean": first,
              "last_update_mean": last, "learned": last < first, **reference}
    ms = lambda seconds: f"{seconds * 1e3:8.2f} ms"  # noqa: E731
    print(f"{title} on {env_id}, {len(runtimes):,} episodes")
    print(f"  compiler default   {ms(reference['default'])}")
    print(f"  HEFT               {ms(reference['heft'])}")
    print(f"  best found         {ms(result['best'])}")
    print(f"  mean runtime, first {window} episodes {ms(first)} -> last {window} {ms(last)}"
          f" ({'learned' if result['learned'] else 'did not improve'})")
    return result
