"""The `bpe-workbench` command: no arguments opens the window; subcommands work headless.

Each subcommand lives in its own module of this package with a `register(subparsers)` function that
adds its parser and sets `func`; a command returns an exit code. Bad input raises a
`WorkbenchError`, which becomes one line on stderr (control characters escaped), never a
traceback. Exit status, the same for every command:

    0    done
    1    the work failed: a missing, unreadable or bad file, bad data, a full disk
    2    usage: an unknown option, a bad option value, no display for the window
    130  interrupted (Ctrl-C, SIGTERM)

Start-up time: no command module imports Numba, NumPy or SQLite at the top, so `--help` and
argument errors answer at once; each command imports what its work needs when it runs.
"""

from __future__ import annotations

import argparse
import importlib
import os
import sys

from workbench.cli._common import UsageError
from workbench.engine.errors import ConfigError, PatternError, WorkbenchError

EXIT_OK, EXIT_FAILED, EXIT_USAGE, EXIT_INTERRUPTED = 0, 1, 2, 130

COMMAND_MODULES = (
    "workbench.cli.train",
    "workbench.cli.extend",
    "workbench.cli.count",
    "workbench.cli.encode",
    "workbench.cli.export",
    "workbench.cli.render",
    "workbench.cli.runs",
    "workbench.cli.bench",
    "workbench.cli.eval",
    "workbench.cli.diff",
    "workbench.cli.prepare",
    "workbench.cli.completion",
)
# Option values the engine checks (a vocabulary below the alphabet, a bad regex) are usage errors.
USAGE_ERRORS = (UsageError, ConfigError, PatternError)


def version() -> str:
    """The installed package's version (one string, in pyproject.toml); in a checkout that is
    not installed, the package's own `__version__` marked as such."""
    from importlib import metadata

    try:
        return metadata.version("bpe-workbench")
    except metadata.PackageNotFoundError:
        import workbench

        return f"{workbench.__version__} (not installed)"


class _Version(argparse.Action):
    """`--version` that reads the metadata only when asked (it costs a few milliseconds)."""

    def __init__(
        self, option_strings, dest=argparse.SUPPRESS, default=argparse.SUPPRESS, help=None
    ):
        super().__init__(option_strings, dest=dest, default=default, nargs=0, help=help)

    def __call__(self, parser, namespace, values, option_string=None):
        print(f"bpe-workbench {version()}")
        parser.exit()


def build_parser(argv: list[str] | None = None) -> argparse.ArgumentParser:
    """The parser of every command; with `argv` naming a command first, of that one alone."""
    parser = argparse.ArgumentParser(
        prog="bpe-workbench",
        description="Train byte-level BPE tokenizers and inspect them. Without a COMMAND it "
        "opens the window (which needs the [gui] extra and a display).",
        epilog="exit status: 0 done, 1 the work failed (a bad or missing file, bad data), "
        "2 usage error, 130 interrupted. `-` as an output file is standard output.",
    )
    parser.add_argument("--version", action=_Version, help="print the version and exit")
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
        return _open_window()
    try:
        code = int(args.func(args) or 0)
        sys.stdout.flush()  # a closed pipe shows up here, not at exit where it cannot be caught
        return code
    except WorkbenchError as exc:
        return _fail(exc)
    except MemoryError:  # a stage no session names: still one line, never a traceback
        print(f"bpe-workbench: out of memory while running {args.command}", file=sys.stderr)
        return EXIT_FAILED
    except KeyboardInterrupt:
        print("bpe-workbench: interrupted", file=sys.stderr)
        return EXIT_INTERRUPTED
    except SystemError as exc:
        # A second Ctrl-C inside a Numba kernel surfaces as SystemError with the
        # KeyboardInterrupt as its cause; anything else is a real bug and goes on up.
        if isinstance(exc.__cause__ or exc.__context__, KeyboardInterrupt):
            print("bpe-workbench: interrupted", file=sys.stderr)
            return EXIT_INTERRUPTED
        raise
    except BrokenPipeError:
        return _reader_went_away()


def _fail(exc: WorkbenchError) -> int:
    """One line on stderr, names in it escaped (a file name may hold terminal codes)."""
    from workbench.display import escape_controls

    print(f"bpe-workbench: {escape_controls(str(exc))}", file=sys.stderr)
    return EXIT_USAGE if isinstance(exc, USAGE_ERRORS) else EXIT_FAILED


WINDOW_HELP = (
    "or use a command without the window, e.g. `bpe-workbench train --help` "
    "(every command: `bpe-workbench --help`)"
)


def window_problem() -> str | None:
    """Why the window cannot open here, as one line saying what to do; None when it can.

    Asked before Qt loads: without a display Qt aborts the process (exit 134), past any
    handler, and without the [gui] extra there is no Qt at all."""
    from workbench.cli._common import has_qt

    if not has_qt():
        return f'the window needs Qt: pip install "bpe-workbench[gui]"; {WINDOW_HELP}'
    on_x11_or_wayland = sys.platform.startswith(("linux", "freebsd", "openbsd", "netbsd"))
    has_display = any(os.environ.get(v) for v in ("DISPLAY", "WAYLAND_DISPLAY", "QT_QPA_PLATFORM"))
    if on_x11_or_wayland and not has_display:
        return (
            "no display to open the window on: set DISPLAY (or QT_QPA_PLATFORM=offscreen); "
            + WINDOW_HELP
        )
    return None


def _open_window() -> int:
    problem = window_problem()
    if problem is not None:
        print(f"bpe-workbench: {problem}", file=sys.stderr)
        return EXIT_USAGE
    from workbench.gui.app import run_app

    return run_app()


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
    return EXIT_FAILED
