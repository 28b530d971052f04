"""Gantt charts (goenv.render) and the `goenv` command line (goenv.cli)."""

from __future__ import annotations

import os
import json
import subprocess
import sys

import matplotlib.image
import numpy as np
import pytest

import goenv
from goenv.cli import main
from goenv.render import gantt_figure, gantt_rgb, memory_timeline, save_gantt

ENV_ID = "placement-inception"
PNG_MAGIC = b"\x89PNG\r\n\x1a\n"


@pytest.fixture(scope="module")
def env():
    env = goenv.make(ENV_ID)
    env.reset(seed=0)
    return env


@pytest.fixture(scope="module")
def split_result(env):
    """A schedule over both devices of the default cluster: the expert split."""
    expert = goenv.make(ENV_ID, placement="expert")
    expert.reset(seed=0)
    result = goenv.simulate(env.graph, env.cluster, placement=expert.core.placement)
    assert len(result.transfers["node"]) > 0
    return result


def row_labels(figure) -> list[str]:
    return [label.get_text() for label in figure.axes[0].get_yticklabels()]


def test_gantt_rgb_is_a_colorful_rgb_image(env):
    image = gantt_rgb(env.graph, env.cluster, env.core.last_result, title="default")
    assert image.dtype == np.uint8 and image.ndim == 3 and image.shape[2] == 3
    assert image.shape[0] > 100 and image.shape[1] > 100
    assert len(np.unique(image.reshape(-1, 3), axis=0)) > 10
    assert env.render().shape == image.shape  # GraphEnv.render() draws the same chart


def test_render_before_any_simulation_is_a_clear_error():
    # ResetNeeded, as step() and action_masks() before reset()
    with pytest.raises(goenv.ResetNeeded, match=r"render\(\) called before reset\(\)"):
        goenv.make(ENV_ID).render()


def test_names_are_drawn_as_written_and_an_empty_graph_draws(tmp_path):
    # A "$" in a user's graph or device name is a dollar sign, not matplotlib math (which raised
    # on "$\\frac$" and set "$1 and $2" in italics); a graph of no ops draws empty rows.
    graph = goenv.Graph.from_arrays(np.array([[0], [1]]), flops=[1e9, 1e9], name="resnet $\\frac$ v2")
    cluster = goenv.Cluster.from_json(goenv.clusters.get("1xgpu").to_json().replace('"1xgpu"', '"rack $1"')
                                      .replace('"gpu:0"', '"gpu $a$"'))
    figure = gantt_figure(graph, cluster, goenv.simulate(graph, cluster), title="cost $2")
    figure.canvas.draw()
    assert figure.get_suptitle().startswith("cost \\$2: resnet \\$\\frac\\$ v2 (2 ops) on rack \\$1")
    assert row_labels(figure) == ["gpu \\$a\\$"]
    empty = goenv.Graph.from_arrays(np.zeros((2, 0), int), flops=[])
    save_gantt(tmp_path / "empty.png", empty, goenv.clusters.get("2xgpu-nvlink"),
               goenv.simulate(empty, "2xgpu-nvlink"))
    assert (tmp_path / "empty.png").read_bytes()[:4] == b"\x89PNG"


def test_a_small_peak_gets_the_memory_axis_and_the_legend_says_where_capacity_is():
    # A peak of MBs on a 16 GiB GPU was a flat line at 0 under the capacity's dashes.
    graph = goenv.Graph.from_arrays(np.array([[0], [1]]), flops=[1e9, 1e9], output_bytes=[1e7, 1e7])
    result = goenv.simulate(graph, "1xgpu")
    memory = gantt_figure(graph, goenv.clusters.get("1xgpu"), result).axes[1]
    assert memory.get_ylim()[1] == pytest.approx(1.1 * result.peak_memory[0] / 2**30)
    assert "capacity (above the axis)" in [t.get_text() for t in memory.get_legend().get_texts()]


def test_many_devices_get_a_transfer_row_per_sender_not_per_pair():
    # 16 fully linked GPUs made 16 + 240 rows of 4 px with unreadable labels; now a row per
    # sending device once the pairs outnumber the devices.
    k = 16
    devices = [goenv.Device(f"gpu:{i}", peak_flops=1.57e13, memory_bandwidth=9e11, memory_bytes=16e9) for i in range(k)]
    links = [goenv.Link(s, d, 5e10, 5e-6, channel=s * k + d) for s in range(k) for d in range(k) if s != d]
    cluster = goenv.Cluster("16xgpu", devices, links)
    graph = goenv.datasets.load("transformer-xl-2")
    placement = np.random.default_rng(0).integers(0, k, graph.num_nodes)
    result = goenv.simulate(graph, cluster, placement=placement)
    assert len(np.unique(result.transfers["src"] * k + result.transfers["dst"])) > k  # many pairs in use
    labels = row_labels(gantt_figure(graph, cluster, result))
    senders = np.unique(result.transfers["src"])
    assert labels == [f"gpu:{i}" for i in range(k)] + [f"gpu:{s} → others" for s in senders]


def test_single_device_schedule_has_no_link_rows(env):
    assert row_labels(gantt_figure(env.graph, env.cluster, env.core.last_result)) == ["gpu:0", "gpu:1"]


def test_two_device_schedule_draws_transfers_on_link_rows(env, split_result):
    figure = gantt_figure(env.graph, env.cluster, split_result)
    labels = row_labels(figure)
    assert labels[:2] == ["gpu:0", "gpu:1"]
    assert set(labels[2:]) <= {"gpu:0 → gpu:1", "gpu:1 → gpu:0"} and len(labels) > 2
    # Kernels and transfers are one collection each, not one artist per node.
    assert len(figure.axes[0].collections) == 2
    assert sum(len(c.get_paths()) for c in figure.axes[0].collections) == (
        env.graph.num_nodes + len(split_result.transfers["node"]))


@pytest.mark.parametrize("cluster", ["2xgpu-nvlink", "4xgpu-pcie", "cpu+2xgpu"])
@pytest.mark.parametrize("fused", [False, True])
def test_memory_curves_peak_at_the_simulated_peak_memory(env, cluster, fused):
    cluster = goenv.clusters.get(cluster)
    rng = np.random.default_rng(7)
    n = env.graph.num_nodes
    result = goenv.simulate(env.graph, cluster, placement=rng.integers(0, cluster.num_devices, n),
                            fusion=rng.integers(0, 3, n) if fused else None)
    curves = memory_timeline(env.graph, result, cluster.num_devices)
    np.testing.assert_allclose([live.max() for _, live in curves], result.peak_memory, rtol=1e-12)
    for times, live in curves:
        assert len(times) == len(live) and np.all(np.diff(times) >= 0) and times[-1] >= result.runtime * (1 - 1e-12)


def test_large_graph_renders_quickly():
    n = 20_000
    rng = np.random.default_rng(0)
    sources = np.concatenate([np.arange(n - 1), rng.integers(0, n - 100, n)])
    targets = np.concatenate([np.arange(1, n), sources[n - 1:] + rng.integers(1, 100, n)])
    graph = goenv.Graph.from_arrays(np.stack([sources, targets]), flops=rng.uniform(1e6, 1e9, n),
                                    output_bytes=rng.integers(1_000, 1_000_000, n), op_type=list(rng.integers(0, 40, n)))
    cluster = goenv.clusters.get("4xgpu-nvlink")
    result = goenv.simulate(graph, cluster, placement=rng.integers(0, 4, n))
    assert gantt_rgb(graph, cluster, result).shape[2] == 3


def test_save_gantt_writes_a_png_atomically(env, split_result, tmp_path):
    path = tmp_path / "chart.png"
    path.write_bytes(b"old")
    assert save_gantt(path, env.graph, env.cluster, split_result, overwrite=True) == str(path)
    assert path.read_bytes()[:8] == PNG_MAGIC
    assert matplotlib.image.imread(path).shape[2] in (3, 4)
    assert os.listdir(tmp_path) == ["chart.png"]  # no temporary file left behind

    # A failed write leaves the old file as it was and no temporary file.
    bad = tmp_path / "chart.unknown-format"
    bad.write_bytes(b"old")
    with pytest.raises(ValueError):
        save_gantt(bad, env.graph, env.cluster, split_result, overwrite=True)
    assert bad.read_bytes() == b"old"
    assert sorted(os.listdir(tmp_path)) == ["chart.png", "chart.unknown-format"]


def test_cli_list(capsys):
    assert main(["list"]) == 0
    out = capsys.readouterr().out
    assert "default cluster" in out
    assert ENV_ID in out and "1121" in out and "2xgpu-nvlink" in out


def test_cli_info(capsys):
    assert main(["info", ENV_ID]) == 0
    out = capsys.readouterr().out
    for text in ("Inception", "nodes", "1121", "2xgpu-nvlink", "gpu:1", "runtime", "lower bound", " ms"):
        assert text in out


@pytest.mark.parametrize("method", ["current", "expert", "heft"])
def test_cli_render_writes_a_png(method, tmp_path, capsys):
    path = tmp_path / "sub" / "chart.png"
    assert main(["render", ENV_ID, "--method", method, "-o", str(path)]) == 0
    assert path.read_bytes()[:8] == PNG_MAGIC
    assert f"wrote {path}" in capsys.readouterr().out


def test_cli_outputs_replace_an_existing_file_only_with_overwrite(tmp_path, capsys):
    """render -o and train --save/--decision refuse a file that exists (before any work, the
    file untouched) unless --overwrite; render's default out/ID-METHOD.png is goenv's own name."""
    kept = tmp_path / "mine.png"
    kept.write_bytes(b"the user's picture")
    assert main(["render", ENV_ID, "--method", "expert", "-o", str(kept)]) == 2
    assert "exists; pass --overwrite" in capsys.readouterr().err and kept.read_bytes() == b"the user's picture"
    assert main(["render", ENV_ID, "--method", "expert", "-o", str(kept), "--overwrite"]) == 0
    assert kept.read_bytes()[:8] == PNG_MAGIC
    for flag in ("--save", "--decision"):
        checkpoint = tmp_path / f"old{flag}"
        checkpoint.write_bytes(b"a week of training")
        assert main(["train", ENV_ID, "--steps", "1000000", flag, str(checkpoint)]) == 2  # refused before training
        assert "exists; pass --overwrite" in capsys.readouterr().err
        assert checkpoint.read_bytes() == b"a week of training"


def test_cli_demo_compares_placements_and_charts_the_best(tmp_path, capsys):
    assert main(["demo", "--out", str(tmp_path), "--train-steps", "0"]) == 0
    out = capsys.readouterr().out
    for method in ("single", "expert", "round-robin", "metis", "m-etf", "heft", "local-search"):
        assert f"\n{method} " in out
    assert "speedup" in out and "/ lower bound" in out and "sim calls" in out
    chart = tmp_path / "demo_gantt.png"
    assert chart.read_bytes()[:8] == PNG_MAGIC
    assert str(chart) in out


def test_cli_baselines_table_and_json(capsys):
    assert main(["baselines", "scheduling-inception", "--methods", "fifo,critical-path", "--budget", "10"]) == 0
    captured = capsys.readouterr()
    out = captured.out
    assert "critical-path" in out and "fifo" in out and "lower bound" in out
    assert "baselines on" not in captured.err  # no progress bar drawn into a redirected stderr
    assert main(["baselines", ENV_ID, "--methods", "heft", "--json"]) == 0
    parsed = json.loads(capsys.readouterr().out)
    assert parsed["rows"][0]["method"] == "heft" and parsed["rows"][0]["runtime_ms"] > parsed["lower_bound_ms"]
    assert main(["baselines", ENV_ID, "--methods", "nosuchmethod"]) == 2


@pytest.mark.parametrize("argv", [["info", "nosuchtask-inception"], ["render", "placement-nosuchgraph"],
                                  ["info", ENV_ID, "--cluster", "nosuchcluster"]])
def test_cli_unknown_names_exit_2_with_one_line(argv, capsys):
    assert main(argv) == 2
    captured = capsys.readouterr()
    lines = captured.err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("goenv: error: unknown ")
    assert "nosuch" in lines[0]  # names what was not found
    assert "Traceback" not in captured.err and ".cc:" not in lines[0]


@pytest.mark.parametrize("argv, message", [
    (["baselines", ENV_ID, "--methods", "random-search", "--seed", "-1"], "--seed must be an integer in [0, 2**64)"),
    (["baselines", ENV_ID, "--budget", "99999999999999999999"], "--budget must be an integer in [0, 2**63)"),
    (["info", ENV_ID, "--budget", "-5"], "--budget must be an integer in [0, 2**63)"),
    (["baselines", ENV_ID, "--methods", ",,"], "--methods: no name given"),
    (["train", ENV_ID, "--steps", "0"], "--steps must be a positive integer, got 0"),
    (["train", ENV_ID, "--steps", "64", "--samples", "0"], "--samples must be a positive integer, got 0"),
    (["render", ENV_ID, "--method", "heft", "-o", "chart.txt"], "the image format comes from the file's suffix"),
    (["render", ENV_ID, "--method", "heft", "-o", ""], "-o: an empty path"),
    (["demo", "--train-steps", "-5"], "--train-steps must be >= 0"),
    (["baselines", "scheduling-transformer-xl-2", "--task", "fusion"], "is already a scheduling env"),
    (["train", ENV_ID, "--teacher", "heft"], "--teacher heft is what --imitate copies"),
    (["dataset", "generate", "random-layered", "--count", "0", "--out", "ds"], "--count must be an integer >= 1"),
    (["dataset", "label", "transfer:train", "--out", "labels", "-k", "0"], "--decisions-per-graph must be an integer"),
    (["train", ENV_ID, "--steps", "1", "--save", "no/such/folder/a.agent"], "folder"),
])
def test_cli_bad_numbers_and_formats_exit_2_with_one_line_before_any_work(argv, message, tmp_path, monkeypatch,
                                                                          capsys):
    monkeypatch.chdir(tmp_path)
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert err.startswith("goenv: error: ") and message in err and "Traceback" not in err
    assert not list(tmp_path.iterdir())  # nothing trained, solved or written


def test_bench_refuses_its_outputs_before_measuring(tmp_path, capsys):
    """A FIFO, a folder or a README without the markers: one line, before minutes of measuring."""
    fifo, folder, readme = tmp_path / "f.json", tmp_path / "adir", tmp_path / "notes.md"
    os.mkfifo(fifo)
    folder.mkdir()
    readme.write_text("no markers\n")
    for argv, message in ((["--json", str(fifo)], "a FIFO, not a regular file"),
                          (["--markdown", str(folder)], "--markdown"),
                          (["--readme", str(readme)], f"--readme {readme}: has no <!-- ratios:begin/end --> markers"),
                          (["--readme", str(tmp_path / "missing.md")], "no such file")):
        done = subprocess.run([sys.executable, "-m", "goenv", "bench", "--quick", *argv], capture_output=True,
                              text=True, timeout=60)
        assert done.returncode == 2 and message in done.stderr and "Traceback" not in done.stderr, done.stderr
    assert not list(folder.iterdir())
    goenv_demo_out = tmp_path / "afile"
    goenv_demo_out.write_text("mine")
    assert main(["demo", "--out", str(goenv_demo_out)]) == 2
    assert "not a folder" in capsys.readouterr().err and goenv_demo_out.read_text() == "mine"


def test_python_dash_m_goenv_reports_errors_without_traceback():
    done = subprocess.run([sys.executable, "-m", "goenv", "info", "nosuchtask-inception"],
                          capture_output=True, text=True)
    assert done.returncode == 2
    assert done.stderr.startswith("goenv: error: unknown ") and "Traceback" not in done.stderr


def test_cli_train_reports_and_saves(tmp_path, capsys):
    pytest.importorskip("torch")
    checkpoint = tmp_path / "agent.ckpt"
    assert main(["train", "placement-transformer-xl-2", "--agent", "ppo", "--steps", "16", "--save", str(checkpoint),
                 "--log-dir", str(tmp_path / "log")]) == 0
    out = capsys.readouterr().out
    assert "ppo after 16 steps on placement-transformer-xl-2" in out
    for label in ("default", "best heuristic", "lower bound", "ppo (", "result:"):
        assert label in out, out
    assert checkpoint.exists() and (tmp_path / "log" / "metrics.csv").exists()


def test_cli_train_ctrl_c_stops_training_and_keeps_the_agent(tmp_path, capsys, python_sigint):
    """The first Ctrl-C ends training after the update under way: the agent is saved and the
    result reported as after a full run; a second one interrupts at once (status 130)."""
    pytest.importorskip("torch")
    import signal
    import threading
    import time

    def press_ctrl_c(log: str) -> None:
        deadline = time.monotonic() + 120
        while not (os.path.exists(log) and os.path.getsize(log) > 0) and time.monotonic() < deadline:
            time.sleep(0.05)  # the first update's row is written: training is under way
        os.kill(os.getpid(), signal.SIGINT)

    checkpoint, log = tmp_path / "agent.ckpt", tmp_path / "log"
    presser = threading.Thread(target=press_ctrl_c, args=(str(log / "metrics.csv"),))
    presser.start()
    try:
        status = main(["train", "placement-transformer-xl-2", "--agent", "ppo", "--steps", "1000000",
                       "--option", "hidden=8", "--save", str(checkpoint), "--log-dir", str(log)])
    finally:
        presser.join()
    captured = capsys.readouterr()
    assert status == 0, captured.err
    assert "training stopped by Ctrl-C after" in captured.out and "of 1000000 steps" in captured.out
    assert "result:" in captured.out and "Ctrl-C again to stop at once" in captured.err
    assert goenv.agents.load(str(checkpoint)).steps_trained > 0
    assert signal.getsignal(signal.SIGINT) is signal.default_int_handler  # Ctrl-C means KeyboardInterrupt again

    from goenv.cli.train import StopOnInterrupt

    with StopOnInterrupt() as stop:  # the second Ctrl-C: at once
        signal.getsignal(signal.SIGINT)(signal.SIGINT, None)
        assert stop.requested and stop.go_on({}) is False
        with pytest.raises(KeyboardInterrupt):
            signal.getsignal(signal.SIGINT)(signal.SIGINT, None)

    # Stopped at once (the second Ctrl-C): status 130, and what was trained is saved all the same.
    checkpoint.unlink()
    real_train = goenv.agents.Agent.train

    def interrupted_train(self, *args, **kwargs):
        kwargs["callback"] = lambda metrics: (_ for _ in ()).throw(KeyboardInterrupt)
        return real_train(self, *args, **kwargs)

    import unittest.mock

    with unittest.mock.patch.object(goenv.agents.Agent, "train", interrupted_train):
        assert main(["train", "placement-transformer-xl-2", "--agent", "ppo", "--steps", "1000000",
                     "--option", "hidden=8", "--save", str(checkpoint)]) == 130
    assert "goenv: agent saved to" in capsys.readouterr().err
    assert goenv.agents.load(str(checkpoint)).steps_trained > 0
    assert main(["train", "placement-transformer-xl-2", "--steps", "1", "--save", str(tmp_path / "no" / "a.agent")]) == 2
    assert "folder" in capsys.readouterr().err and not (tmp_path / "no").exists()  # refused before training


def test_cli_train_never_returns_a_decision_worse_than_the_default(tmp_path, capsys):
    """An untrained (2-step) policy's greedy placement is worse than the default here: the
    result and the saved decision are the default's."""
    pytest.importorskip("torch")
    decision = tmp_path / "decision"  # written as given (np.savez would write decision.npz)
    assert main(["train", "placement-transformer-xl-2", "--agent", "ppo", "--steps", "2", "--option", "hidden=8",
                 "--option", "envs_per_graph=2", "--decision", str(decision)]) == 0
    out = capsys.readouterr().out
    env = goenv.make("placement-transformer-xl-2")
    _, info = env.reset(seed=0)
    saved = np.load(decision)
    assert saved["runtime"] <= info["initial_runtime"]
    runtime = goenv.simulate(env.graph, env.cluster, placement=saved["placement"]).runtime
    assert runtime == pytest.approx(float(saved["runtime"]))
    assert "result:" in out
    assert main(["train", "placement-transformer-xl-2", "--option", "hidden=big"]) == 2
    assert main(["train", "placement-transformer-xl-2", "--option", "no_such=1"]) == 2
    assert "KEY one of" in capsys.readouterr().err


def test_cli_train_imitate_is_never_worse_than_the_teacher(tmp_path, capsys):
    pytest.importorskip("torch")
    decision = tmp_path / "decision.npz"
    assert main(["train", "placement-transformer-xl-2", "--imitate", "20", "--steps", "32", "--samples", "4",
                 "--option", "envs_per_graph=16", "--decision", str(decision)]) == 0
    out = capsys.readouterr().out
    assert "imitation of best-heuristic" in out
    # The result is the best of training's decisions and the search's 4 calls from them.
    assert any(f"go ({how})" in out for how in ("best found in training", "policy-guided search, 4 calls",
                                                 "greedy"))
    env = goenv.make("placement-transformer-xl-2")
    teacher = goenv.baselines.solve(env, "best-heuristic")["runtime"]
    assert float(np.load(decision)["runtime"]) <= teacher
    assert main(["train", "placement-transformer-xl-2", "--imitate", "5", "--teacher", "fastest"]) == 2
    assert "unknown teacher 'fastest'" in capsys.readouterr().err
    assert main(["train", "placement-transformer-xl-2", "--imitate", "5", "--workers", "-1"]) == 2  # --imitate with --workers N >= 1: test_distributed.py


def test_cli_train_help_lists_the_agent_options(capsys):
    pytest.importorskip("torch")
    with pytest.raises(SystemExit):
        main(["train", "--help"])
    out = capsys.readouterr().out
    for option in ("learning_rate", "hidden", "entropy_coef", "--option KEY=VALUE"):
        assert option in out


def test_goenv_alone_shows_help_and_demo_takes_no_task(capsys):
    assert main([]) == 0
    out = capsys.readouterr().out
    assert "usage: goenv" in out and "demo" in out and "train" in out
    with pytest.raises(SystemExit) as exit_info:  # argparse: unknown option, status 2
        main(["demo", "--task", "fusion"])
    assert exit_info.value.code == 2
    assert "unrecognized arguments: --task" in capsys.readouterr().err


def test_demo_agent_starts_from_the_best_heuristic_and_beats_the_default(tmp_path, capsys):
    pytest.importorskip("torch")
    assert main(["demo", "--out", str(tmp_path), "--train-steps", "16"]) == 0
    line = next(l for l in capsys.readouterr().out.splitlines() if l.startswith("PPO"))
    if "skipped" in line:
        pytest.skip(line)
    assert "imitation steps toward best-heuristic" in line
    speedup = float(line.split("speedup ")[1].split("x")[0])
    assert speedup > 1.0, line  # never worse than its teacher, which beats the default on this graph


def test_ctrl_c_is_one_line_and_status_130(monkeypatch, capsys):
    """Ctrl-C during any command: "goenv: interrupted" and status 130, not a traceback."""
    import argparse

    from goenv import cli

    def interrupted(args):
        raise KeyboardInterrupt

    class Parser:
        def parse_args(self, argv):
            return argparse.Namespace(command="info", run=interrupted)

    monkeypatch.setattr(cli, "_parser", Parser)
    assert cli.main(["info"]) == 130
    assert capsys.readouterr().err == "goenv: interrupted\n"
