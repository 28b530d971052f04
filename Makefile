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
