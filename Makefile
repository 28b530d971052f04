# The two commands of the README:
#   make demo   set up everything (system packages, Python packages, build) and run the main job
#   make test   the same setup, then the C++ tests (ctest) and the Python tests (pytest)
# Both are idempotent: a second run with nothing changed rebuilds nothing.

PYTHON ?= python3
BUILD_DIR := build/dev
STAMPS := .make
SOURCES := $(shell find core envs datasets agents bindings -type f \( -name '*.cc' -o -name '*.h' -o -name '*.py' \) 2>/dev/null) \
           $(wildcard tests/cpp/*.cc tests/benchmarks/*.cc) CMakeLists.txt pyproject.toml
APT_PACKAGES := libboost-graph-dev libcereal-dev libgtest-dev libbenchmark-dev libmetis-dev
# torch is pinned: 2.13.0 is a CPU build already on disk; an unpinned torch pulls gigabytes of CUDA.
PIP_PACKAGES := "scikit-build-core>=0.10" "pybind11==3.1.0" "numpy>=1.24" "gymnasium>=1.0" "matplotlib>=3.7" \
                "tqdm>=4.60" "pytest>=7" "hypothesis>=6" "onnx>=1.15" "torch==2.13.0"
SUDO := $(shell [ "$$(id -u)" = 0 ] || echo sudo)

.PHONY: demo test setup build test-cpp test-python bench clean

demo: build
	$(PYTHON) -m goenv.cli demo

test: build test-cpp test-python

test-cpp: build
	ctest --test-dir $(BUILD_DIR) --output-on-failure -j 2

test-python: build
	$(PYTHON) -m pytest tests/python -q

bench: build
	$(PYTHON) -m goenv.cli bench

setup: $(STAMPS)/apt $(STAMPS)/pip

build: setup $(STAMPS)/build

$(STAMPS)/apt:
	@mkdir -p $(STAMPS)
	@if dpkg -s $(APT_PACKAGES) >/dev/null 2>&1; then echo "system packages present"; else \
	  $(SUDO) apt-get update -qq && DEBIAN_FRONTEND=noninteractive $(SUDO) apt-get install -y -qq $(APT_PACKAGES); fi
	@touch $@

$(STAMPS)/pip: pyproject.toml Makefile
	@mkdir -p $(STAMPS)
	$(PYTHON) -m pip install -q --disable-pip-version-check $(PIP_PACKAGES)
	@touch $@

# One CMake build serves both ctest and the Python package (scikit-build-core,
# editable install, persistent build directory: incremental rebuilds).
$(STAMPS)/build: $(STAMPS)/pip $(SOURCES)
	$(PYTHON) -m pip install -q --disable-pip-version-check --no-build-isolation --no-deps \
	  -Cbuild-dir=$(BUILD_DIR) -Ccmake.define.GOENV_BUILD_TESTS=ON -Ceditable.rebuild=false -e .
	@touch $@

clean:
	rm -rf build $(STAMPS)

# ---------------------------------------------------------------------------
# Hardening (issue 14): fuzzing and sanitizers. Self-contained: uses only $(PYTHON).
#   make fuzz                     each atheris target for FUZZ_SECONDS (default 300) against the dev build
#   make fuzz FUZZ_RUNS=1000000   each target for a fixed number of executions instead
#   make test-sanitize            ASan+UBSan build (build/sanitize): C++ tests, the hardening Python tests
#                                 and every fuzz target briefly, against the sanitizer-built goenv._core
FUZZ_SECONDS ?= 300
FUZZ_RUNS ?= -1
FUZZ_TARGETS := graph_load cluster_json env_state env_actions
ATHERIS := atheris==3.0.0
SANITIZE_DIR := build/sanitize
SANITIZE_FLAGS := -fsanitize=address,undefined -fno-sanitize-recover=all -fno-omit-frame-pointer -g -O1
SANITIZE_FUZZ_SECONDS ?= 15
SANITIZE_ENV := ASAN_OPTIONS=detect_leaks=0:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1
# Python is not built with ASan: its runtime (and libstdc++, for the __cxa_throw interceptor) must load first.
SANITIZE_PRELOAD = LD_PRELOAD="$$($(CXX) -print-file-name=libasan.so) $$($(CXX) -print-file-name=libubsan.so) $$($(CXX) -print-file-name=libstdc++.so)"

.PHONY: fuzz fuzz-setup test-sanitize sanitize-build

fuzz-setup:
	@$(PYTHON) -c "import atheris" 2>/dev/null || $(PYTHON) -m pip install -q --disable-pip-version-check "$(ATHERIS)"

# Each target: a seed corpus in tests/fuzz/corpus/<target>, new inputs go to build/fuzz/<target>.
fuzz: build fuzz-setup
	@for t in $(FUZZ_TARGETS); do \
	  mkdir -p build/fuzz/$$t; echo "== fuzz $$t"; \
	  $(PYTHON) tests/fuzz/fuzz_$$t.py build/fuzz/$$t tests/fuzz/corpus/$$t \
	    -max_total_time=$(FUZZ_SECONDS) -runs=$(FUZZ_RUNS) -print_final_stats=1 || exit 1; \
	done

sanitize-build: setup
	cmake -S . -B $(SANITIZE_DIR) -DCMAKE_BUILD_TYPE=Sanitize -DCMAKE_CXX_FLAGS="$(SANITIZE_FLAGS)" \
	  -DCMAKE_EXE_LINKER_FLAGS="-fsanitize=address,undefined" -DCMAKE_SHARED_LINKER_FLAGS="-fsanitize=address,undefined" \
	  -DCMAKE_MODULE_LINKER_FLAGS="-fsanitize=address,undefined" \
	  -DCMAKE_INTERPROCEDURAL_OPTIMIZATION=OFF -DGOENV_BUILD_TESTS=ON -DGOENV_BUILD_AGENTS=OFF \
	  -DPython_EXECUTABLE=$$(command -v $(PYTHON)) >/dev/null
	cmake --build $(SANITIZE_DIR) -j $${SANITIZE_JOBS:-2} --target goenv_tests _core
	rm -rf $(SANITIZE_DIR)/python && mkdir -p $(SANITIZE_DIR)/python
	cp -r bindings/python/goenv $(SANITIZE_DIR)/python/ && rm -f $(SANITIZE_DIR)/python/goenv/*.so
	cp $(SANITIZE_DIR)/_core*.so $(SANITIZE_DIR)/python/goenv/

# Leaks are checked in the C++ tests only (CPython keeps its objects); pytest runs with -s so that a
# sanitizer report, which ends the process, is not swallowed by pytest's output capture. The deselected
# test caps its child's address space at 1 GiB, which ASan's shadow memory cannot live with.
test-sanitize: sanitize-build fuzz-setup
	cd $(SANITIZE_DIR) && ASAN_OPTIONS=abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
	  ./goenv_tests --gtest_brief=1
	env $(SANITIZE_ENV) $(SANITIZE_PRELOAD) GOENV_PACKAGE_DIR=$(SANITIZE_DIR)/python PYTHONPATH=tests/fuzz \
	  $(PYTHON) -m pytest -q -s -p local_goenv tests/python/test_hardening.py tests/python/test_graph.py \
	  --deselect tests/python/test_graph.py::test_corrupt_payload_with_valid_checksum_never_crashes
	@for t in $(FUZZ_TARGETS); do \
	  mkdir -p $(SANITIZE_DIR)/fuzz/$$t; echo "== fuzz $$t (sanitized, $(SANITIZE_FUZZ_SECONDS) s)"; \
	  env $(SANITIZE_ENV) $(SANITIZE_PRELOAD) \
	    GOENV_PACKAGE_DIR=$(SANITIZE_DIR)/python $(PYTHON) tests/fuzz/fuzz_$$t.py $(SANITIZE_DIR)/fuzz/$$t \
	    tests/fuzz/corpus/$$t -max_total_time=$(SANITIZE_FUZZ_SECONDS) -print_final_stats=1 || exit 1; \
	done
