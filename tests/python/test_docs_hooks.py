"""The site's build hooks (docs/hooks/): the reference tables they generate say what the code
does, the C++ headers page shows the headers, and the docstring lists keep every line."""

from __future__ import annotations

import importlib.util
import inspect
import re
from pathlib import Path

import pytest

import goenv
import goenv.agents

HOOKS = Path(__file__).resolve().parents[2] / "docs" / "hooks"


def hook(name: str):
    spec = importlib.util.spec_from_file_location(f"docs_hook_{name}", HOOKS / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="module")
def tables():
    return hook("reference_tables")


def first_column(table: str) -> list[str]:
    rows = [line for line in table.splitlines()[2:] if line.startswith("|")]
    return [re.sub(r"[`\\]", "", row.split("|")[1]).strip() for row in rows]


def test_observation_table_has_every_key_with_symbolic_shapes(tables):
    table = tables.observation_table()
    keys = {cell.split(" (")[0] for cell in first_column(table)}
    assert keys == set(goenv.make("placement-transformer-xl-2").observation_space.spaces)
    # N, E, D and D + k replace the probe graphs' sizes; the action mask differs per task.
    assert "`(N, 64)`" in table and "`(2, E)`" in table and "`(D, 13)`" in table and "`(N, D + 8)`" in table
    assert table.count("action_mask") == len(goenv._core.task_names())


def test_action_table_is_one_row_per_task_with_its_baselines(tables):
    table = tables.action_table()
    assert first_column(table) == list(goenv._core.task_names())
    assert "`MultiDiscrete([D] * N)`" in table and "heft" in table.splitlines()[4]


def test_info_table_has_the_keys_of_a_real_step_and_the_rejected_ones(tables):
    env = goenv.make("placement-transformer-xl-2")
    env.reset(seed=0)
    keys = set(env.step(env.action_space.sample())[4])
    rows = dict(zip(first_column(tables.info_table()), tables.info_table().splitlines()[2:]))
    assert keys <= set(rows) and "rejected_runtime" in rows
    assert "only after a rejected decision" in rows["rejected_runtime"] and "always" in rows["runtime"]


def test_env_options_table_lists_every_option_with_its_default_and_meaning(tables):
    table = tables.env_options_table()
    assert first_column(table) == ["cluster", *goenv.GraphEnv.OPTIONS]
    rows = dict(zip(first_column(table), table.splitlines()[2:]))
    assert "`1`" in rows["horizon"] and "whole-graph decisions per episode" in rows["horizon"]
    assert all(row.rstrip(" |").split("|")[-1].strip() for row in rows.values()), "an option without a meaning"


def test_registry_tables_list_every_registered_name(tables):
    assert first_column(tables.graph_families_table()) == goenv.datasets.list()
    assert first_column(tables.graph_parameters_table()) == goenv.datasets.list()
    assert first_column(tables.clusters_table()) == goenv.clusters.list()
    assert first_column(tables.baselines_table()) == goenv.baselines.list()
    assert first_column(tables.agent_options_table()) == [name for name, *_ in goenv.agents.options()]
    assert first_column(tables.env_ids_table())[-1] == "all"


def test_a_page_marker_is_replaced_and_an_unknown_one_fails_the_build(tables):
    class Page:
        class file:
            src_path = "page.md"

    text = tables.on_page_markdown("before\n<!-- table: baselines -->\nafter\n", Page)
    assert text.startswith("before\n| baseline |") and text.endswith("after\n") and "`heft`" in text
    with pytest.raises(KeyError, match="page.md: no generated table 'nope'"):
        tables.on_page_markdown("<!-- table: nope -->\n", Page)


def test_cpp_header_marker_shows_the_opening_comment_and_every_declaration_line():
    headers = hook("cpp_headers")
    text = headers.on_page_markdown("<!-- cpp-header: core/simulator.h -->\n")
    assert text.startswith("### `core/simulator.h`") and "- A device runs one kernel at a time" in text
    source = (HOOKS.parents[1] / "core" / "simulator.h").read_text()
    declaration = next(line for line in source.splitlines() if line.startswith("SimulationResult simulate("))
    assert "    " + declaration in text
    with pytest.raises(FileNotFoundError, match="core/nope.h"):
        headers.on_page_markdown("<!-- cpp-header: core/nope.h -->\n")


def test_docstring_argument_lines_become_a_list_and_keep_every_word():
    pytest.importorskip("griffe")
    docstrings = hook("griffe_docstrings")
    original = inspect.cleandoc(goenv.make_vec.__doc__)
    shown = docstrings.listed(original)
    assert "- `num_envs`: B;" in shown and "- `pad_to`: (max_nodes, max_edges)" in shown
    words = lambda text: re.sub(r"`|^- ", "", text, flags=re.MULTILINE).split()  # noqa: E731
    assert words(shown) == words(original)
    assert docstrings.escaped('"<task>-<graph>" and `a<b`') == '"&lt;task>-&lt;graph>" and `a<b`'
