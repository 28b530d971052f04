"""The scripts that measure and write docs/results and the docs' generated sections
(experiments/), each at a smoke size into tmp_path: the committed results and pages stay."""

import json
import subprocess
import sys
from pathlib import Path

import pytest

import goenv
from helpers import require_agents

ROOT = Path(__file__).resolve().parents[2]
EXPERIMENTS = ROOT / "experiments"


def test_go_results_script_end_to_end(tmp_path):
    """The results script on one small graph with tiny budgets: every part runs, the README
    section and the figure are written (the real run is documented in the README)."""
    pytest.importorskip("torch")
    readme = tmp_path / "README.md"
    readme.write_text("intro\n<!-- go-results:begin -->\nold\n<!-- go-results:end -->\nrest\n")
    common = ["--out", str(tmp_path / "results"), "--graphs", "transformer-xl-2", "--budget", "64",
              "--envs-per-graph", "16", "--imitation-steps", "5", "--max-wall-calls", "200", "--finetune-steps", "32",
              "--finetune-imitation-steps", "3", "--zero-shot-samples", "2", "--joint-graphs", "transformer-xl-2",
              "--joint-budget", "96", "--readme", str(readme), "--figure", str(tmp_path / "curves.png"),
              "--search-budget", "12", "--seeds", "0", "1", "2", "--reference-calls", "40", "--jobs", "2"]
    done = subprocess.run([sys.executable, str(EXPERIMENTS / "go_results.py"), "per-graph", "transfer", "joint",
                           "search", "readme", *common], capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr
    text = readme.read_text()
    assert "old" not in text and text.startswith("intro\n") and text.endswith("rest\n")
    assert "`transformer-xl-2`" in text and "GO (best found)" in text and "zero-shot" in text and "joint policy" in text
    assert (tmp_path / "curves.png").stat().st_size > 1000
    rows = json.loads((tmp_path / "results" / "go_per_graph.json").read_text())
    assert [r["label"] for r in rows] == ["transformer-xl-2"] and rows[0]["budget"] == 64
    # GO per graph on 3 seeds (run over 2 processes): every seed's run, their medians, the commit.
    assert rows[0]["seeds"] == [0, 1, 2] and len(rows[0]["commit"]) == 40
    for go, teacher, polished in zip(rows[0]["go_runs"], rows[0]["teacher_runs"], rows[0]["go_local_search_runs"]):
        assert rows[0]["lower_bound"] <= go <= teacher and polished <= teacher
    for key in ("go", "local_search", "go_local_search", "local_search_wall"):
        assert rows[0][key] == sorted(rows[0][f"{key}_runs"])[1]
    for i, teacher in enumerate(rows[0]["teacher_runs"]):  # the teacher: each seed's best heuristic
        assert teacher == min(runs[i] for runs in rows[0]["heuristics_runs"].values())
    assert len(rows[0]["go_calls_to_local_search"]) == 3
    assert "go_results.py per-graph --seeds 0 1 2`" in text and "Median [range] over 3 seed(s)" in text
    transfer = json.loads((tmp_path / "results" / "go_transfer.json").read_text())
    assert transfer[0]["finetuned"] <= transfer[0]["best_heuristic"]
    # The honest protocol: every search from the best heuristic, 3 seeds, the commit recorded.
    search = json.loads((tmp_path / "results" / "go_search.json").read_text())
    assert len(search["commit"]) == 40 and isinstance(search["dirty"], bool)
    row = search["rows"][0]
    for method in ("go-search", "local-search", "genetic"):
        assert len(row[method]["runs"]) == 3 and row[method]["min"] <= row[method]["median"] <= row[method]["max"]
        assert row[method]["max"] <= row["best_heuristic"] * (1 + 1e-9)  # never worse than the start
    assert len(row["go-search_curve"]) == 12 and row["local_search_wall_budget"] >= 12
    # Sample efficiency within the budget: the calls to local search's reference, per seed.
    assert len(row["go_calls_to_reference"]) == 3
    assert all(c is None or 1 <= c <= 12 for c in row["go_calls_to_reference"])
    assert "within 12:" in text
    assert "GO search vs the better search" in text and "median" in text.lower()
    assert "Made at commit" in text  # every table says which code made it
    joint = json.loads((tmp_path / "results" / "go_joint.json").read_text())
    assert all(len(r["commit"]) == 40 for r in joint + transfer)
    # Joint vs sequential per seed (run over 2 processes), the medians of them, the verdict in the README.
    assert joint[0]["seeds"] == [0, 1, 2] and len(joint[0]["joint_runs"]) == len(joint[0]["sequential_runs"]) == 3
    assert joint[0]["joint"] == sorted(joint[0]["joint_runs"])[1]
    assert "joint vs sequential" in text and "over 3 seed(s)" in text and "go_results.py joint --seeds 0 1 2`" in text
    # The ablation: the same search with the network untrained, added to the rows made before.
    done = subprocess.run([sys.executable, str(EXPERIMENTS / "go_results.py"), "search", "readme", "--untrained",
                           *common], capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr
    ablated = json.loads((tmp_path / "results" / "go_search.json").read_text())["rows"][0]
    assert ablated["go-search"] == row["go-search"] and len(ablated["untrained-search"]["runs"]) == 3
    assert ablated["untrained-search"]["max"] <= row["best_heuristic"] * (1 + 1e-9)
    assert "untrained policy" in readme.read_text()
    # Sample efficiency past the equal budget: GO search given more calls, added to the rows made before.
    done = subprocess.run([sys.executable, str(EXPERIMENTS / "go_results.py"), "search", "readme",
                           "--efficiency-budget", "30", *common], capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr
    longer = json.loads((tmp_path / "results" / "go_search.json").read_text())["rows"][0]
    assert longer["go-search"] == row["go-search"] and longer["go-search_long"]["budget"] == 30
    reached = longer["go-search_long"]["calls_to_reference"]
    assert len(reached) == 3 and all(c is None or 1 <= c <= 30 for c in reached)
    assert len(longer["go-search_long"]["commit"]) == 40 and "given 30:" in readme.read_text()
    # A row searched again without the reference keeps it (with the commit it was made at), the
    # ablation and the long searches: each was measured by a run of its own.
    done = subprocess.run([sys.executable, str(EXPERIMENTS / "go_results.py"), "search", *common,
                           "--reference-calls", "0"], capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr
    again = json.loads((tmp_path / "results" / "go_search.json").read_text())["rows"][0]
    assert again["local_search_reference"] == longer["local_search_reference"]
    assert len(again["reference_commit"]) == 40 and again["go_calls_to_reference"] == longer["go_calls_to_reference"]
    assert again["untrained-search"] == longer["untrained-search"] and again["go-search_long"] == longer["go-search_long"]


@pytest.mark.parametrize("script, arguments, message", [
    ("go_results.py", ["per-graph", "--graphs", "nosuch"], "--graphs: unknown nosuch"),
    ("go_results.py", ["per-graph", "--budget", "-4"], "--budget must be >= 1, got -4"),
    ("go_results.py", ["joint", "--jobs", "0"], "--jobs must be >= 1"),
    ("go_results.py", ["joint", "--joint-graphs", "foo"], "--joint-graphs: unknown foo"),
    ("place_your_model_section.py", ["--layers", "0"], "--layers must be >= 1, got 0"),
    ("place_your_model_section.py", ["--finetune", "-3"], "--finetune must be >= 0"),
])
def test_result_scripts_refuse_bad_options_at_once(script, arguments, message):
    done = subprocess.run([sys.executable, str(EXPERIMENTS / script), *arguments], capture_output=True, text=True,
                          timeout=120)
    assert done.returncode == 2 and message in done.stderr and "Traceback" not in done.stderr, done.stderr[-2000:]


def test_go_results_tables_say_which_rows_are_older(monkeypatch):
    """A table whose rows were made at different times names the code of each: rows of a run
    that recorded its commit, and the older rows that predate it (a per-graph run that replaced
    some graphs only), never the new commit alone; a win is a median better by more than 1%."""
    monkeypatch.syspath_prepend(str(EXPERIMENTS))
    go_results = pytest.importorskip("go_results")
    new = {"label": "a", "commit": "1" * 40, "dirty": False}
    assert go_results.made_by([new, {"label": "b"}], "per-graph") == (
        "Made at commit `1111111111` by `python experiments/go_results.py per-graph`; the rows of `b` before results "
        "recorded their commit (an earlier placer and agents; not re-run since).")
    assert go_results.made_by([new], "per-graph").endswith("per-graph`.")
    assert [go_results.verdict(x, 100.0) for x in (98.9, 99.2, 99.7, 100.6)] == ["win", "within noise", "tie", "loss"]
    # The search table names the ablation's commit where its runs were made at another one.
    summary = {"median": 90.0, "min": 89.0, "max": 91.0}
    row = {"label": "a", "devices": 2, "budget": 8, "default": 100.0, "best_heuristic": 95.0, "seeds": [0, 1, 2],
           "go-search": summary, "local-search": summary, "genetic": summary, "local-search_wall": summary,
           "local_search_wall_budget": 8, "untrained-search": summary, "untrained-search_commit": "2" * 40}
    assert "Ablation (commit `2222222222`):" in go_results.search_table({"commit": "1" * 40, "rows": [row]})
    assert "Ablation:" in go_results.search_table({"commit": "2" * 40, "rows": [row]})


def test_pretrain_placer_and_place_your_model_section(tmp_path):
    """The shipped placer's training script (tiny, into tmp_path: the shipped files stay) and
    the own-model example run into its docs section (place_your_model_section.py)."""
    pytest.importorskip("torch")
    done = subprocess.run([sys.executable, str(EXPERIMENTS / "pretrain_placer.py"), "--scale", "0.05",
                           "--imitation-steps", "6", "--ppo-steps", "32", "--workers", "0", "--max-nodes", "600",
                           "--curriculum", "300", "--data", str(tmp_path / "data"), "--out", str(tmp_path),
                           "--summary", str(tmp_path / "summary.json"), "--figure", str(tmp_path / "curves.png")],
                          capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr
    assert (tmp_path / "go-placement.agent").stat().st_size > 10_000
    # Its defaults are the shipped placer and its results: replaced only with --overwrite, refused
    # before any work (the docstring's quick look once replaced the shipped checkpoint).
    shipped = Path(goenv.agents.__file__).parent / "shipped" / "go-placement.agent"
    before = shipped.stat().st_mtime_ns
    refused = subprocess.run([sys.executable, str(EXPERIMENTS / "pretrain_placer.py"), "--scale", "0.05"],
                             capture_output=True, text=True, timeout=120)
    assert refused.returncode == 2 and "--overwrite replaces them" in refused.stderr
    assert shipped.stat().st_mtime_ns == before
    summary = json.loads((tmp_path / "summary.json").read_text())
    # The curriculum: a stage of small graphs, then every graph up to --max-nodes, the first kept.
    assert [s["max_nodes"] for s in summary["curriculum"]] == [300, 600]
    assert 0 < summary["curriculum"][0]["graphs"] < summary["curriculum"][1]["graphs"] == summary["graphs"]
    assert summary["nodes"][2] <= 600 and len(summary["imitation"]) == 6 and summary["ppo"]
    # Graphs come from `goenv.datasets.generate` files, none of a held-out lineage.
    generated = {goenv.datasets.open(p).family for p in (tmp_path / "data").iterdir()}
    assert set(summary["families"]) <= generated and len(generated) == 11
    assert not {"inception", "amoebanet", "transformer-xl", "wavenet", "bert", "gpt2"} & \
        {goenv.datasets.lineage(f) for f in generated}
    assert require_agents().load(tmp_path / "go-placement.agent").config["device_head"] == "pairs"
    readme = tmp_path / "README.md"
    readme.write_text("before\n<!-- place-your-model:begin -->\nold\n<!-- place-your-model:end -->\nafter\n")
    done = subprocess.run([sys.executable, str(EXPERIMENTS / "place_your_model_section.py"), "--layers", "1",
                           "--finetune", "32", "--readme", str(readme)], capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr
    assert "GO zero-shot (16-call search)" in done.stdout and "heft" in done.stdout
    # --readme: the run's own output between the markers, then what it says; the rest kept.
    text = readme.read_text()
    assert text.startswith("before\n") and text.endswith("after\n") and "old" not in text
    assert done.stdout.strip().splitlines()[-1] in text and "fine-tuned for 32 simulator calls" in text


def test_readme_tables_help_and_typos_touch_nothing():
    pages = [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]
    before = [page.stat().st_mtime_ns for page in pages]
    shown = subprocess.run([sys.executable, str(EXPERIMENTS / "readme_tables.py"), "--help"], capture_output=True,
                           text=True, timeout=120)
    assert shown.returncode == 0 and "library-results" in shown.stdout
    typo = subprocess.run([sys.executable, str(EXPERIMENTS / "readme_tables.py"), "grpahs"], capture_output=True,
                          text=True, timeout=120)
    assert typo.returncode == 2 and "unknown table(s) grpahs" in typo.stderr
    assert [page.stat().st_mtime_ns for page in pages] == before


def test_cost_model_example_quick(tmp_path):
    """experiments/cost_model.py at a smoke size, two seeds: labels, trains, ranks held-out graphs
    per seed, writes its JSON (each seed's run and the median and range over them), its figure
    and its README table; a results file from before the seeds is refused with the command."""
    pytest.importorskip("pyarrow")
    readme = tmp_path / "README.md"
    readme.write_text("a\n<!-- cost-model:begin -->\nold\n<!-- cost-model:end -->\nb\n")
    done = subprocess.run([sys.executable, str(EXPERIMENTS / "cost_model.py"), "--quick", "--seeds", "0", "1", "--json",
                           str(tmp_path / "r.json"), "--plot", str(tmp_path / "p.png"), "--readme", str(readme)],
                          capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr
    results = json.loads((tmp_path / "r.json").read_text())
    assert [run["seed"] for run in results["runs"]] == [0, 1] and len(results["held_out"]) == 6
    for key, spread in results["mean_range"].items():
        values = [run["mean"][key] for run in results["runs"]]
        assert spread["min"] == min(values) and spread["max"] == max(values) and -1 <= results["mean"][key] <= 1
    wins = sum(run["mean"]["tau_gnn"] > run["mean"]["tau_sum_of_op_costs"] for run in results["runs"])
    assert results["gnn_wins"]["sum_of_op_costs"] == wins
    text = readme.read_text()
    assert "old" not in text and "sum of op costs" in text and "seeds 0, 1" in text
    assert f"above the sum of op costs' on {wins} of 2 seeds" in text
    assert (tmp_path / "p.png").stat().st_size > 1000
    # A file from before the seeds (one run, no "runs"): refused, the README untouched.
    old = {key: value for key, value in results.items() if key != "runs"}
    (tmp_path / "old.json").write_text(json.dumps(old))
    refused = subprocess.run([sys.executable, str(EXPERIMENTS / "cost_model.py"), "--from-json",
                              str(tmp_path / "old.json"), "--readme", str(readme)], capture_output=True, text=True)
    assert refused.returncode != 0 and "make it again" in refused.stderr and readme.read_text() == text


def test_transfer_results_on_the_zoos_unseen_lineages(tmp_path):
    """The transfer protocol on one validation and one test graph at tiny budgets: every method's
    runs per seed, the summary, the section; the test split runs once unless told again, and a
    placer that trained on a case's graph is refused."""
    require_agents()
    from goenv.datasets.zoo.dataset import build_dataset

    zoo = tmp_path / "zoo"
    build_dataset(zoo, model_types=["opt", "vit"], sizes=["tiny"], workers=2, progress=False)  # validation, test
    page = tmp_path / "page.md"
    page.write_text("<!-- transfer-validation:begin -->\n<!-- transfer-validation:end -->\n"
                    "<!-- transfer-test:begin -->\n<!-- transfer-test:end -->\n")

    def run(split, *extra):
        return subprocess.run([sys.executable, str(EXPERIMENTS / "transfer_results.py"), "--zoo", str(zoo), "--split",
                               split, "--clusters", "2xgpu-nvlink", "--budgets", "4,8", "--seeds", "3", "--workers",
                               "1", "--out", str(tmp_path / f"{split}.json"), "--page", str(page), *extra],
                              capture_output=True, text=True, timeout=600)

    done = run("validation")
    assert done.returncode == 0, done.stderr
    results = json.loads((tmp_path / "validation.json").read_text())
    assert [g["model_type"] for g in results["graphs"]] == ["opt"] and len(results["made_by"]["commit"]) == 40
    row = results["rows"][0]
    for budget in ("4", "8"):
        assert sorted(row["search"][budget]) == ["genetic", "learned", "local-search", "uniform", "untrained"]
        for runs in row["search"][budget].values():
            assert len(runs) == 3 and max(runs) <= row["best_heuristic"] * (1 + 1e-9)
    assert row["one_shot"]["learned"] > 0 and results["summary"]["cases"] == 1
    assert "| 8 |" in page.read_text() and "transfer_results.py --zoo" in page.read_text()
    assert run("test").returncode == 0
    again = run("test")
    assert again.returncode != 0 and "run once" in again.stderr
    assert run("test", "--overwrite").returncode == 0
    assert json.loads((tmp_path / "test.json").read_text())["test_runs"] == 2
    # A placer that kept decisions for a case's graph trained on it: refused.
    opt = goenv.datasets.open(str(zoo))[0]
    agent = goenv.agents.GO(seed=0, num_threads=1)
    agent.imitate(goenv.make("placement", graph=opt, cluster="2xgpu-nvlink"), steps=2, progress=False)
    agent.save(tmp_path / "trained.agent")
    refused = run("validation", "--checkpoint", str(tmp_path / "trained.agent"))
    assert refused.returncode != 0 and "trained on it" in refused.stderr
    # A placer that keeps no teachers is checked against its training summary's lineages.
    (tmp_path / "summary.json").write_text(json.dumps({"model_types": ["biogpt", "opt"]}))
    refused = run("validation", "--trained-on", str(tmp_path / "summary.json"))
    assert refused.returncode != 0 and "trained on its lineage 'opt'" in refused.stderr
    # A section named apart from the split's.
    page.write_text("<!-- transfer-validation-mine:begin -->\n<!-- transfer-validation-mine:end -->\n")
    assert run("validation", "--section", "transfer-validation-mine").returncode == 0
    assert "| 8 |" in page.read_text()


def test_reader_memory_measures_a_case_in_a_child_and_marks_what_exceeds_the_bound():
    sys.path.insert(0, str(EXPERIMENTS))
    try:
        import reader_memory
    finally:
        sys.path.remove(str(EXPERIMENTS))
    reader, what, setup, prepare = next(case for case in reader_memory.CASES if case[0] == "Graph.from_arrays")
    row = {"reader": reader, "input": what, **reader_memory.measure(setup, prepare)}
    assert row["outcome"].startswith("InvalidGraph: too many nodes") and 0 <= row["peak"] < 64 << 20
    over = {"reader": "r", "input": "i", "outcome": "read", "peak": 4 * 10**6 + (64 << 20) + 1, "bytes": 10**6}
    text = reader_memory.table([row, over], {"commit": "abcdef0123", "dirty": False})
    assert "| within |" in text and "| **over** |" in text and "at abcdef0" in text
