"""What the hardening tests share: run the CLI in-process and check a one-line error."""

from __future__ import annotations

import pytest

from workbench.cli import main


def run_cli(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    """(exit status, stdout, stderr) of `bpe-workbench ARGS`, run in this process."""
    try:
        code = main(list(args))
    except SystemExit as exc:  # argparse refusing an argument
        code = exc.code if isinstance(exc.code, int) else 2
    out, err = capsys.readouterr()
    return code, out, err


def assert_one_line_error(code: int, err: str, *words: str) -> None:
    """Exit status 1 or 2 and a single stderr line (no traceback) holding every word."""
    assert code in (1, 2), (code, err)
    assert "Traceback" not in err, err
    # On a cold kernel cache the command first names its wait for the compiler (a line of its
    # own, before the error): not part of the error.
    lines = [line for line in err.strip().splitlines() if not _names_a_compile(line)]
    assert len(lines) == 1, err
    for word in words:
        assert word in lines[0], (word, err)


def _names_a_compile(line: str) -> bool:
    return "(first use" in line or line.startswith("bpe-workbench: fast kernels ready")
