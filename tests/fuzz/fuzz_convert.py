"""Fuzz target: the legacy checkpoint converter (goenv.agents.convert.convert_bytes: the frame,
the zip archive and data.pkl, interpreted opcode by opcode by goenv.agents.legacy_archive).

First byte: its low bit picks the input's shape.
- 0: the rest is a whole format 1 or 2 file (frame, header, zip).
- 1: the rest is data.pkl. It is framed with a fixed header (version 1 or 2 from the first
  byte's second bit) and stored in a zip beside small float storages named "0" to "7", so
  mutations reach the pickle interpreter and the tensor checks instead of the zip's CRCs. The
  third bit deflates data.pkl.

Only goenv.InvalidArgument may come out, or a checkpoint that goenv.agents.load_bytes reads.
Memory stays bounded by the input: libFuzzer's -rss_limit_mb (2 GB by default) catches a
blow-up. Needs goenv._agents (LibTorch), like the checkpoint target.
"""

from __future__ import annotations

import os
import re
import sys

import numpy as np

from fuzz_common import goenv, note, run

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "python"))
from legacy_pickles import legacy_file  # noqa: E402

STORAGES = {str(i): np.arange(4 ** (i % 4 + 1), dtype=np.float32).tobytes() for i in range(8)}


def test_one_input(data: bytes) -> None:
    from goenv.agents import convert, load_bytes

    if not data:
        return
    flags, body = data[0], data[1:]
    file = body if not flags & 1 else legacy_file(body, STORAGES, 2 if flags & 2 else 1, deflate_pickle=bool(flags & 4))
    try:
        converted = convert.convert_bytes(file)
    except goenv.InvalidArgument as error:
        note(re.sub(r"['\"(\[{].*|\d+", "", str(error))[:48])  # the check that refused it, not its values
        return
    note("converted")
    load_bytes(converted)


if __name__ == "__main__":
    run(test_one_input)
