"""What the tokenizer commands share: reading a text argument and loading `--tokenizer`."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from workbench.engine.errors import WorkbenchError


def read_text(source: str) -> str:
    """The text of FILE, or of standard input for `-`."""
    if source == "-":
        return sys.stdin.read()
    try:
        return Path(source).read_text(encoding="utf-8")
    except OSError as exc:
        raise WorkbenchError(f"{source}: cannot read: {exc.strerror or exc}") from None
    except UnicodeDecodeError:
        raise WorkbenchError(f"{source}: is not UTF-8 text") from None


def add_tokenizer_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--tokenizer", required=True, help="tokenizer file or folder")
    parser.add_argument(
        "--pattern", default=None, help="pattern for files without one (default: gpt2 preset)"
    )


def load_tokenizer(args: argparse.Namespace):
    from workbench.engine import formats

    return formats.load(args.tokenizer, getattr(args, "pattern", None))
