"""Fuzz target: agent checkpoints (goenv.agents.load_bytes: the bounded safetensors
reader, agents/checkpoint.cc). The seed corpus holds real checkpoints (GO with
teachers, PPO, one without a policy). Loading raises goenv.InvalidArgument naming
the problem, or gives an agent whose actions on a fitting env are in range.

Needs goenv._agents (LibTorch): the sanitizer build has none, so `make
test-sanitize` leaves this target out.
"""

from __future__ import annotations

import numpy as np

from fuzz_common import goenv, note, rich_graph, run

ENV = goenv.GraphEnv.from_graph("placement", rich_graph(), "cpu+2xgpu")
OBS, _ = ENV.reset(seed=0)


def test_one_input(data: bytes) -> None:
    import goenv.agents

    try:
        agent = goenv.agents.load_bytes(data)
    except goenv.InvalidArgument as error:
        note(error)
        return
    note(f"accepted {agent.config['algorithm']}")
    spec = agent.spec
    if spec is None or spec["node_feature_dim"] != OBS["node_features"].shape[1] or \
            spec["heads"] != ["placement"] or spec["choices"] != [ENV.core.num_devices]:
        return
    action = agent.act(OBS, deterministic=True)
    assert action.shape == (ENV.core.num_nodes,) and ((action >= 0) & (action < ENV.core.num_devices)).all()


if __name__ == "__main__":
    run(test_one_input)
