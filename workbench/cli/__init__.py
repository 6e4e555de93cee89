"""The `bpe-workbench` command: no arguments opens the window; subcommands work headless.

Each subcommand lives in its own module of this package with a `register(subparsers)` function that
adds its parser and sets `func`; a command returns an exit code. Bad input raises a
`WorkbenchError`, which becomes one line on stderr and exit code 2, never a traceback.
"""

from __future__ import annotations

import argparse
import importlib
import os
import sys

from workbench.engine.errors import WorkbenchError

COMMAND_MODULES = (
    "workbench.cli.train",
    "workbench.cli.count",
    "workbench.cli.encode",
    "workbench.cli.export",
    "workbench.cli.render",
    "workbench.cli.runs",
    "workbench.cli.bench",
    "workbench.cli.eval",
)


def build_parser(argv: list[str] | None = None) -> argparse.ArgumentParser:
    """The parser of every command; with `argv` naming a command first, of that one alone.

    Start-up time: each command module imports what its own work needs (the run store and
    SQLite for `runs`, the encoder for `export`), so `train` must not pay for the others."""
    parser = argparse.ArgumentParser(
        prog="bpe-workbench",
        description="Train byte-level BPE tokenizers and inspect them. No command opens the window.",
    )
    subparsers = parser.add_subparsers(dest="command", metavar="COMMAND")
    chosen = [name for name in COMMAND_MODULES if argv and name.rpartition(".")[2] == argv[0]]
    for name in chosen or COMMAND_MODULES:
        try:
            module = importlib.import_module(name)
        except ModuleNotFoundError as exc:
            if exc.name != name:  # a real import error inside the module: show it
                raise
            continue
        module.register(subparsers)
    return parser


def main(argv: list[str] | None = None) -> int:
    if argv is None:
        argv = sys.argv[1:]
    args = build_parser(argv).parse_args(argv)
    if args.command is None:
        from workbench.gui.app import run_app

        return run_app()
    try:
        code = int(args.func(args) or 0)
        sys.stdout.flush()  # a closed pipe shows up here, not at exit where it cannot be caught
        return code
    except WorkbenchError as exc:
        print(f"bpe-workbench: {exc}", file=sys.stderr)
        return getattr(exc, "exit_code", 2)  # 1: work that failed (out of memory), 2: usage
    except MemoryError:  # a stage no session names: still one line, never a traceback
        print(f"bpe-workbench: out of memory while running {args.command}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        print("bpe-workbench: interrupted", file=sys.stderr)
        return 130
    except SystemError as exc:
        # A second Ctrl-C inside a Numba kernel surfaces as SystemError with the
        # KeyboardInterrupt as its cause; anything else is a real bug and goes on up.
        if isinstance(exc.__cause__ or exc.__context__, KeyboardInterrupt):
            print("bpe-workbench: interrupted", file=sys.stderr)
            return 130
        raise
    except BrokenPipeError:
        return _reader_went_away()


def _reader_went_away() -> int:
    """The reader of our output left (`bpe-workbench runs list | head`): stop quietly.

    As the Python docs advise, point stdout at devnull so the flush at exit does not fail a
    second time. Exit 1, not 0: the output was cut short, and a script that asks (`set -o
    pipefail`) should learn it, as it does from tools killed by SIGPIPE; without pipefail a
    pipeline's status is the reader's, so `... | head` is unaffected."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
    except (OSError, ValueError):  # stdout without a file descriptor (tests capture it)
        pass
    return 1
