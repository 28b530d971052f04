"""pytest configuration for goenv's Python tests.

Tests marked `slow` (the full gymnasium check_env with rendering on every
registered env id, and rollouts on the largest graphs) are skipped unless
`--run-slow` is given or GOENV_RUN_SLOW=1 is set. `make test` runs the suite on two
pytest-xdist workers, whole files each; every test must hold whatever runs beside it.
Shared helpers live in helpers.py and reference_simulator.py.
"""

from __future__ import annotations

import os

import pytest


def pytest_addoption(parser):
    parser.addoption("--run-slow", action="store_true", default=False,
                     help="also run tests marked slow (every env id, the largest graphs)")


def pytest_configure(config):
    config.addinivalue_line("markers", "slow: long-running; skipped unless --run-slow or GOENV_RUN_SLOW=1")


def run_slow(config) -> bool:
    return config.getoption("--run-slow") or os.environ.get("GOENV_RUN_SLOW", "") not in ("", "0")


def pytest_collection_modifyitems(config, items):
    if run_slow(config):
        return
    skip = pytest.mark.skip(reason="slow: run with --run-slow or GOENV_RUN_SLOW=1")
    for item in items:
        if "slow" in item.keywords:
            item.add_marker(skip)


@pytest.fixture
def slow_enabled(request) -> bool:
    return run_slow(request.config)


@pytest.fixture
def python_sigint():
    """SIGINT handled as Python does by default (KeyboardInterrupt) for the test, whatever the
    test process inherited: a shell's background job starts with SIGINT ignored, and Python then
    keeps it ignored."""
    import signal

    inherited = signal.signal(signal.SIGINT, signal.default_int_handler)
    yield
    signal.signal(signal.SIGINT, inherited)
