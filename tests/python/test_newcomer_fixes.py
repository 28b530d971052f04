"""What a newcomer's first walk through goenv tripped over: list-valued CLI flags, files
replaced without overwrite=True, help() on the agents, and missing extras named."""

from __future__ import annotations

import json

import pytest

from goenv.cli import main, split_names

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
