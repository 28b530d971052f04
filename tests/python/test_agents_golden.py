"""The agents compute exactly what they computed when the golden data was recorded
(tests/python/agents_golden.py): collect() arrays, train/update/imitate/optimize/act/
evaluate results and checkpoints, for GO and PPO, seeds 0 and 1, with 1 and 2 OpenMP
threads; and each shipped checkpoint acts and round-trips as recorded.

Each thread count runs in its own process (OpenMP reads OMP_NUM_THREADS once).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from helpers import require_agents

require_agents()

SCRIPT = Path(__file__).resolve().parent / "agents_golden.py"
GOLDEN = json.loads((SCRIPT.parent / "data" / "agents_golden.json").read_text())


@pytest.mark.parametrize("threads", [1, 2])
def test_agents_match_the_golden_data(threads):
    import torch

    if torch.backends.cpu.get_cpu_capability() != GOLDEN["cpu_capability"]:
        pytest.skip(f"golden data was recorded with {GOLDEN['cpu_capability']} kernels, this CPU runs "
                    f"{torch.backends.cpu.get_cpu_capability()}: float results may differ in the last bits")
    env = dict(os.environ, OMP_NUM_THREADS=str(threads))
    run = subprocess.run([sys.executable, str(SCRIPT)], env=env, capture_output=True, text=True, timeout=600)
    assert run.returncode == 0, run.stderr[-3000:]
    hashes = json.loads(run.stdout.strip().splitlines()[-1])["hashes"]
    from agents_golden import expected_hashes  # this CPU's last bits, where recorded

    expected = expected_hashes(GOLDEN)
    assert hashes.keys() == expected.keys()
    changed = sorted(key for key in hashes if hashes[key] != expected[key])
    assert not changed, f"the agents' results changed ({threads} threads): {changed}"
    assert all(hashes[k] == "True" for k in hashes if k.endswith("/round-trip"))
