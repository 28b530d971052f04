"""goenv.distributed: Menger-style scale-out of goenv's agents on Ray (docs/distributed.md).

    import goenv.distributed
    result = goenv.distributed.train(["placement-inception"], algorithm="go", num_workers=2,
                                     total_steps=20_000, address=None)   # None: a local Ray
    result.agent.save("go.agent")                                         # goenv.agents.load format

Rollout workers (Ray actors) run the policy locally on their share of the env ids
and return rollouts through the object store; the learner (this process; CUDA
when available) updates, bounds policy lag, and publishes each weight version
once through a small registry actor. Ray is imported only when training starts,
so this package imports without it.
"""

from goenv.distributed.train import Trainer, TrainingResult, shares, train

__all__ = ["Trainer", "TrainingResult", "shares", "train"]
