"""What the commands share: usage errors, option names (one per idea, old names kept as hidden
aliases), reading a text argument, loading `--tokenizer`, printing JSON and names safely.

Names, the same in every command: inputs are positional PATHs (`-` for standard input where a
text is read); `--out FILE` is a file (`-`: standard output) and `--out-dir DIR` a folder;
`--threads N` the threads (or processes) to use; `--tokenizer SPEC` a file, folder, `run:ID`,
`run:ID@k` or a reference name; `--json` machine-readable output; `--quiet` no progress.
"""

from __future__ import annotations

import argparse
import functools
import json
import sys
from pathlib import Path

from workbench.engine.errors import WorkbenchError


class UsageError(WorkbenchError):
    """A wrong option or argument (exit status 2, as argparse's own errors)."""


def hidden_alias(parser: argparse.ArgumentParser, *names: str, dest: str, **kwargs) -> None:
    """An old option name kept working for a release, left out of --help."""
    parser.add_argument(*names, dest=dest, help=argparse.SUPPRESS, **kwargs)


def add_threads_option(parser: argparse.ArgumentParser, what: str) -> None:
    """`--threads N` (old name `--workers`, hidden)."""
    parser.add_argument(
        "--threads", type=int, default=None, metavar="N", help=f"{what} (default: all cores)"
    )
    hidden_alias(parser, "--workers", dest="threads", type=int)


def check_threads(args: argparse.Namespace) -> None:
    from workbench.engine.config import MAX_WORKERS

    if args.threads is not None and not 1 <= args.threads <= MAX_WORKERS:
        raise UsageError(f"--threads must be from 1 to {MAX_WORKERS}, not {args.threads}")


def add_quiet_option(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "-q",
        "--quiet",
        action="store_true",
        help="no progress bars (none either when stderr is not a terminal)",
    )


def add_db_option(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--db",
        type=Path,
        default=None,
        metavar="FILE",
        help="run database (default: $BPE_WORKBENCH_DB or runs.db in the user's data folder)",
    )


@functools.cache
def _json_escapes() -> dict[int, str]:
    # json.dumps(ensure_ascii=False) leaves DEL, C1 controls, bidi overrides and lone
    # surrogates raw; as \u escapes they decode to the same string and print safely.
    codes = [*range(0x7F, 0xA0), *range(0x202A, 0x202F), *range(0x2066, 0x206A)]
    codes += range(0xD800, 0xE000)
    return {c: f"\\u{c:04x}" for c in codes}


def json_text(value: object) -> str:
    """`value` as indented JSON, non-ASCII kept readable, every control character escaped."""
    return json.dumps(value, indent=2, ensure_ascii=False).translate(_json_escapes()) + "\n"


def print_json(value: object) -> None:
    """One JSON document on standard output (and nothing else there: see --json)."""
    sys.stdout.write(json_text(value))


def has_qt() -> bool:
    """Whether the [gui] extra (PySide6, pyqtgraph) is installed; found, not imported (an
    import of pyqtgraph costs a second, and Qt without a display may abort the process)."""
    from importlib.util import find_spec

    try:
        return find_spec("PySide6") is not None and find_spec("pyqtgraph") is not None
    except ImportError:  # a finder that refuses it
        return False


def shown(name: object) -> str:
    """A file or run name for a message or table, its control characters escaped."""
    from workbench.display import escape_controls

    return escape_controls(str(name))


def say(*lines: str, to_stderr: bool = False) -> None:
    """Human-readable lines: on stdout, or on stderr when stdout carries data (`--out -`)."""
    print("\n".join(lines), file=sys.stderr if to_stderr else sys.stdout)


def read_text(source: str) -> str:
    """The text of FILE, or of standard input for `-`, read as bytes and decoded strictly.

    No newline translation (a CRLF file keeps its CRs, as tiktoken would see them) and no
    U+FFFD: invalid UTF-8 is an error naming the byte offset.
    """
    name = "standard input" if source == "-" else source
    try:
        data = sys.stdin.buffer.read() if source == "-" else Path(source).read_bytes()
    except OSError as exc:
        raise WorkbenchError(f"{name}: cannot read: {exc.strerror or exc}") from None
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise WorkbenchError(
            f"{name}: is not UTF-8 text (invalid byte 0x{data[exc.start]:02X} at byte {exc.start})"
        ) from None


def special_choice(args: argparse.Namespace) -> dict:
    """`encode`'s keyword arguments for `--allow-special` / `--no-special` (neither: error on a
    special token in the text, as tiktoken)."""
    if getattr(args, "allow_special", False):
        return {"allowed_special": "all"}
    if getattr(args, "no_special", False):
        return {"allowed_special": (), "disallowed_special": ()}
    return {"allowed_special": (), "disallowed_special": "all"}


def add_special_options(parser: argparse.ArgumentParser) -> None:
    group = parser.add_mutually_exclusive_group()
    group.add_argument(
        "--allow-special",
        action="store_true",
        help="encode special tokens found in the text as specials (default: refuse such text)",
    )
    group.add_argument(
        "--no-special", action="store_true", help="encode special tokens as plain text"
    )


def special_refusal(source: str, exc: Exception) -> WorkbenchError:
    """The CLI wording for `DisallowedSpecialError`: name the file and the options."""
    token, position = exc.token, exc.position  # type: ignore[attr-defined]
    name = "standard input" if source == "-" else source
    return WorkbenchError(
        f"{name}: contains the special token {token!r} (at character {position}); pass"
        " --allow-special to encode it as that special token or --no-special to encode it as text"
    )


TOKENIZER_HELP = (
    "a tokenizer file or folder, run:ID (a stored run), run:ID@k (its first k merges), "
    "or gpt2, cl100k, o200k"
)


def add_tokenizer_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--tokenizer", required=True, metavar="SPEC", help=TOKENIZER_HELP)
    parser.add_argument(
        "--pattern",
        default=None,
        help="pattern for tokenizer files without one (default: the gpt2 preset)",
    )
    add_db_option(parser)


def load_tokenizer(args: argparse.Namespace):
    """The tokenizer `--tokenizer` names (a run is read from a read-only store)."""
    from workbench.evaluate.specs import resolve

    # Loading builds the tokenizer's tables with the encoder's kernels: ready them first.
    prepare_kernels(args, "encode", patterns_before_loading([args.tokenizer], args))
    return resolve(
        args.tokenizer, getattr(args, "db", None), getattr(args, "pattern", None)
    ).tokenizer


PRESET_NAMES = ("gpt2", "cl100k", "o200k")


def patterns_before_loading(specs: list[str], args: argparse.Namespace) -> list[str]:
    """The patterns `--tokenizer` specs will have, as far as known before loading them: a
    preset's own, and for files and runs `--pattern` (or gpt2); exact after loading."""
    guessed = [spec for spec in specs if spec in PRESET_NAMES]
    if len(guessed) < len(specs):
        guessed.append(getattr(args, "pattern", None) or "gpt2")
    return guessed


def prepare_kernels(args: argparse.Namespace, job: str, patterns: list[str]) -> None:
    """Have the kernels `job` needs ready before its work starts, naming each compile on stderr
    (`session.startup`, the one owner of start-up); silent when they are all cached."""
    from workbench.session import startup

    startup.ensure(job, patterns, startup.to_stream(sys.stderr, getattr(args, "quiet", False)))
