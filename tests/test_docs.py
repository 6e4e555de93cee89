"""Every command and option the README and docs/ show exists, so the pages cannot drift.

What is checked, in README.md, docs/*.md, packaging/README.md and benchmarks/README.md:
- each `bpe-workbench ...` command line (in a code block, or an inline code span) names a real
  command (and `runs` action), and each of its options belongs to that command's parser;
- each inline span that starts with a command name and shows options (`train --from-counts`)
  likewise;
- each bare option span (`--skip-bad-files`) is an option of some command, or, in the notes
  about the benchmark scripts, an option one of `benchmarks/` scripts defines;
- each `python benchmarks/X.py --opt` line uses options that script defines.
The parser is built as the command line builds it, without running any command.
"""

from __future__ import annotations

import argparse
import re
import shlex
import tomllib
from pathlib import Path

import pytest

from workbench.cli import build_parser

ROOT = Path(__file__).resolve().parents[1]
PAGES = [
    ROOT / "README.md",
    *sorted((ROOT / "docs").glob("*.md")),
    ROOT / "packaging" / "README.md",
    ROOT / "benchmarks" / "README.md",
]
PROGRAM = "bpe-workbench"
OPTION = re.compile(r"^--?[A-Za-z][\w-]*")


def _subcommands(parser: argparse.ArgumentParser) -> dict[str, argparse.ArgumentParser]:
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            return dict(action.choices)
    return {}


def _options(parser: argparse.ArgumentParser) -> set[str]:
    return {s for action in parser._actions for s in action.option_strings}


PARSER = build_parser()
COMMANDS = _subcommands(PARSER)
ALL_OPTIONS = _options(PARSER).union(
    *(_options(p) for p in COMMANDS.values()),
    *(_options(sub) for p in COMMANDS.values() for sub in _subcommands(p).values()),
)


def _script_options(script: Path) -> set[str]:
    """The option strings a benchmark script's source spells out (`"--runs"`), and those of
    the benchmarks' own helper modules it imports (`from _texts import add_text_options`)."""
    source = script.read_text(encoding="utf-8")
    options = set(re.findall(r"""["'](--[\w-]+)["']""", source))
    for helper in re.findall(r"^from (_\w+) import", source, flags=re.MULTILINE):
        if (script.parent / f"{helper}.py").is_file():
            options |= _script_options(script.parent / f"{helper}.py")
    return options


SCRIPTS = {p.name: _script_options(p) for p in (ROOT / "benchmarks").glob("*.py")}
SCRIPT_OPTIONS = set().union(*SCRIPTS.values())


def _code(text: str) -> tuple[list[str], list[str]]:
    """(lines of fenced code blocks with `\\` continuations joined, inline code spans)."""
    blocks, prose, fenced, inside = [], [], [], False
    for line in text.splitlines():
        if line.lstrip().startswith("```"):
            inside = not inside
            continue
        (fenced if inside else prose).append(line)
    joined = "\n".join(fenced).replace("\\\n", " ")
    blocks = [line.strip() for line in joined.splitlines() if line.strip()]
    # Inline spans may wrap across a line break inside a paragraph; never across a blank line.
    spans = [
        " ".join(span.split())
        for paragraph in "\n".join(prose).split("\n\n")
        for span in re.findall(r"`([^`]+)`", paragraph)
    ]
    return blocks, spans


def _words(command: str) -> list[str]:
    try:
        words = shlex.split(command, comments=True)
    except ValueError:  # an unbalanced quote inside prose: split plainly
        words = command.split()
    return [w.strip("[]") for w in words]


def _pieces(line: str) -> list[list[str]]:
    """A shell line split at `&&`, `;` and `|` into each program's words."""
    return [_words(part) for part in re.split(r"&&|;|\|", line) if part.strip()]


def _name(page: Path) -> str:
    return str(page.relative_to(ROOT))


def _shown() -> list[tuple[str, list[str]]]:
    """(page, words) of every command line or span the pages show."""
    found = []
    for page in PAGES:
        blocks, spans = _code(page.read_text(encoding="utf-8"))
        for line in blocks + spans:
            found += [(_name(page), words) for words in _pieces(line) if words]
    return found


SHOWN = _shown()


def _check_command(words: list[str]) -> list[str]:
    """Problems with `bpe-workbench WORDS...` (words after the program name)."""
    options = _options(PARSER)
    parser = PARSER
    rest = list(words)
    while rest and rest[0].startswith("-"):  # top-level options (--help, --version)
        if rest[0].split("=")[0] not in options:
            return [f"no top-level option {rest[0]}"]
        rest.pop(0)
    if rest:
        name = rest.pop(0)
        if name.isupper():  # a placeholder (`bpe-workbench COMMAND --help`): any command's
            known = set.intersection(*(_options(p) for p in COMMANDS.values()))
            return [f"{w} is not an option of every command" for w in rest if w not in known]
        if name not in COMMANDS:
            return [f"no command {name!r}"]
        parser = COMMANDS[name]
        actions = _subcommands(parser)
        if actions and rest and not rest[0].startswith("-"):
            action = rest.pop(0)
            if action not in actions:
                return [f"no action {name} {action!r}"]
            parser = actions[action]
    known = _options(parser)
    return [
        f"{word} is not an option of this command"
        for word in rest
        if OPTION.match(word) and word.split("=")[0] not in known
    ]


def test_the_pages_show_commands_at_all() -> None:
    programs = [words for _, words in SHOWN if Path(words[0]).name == PROGRAM]
    assert len(programs) > 30
    assert {"train", "count", "encode", "export", "render", "eval", "runs", "bench"} <= {
        words[1] for words in programs if len(words) > 1
    }


@pytest.mark.parametrize("page", [_name(p) for p in PAGES])
def test_every_command_line_shown_exists(page: str) -> None:
    problems = []
    for where, words in SHOWN:
        if where != page:
            continue
        if Path(words[0]).name == PROGRAM:
            problems += [f"{' '.join(words)}: {p}" for p in _check_command(words[1:])]
        elif words[0] in COMMANDS and any(OPTION.match(w) for w in words[1:]):
            problems += [f"{' '.join(words)}: {p}" for p in _check_command(words)]
    assert problems == []


@pytest.mark.parametrize("page", [_name(p) for p in PAGES])
def test_every_option_shown_exists(page: str) -> None:
    problems = []
    for where, words in SHOWN:
        if where != page:
            continue
        script = next((Path(w).name for w in words if Path(w).name in SCRIPTS), None)
        if words[0] in ("python", "python3") and script is not None:
            unknown = [w for w in words if w.startswith("--") and w not in SCRIPTS[script]]
            problems += [f"{' '.join(words)}: {script} has no {w}" for w in unknown]
        elif words[0].startswith("--"):  # a bare option named in the prose
            unknown = [
                w
                for w in words
                if w.startswith("--") and w not in ALL_OPTIONS and w not in SCRIPT_OPTIONS
            ]
            problems += [f"{' '.join(words)}: no command has {w}" for w in unknown]
    assert problems == []


def test_the_extras_the_pages_install_exist() -> None:
    extras = set(
        tomllib.loads((ROOT / "pyproject.toml").read_text())["project"].get(
            "optional-dependencies", {}
        )
    )
    named = set()
    for page in PAGES:
        for line in page.read_text(encoding="utf-8").splitlines():
            if "pip install" in line:
                named |= {
                    e for group in re.findall(r"\[([\w,-]+)\]", line) for e in group.split(",")
                }
    assert named and named <= extras, named - extras


def test_the_checker_catches_a_wrong_option() -> None:
    assert _check_command(["train", "x.txt", "--vocab-size", "300"]) == []
    assert _check_command(["train", "--no-such-option"]) != []
    assert _check_command(["runs", "continue", "3", "--vocab-size", "9"]) == []
    assert _check_command(["runs", "frobnicate"]) != []
    assert _check_command(["nonsense"]) != []


def test_every_relative_link_of_the_pages_resolves() -> None:
    broken = []
    for page in PAGES:
        text = page.read_text(encoding="utf-8")
        # Targets are plain paths, so `]("gpt2")` inside code is no link.
        for target in re.findall(r"\]\(([\w./#-]+)\)", text):
            if re.match(r"[a-z]+:", target) or target.startswith("#"):
                continue  # a URL or a heading of the same page
            path = target.split("#")[0]
            if not (page.parent / path).exists():
                broken.append(f"{_name(page)}: {target}")
    assert broken == []
