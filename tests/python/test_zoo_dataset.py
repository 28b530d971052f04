"""The zoo as a dataset (goenv.datasets.zoo.dataset, .report, .publish, .lineages, `goenv dataset zoo`).

Most tests run the dataset machinery on a stand-in builder with the zoo's API (fast, no
transformers); the tests marked `real` build real transformers models (skipped without the zoo
extra). The committed structural hashes are regenerated with

    python tests/python/test_zoo_dataset.py --regenerate-hashes
"""

from __future__ import annotations

import hashlib
import collections
import json
import os
import shutil
import sys

import numpy as np
import pytest

import goenv
from goenv.datasets.zoo import dataset as zoo_dataset
from goenv.datasets.zoo import lineages, publish
from goenv.datasets.zoo.result import ZooResult

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
HASHES_FILE = os.path.join(ROOT, "docs", "results", "zoo_structural_hashes.json")
# Small types that import in seconds (regenerating the hashes file takes these).
FAST_TYPES = ("bert", "gpt2", "llama", "vit", "whisper")


def _has_transformers() -> bool:
    try:
        import transformers  # noqa: F401
    except ImportError:
        return False
    return True


real = pytest.mark.skipif(not _has_transformers(), reason="the zoo extra (transformers) is not installed")


# ---------------------------------------------------------------------------
# A stand-in builder: the zoo's names, small chain graphs, a failure and a duplicate.

class FakeZoo:
    LIBRARIES = {"transformers": "5.23.0"}
    SIZES = ("tiny", "small")
    TYPES = ("alias", "alpha", "beta", "broken", "gamma", "delta", "omega")

    def __init__(self, interrupt_after: int | None = None):
        self.calls = []
        self.interrupt_after = interrupt_after

    def model_types(self, library="transformers"):
        return sorted(self.TYPES)

    def planned_types(self, library="transformers", size="tiny"):
        return self.model_types(library)

    def modality(self, model_type, library="transformers"):
        return {"beta": "vision", "gamma": "audio"}.get(model_type, "text")

    def build(self, model_type, size="tiny", *, library="transformers", memory_limit=4 << 30, time_limit=300.0):
        if self.interrupt_after is not None and len(self.calls) >= self.interrupt_after:
            raise KeyboardInterrupt
        self.calls.append((model_type, size))
        if model_type == "broken":
            return ZooResult(model_type, size, library, ok=False, stage="trace", reason="an op torch.export refuses")
        shape_of = "alpha" if model_type == "alias" else model_type  # alias imports to alpha's graph
        n = 3 + len(shape_of) + (4 if size == "small" else 0)
        graph = goenv.Graph.from_arrays(np.array([np.arange(n - 1), np.arange(1, n)], dtype=np.int64),
                                        flops=np.full(n, 1e6 * (1 + int(hashlib.sha256(shape_of.encode()).hexdigest()[:6], 16))),
                                        output_bytes=np.full(n, 4096), param_bytes=np.zeros(n),
                                        op_type=["MatMul"] * n, name=f"{model_type}-{size}")
        provenance = {"library": library, "library_version": "5.23.0", "model_type": model_type, "size": size,
                      "config_hash": hashlib.sha256(f"{model_type}{size}".encode()).hexdigest(),
                      "goenv_version": goenv.__version__, "torch_version": "2.13.0"}
        return ZooResult(model_type, size, library, ok=True, graph_bytes=graph.to_bytes(), provenance=provenance,
                         num_nodes=n, seconds=0.01 * n, peak_memory_bytes=n << 20,
                         uncosted_ops=("aten.odd_op",) if model_type == "gamma" else ())


def _files(folder) -> dict[str, bytes]:
    """The dataset's own files (shards and manifest), not the measured report."""
    return {name: open(os.path.join(folder, name), "rb").read() for name in sorted(os.listdir(folder))
            if name.endswith(".goenv-shard") or name == "manifest.json"}


def _build(folder, builder=None, **options):
    options = {"shard_size": 3, "progress": False, **options}
    return zoo_dataset.build_dataset(folder, builder=builder or FakeZoo(), **options)


# ---------------------------------------------------------------------------
# Determinism, failures, duplicates, resume.

def test_the_same_files_whatever_the_worker_count_and_run(tmp_path):
    one = _build(tmp_path / "one", workers=1)
    assert len(one) > 0
    reference = _files(one.root)
    assert len(reference) == 1 + -(-len(FakeZoo.TYPES) * 2 // 3)
    for name, workers in (("again", 1), ("three", 3)):
        assert _files(_build(tmp_path / name, workers=workers).root) == reference


def test_a_failing_build_is_recorded_and_the_run_goes_on(tmp_path):
    ds = _build(tmp_path / "zoo")
    by_key = {(r["model_type"], r["size"]): r for r in ds.records}
    assert len(ds.records) == len(FakeZoo.TYPES) * 2  # every build has a record, failed or not
    broken = by_key[("broken", "tiny")]
    assert (broken["status"], broken["stage"], broken["graph"]) == ("failed", "trace", None)
    assert "torch.export" in broken["reason"]
    assert by_key[("omega", "small")]["status"] == "imported"  # built after the failure
    coverage = json.load(open(tmp_path / "zoo" / "coverage.json"))
    assert coverage["totals"]["failed"] == 2 and coverage["totals"]["failed_by_stage"] == {"trace": 2}
    assert "trace: an op torch.export refuses" in open(tmp_path / "zoo" / "coverage.md").read()


def test_duplicates_keep_the_first_in_plan_order(tmp_path):
    ds = _build(tmp_path / "zoo")
    by_key = {(r["model_type"], r["size"]): r for r in ds.records}
    alias, alpha = by_key[("alias", "tiny")], by_key[("alpha", "tiny")]
    assert alias["status"] == "imported" and alias["graph"] is not None  # "alias" < "alpha": first in the plan
    assert alpha["status"] == "duplicate" and alpha["duplicate_of"] == "transformers/alias/tiny"
    assert alpha["structural_hash"] == alias["structural_hash"] and alpha["graph"] is None
    hashes = [r["structural_hash"] for r in ds.records if r["status"] == "imported"]
    assert len(hashes) == len(set(hashes)) == len(ds)


def test_an_interrupted_run_resumes_to_the_same_files(tmp_path):
    reference = _files(_build(tmp_path / "whole").root)
    for stop_after in (0, 4, 7):
        folder = tmp_path / f"stopped-{stop_after}"
        with pytest.raises(KeyboardInterrupt):
            _build(folder, FakeZoo(interrupt_after=stop_after))
        finished = json.load(open(folder / "manifest.json"))
        assert not finished["complete"] and len(finished["shards"]) == stop_after // 3
        resumed = FakeZoo()
        _build(folder, resumed)
        assert _files(folder) == reference
        assert len(resumed.calls) == len(FakeZoo.TYPES) * 2 - 3 * (stop_after // 3)  # finished shards kept


def test_a_damaged_shard_is_built_again(tmp_path):
    ds = _build(tmp_path / "zoo")
    reference = _files(ds.root)
    with open(os.path.join(ds.root, "shard-00001.goenv-shard"), "r+b") as file:
        file.seek(20)
        file.write(b"\x00\x01\x02")
    with pytest.raises(goenv.InvalidGraph, match="SHA-256"):
        goenv.datasets.open(ds.root)[3]
    builder = FakeZoo()
    _build(tmp_path / "zoo", builder)
    assert _files(ds.root) == reference
    assert len(builder.calls) == len(FakeZoo.TYPES) * 2 - 3  # shard 0 kept, the rest rebuilt


class OnePerLineageZoo(FakeZoo):
    """A whole-library run builds "small" for two types only, as the zoo builds "large"."""

    def planned_types(self, library="transformers", size="tiny"):
        return ["alpha", "gamma"] if size == "small" else self.model_types(library)


def test_a_whole_library_run_builds_a_size_for_the_planned_types_only(tmp_path):
    builder = OnePerLineageZoo()
    ds = _build(tmp_path / "zoo", builder)
    assert sorted(builder.calls) == sorted([(t, "tiny") for t in FakeZoo.TYPES] + [("alpha", "small"),
                                                                                   ("gamma", "small")])
    manifest = json.load(open(os.path.join(ds.root, "manifest.json")))
    assert manifest["zoo"]["types_by_size"] == {"small": ["alpha", "gamma"]}
    assert manifest["zoo"]["num_builds"] == len(FakeZoo.TYPES) + 2
    assert len(goenv.datasets.open(ds.root).records) == len(FakeZoo.TYPES) + 2
    report = json.load(open(os.path.join(ds.root, "coverage.json")))
    assert report["sizes_detail"]["small"]["builds_planned"] == 2
    assert report["sizes_detail"]["tiny"]["builds_tried"] == len(FakeZoo.TYPES)
    assert "| small | 2 of 2 | 2 | 2 |" in open(os.path.join(ds.root, "coverage.md")).read()
    again = OnePerLineageZoo()
    _build(tmp_path / "zoo", again)  # the same plan: every shard kept
    assert again.calls == []
    named = OnePerLineageZoo()
    _build(tmp_path / "named", named, model_types=["beta"])  # types named: every size for each
    assert named.calls == [("beta", "tiny"), ("beta", "small")]
    manifest["zoo"]["types_by_size"] = {"small": ["alpha", "zeta"]}
    with open(os.path.join(ds.root, "manifest.json"), "w") as file:
        json.dump(manifest, file)
    with pytest.raises(goenv.InvalidGraph, match="types_by_size"):
        goenv.datasets.open(ds.root)


def test_the_zoo_builds_large_for_one_type_per_lineage():
    from goenv.datasets import zoo
    from goenv.datasets.zoo.lineages import lineage, lineages

    large = zoo.planned_types("transformers", "large")
    assert sorted(lineage(t) for t in large) == sorted(lineages())  # each lineage once
    assert {"llama", "bert", "vit", "whisper", "t5"} <= set(large)
    assert zoo.planned_types("transformers", "small") == zoo.model_types()
    plan = zoo_dataset.plan_requests()
    assert len(plan) == 2 * len(zoo.model_types()) + len(large)


def test_another_dataset_is_never_replaced_without_overwrite(tmp_path):
    _build(tmp_path / "zoo", model_types=["beta"])
    with pytest.raises(goenv.InvalidArgument, match="another plan.*overwrite"):
        _build(tmp_path / "zoo", model_types=["gamma"])
    goenv.datasets.generate("random-layered", 2, tmp_path / "generated", params={"num_layers": 3, "width": 2},
                            progress=False)
    with pytest.raises(goenv.InvalidArgument, match="family 'random-layered'"):
        _build(tmp_path / "generated")
    ds = _build(tmp_path / "zoo", model_types=["gamma"], overwrite=True)
    assert {r["model_type"] for r in ds.records} == {"gamma"}
    assert sorted(n for n in os.listdir(ds.root) if n.endswith(".goenv-shard")) == ["shard-00000.goenv-shard"]


def test_unknown_names_raise_not_found_naming_the_choices(tmp_path):
    with pytest.raises(goenv.NotFound, match=r"unknown transformers model type 'zeta'.*choices: alias, alpha"):
        _build(tmp_path / "a", model_types=["alpha", "zeta"])
    with pytest.raises(goenv.NotFound, match="unknown size 'huge'.*choices: tiny, small"):
        _build(tmp_path / "b", sizes=["huge"])
    with pytest.raises(goenv.NotFound, match="unknown library 'timm'.*choices: transformers"):
        _build(tmp_path / "c", library="timm")
    assert not os.path.exists(tmp_path / "a")  # nothing made before the names are checked


# ---------------------------------------------------------------------------
# Reading a zoo folder.

def test_open_reads_a_zoo_folder_with_provenance(tmp_path):
    built = _build(tmp_path / "zoo", sizes=["tiny"])
    ds = goenv.datasets.open(tmp_path / "zoo")
    assert isinstance(ds, zoo_dataset.ZooDataset) and ds.family == "zoo" and len(ds) == len(built)
    names = [g.name for g in ds]
    assert names[0] == "alias-tiny" and ds[-1].name == names[-1]
    provenance = ds.provenance(1)
    assert provenance["model_type"] == "beta" and provenance["size"] == "tiny"
    assert provenance["structural_hash"] == zoo_dataset.structural_hash(ds[1])
    assert set(provenance) >= {"library", "library_version", "config_hash", "goenv_version", "torch_version"}
    ds.verify()
    with pytest.raises(IndexError):
        ds.provenance(len(ds))
    # `goenv dataset info` says what the zoo holds: builds, types imported, duplicates, failures.
    statuses = collections.Counter(r["status"] for r in ds.records)
    line = ds.summary()
    assert f"{len(ds)} graphs from {len(ds.records)} builds" in line and "coverage.md" in line
    assert f"{statuses['duplicate']} duplicates, {statuses['failed']} failed" in line


def test_an_unfinished_zoo_is_not_opened(tmp_path):
    with pytest.raises(KeyboardInterrupt):
        _build(tmp_path / "zoo", FakeZoo(interrupt_after=5))
    with pytest.raises(goenv.InvalidGraph, match=r"incomplete zoo \(\d+ of \d+ builds.*goenv dataset zoo command"):
        goenv.datasets.open(tmp_path / "zoo")


def test_a_manifest_naming_files_outside_its_plan_is_refused(tmp_path):
    ds = _build(tmp_path / "zoo")
    manifest = json.load(open(os.path.join(ds.root, "manifest.json")))
    manifest["shards"][1]["file"] = "../elsewhere.goenv-shard"
    with open(os.path.join(ds.root, "manifest.json"), "w") as file:
        json.dump(manifest, file)
    with pytest.raises(goenv.InvalidGraph, match="shard record 1"):
        goenv.datasets.open(ds.root)


def test_structural_hash_ignores_names_only():
    def chain(name, flops):
        return goenv.Graph.from_arrays(np.array([[0, 1], [1, 2]]), flops=np.array(flops, dtype=float),
                                       output_bytes=np.full(3, 8), names=[f"{name}{i}" for i in range(3)],
                                       name=name)

    assert zoo_dataset.structural_hash(chain("a", [1, 2, 3])) == zoo_dataset.structural_hash(chain("b", [1, 2, 3]))
    assert zoo_dataset.structural_hash(chain("a", [1, 2, 3])) != zoo_dataset.structural_hash(chain("a", [1, 2, 4]))


# ---------------------------------------------------------------------------
# The command line and the report.

def test_the_command_builds_and_names_bad_choices(tmp_path, monkeypatch, capsys):
    from goenv import cli
    from goenv.datasets.zoo import command

    real_build = zoo_dataset.build_dataset
    monkeypatch.setattr(command, "build_dataset", lambda *a, **k: real_build(*a, **{**k, "builder": FakeZoo()}))
    assert cli.main(["dataset", "zoo", "--out", str(tmp_path / "zoo"), "--types", "alpha,beta", "--sizes", "tiny",
                     "--workers", "2", "--no-progress"]) == 0
    out = capsys.readouterr().out
    assert "2 graphs from 2 builds (2 of 2 model types imported, 0 duplicates)" in out
    assert cli.main(["dataset", "zoo", "--out", str(tmp_path / "x"), "--sizes", "medium", "--no-progress"]) == 2
    assert "unknown size 'medium'" in capsys.readouterr().err
    assert command._names("a, b,") == ["a", "b"]


def test_publish_writes_the_docs_copies(tmp_path):
    _build(tmp_path / "zoo")
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "zoo.md").write_text(f"# Zoo\n\nbefore\n{publish.BEGIN}\nold table\n{publish.END}\nafter\n")
    paths = publish.publish(str(tmp_path / "zoo"), str(docs))
    page = (docs / "zoo.md").read_text()
    assert "old table" not in page and "before" in page and "after" in page
    assert "| **all** | **7** | **6** |" in page  # 7 types tried, 6 imported (broken failed)
    assert "no cost rule, costed at 1 FLOP per output element (builds): `aten.odd_op` (2)" in page  # gamma's two
    results = json.load(open(paths["results"]))
    assert "commit" in results and all("op_counts" not in row for row in results["builds"])
    assert results["totals"]["graphs"] == 10 and results["totals"]["duplicates"] == 2  # alpha, tiny and small
    assert open(paths["figure"], "rb").read(8) == b"\x89PNG\r\n\x1a\n"
    with pytest.raises(goenv.InvalidArgument, match="markers"):
        publish.replace_between_markers("no markers", "x")


# ---------------------------------------------------------------------------
# The lineage split.

def test_the_committed_split_keeps_each_lineage_on_one_side():
    data = lineages._load()
    by_split = lineages.splits()
    assert set(by_split) == set(lineages.SPLITS)
    lineage_splits = {}
    for split_name, types in by_split.items():
        for model_type in types:
            lineage_splits.setdefault(lineages.lineage(model_type), set()).add(split_name)
    assert all(len(sides) == 1 for sides in lineage_splits.values())
    train = {lineages.lineage(t) for t in by_split["train"]}
    assert not train & {lineages.lineage(t) for t in by_split["test"] + by_split["validation"]}
    total = len(data["types"])
    for split_name, share in lineages.TARGET_SHARES.items():
        assert abs(len(by_split[split_name]) / total - share) < 0.03
    test_modalities = {data["types"][t]["modality"] for t in by_split["test"]}
    assert test_modalities == {entry["modality"] for entry in data["types"].values()}


def test_the_docs_table_of_the_split_is_the_committed_one():
    data = lineages._load()
    members = lineages.lineages()
    page = open(os.path.join(ROOT, "docs", "zoo.md")).read()
    for split_name in lineages.SPLITS:
        names = [n for n, s in data["splits"].items() if s == split_name]
        types = [t for n in names for t in members[n]]
        modalities = [sum(data["types"][t]["modality"] == m for t in types)
                      for m in ("text", "vision", "audio", "multimodal", "other")]
        share = f"{len(types) / len(data['types']):.0%}"
        row = f"| {split_name} | {len(types)} ({share}) | {len(names)} | " + " | ".join(map(str, modalities)) + " |"
        assert row in page, row


def test_a_type_the_list_lacks_is_refused():
    with pytest.raises(goenv.NotFound, match="not in the zoo's lineage list.*--write"):
        lineages.lineage("a_model_of_next_year")
    with pytest.raises(goenv.NotFound, match="no lineage split for .timm.; libraries: transformers, diffusers"):
        lineages.split("bert", library="timm")

    class Newer(FakeZoo):
        def model_types(self, library="transformers"):
            return ["bert", "a_model_of_next_year"]

    with pytest.raises(goenv.NotFound, match="1 transformers model types are not in the zoo's lineage list"):
        lineages.suite(builder=Newer())


@real
def test_every_model_type_of_the_pinned_release_has_a_lineage():
    from goenv.datasets import zoo

    assert sorted(lineages._load()["types"]) == zoo.model_types()
    splits = goenv.datasets.suite("zoo")
    assert sorted(splits) == ["test", "train", "validation"]
    entries = [e for side in splits.values() for e in side]
    assert len(entries) == len(zoo.model_types())
    assert all(isinstance(e, lineages.ZooEntry) and e.split == side for side, es in splits.items() for e in es)
    assert "zoo" in goenv.datasets.suites()


def _write_models(root, files: dict[str, str]) -> str:
    for path, text in files.items():
        os.makedirs(os.path.join(root, os.path.dirname(path)), exist_ok=True)
        with open(os.path.join(root, path), "w") as file:
            file.write(text)
    return str(root)


def test_derive_follows_modular_imports_and_copies_within_a_modality(tmp_path):
    models = _write_models(tmp_path, {
        "base/modeling_base.py": "",
        "child/modular_child.py": "from ..base.modeling_base import (\n    BaseAttention,\n    BaseMLP,\n)\n",
        "grandchild/modeling_grandchild.py": "# Copied from transformers.models.child.x\n" * 6
                                             + "# Copied from transformers.models.base.y\n",
        "weak/modeling_weak.py": "# Copied from transformers.models.base.y\n" * 5,
        "speech/modular_speech.py": "from ..base.modeling_base import BaseAttention, BaseMLP, BaseNorm\n",
        "vlm/modular_vlm.py": "from transformers.models.base.modeling_base import BaseModel, BaseMLP\n",
    })
    modality = {"speech": "audio", "vlm": "multimodal"}
    types = ["base", "child", "grandchild", "weak", "speech", "vlm"]
    derived = lineages.derive(types, lambda t: modality.get(t, "text"), lambda t: t, models, reviewed={})
    lineage_of = {t: e["lineage"] for t, e in derived["types"].items()}
    assert lineage_of == {"base": "base", "child": "base", "grandchild": "base", "weak": "weak",
                          "speech": "speech", "vlm": "base"}
    assert derived["types"]["grandchild"]["derived_from"] == "child"
    assert set(derived["splits"]) == {"base", "weak", "speech"}
    assert derived["splits"]["base"] == "train"  # the big lineage trains
    reviewed = lineages.derive(types, lambda t: modality.get(t, "text"), lambda t: t, models,
                               reviewed={"weak": ("child", "five copies are enough here")})
    assert reviewed["types"]["weak"]["lineage"] == "base" and "reviewed" in reviewed["types"]["weak"]
    with pytest.raises(goenv.InvalidArgument, match="lacks: gone"):
        lineages.derive(types, lambda t: "text", lambda t: t, models, reviewed={"gone": ("base", "")})


@pytest.mark.skipif(not os.path.isfile(lineages.LINEAGES_FILE), reason="no committed list")
@real
def test_the_committed_list_is_what_the_installed_release_derives():
    from goenv.datasets import zoo

    derived = lineages._derive_installed(zoo)
    committed = lineages._load()
    assert derived["types"] == committed["types"] and derived["splits"] == committed["splits"]


# ---------------------------------------------------------------------------
# Real models: determinism across runs and worker counts, committed structural hashes, every
# task and tool on zoo graphs.

@pytest.fixture(scope="module")
def small_zoo(tmp_path_factory):
    folder = tmp_path_factory.mktemp("zoo") / "zoo"
    return zoo_dataset.build_dataset(folder, model_types=list(FAST_TYPES[:3]), sizes=["tiny"], workers=1,
                                     shard_size=2, progress=False)


def _stop(root):
    raise KeyboardInterrupt


@real
def test_real_builds_give_the_same_files_twice_and_with_two_workers(small_zoo, tmp_path):
    reference = _files(small_zoo.root)
    again = zoo_dataset.build_dataset(tmp_path / "two", model_types=list(FAST_TYPES[:3]), sizes=["tiny"],
                                      workers=2, shard_size=2, progress=False)
    assert _files(again.root) == reference
    shutil.rmtree(again.root)
    with pytest.raises(KeyboardInterrupt):
        zoo_dataset.build_dataset(tmp_path / "two", model_types=list(FAST_TYPES[:3]), sizes=["tiny"],
                                  workers=2, shard_size=2, progress=False,
                                  on_shard=_stop)
    zoo_dataset.build_dataset(tmp_path / "two", model_types=list(FAST_TYPES[:3]), sizes=["tiny"], workers=2,
                              shard_size=2, progress=False)
    assert _files(tmp_path / "two") == reference


def _hashes(types=FAST_TYPES, size="tiny") -> list[dict]:
    from goenv.datasets import zoo

    rows = []
    for model_type in types:
        result = zoo.build(model_type, size)
        assert result.ok, f"{model_type}: {result.stage}: {result.reason}"
        rows.append({"model_type": model_type, "size": size, "num_nodes": result.num_nodes,
                     "structural_hash": zoo_dataset.structural_hash(result.graph()),
                     "config_hash": result.provenance["config_hash"]})
    return rows


@real
def test_ray_workers_write_the_same_files(tmp_path):
    pytest.importorskip("ray")
    files = [_files(zoo_dataset.build_dataset(tmp_path / name, model_types=["gpt2"], sizes=["tiny"], workers=2,
                                              ray=name == "ray", progress=False).root) for name in ("local", "ray")]
    assert files[0] == files[1]


@real
@pytest.mark.skipif(not os.path.isfile(HASHES_FILE), reason="no committed hashes")
def test_committed_structural_hashes_match():
    committed = json.load(open(HASHES_FILE))
    assert [row["model_type"] for row in committed["graphs"]] == list(FAST_TYPES)
    assert _hashes() == committed["graphs"], ("the zoo's graphs changed: if on purpose, regenerate with "
                                              "python tests/python/test_zoo_dataset.py --regenerate-hashes")


@real
def test_every_task_and_tool_runs_on_zoo_graphs(small_zoo, tmp_path):
    from gymnasium.utils.env_checker import check_env

    graphs = [small_zoo[i] for i in range(len(small_zoo))]
    assert graphs and all(g.num_nodes > 50 for g in graphs)
    graph = min(graphs, key=lambda g: g.num_nodes)
    envs = {task: goenv.make(task, graph=graph, cluster="2xgpu-nvlink")
            for task in ("placement", "scheduling", "fusion", "joint")}
    check_env(envs["placement"], skip_render_check=True)
    env = envs["joint"]
    env.reset(seed=0)
    _, _, _, _, info = env.step(env.action_space.sample())
    assert info["runtime"] > 0
    bound = goenv.baselines.lower_bound(env)
    for name in goenv.baselines.list():  # the joint env decides every head, so every baseline runs on it
        solution = goenv.baselines.solve(env, name, budget=20)
        assert solution["oom"] or solution["runtime"] >= bound * (1 - 1e-9), name
    placement = envs["placement"]
    placement.reset(seed=0)
    placement.step(placement.action_space.sample())
    frame = placement.render()
    assert frame.ndim == 3 and frame.shape[2] in (3, 4)
    labels = goenv.datasets.label(small_zoo.root, tmp_path / "labels", decisions_per_graph=2, progress=False)
    assert len(labels) == len(small_zoo)
    try:
        import torch_geometric  # noqa: F401
    except ImportError:
        return
    data = goenv.datasets.to_pyg(graph)
    assert data.num_nodes == graph.num_nodes


if __name__ == "__main__" and "--regenerate-hashes" in sys.argv:
    from goenv.datasets import zoo
    from goenv.files import write_atomic

    rows = _hashes()
    record = {"what": "structural hashes of a few fast zoo types, checked by tests/python/test_zoo_dataset.py",
              "made_by": "python tests/python/test_zoo_dataset.py --regenerate-hashes",
              "library": "transformers", "library_version": zoo.LIBRARIES["transformers"], "graphs": rows}
    write_atomic(HASHES_FILE, (json.dumps(record, indent=1) + "\n").encode(), "hashes file")
    print(f"wrote {HASHES_FILE}")
