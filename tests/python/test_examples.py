"""The README's examples run as a newcomer would run them."""

import subprocess
import sys
from pathlib import Path

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"


def test_quickstart_runs():
    done = subprocess.run([sys.executable, str(EXAMPLES / "quickstart.py")], capture_output=True, text=True,
                          timeout=300)
    assert done.returncode == 0, done.stderr
    assert "metis:" in done.stdout and "rendered" in done.stdout
