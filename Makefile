# The two commands of the README:
#   make demo   set up everything (system packages, the .venv virtual environment, build) and run the main job
#   make test   the same setup, then the C++ tests (ctest) and the Python tests (pytest)
# Both are idempotent: a second run with nothing changed rebuilds nothing.
# Everything Python goes into the project virtual environment .venv (never the
# global interpreter, PEP 668); afterwards `. .venv/bin/activate` gives goenv.
#   make docs   the documentation site (mkdocs build --strict) into build/site
#   make smoke  build the sdist and wheel (python -m build) and run tests/smoke in a fresh venv with the wheel

# The interpreter that creates .venv; every later step uses $(PYTHON), the venv's.
BASE_PYTHON ?= python3
VENV := .venv
PYTHON := $(VENV)/bin/python
BUILD_DIR := build/dev
STAMPS := .make
SOURCES := $(shell find core envs datasets agents bindings -type f \( -name '*.cc' -o -name '*.h' -o -name '*.py' \
                -o -name '*.in' -o -name CMakeLists.txt \) 2>/dev/null) \
           $(wildcard tests/cpp/*.cc tests/benchmarks/*.cc) CMakeLists.txt pyproject.toml
APT_PACKAGES := g++ cmake ninja-build python3-dev python3-venv \
                libboost-graph-dev libcereal-dev rapidjson-dev libgtest-dev libbenchmark-dev libmetis-dev
# The browser the docs test loads the built site in (tests/python/test_docs_browser.py), with its driver.
BROWSER_PACKAGES := chromium chromium-driver
# What the --no-build-isolation build needs in .venv: pyproject.toml's build-system.requires.
# torch is pinned: 2.13.0 is a CPU build already on disk; an unpinned torch pulls gigabytes of CUDA.
BUILD_REQUIRES := "scikit-build-core>=0.10" "pybind11==3.1.0" "torch==2.13.0"
# The extras `make test` installs (pyproject.toml [project.optional-dependencies]) and the wheel tools.
EXTRAS := test,agents,onnx,sb3,distributed,rllib,parquet,zoo,docs
PIP_PACKAGES := $(BUILD_REQUIRES) "build==1.6.1"
PIP := $(PYTHON) -m pip --disable-pip-version-check
SUDO := $(shell [ "$$(id -u)" = 0 ] || echo sudo)

.PHONY: demo test setup build test-cpp test-python bench docs smoke wheel clean

demo: build
	$(PYTHON) -m goenv.cli demo

test: build test-cpp test-python

test-cpp: build
	ctest --test-dir $(BUILD_DIR) --output-on-failure -j 2

# Two pytest workers (pytest-xdist), each taking whole files (a module's fixtures, Ray sessions
# included, stay in one process): 21 -> 14 minutes on two cores, the same tests.
test-python: build $(STAMPS)/browser
	$(PYTHON) -m pytest tests/python -q -n 2 --dist loadfile

bench: build
	$(PYTHON) -m goenv.cli bench

# The documentation site into build/site (mkdocs.yml); any warning (a broken link, an API object
# mkdocstrings cannot find) fails it. Its packages are the `docs` extra, installed by `build`.
# NO_MKDOCS_2_WARNING: Material's banner about its successor, printed on every build.
docs: build
	NO_MKDOCS_2_WARNING=1 $(PYTHON) -m mkdocs build --strict

setup: $(STAMPS)/apt $(STAMPS)/pip

build: setup $(STAMPS)/build

$(STAMPS)/apt:
	@mkdir -p $(STAMPS)
	@if dpkg -s $(APT_PACKAGES) >/dev/null 2>&1; then echo "system packages present"; else \
	  $(SUDO) apt-get update -qq && DEBIAN_FRONTEND=noninteractive $(SUDO) apt-get install -y -qq $(APT_PACKAGES); fi
	@touch $@

$(STAMPS)/browser:
	@mkdir -p $(STAMPS)
	@if dpkg -s $(BROWSER_PACKAGES) >/dev/null 2>&1; then echo "chromium present"; else \
	  $(SUDO) apt-get update -qq && DEBIAN_FRONTEND=noninteractive $(SUDO) apt-get install -y -qq $(BROWSER_PACKAGES); fi
	@touch $@

# The project virtual environment, reused by every later run (delete .venv to start over).
$(PYTHON): | $(STAMPS)/apt
	$(BASE_PYTHON) -m venv $(VENV)

$(STAMPS)/pip: $(PYTHON) pyproject.toml Makefile
	@mkdir -p $(STAMPS)
	$(PIP) install -q $(PIP_PACKAGES)
	@touch $@

# One CMake build serves both ctest and the Python package (scikit-build-core,
# editable install into .venv with the extras, persistent build directory:
# incremental rebuilds). Dependencies already present are not fetched again.
$(STAMPS)/build: $(STAMPS)/pip $(SOURCES)
	$(PIP) install -q --no-build-isolation \
	  -Cbuild-dir=$(BUILD_DIR) -Ccmake.define.GOENV_BUILD_TESTS=ON -Ceditable.rebuild=false -e ".[$(EXTRAS)]"
	@touch $@

# The wheel as users get it: sdist and wheel from `python -m build` (isolated
# build, torch from build-system.requires), installed into a fresh venv with no
# other packages, then tests/smoke/smoke_test.py run there (outside the source tree).
SMOKE_VENV := build/smoke-venv
wheel: $(STAMPS)/pip
	rm -rf dist
	$(PYTHON) -m build --outdir dist .

smoke: wheel
	rm -rf $(SMOKE_VENV)
	$(BASE_PYTHON) -m venv $(SMOKE_VENV)
	$(SMOKE_VENV)/bin/python -m pip install -q --disable-pip-version-check "$$(ls dist/goenv-*.whl)[agents,onnx]"
	cd $(SMOKE_VENV) && bin/python $(CURDIR)/tests/smoke/smoke_test.py

clean:
	rm -rf build dist $(STAMPS)

# ---------------------------------------------------------------------------
# Hardening: fuzzing and sanitizers. Self-contained: uses only $(PYTHON).
#   make fuzz                     each atheris target for FUZZ_SECONDS (default 300) against the dev build
#   make fuzz FUZZ_RUNS=1000000   each target for a fixed number of executions instead
#   make test-sanitize            ASan+UBSan build (build/sanitize): C++ tests, the hardening Python tests
#                                 and every fuzz target briefly, against the sanitizer-built goenv._core
FUZZ_SECONDS ?= 300
FUZZ_RUNS ?= -1
FUZZ_TARGETS := graph_load cluster_json env_state env_actions dataset labels onnx_import checkpoint convert
# The sanitizer build has no goenv._agents (LibTorch is not instrumented): its run leaves out the two
# targets that need it.
SANITIZE_FUZZ_TARGETS := $(filter-out checkpoint convert,$(FUZZ_TARGETS))
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
	  $(PYTHON) -m pytest -q -s -p local_goenv tests/python/test_hardening.py tests/python/test_threads.py \
	  tests/python/test_graph.py \
	  --deselect tests/python/test_graph.py::test_corrupt_payload_with_valid_checksum_never_crashes
	@for t in $(SANITIZE_FUZZ_TARGETS); do \
	  mkdir -p $(SANITIZE_DIR)/fuzz/$$t; echo "== fuzz $$t (sanitized, $(SANITIZE_FUZZ_SECONDS) s)"; \
	  env $(SANITIZE_ENV) $(SANITIZE_PRELOAD) \
	    GOENV_PACKAGE_DIR=$(SANITIZE_DIR)/python $(PYTHON) tests/fuzz/fuzz_$$t.py $(SANITIZE_DIR)/fuzz/$$t \
	    tests/fuzz/corpus/$$t -max_total_time=$(SANITIZE_FUZZ_SECONDS) -print_final_stats=1 || exit 1; \
	done
