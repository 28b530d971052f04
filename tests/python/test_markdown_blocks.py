"""The docs tests' collector (markdown_blocks) and their checks, on the sample pages in
data/docs_samples/: a failing block fails naming its page and line, a marked block is
skipped with its reason, two pages that write the same path do not meet, and a command
the tests cannot run or a Makefile target that does not exist is a failure."""

from __future__ import annotations

from pathlib import Path

import pytest

import markdown_blocks
from markdown_blocks import BUDGET, ROOT
from test_docs_cli import check_block
from test_docs_pages import check_page

SAMPLES = "tests/python/data/docs_samples"


def sample(name: str, languages=markdown_blocks.PYTHON_LANGUAGES) -> list[markdown_blocks.Block]:
    return markdown_blocks.page_blocks(f"{SAMPLES}/{name}", languages)


def shell_block(line: int) -> markdown_blocks.Block:
    return next(b for b in sample("commands.md", markdown_blocks.SHELL_LANGUAGES) if b.line == line)


def test_blocks_are_found_with_their_lines_languages_and_marks():
    text = ("# A\n```python\nx = 1\n```\n<!-- not-tested: needs a cluster -->\n```python\nray.init('x')\n```\n"
            "````bash\nls\n```\n````\n- item\n\n    ```py\n    y = 2\n    ```\n")
    blocks = markdown_blocks.fenced_blocks(text, "page.md")
    assert [(b.line, b.language, b.code, b.not_tested) for b in blocks] == [
        (3, "python", "x = 1", None), (7, "python", "ray.init('x')", "needs a cluster"),
        (10, "bash", "ls\n```", None), (16, "py", "y = 2", None)]
    assert [b.where for b in sample("failing.md")] == [f"{SAMPLES}/failing.md:4", f"{SAMPLES}/failing.md:10"]


def test_pages_are_the_readme_and_the_site_without_notes_unless_they_have_python(tmp_path):
    (tmp_path / "docs" / "notes").mkdir(parents=True)
    (tmp_path / "README.md").write_text("# goenv\n")
    (tmp_path / "docs" / "index.md").write_text("# Home\n")
    (tmp_path / "docs" / "notes" / "history.md").write_text("```bash\npython tests/benchmarks/x.py\n```\n")
    (tmp_path / "docs" / "notes" / "recipe.md").write_text("```python\nx = 1\n```\n")
    assert markdown_blocks.pages(tmp_path) == ["README.md", "docs/index.md", "docs/notes/recipe.md"]


def test_budgets_are_scaled_in_code_and_in_command_lines():
    code = "agent.train(env, 20_000); a.train([e], total_steps=512, seed=0); optimize(env, samples=16)"
    assert markdown_blocks.scaled(code) == (f"agent.train(env, {BUDGET}); a.train([e], total_steps={BUDGET}, seed=0); "
                                            "optimize(env, samples=16)")
    argv = "train x --steps 2000 --budget=1000 --count 100 --total-steps 20_000 --seed 7".split()
    assert markdown_blocks.scaled_argv(argv) == ["train", "x", "--steps", str(BUDGET), f"--budget={BUDGET}", "--count",
                                                 "100", "--total-steps", str(BUDGET), "--seed", "7"]


def test_a_failing_block_fails_naming_its_page_and_line(tmp_path):
    with pytest.raises(AssertionError, match=f"{SAMPLES}/failing.md:10: the python block failed") as failure:
        check_page(f"{SAMPLES}/failing.md", sample("failing.md"), tmp_path)
    # the traceback shows the page's own line of the raise
    assert f'{ROOT / SAMPLES / "failing.md"}", line 11' in str(failure.value)


def test_a_marked_block_is_skipped_with_its_reason(tmp_path):
    with pytest.raises(pytest.skip.Exception, match="needs a cluster at a placeholder address"):
        check_page(f"{SAMPLES}/marked.md", sample("marked.md"), tmp_path)
    with pytest.raises(pytest.skip.Exception, match="joins a cluster at a placeholder address"):
        check_block(shell_block(30), tmp_path)


def test_two_pages_writing_the_same_path_do_not_meet(tmp_path_factory):
    readme = (ROOT / "README.md").read_text()
    for name in ("writes_a.md", "writes_b.md"):
        directory = tmp_path_factory.mktemp(name)  # what each page's test gets as its tmp_path
        check_page(f"{SAMPLES}/{name}", sample(name), directory)
        assert (directory / "data" / "out.txt").read_text() == f"page {name[-4].upper()}"
        assert (directory / "README.md").read_text().endswith(f"page {name[-4].upper()} was here")
    assert (ROOT / "README.md").read_text() == readme


def test_shell_blocks_split_into_steps():
    steps = markdown_blocks.shell_steps(shell_block(4))
    assert [(s.where.rsplit(":", 1)[1], s.kind, s.argv[:3]) for s in steps] == [
        ("4", "run", ("goenv", "dataset", "generate")), ("6", "run", ("goenv", "dataset", "info")),
        ("6", "run", ("goenv", "dataset", "verify"))]
    assert [(s.kind, s.argv) for s in markdown_blocks.shell_steps(shell_block(11))] == [
        ("make", ("make", "test")), ("setup", ("pip", "install", ".[onnx,sb3]")), ("setup", (".", ".venv/bin/activate"))]
    with pytest.raises(markdown_blocks.UnknownCommand, match=f"{SAMPLES}/commands.md:25: the docs tests do not know"):
        markdown_blocks.shell_steps(shell_block(25))
    for text in ("sudo rm -rf build", "pip uninstall goenv", "export GOENV_X=1", "ls | head", "goenv list > out.txt"):
        with pytest.raises(markdown_blocks.UnknownCommand, match="page.md:1"):
            markdown_blocks.shell_steps(markdown_blocks.Block("page.md", 1, "bash", text, None))
    kinds = [(s.kind, s.argv[0]) for text in (".venv/bin/python examples/quickstart.py", ".venv/bin/goenv list",
                                             "python3 -m goenv list", ".venv/bin/pip install -e .",
                                             "source .venv/bin/activate", "GOENV_THREADS=2 goenv list",
                                             "python experiments/readme_tables.py gpu")
             for s in markdown_blocks.shell_steps(markdown_blocks.Block("page.md", 1, "console", "$ " + text, None))]
    assert kinds == [("run", "python"), ("run", "goenv"), ("run", "goenv"), ("setup", ".venv/bin/pip"),
                     ("setup", "source"), ("run", "goenv"), ("run", "python")]


def test_commands_run_and_a_failing_one_or_an_unknown_target_fails(tmp_path):
    check_block(shell_block(4), tmp_path / "ok")
    assert (tmp_path / "ok" / "data" / "layered").is_dir()
    check_block(shell_block(11), tmp_path / "setup")
    with pytest.raises(AssertionError, match=f"{SAMPLES}/commands.md:17: 'goenv info no-such-env' exited with"):
        check_block(shell_block(17), tmp_path / "failing")
    with pytest.raises(AssertionError, match="no Makefile target no-such-target"):
        check_block(shell_block(21), tmp_path / "make")
    with pytest.raises(pytest.fail.Exception, match="commands.md:25"):
        check_block(shell_block(25), tmp_path / "loop")


def test_commands_that_need_a_library_are_recognised():
    assert markdown_blocks.needed_library("python examples/sb3_ppo.py --env x") == "stable_baselines3"
    assert markdown_blocks.needed_library("goenv dataset label transfer:train --out l --workers 2") == "ray"
    assert markdown_blocks.needed_library("goenv dataset zoo --out z --workers 2") is None
    assert markdown_blocks.needed_library("goenv dataset zoo --out z --workers 8 --ray") == "ray"
