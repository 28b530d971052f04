"""The examples run as a newcomer would run them (the scripts that write docs/results:
test_experiments.py)."""

import subprocess
import sys
from pathlib import Path

import pytest

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"


def test_quickstart_runs():
    done = subprocess.run([sys.executable, str(EXAMPLES / "quickstart.py")], capture_output=True, text=True,
                          timeout=300)
    assert done.returncode == 0, done.stderr
    assert "metis:" in done.stdout and "rendered" in done.stdout


@pytest.mark.parametrize("arguments, message", [
    (["--layers", "0"], "--layers must be >= 1, got 0"),
    (["--finetune", "-3"], "--finetune must be >= 0"),
])
def test_place_your_model_refuses_bad_options_at_once(arguments, message):
    done = subprocess.run([sys.executable, str(EXAMPLES / "place_your_model.py"), *arguments], capture_output=True,
                          text=True, timeout=120)
    assert done.returncode == 2 and message in done.stderr and "Traceback" not in done.stderr, done.stderr[-2000:]


# The library examples (sb3_ppo, sb3_maskable_ppo, rllib_ppo, cleanrl_gnn_ppo) learn: test_integrations.py.
# place_your_model.py runs whole in test_experiments.py, through place_your_model_section.py.
