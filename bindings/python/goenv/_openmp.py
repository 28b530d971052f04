"""OpenMP settings that must be in place before goenv._core loads the OpenMP runtime.

Idle OpenMP threads sleep instead of spinning: on a busy machine spinning made
make_vec's default thread count 5-30x slower than one thread
(tests/benchmarks/vector_under_load_bench.py). The runtime reads the variable
once, when it loads with goenv._core; set it yourself to override.
"""

import os

os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")
