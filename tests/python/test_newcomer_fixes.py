"""What a newcomer's first walk through goenv tripped over: list-valued CLI flags, files
replaced without overwrite=True, help() on the agents, and missing extras named."""

from __future__ import annotations

import json

import pytest

from goenv.cli import main
from goenv.cli.common import split_names

ENV_ID = "placement-inception"


# ---------------------------------------------------------------------------
# --methods takes names separated by spaces or commas.

def test_split_names_accepts_spaces_commas_and_both():
    assert split_names(["heft", "local-search"]) == ["heft", "local-search"]
    assert split_names(["heft,local-search"]) == ["heft", "local-search"]
    assert split_names(["heft,", "metis", "heft"]) == ["heft", "metis"]


@pytest.mark.parametrize("methods", [["heft", "single"], ["heft,single"], ["heft,", "single"]])
def test_baselines_methods_space_or_comma_separated(capsys, methods):
    assert main(["baselines", ENV_ID, "--methods", *methods, "--json"]) == 0
    rows = json.loads(capsys.readouterr().out)["rows"]
    assert [row["method"] for row in rows] == ["heft", "single"]


def test_baselines_unknown_method_lists_the_choices(capsys):
    assert main(["baselines", ENV_ID, "--methods", "heft", "bogus"]) == 2
    error = capsys.readouterr().err
    assert "--methods bogus: unknown baseline" in error
    assert "choose from" in error and "local-search" in error and "metis" in error


def test_baselines_method_of_another_task_is_refused_with_the_choices(capsys):
    assert main(["baselines", ENV_ID, "--methods", "fifo"]) == 2
    error = capsys.readouterr().err
    assert "--methods fifo: does not run on placement" in error and "heft" in error


# ---------------------------------------------------------------------------
# help(goenv.agents.GO) lists every option, from goenv.agents.options().

def test_agent_help_lists_every_option_with_type_default_and_meaning():
    import inspect
    import pydoc

    agents = pytest.importorskip("goenv.agents")
    types = {"i": int, "d": float, "b": bool, "s": str}
    text = pydoc.render_doc(agents.GO, renderer=pydoc.plaintext)
    for name, kind, default, meaning in agents.options():
        if name == "algorithm":  # GO fixes it
            assert "algorithm (str" not in agents.GO.__doc__
            continue
        assert f"{name} ({types[kind].__name__}, default {default!r})" in text
        assert meaning.split()[0] in text
    parameters = inspect.signature(agents.GO).parameters
    assert "options" not in parameters
    assert {name: (p.default, p.annotation) for name, p in parameters.items() if name != "env"} == {
        name: (default, types[kind]) for name, kind, default, _ in agents.options() if name != "algorithm"}
    assert "algorithm" in inspect.signature(agents.Agent).parameters  # the base class takes it


def test_agent_help_is_made_without_importing_torch_at_import():
    import subprocess
    import sys

    code = ("import sys, goenv.agents; assert 'torch' not in sys.modules; "
            "doc = goenv.agents.PPO.__doc__; assert 'segment_length (int, default 512)' in doc, doc")
    subprocess.run([sys.executable, "-c", code], check=True)


# ---------------------------------------------------------------------------
# A missing optional package names the extra that installs it.

MISSING_EXTRA_CASES = {
    "ray-distributed": (["ray"], "import goenv.distributed\n"
                        "goenv.distributed.train(['placement-inception'], num_workers=1, total_steps=1)",
                        "goenv.distributed needs ray", "distributed"),
    "ray-labels": (["ray"], "import goenv.labels.folder as f, tempfile\n"
                   "f.label('go-placement', tempfile.mkdtemp() + '/labels', workers=2)",
                   "goenv.datasets.label with workers > 0 needs ray", "distributed"),
    "rllib": (["ray", "ray.rllib"], "import goenv.integrations.rllib",
              "goenv.integrations.rllib needs ray[rllib]", "rllib"),
    "stable-baselines3": (["stable_baselines3"], "import goenv.integrations.sb3",
                          "goenv.integrations.sb3 needs stable-baselines3", "sb3"),
    "sb3-contrib": (["sb3_contrib"], "import goenv.integrations.sb3",
                    "goenv.integrations.sb3 needs sb3-contrib", "sb3"),
    "pyarrow": (["pyarrow"], "from goenv.labels.tables import pyarrow\npyarrow()",
                "labelled datasets (Parquet files) needs pyarrow", "parquet"),
    "onnx": (["onnx"], "import goenv\ngoenv.datasets.from_onnx(b'')", "goenv.datasets.from_onnx needs onnx", "onnx"),
    "transformers": (["transformers"], "import goenv.datasets.zoo as zoo\nzoo.model_types()",
                     "goenv.datasets.zoo needs transformers", "zoo"),
    "ray-zoo": (["ray"], "from goenv.datasets.zoo.dataset import _ray_results\n"
                "next(_ray_results(None, [], 1, {}, None))", "goenv dataset zoo --ray needs ray", "distributed"),
}


@pytest.mark.parametrize("case", sorted(MISSING_EXTRA_CASES))
def test_missing_optional_package_names_its_extra(case):
    import subprocess
    import sys

    modules, code, feature, extra = MISSING_EXTRA_CASES[case]
    hide = "".join(f"sys.modules[{name!r}] = None\n" for name in modules)  # as if not installed
    script = f"import sys\n{hide}try:\n" + "".join(f"    {line}\n" for line in code.splitlines()) + \
        "except ImportError as error:\n    print(error)\nelse:\n    print('no ImportError')\n"
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == f"{feature}, which is not installed: pip install 'goenv[{extra}]'"


def test_import_extra_keeps_the_error_of_a_package_that_fails_to_import(tmp_path, monkeypatch):
    from goenv.extras import import_extra

    (tmp_path / "broken_extra_package.py").write_text("import a_module_nobody_has\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    with pytest.raises(ImportError, match=r"broken_extra_package failed to import .*a_module_nobody_has.*"
                                          r"pip install 'goenv\[demo\]'"):
        import_extra("broken_extra_package", extra="demo", feature="a demo")


# ---------------------------------------------------------------------------
# Python-side writes replace an existing file only with overwrite=True.

def _agent():
    agents = pytest.importorskip("goenv.agents")
    return agents.PPO("placement-inception", hidden=16, seed=0, num_threads=1)


def test_agent_save_refuses_an_existing_file_unless_overwrite(tmp_path):
    import goenv

    agent, path = _agent(), tmp_path / "go.agent"
    path.write_bytes(b"the user's file")
    with pytest.raises(goenv.InvalidArgument, match=rf"checkpoint {path}: the file exists; pass overwrite=True"):
        agent.save(path)
    assert path.read_bytes() == b"the user's file"
    agent.save(path, overwrite=True)
    assert goenv.agents.load(path).config == agent.config
    with pytest.raises(goenv.InvalidArgument, match="overwrite must be"):  # a flag, not any truthy value
        agent.save(path, overwrite="yes")


def test_distributed_train_refuses_an_existing_checkpoint_before_starting(tmp_path):
    import goenv

    pytest.importorskip("ray")
    import goenv.distributed

    path = tmp_path / "go.agent"
    path.write_bytes(b"the user's file")
    with pytest.raises(goenv.InvalidArgument, match=rf"checkpoint {path}: the file exists; pass overwrite=True"):
        goenv.distributed.train(["placement-inception"], num_workers=1, total_steps=8, checkpoint=path,
                                hidden=16, envs_per_graph=2)
    assert path.read_bytes() == b"the user's file"
    import ray

    assert not ray.is_initialized()  # refused before Ray started


def test_save_gantt_refuses_an_existing_file_unless_overwrite(tmp_path):
    import goenv
    from goenv.render import save_gantt

    env = goenv.make(ENV_ID)
    env.reset(seed=0)
    path = tmp_path / "chart.png"
    path.write_bytes(b"the user's file")
    with pytest.raises(goenv.InvalidArgument, match=rf"chart {path}: the file exists; pass overwrite=True"):
        save_gantt(path, env.graph, env.cluster, env.core.last_result)
    assert path.read_bytes() == b"the user's file"
    save_gantt(path, env.graph, env.cluster, env.core.last_result, overwrite=True)
    assert path.read_bytes()[:4] == b"\x89PNG"


def test_checkpoint_convert_refuses_an_existing_target_unless_overwrite(tmp_path, capsys):
    import goenv
    from goenv.agents import convert

    legacy = __import__("pathlib").Path(__file__).resolve().parent / "data" / "legacy" / \
        "go-placement-2dev-format2.agent"
    target = tmp_path / "new.agent"
    target.write_bytes(b"the user's file")
    with pytest.raises(goenv.InvalidArgument, match=r"the file exists; pass overwrite=True \(--overwrite\)"):
        convert.convert(legacy, target)
    assert convert.main([str(legacy), str(target)]) == 2 and "the file exists" in capsys.readouterr().err
    assert target.read_bytes() == b"the user's file"
    assert convert.main([str(legacy), str(target), "--overwrite"]) == 0
    assert goenv.agents.load(target).algorithm == "go"


def test_graph_save_refuses_an_existing_file_unless_overwrite(tmp_path):
    import goenv

    graph = goenv.datasets.load("random-layered", num_layers=3, width=2)
    path = tmp_path / "g.goenv"
    path.write_bytes(b"the user's file")
    with pytest.raises(goenv.InvalidArgument, match=rf"graph file {path}: the file exists; pass overwrite=True"):
        graph.save(path)
    assert path.read_bytes() == b"the user's file"
    graph.save(path, overwrite=True)
    assert goenv.Graph.load(path).num_nodes == graph.num_nodes


# ---------------------------------------------------------------------------
# The README's Hugging Face GPT-2 numbers, on the transformers the zoo extra pins.

def test_hugging_face_gpt2_imports_one_training_graph_whatever_use_cache():
    """A 2-layer GPT2LMHeadModel (any width): with transformers 5.23.0 (the zoo extra's pin),
    277 ops as a training step with use_cache on or off; forward-only 169 with the cache's ops,
    128 without (transformers 4.57.1 gave 265, and 166 against 118)."""
    import warnings

    transformers = pytest.importorskip("transformers")
    torch = pytest.importorskip("torch")
    import goenv

    config = transformers.GPT2Config(n_layer=2, n_embd=32, n_head=2, vocab_size=64, n_positions=32,
                                     bos_token_id=0, eos_token_id=0)
    ids = torch.randint(0, 64, (2, 8), generator=torch.Generator().manual_seed(0))
    counts = {}
    for training in (True, False):
        for cache in (True, False):
            model = transformers.GPT2LMHeadModel(config)
            model.config.use_cache = cache
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                counts[training, cache] = goenv.datasets.from_torch(model, ids, training=training).num_nodes
            assert model.config.use_cache is cache  # restored
    assert counts[True, True] == counts[True, False]
    assert counts[False, True] > counts[False, False]
    if transformers.__version__ == "5.23.0":
        assert (counts[True, True], counts[False, True], counts[False, False]) == (277, 169, 128)
