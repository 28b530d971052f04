"""The code blocks of README.md and the site's pages, as the docs tests run them.

- pages(): README.md and every docs/**/*.md; a page under docs/notes/ only when it has
  ```python blocks (notes record measurements; their commands are not meant to be rerun).
- fenced_blocks(): every fenced block with its page, the line of its first code line and
  the `<!-- not-tested: reason -->` mark on the line above it, if any.
- Budgets are scaled down here and only here (the pages show the real ones): the number
  given to a keyword in SCALED_KEYWORDS (`total_steps=20_000`, `--total-steps 20000`) and
  the step count of `.train(env, 256)` become at most BUDGET.
- page_script(): one script that runs a page's python blocks in order in one namespace
  (a later block uses an earlier one's names), each compiled with the page's own path and
  line numbers, so a traceback names the page and line.
- shell_steps(): the commands of a console/bash/sh block, each classified as one the
  test runs (goenv, python examples/... or experiments/..., .venv/bin/...), a `make` target
  to check, or a setup step (pip install, apt-get, git clone, venv) that is only recognised.
- workspace(): a temporary copy of what the commands read and write (examples/, experiments/,
  the benchmark scripts, the pages and docs/results/), so a script that rewrites its page's
  section or a results file changes the copy, never the repository.
"""

from __future__ import annotations

import dataclasses
import re
import shlex
import shutil
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
BUDGET = 32
SCALED_KEYWORDS = ("total_steps", "total_timesteps", "steps", "budget", "local_search_budget", "imitation_steps")
NOT_TESTED = re.compile(r"<!--\s*not-tested:\s*(.+?)\s*-->")
PYTHON_LANGUAGES = ("python", "py")
SHELL_LANGUAGES = ("console", "bash", "sh", "shell")
FENCE = re.compile(r"^(?P<indent>\s*)(?P<fence>`{3,}|~{3,})\s*\{?\s*\.?(?P<language>[\w+-]*)")
# The library a command needs, recognised by a pattern; without the library it is skipped. Labelling
# and training spread over --workers on Ray (the zoo's workers are plain child processes).
COMMAND_LIBRARIES = {r"\bsb3_": "stable_baselines3", r"\brllib": "ray", r"--address\b|--ray\b": "ray",
                     r"\b(?:label|train)\b.*--workers": "ray"}


@dataclasses.dataclass(frozen=True)
class Block:
    page: str  # path relative to the repository root
    line: int  # the page's line of the block's first code line
    language: str
    code: str
    not_tested: str | None  # the reason, when marked

    @property
    def where(self) -> str:
        return f"{self.page}:{self.line}"


def fenced_blocks(text: str, page: str) -> list[Block]:
    """Every fenced block of a markdown text; indented fences (admonitions, tabs) are dedented."""
    blocks, fence, previous = [], None, ""
    for number, line in enumerate(text.splitlines(), start=1):
        if fence is not None:
            closing = FENCE.match(line)
            if closing and closing["fence"][0] == fence["marker"][0] and len(closing["fence"]) >= len(fence["marker"]) \
                    and not line.strip().strip(fence["marker"][0]):
                blocks.append(Block(page, fence["line"], fence["language"], "\n".join(fence["lines"]), fence["mark"]))
                fence, previous = None, line
            else:
                indent = fence["indent"]
                fence["lines"].append(line[indent:] if line[:indent].strip() == "" else line)
            continue
        opening = FENCE.match(line)
        if opening:
            marked = NOT_TESTED.search(previous)
            fence = {"line": number + 1, "marker": opening["fence"], "indent": len(opening["indent"]),
                     "language": opening["language"].lower(), "lines": [], "mark": marked.group(1) if marked else None}
        elif line.strip():
            previous = line
    return blocks


def has_python(path: Path) -> bool:
    return any(block.language in PYTHON_LANGUAGES for block in fenced_blocks(path.read_text(), str(path)))


def pages(root: Path = ROOT) -> list[str]:
    """README.md and the site's pages, relative to root; notes only when they hold python blocks."""
    found = [root / "README.md"] if (root / "README.md").exists() else []
    for path in sorted((root / "docs").rglob("*.md")):
        if "notes" in path.relative_to(root / "docs").parts[:-1] and not has_python(path):
            continue
        found.append(path)
    return [str(path.relative_to(root)) for path in found]


def page_blocks(page: str, language: str | tuple[str, ...], root: Path = ROOT) -> list[Block]:
    languages = (language,) if isinstance(language, str) else language
    return [block for block in fenced_blocks((root / page).read_text(), page) if block.language in languages]


def _smaller(match: re.Match) -> str:
    return f"{match.group(1)}{min(int(match.group(2).replace('_', '')), BUDGET)}"


def scaled(code: str) -> str:
    """The same code with every training budget at most BUDGET."""
    keywords = "|".join(SCALED_KEYWORDS)
    code = re.sub(rf"(\b(?:{keywords})\s*=\s*)(\d[\d_]*)\b", _smaller, code)
    return re.sub(r"(\.train\(\s*[\w\"'\[\], -]+?,\s*)(\d[\d_]*)(?=\s*[,)])", _smaller, code)


def scaled_argv(argv: list[str]) -> list[str]:
    """The same command line with every budget flag (--steps 2000, --budget=1000) at most BUDGET."""
    flags = {"--" + keyword.replace("_", "-") for keyword in SCALED_KEYWORDS}
    out = []
    for i, word in enumerate(argv):
        name, equals, value = word.partition("=")
        if equals and name in flags and re.fullmatch(r"\d[\d_]*", value):
            word = f"{name}={min(int(value.replace('_', '')), BUDGET)}"
        elif i > 0 and argv[i - 1] in flags and re.fullmatch(r"\d[\d_]*", word):
            word = str(min(int(word.replace("_", "")), BUDGET))
        out.append(word)
    return out


def page_script(blocks: list[Block], root: Path = ROOT) -> str:
    """One script that runs the blocks in order in one namespace. Before each block it writes
    `running PAGE:LINE` to stderr, so a failure is traced to its block."""
    parts = [(str(root / block.page), block.where, block.line, block.code) for block in blocks]
    return ("import sys\n"
            "namespace = {'__name__': '__main__'}\n"
            f"for path, where, line, code in {parts!r}:\n"
            "    print('running ' + where, file=sys.stderr, flush=True)\n"
            "    exec(compile('\\n' * (line - 1) + code, path, 'exec'), namespace)\n")


def failing_block(stderr: str) -> str | None:
    """PAGE:LINE of the block a page_script was running when it stopped."""
    started = re.findall(r"^running (\S+:\d+)$", stderr, flags=re.MULTILINE)
    return started[-1] if started else None


@dataclasses.dataclass(frozen=True)
class Step:
    """One command of a shell block. kind: 'run' (argv is run), 'make' (argv[1:] are targets to
    check) or 'setup' (installs or builds; recognised, not run)."""
    where: str
    text: str
    kind: str
    argv: tuple[str, ...]
    env: tuple[tuple[str, str], ...] = ()


class UnknownCommand(ValueError):
    pass


# Installs and builds a reader runs once (recognised, not run), by their first words.
SETUP_COMMANDS = (("pip", "install"), ("pip3", "install"), ("apt-get",), ("sudo", "apt-get"), ("git", "clone"),
                  ("cd",), (".",), ("source",), ("python", "-m", "venv"), ("python3", "-m", "venv"),
                  ("python", "-m", "build"), ("python", "-m", "pip", "install"), ("python3", "-m", "pip", "install"))
RUNNABLE_SCRIPTS = ("examples/", "experiments/", "tests/benchmarks/")


def _classify(where: str, text: str, words: list[str]) -> Step:
    env = []
    while words and re.fullmatch(r"[A-Z_][A-Z0-9_]*=.*", words[0]):
        env.append(tuple(words.pop(0).split("=", 1)))
    if not words:
        raise UnknownCommand(f"{where}: no command in {text!r}")
    program = words[0]
    program = program.removeprefix(".venv/bin/")
    rest = words[1:]
    if program == "goenv":
        return Step(where, text, "run", ("goenv", *rest), tuple(env))
    if program in ("python", "python3"):
        if rest and rest[0].startswith(RUNNABLE_SCRIPTS):
            return Step(where, text, "run", ("python", *rest), tuple(env))
        if rest[:2] == ["-m", "goenv.cli"] or rest[:2] == ["-m", "goenv"]:
            return Step(where, text, "run", ("goenv", *rest[2:]), tuple(env))
    if program == "make":
        return Step(where, text, "make", tuple(words))
    if any(tuple([program, *rest][:len(prefix)]) == prefix for prefix in SETUP_COMMANDS):
        return Step(where, text, "setup", tuple(words))
    raise UnknownCommand(f"{where}: the docs tests do not know how to run {text!r}; "
                         "use goenv, python examples/... or experiments/..., make or an install step, "
                         "or mark the block <!-- not-tested: reason -->")


def _command_lines(block: Block) -> list[tuple[int, str]]:
    """(line, command) pairs: in a console block the lines after a `$ ` prompt, in bash/sh every
    line that is not a comment; a trailing backslash continues a command on the next line."""
    commands, pending = [], None
    for offset, raw in enumerate(block.code.splitlines()):
        line = raw.rstrip()
        if pending is not None:
            pending[1].append(line.removesuffix("\\"))
            if not line.endswith("\\"):
                commands.append((pending[0], " ".join(pending[1])))
                pending = None
            continue
        stripped = line.strip()
        if block.language == "console":
            if not stripped.startswith("$ "):
                continue  # the command's output
            stripped = stripped[2:]
        else:
            stripped = stripped.removeprefix("$ ")
            if not stripped or stripped.startswith("#"):
                continue
        if stripped.endswith("\\"):
            pending = (block.line + offset, [stripped.removesuffix("\\")])
        else:
            commands.append((block.line + offset, stripped))
    if pending is not None:
        commands.append((pending[0], " ".join(pending[1])))
    return commands


def shell_steps(block: Block) -> list[Step]:
    """The block's commands in order; `a; b` and `a && b` are two steps. A pipe, a redirection,
    a background job or a shell keyword raises UnknownCommand."""
    steps = []
    for line, text in _command_lines(block):
        where = f"{block.page}:{line}"
        lexer = shlex.shlex(text, posix=True, punctuation_chars=";&|<>()")
        lexer.whitespace_split = True
        try:
            tokens = list(lexer)
        except ValueError as error:
            raise UnknownCommand(f"{where}: cannot split {text!r}: {error}") from None
        words: list[str] = []
        for token in [*tokens, ";"]:
            if token in (";", "&&"):
                if words:
                    steps.append(_classify(where, text, words))
                words = []
            elif token and set(token) <= set(";&|<>()"):
                raise UnknownCommand(f"{where}: {text!r} uses {token!r}; the docs tests run simple commands only "
                                     "(mark the block <!-- not-tested: reason -->)")
            else:
                words.append(token)
    return steps


def makefile_targets(root: Path = ROOT) -> set[str]:
    targets = set()
    for line in (root / "Makefile").read_text().splitlines():
        match = re.match(r"^([A-Za-z0-9_.%/$() -]+?)\s*:(?!=)", line)
        if match and not line.startswith("\t"):
            targets.update(word for word in match.group(1).split() if not word.startswith((".", "$")))
    return targets


def needed_library(text: str) -> str | None:
    for pattern, library in COMMAND_LIBRARIES.items():
        if re.search(pattern, text):
            return library
    return None


def workspace(directory: Path, root: Path = ROOT) -> Path:
    """Copy into `directory` what the pages' commands and code read and write: examples/,
    experiments/, the benchmark scripts, README.md, the pages and docs/results/. Returns `directory`."""
    for scripts in ("examples", "experiments"):
        shutil.copytree(root / scripts, directory / scripts, ignore=shutil.ignore_patterns("__pycache__"))
    (directory / "tests").mkdir(exist_ok=True)
    shutil.copytree(root / "tests" / "benchmarks", directory / "tests" / "benchmarks",
                    ignore=shutil.ignore_patterns("__pycache__", "*.cc", "*.h"))
    if (root / "README.md").exists():
        shutil.copy2(root / "README.md", directory / "README.md")
    if (root / "docs").is_dir():
        shutil.copytree(root / "docs", directory / "docs", ignore=shutil.ignore_patterns("__pycache__", "*.png"))
    return directory
