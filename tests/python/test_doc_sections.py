"""The generated sections of the docs (experiments/doc_sections.py): each lives in exactly one
page, README.md or docs/**/*.md, and the results scripts find it there by its markers."""

import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
EXPERIMENTS = ROOT / "experiments"
# Every section a results script writes, and the script that writes it.
SECTIONS = {"baselines": "readme_tables.py", "search": "readme_tables.py",
            "library-results": "readme_tables.py", "gpu": "readme_tables.py", "go-results": "go_results.py",
            "pretrained-placer": "pretrain_placer.py", "place-your-model": "place_your_model_section.py",
            "cost-model": "cost_model.py", "labels-bench": "tests/benchmarks/labels_bench.py",
            "ratios": "tests/benchmarks/ratio_bench.py"}


@pytest.fixture
def sections(monkeypatch):
    monkeypatch.syspath_prepend(str(EXPERIMENTS))
    import doc_sections

    return doc_sections


def project(root: Path, pages: dict[str, str]) -> Path:
    for name, text in pages.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(text)
    return root


def marked(name: str, body: str = "old") -> str:
    return f"before\n<!-- {name}:begin -->\n{body}\n<!-- {name}:end -->\nafter\n"


def test_each_scripts_section_is_in_exactly_one_page(sections):
    for name in SECTIONS:
        page = sections.find_section(name)
        assert page.suffix == ".md" and sections.has_section(page.read_text(), name), name


def test_a_section_is_found_in_the_readme_or_any_docs_page(sections, tmp_path):
    root = project(tmp_path, {"README.md": "front door\n", "docs/notes/deep.md": marked("t"),
                              "docs/other.md": marked("u")})
    assert sections.find_section("t", root) == root / "docs/notes/deep.md"
    assert sections.find_section("u", root) == root / "docs/other.md"
    # --readme README.md (the command lines of earlier releases): the page holding the markers.
    assert sections.section_file("t", root / "README.md") == root / "docs/notes/deep.md"
    # Any other file given must hold them itself.
    assert sections.section_file("u", root / "docs/other.md") == root / "docs/other.md"
    with pytest.raises(SystemExit, match=r"--readme .*deep.md: has no <!-- u:begin/end --> markers"):
        sections.section_file("u", root / "docs/notes/deep.md")
    with pytest.raises(SystemExit, match="no such file"):
        sections.section_file("u", root / "docs/missing.md")


def test_a_section_in_no_page_or_in_two_or_unclosed_is_a_clear_error(sections, tmp_path):
    root = project(tmp_path, {"README.md": marked("twice"), "docs/a.md": marked("twice"),
                              "docs/b.md": "x\n<!-- open:begin -->\nno end\n"})
    with pytest.raises(SystemExit, match=r"no page holds <!-- nowhere:begin/end --> markers"):
        sections.find_section("nowhere", root)
    with pytest.raises(SystemExit, match=r"markers are in 2 pages, .*README.md, .*a.md: keep them in one"):
        sections.find_section("twice", root)
    with pytest.raises(SystemExit, match=r"b.md: <!-- open:begin --> has no <!-- open:end --> after it"):
        sections.find_section("open", root)
    with pytest.raises(SystemExit, match="in 2 pages"):  # also through a README.md given on the command line
        sections.section_file("twice", root / "README.md")


def test_write_section_replaces_only_the_body_and_leaves_no_temporary_file(sections, tmp_path):
    page = project(tmp_path, {"docs/p.md": marked("t")}) / "docs/p.md"
    sections.write_section(page, "t", "| a |\n|---|\n| 1 |")
    assert page.read_text() == "before\n<!-- t:begin -->\n| a |\n|---|\n| 1 |\n<!-- t:end -->\nafter\n"
    sections.write_section(page, "t", "")  # an empty body keeps the markers
    assert page.read_text() == "before\n<!-- t:begin -->\n\n<!-- t:end -->\nafter\n"
    assert sorted(p.name for p in page.parent.iterdir()) == ["p.md"]


def test_a_results_script_checks_its_page_before_measuring(tmp_path):
    """labels_bench.py --readme on a page without its markers: refused at once, before any run."""
    page = tmp_path / "notes.md"
    page.write_text("no markers\n")
    done = subprocess.run([sys.executable, str(ROOT / "tests/benchmarks/labels_bench.py"), "--quick",
                           "--readme", str(page)], capture_output=True, text=True, timeout=120)
    assert done.returncode != 0 and "has no <!-- labels-bench:begin/end --> markers" in done.stderr
    assert page.read_text() == "no markers\n" and sorted(p.name for p in tmp_path.iterdir()) == ["notes.md"]
