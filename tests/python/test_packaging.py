"""Packaging: one torch pin everywhere, and a clear error when another torch is in the process."""

from __future__ import annotations

import json
import pathlib
import re
import sys
import tomllib
import types

import pytest

import goenv
import goenv.agents

ROOT = pathlib.Path(__file__).resolve().parents[2]


def _pyproject() -> dict:
    with open(ROOT / "pyproject.toml", "rb") as file:
        return tomllib.load(file)


def _torch_pins(requirements) -> set[str]:
    return {r.replace(" ", "") for r in requirements if re.match(r"torch\b", r)}


def test_one_torch_pin_for_build_runtime_and_extras():
    project = _pyproject()
    build = _torch_pins(project["build-system"]["requires"])
    assert build == {"torch==2.13.0"}
    assert _torch_pins(project["project"]["dependencies"]) == build
    for extra in ("agents", "torch"):
        assert _torch_pins(project["project"]["optional-dependencies"][extra]) == build
    # No extra may widen the pin (an unpinned torch pulls gigabytes of CUDA).
    for extra, requirements in project["project"]["optional-dependencies"].items():
        assert _torch_pins(requirements) <= build, extra


def test_makefile_builds_with_the_build_requirements():
    makefile = (ROOT / "Makefile").read_text()
    line = re.search(r"^BUILD_REQUIRES := (.*)$", makefile, re.M).group(1)
    assert sorted(re.findall(r'"([^"]+)"', line)) == sorted(_pyproject()["build-system"]["requires"])
    extras = re.search(r"^EXTRAS := (.*)$", makefile, re.M).group(1).split(",")
    assert set(extras) <= set(_pyproject()["project"]["optional-dependencies"])


def _with(monkeypatch, built: str, torch_version: str | None):
    monkeypatch.setattr(goenv.agents, "_torch_build", types.SimpleNamespace(TORCH_VERSION=built), raising=False)
    monkeypatch.setitem(sys.modules, "goenv.agents._torch_build", goenv.agents._torch_build)
    if torch_version is None:
        monkeypatch.delitem(sys.modules, "torch", raising=False)
    else:
        monkeypatch.setitem(sys.modules, "torch", types.SimpleNamespace(__version__=torch_version, __file__="/x/torch"))


def test_another_torch_imported_first_is_a_clear_import_error(monkeypatch):
    _with(monkeypatch, built="2.13.0+cpu", torch_version="2.12.1")
    with pytest.raises(ImportError, match=r"built against torch 2\.13\.0\+cpu, but torch 2\.12\.1 is imported"):
        goenv.agents._check_torch_abi()


def test_same_release_other_local_build_is_accepted(monkeypatch):
    _with(monkeypatch, built="2.13.0+cpu", torch_version="2.13.0")
    goenv.agents._check_torch_abi()


def test_installed_torch_is_checked_without_importing_it(monkeypatch):
    _with(monkeypatch, built="2.13.0+cpu", torch_version=None)
    monkeypatch.setattr(goenv.agents.importlib.metadata, "version", lambda name: "9.9.9")
    with pytest.raises(ImportError, match=r"torch 9\.9\.9 is installed"):
        goenv.agents._check_torch_abi()
    assert "torch" not in sys.modules


def test_a_compiler_that_links_libstdcxx_statically_is_refused_for_the_agents(tmp_path):
    """goenv._agents must share torch's shared libstdc++ (a static copy crashed beside torch on a
    CUDA image): configuring with -static-libstdc++ stops with the fix named, nothing built."""
    import shutil
    import subprocess

    if shutil.which("cmake") is None:
        pytest.skip("cmake is not installed")
    done = subprocess.run(["cmake", "-S", str(ROOT), "-B", str(tmp_path / "build"), "-DGOENV_BUILD_TESTS=OFF",
                           f"-DPython_EXECUTABLE={sys.executable}", "-DCMAKE_MODULE_LINKER_FLAGS=-static-libstdc++"],
                          capture_output=True, text=True, timeout=300)
    if "goenv agents: LibTorch" in done.stdout or "torch is not importable" in done.stdout:
        pytest.skip("this compiler is not GNU or torch is missing")  # the check is for g++ with torch
    assert done.returncode != 0
    message = " ".join(done.stderr.split())
    assert "links libstdc++ statically" in message and "CXX=/usr/bin/g++" in message, message
    assert not list((tmp_path / "build").glob("**/*.so"))


def test_one_version_in_pyproject_cmake_and_the_package():
    cmake = re.search(r"project\(goenv VERSION (\S+)", (ROOT / "CMakeLists.txt").read_text()).group(1)
    assert _pyproject()["project"]["version"] == cmake == goenv.__version__


def test_provenance_names_the_commit_or_says_there_is_none(tmp_path, monkeypatch):
    from goenv.provenance import made_by, source_commit, write_run_record

    monkeypatch.delenv("GOENV_COMMIT", raising=False)
    assert source_commit(tmp_path) == {"commit": None, "dirty": False}  # not a git checkout
    assert re.fullmatch(r"[0-9a-f]{40}", source_commit(ROOT)["commit"])
    monkeypatch.setenv("GOENV_COMMIT", "abc123")  # a copy whose .git is stale names its commit
    assert source_commit(tmp_path) == {"commit": "abc123", "dirty": False} and made_by()["commit"] == "abc123"
    (tmp_path / "run.json").mkdir()
    with pytest.raises(goenv.InvalidArgument, match="run.json"):  # only over a regular file
        write_run_record(tmp_path)
    record = json.loads(pathlib.Path(write_run_record(tmp_path, "other.json", seed=3)).read_text())
    assert record["seed"] == 3 and record["made_by"]["goenv"] == goenv.__version__
