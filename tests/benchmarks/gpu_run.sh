#!/usr/bin/env bash
# The agents on a GPU: build goenv._core and goenv._agents against the machine's own CUDA torch,
# run the CUDA tests, time the agents (act, PPO update, imitation; CUDA and this machine's CPU
# in one run) and a short pretraining of the placer on the GPU. For a machine that has python3
# with a CUDA torch, g++, cmake and ninja but none of goenv's other build dependencies and no
# network (this project's lent H100 / H200): they come as files in DEPS.
#
#   GOENV_COMMIT=$(git rev-parse HEAD) tests/benchmarks/gpu_run.sh DEPS OUT
#
# DEPS/deb: `apt-get download libboost1.74-dev libcereal-dev rapidjson-dev libmetis-dev libmetis5`
# DEPS/whl: `pip download --no-deps --only-binary=:all: --python-version 3.12 gymnasium==1.2.2
#           farama-notifications==0.0.6 pybind11==3.1.0` (what that python3 lacks)
# OUT gets the logs, the benchmark's JSON, the pretraining summary and the built modules.
# GOENV_DEVICE=cpu makes it a dry run of the same steps on a machine without a GPU.
# Nothing is installed system-wide: the packages unpack under /tmp and the build stays in /tmp.
set -euo pipefail
DEPS=$(realpath "${1:?usage: gpu_run.sh DEPS OUT}")
OUT=$(realpath "${2:?usage: gpu_run.sh DEPS OUT}")
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
PREFIX=/tmp/goenv-deps
SITE=/tmp/goenv-site
BUILD=/tmp/goenv-build
PACKAGE=/tmp/goenv-package
DEVICE=${GOENV_DEVICE:-cuda}
export PYTHONUNBUFFERED=1
mkdir -p "$OUT"
stage() { echo; echo "== $* ($(date +%T))"; }

stage "machine"
nvidia-smi -L 2>/dev/null || echo "no nvidia-smi"
python3 -c "import sys, torch; print(sys.version.split()[0], 'torch', torch.__version__, 'cuda', torch.cuda.is_available(),
      torch.cuda.get_device_name(0) if torch.cuda.is_available() else '')"
echo "$(nproc) CPU cores; $(g++ --version | head -1); $(cmake --version | head -1)"

stage "dependencies (unpacked under $PREFIX, $SITE)"
rm -rf "$PREFIX" "$SITE" && mkdir -p "$PREFIX"
for deb in "$DEPS"/deb/*.deb; do dpkg -x "$deb" "$PREFIX"; done
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --target "$SITE" "$DEPS"/whl/*.whl
export PYTHONPATH="$SITE"
export LD_LIBRARY_PATH="$PREFIX/usr/lib/x86_64-linux-gnu${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"

stage "build (_core, _agents)"
# The distribution's g++, not $CXX: the image's CXX (/opt/gcc) links libstdc++ statically, and a
# static libstdc++ in each of goenv's modules beside torch's shared one crashes iostreams
# (std::ostream << long in config_to_text) unless torch happens to be imported first; CMake
# refuses such a compiler for _agents, and the readelf check below covers _core too.
COMPILER=/usr/bin/g++
[ -x "$COMPILER" ] || COMPILER=$(command -v g++)
echo "CXX in the environment: ${CXX:-unset}; building with $COMPILER"
cmake -S "$ROOT" -B "$BUILD" -G Ninja -DCMAKE_BUILD_TYPE=Release -DGOENV_BUILD_TESTS=OFF \
  -DCMAKE_CXX_COMPILER="$COMPILER" -DPython_EXECUTABLE="$(command -v python3)" -DCMAKE_PREFIX_PATH="$PREFIX/usr" \
  -DCMAKE_INCLUDE_PATH="$PREFIX/usr/include" -DCMAKE_LIBRARY_PATH="$PREFIX/usr/lib/x86_64-linux-gnu" \
  > "$OUT/cmake.log" 2>&1 || { tail -40 "$OUT/cmake.log"; exit 1; }
grep "goenv agents" "$OUT/cmake.log" || true
ninja -C "$BUILD" _core _agents > "$OUT/build.log" 2>&1 || { grep -B2 -A12 "error" "$OUT/build.log" | head -80; exit 1; }
tail -1 "$OUT/build.log"
for module in "$BUILD"/_core*.so "$BUILD"/agents/_agents*.so; do  # one shared C++ runtime, torch's
  readelf -d "$module" | grep -q "libstdc++.so" || echo "FAILED: $(basename "$module") links libstdc++ statically"
done
# The package as an install lays it out: the Python sources, the two modules, _torch_build.py.
rm -rf "$PACKAGE" && mkdir -p "$PACKAGE"
cp -r "$ROOT/bindings/python/goenv" "$PACKAGE/"
cp "$BUILD"/_core*.so "$BUILD"/agents/_agents*.so "$PACKAGE/goenv/"
cp "$BUILD/agents/_torch_build.py" "$PACKAGE/goenv/agents/"
tar -C "$PACKAGE/goenv" -czf "$OUT/modules.tgz" $(cd "$PACKAGE/goenv" && ls _core*.so _agents*.so) agents/_torch_build.py
export PYTHONPATH="$PACKAGE:$SITE"
python3 -c "import torch, goenv, goenv.agents; print('goenv', goenv.__version__, 'from', goenv.__file__)"

# From here on a failing stage is reported and the next one still runs.
cd "$ROOT"
stage "CUDA tests"
python3 -m pytest -q -p no:cacheprovider tests/python/test_imitation.py -k "cuda" > "$OUT/tests.log" 2>&1 \
  || echo "FAILED: the CUDA tests"
tail -15 "$OUT/tests.log"

stage "agents benchmark on $DEVICE"
python3 tests/benchmarks/agents_bench.py --device "$DEVICE" --sizes 1000 10000 80000 \
  --json "$OUT/agents_bench_$DEVICE.json" || echo "FAILED: the benchmark on $DEVICE"

stage "a short pretraining of the placer on $DEVICE (experiments/pretrain_placer.py)"
python3 experiments/pretrain_placer.py --device "$DEVICE" --scale 0.25 --imitation-steps 300 --ppo-steps 256 --workers 0 \
  --threads 4 --data /tmp/goenv-placer-data --out /tmp/goenv-placer --summary "$OUT/pretrain_$DEVICE.json" \
  --figure "$OUT/pretrain_$DEVICE.png" > "$OUT/pretrain.log" 2>&1 || echo "FAILED: the pretraining on $DEVICE"
tail -4 "$OUT/pretrain.log"

stage "agents benchmark on this machine's CPU, for comparison"
python3 tests/benchmarks/agents_bench.py --device cpu --sizes 1000 10000 --no-plain \
  --json "$OUT/agents_bench_host_cpu.json" || echo "FAILED: the benchmark on CPU"
stage "done"
