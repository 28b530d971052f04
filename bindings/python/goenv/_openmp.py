"""OpenMP settings that must be in place before goenv._core loads the OpenMP runtime.

Idle OpenMP threads spin briefly (GOMP_SPINCOUNT=3000, about a tenth of a millisecond),
then sleep. libgomp's default spin (300,000) made make_vec's default thread count 5-30x
slower than one thread on a busy machine (tests/benchmarks/vector_under_load_bench.py);
sleeping at once (OMP_WAIT_POLICY=PASSIVE, goenv's earlier setting) made every torch op
in the agents wake its threads again, so two threads did not speed up a 1,000-node policy
(tests/benchmarks/agents_bench.py). A process has one runtime (whichever of
goenv._core's and torch's loads first serves both), and it reads the variables once, when
it loads: import goenv first for them to apply; set OMP_WAIT_POLICY or GOMP_SPINCOUNT
yourself to override.
"""

import os

if "OMP_WAIT_POLICY" not in os.environ:
    os.environ.setdefault("GOMP_SPINCOUNT", "3000")
