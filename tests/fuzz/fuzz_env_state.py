"""Fuzz target: Env.set_state on snapshots (the seed corpus holds real ones).

First byte: its low 7 bits pick one of the envs below; its high bit reseals the
state (a closing checksum computed over the rest), so mutations reach the field
checks behind the checksum. The rest is the state. set_state either raises
goenv.InvalidArgument (never InvalidAction) or accepts a valid state: it
round-trips, and stepping from it gives finite rewards and observations.
"""

from __future__ import annotations

import struct

from fuzz_common import check_finite, checksum64, goenv, note, rich_graph, run

GRAPH = rich_graph()
CONFIGS = [("placement", {}), ("scheduling", {"horizon": 3}), ("fusion", {"horizon": 2}),
           ("joint", {"horizon": 3}), ("placement", {"decision_mode": "node"}),
           ("joint", {"decision_mode": "node", "horizon": 2})]
ENVS = [goenv.GraphEnv.from_graph(task, GRAPH, "cpu+2xgpu", **options) for task, options in CONFIGS]


def test_one_input(data: bytes) -> None:
    if not data:
        return
    env = ENVS[(data[0] & 0x7F) % len(ENVS)]
    state = data[1:]
    if data[0] & 0x80 and len(state) >= 8:
        state = state[:-8] + struct.pack("<Q", checksum64(state[:-8]))
    try:
        env.set_state(state)
    except goenv.InvalidAction as error:
        raise AssertionError(f"a bad state raised InvalidAction: {error}") from error
    except goenv.InvalidArgument as error:
        note(error)
        note(str(error).split("'")[1] if "field '" in str(error) else "other")
        return
    note(f"accepted {(data[0] & 0x7F) % len(ENVS)}")
    again = env.get_state()
    # cereal portable binary: an endianness byte, then the uint32 format version.
    version = int.from_bytes(state[1:5], "little") if len(state) >= 5 else None
    if version in (2, 3):  # an older format is read, then written as the current one: that must round-trip
        env.set_state(again)
        assert env.get_state() == again, "a state converted from format 2 does not round-trip"
    else:
        assert again == state, "an accepted state does not round-trip"
    try:
        env.action_space.seed(len(state))
        obs, reward, terminated, truncated, info = env.step(env.action_space.sample())
    except goenv.ResetNeeded:
        return  # a never-reset or finished episode
    check_finite(obs, reward, info)


if __name__ == "__main__":
    run(test_one_input)
