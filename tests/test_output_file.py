"""The one helper every command writes its output files with (`workbench/output_file.py`):
`-` is standard output, regular files are staged and renamed, special files are written in place
and never replaced, symbolic links to regular files are refused, a full disk changes nothing."""

from __future__ import annotations

import contextlib
import errno
import os
import stat
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from workbench.output_file import (
    Kind,
    OutputFileError,
    check_output,
    write_output,
    write_output_with,
)

ROOT = Path(__file__).resolve().parents[1]


def test_dash_is_standard_output(capsys):
    assert write_output("-", '{"a": 1}\n') is Kind.STDOUT
    assert capsys.readouterr().out == '{"a": 1}\n'


def test_a_regular_file_is_replaced_whole_and_no_temp_is_left(tmp_path):
    out = tmp_path / "report.json"
    out.write_text("old")
    assert write_output(out, "new") is Kind.FILE
    assert out.read_text() == "new"
    assert [p.name for p in tmp_path.iterdir()] == ["report.json"]


def test_a_missing_folder_is_made(tmp_path):
    out = tmp_path / "a" / "b" / "r.csv"
    write_output(out, "x")
    assert out.read_text() == "x"


def test_a_fifo_is_written_in_place_never_replaced(tmp_path):
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    got: list[bytes] = []
    reader = threading.Thread(target=lambda: got.append(fifo.read_bytes()))
    reader.start()
    assert write_output(fifo, "through the pipe") is Kind.STREAM
    reader.join(timeout=10)
    assert not reader.is_alive()
    assert got == [b"through the pipe"]
    assert stat.S_ISFIFO(os.lstat(fifo).st_mode)
    assert [p.name for p in tmp_path.iterdir()] == ["pipe"]


def test_a_symlink_to_a_pipe_like_dev_stdout_is_written_through_and_kept(tmp_path):
    """/dev/stdout is a link to /proc/self/fd/1; a link in tmp to a pipe's end stands for it
    (as root, a rename over /dev/stdout itself once made it a regular file)."""
    read_end, write_end = os.pipe()
    link = tmp_path / "stdout"
    link.symlink_to(f"/proc/self/fd/{write_end}")
    try:
        assert write_output(link, "to the pipe") is Kind.STREAM
        os.close(write_end)
        with os.fdopen(read_end, "rb") as reader:
            assert reader.read() == b"to the pipe"
    finally:
        for fd in (read_end, write_end):
            with contextlib.suppress(OSError):
                os.close(fd)
    assert link.is_symlink()
    assert [p.name for p in tmp_path.iterdir()] == ["stdout"]


def test_dev_stdout_of_a_command_goes_down_its_pipe():
    """A child whose standard output is a pipe writes to /dev/stdout: the bytes come down the
    pipe and /dev/stdout stays what it was."""
    code = (
        "import os, stat; from workbench.output_file import write_output;"
        "k = write_output('/dev/stdout', 'hello');"
        "import sys; sys.stderr.write(k.name + ' ' + str(stat.S_ISLNK(os.lstat('/dev/stdout').st_mode)))"
    )
    proc = subprocess.run(
        [sys.executable, "-c", code],
        cwd=ROOT,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
        capture_output=True,
        timeout=60,
    )
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == b"hello"
    assert proc.stderr.decode() == "STDOUT True"


def test_a_symlink_to_a_regular_file_is_refused_and_nothing_changes(tmp_path):
    target = tmp_path / "elsewhere.txt"
    target.write_text("keep me")
    link = tmp_path / "report.html"
    link.symlink_to(target)
    with pytest.raises(OutputFileError, match="symbolic link"):
        write_output(link, "<html>")
    assert link.is_symlink() and target.read_text() == "keep me"
    dangling = tmp_path / "dangling.json"
    dangling.symlink_to(tmp_path / "nowhere")
    with pytest.raises(OutputFileError, match="missing file"):
        write_output(dangling, "{}")
    assert not (tmp_path / "nowhere").exists()


def test_a_folder_is_refused(tmp_path):
    with pytest.raises(OutputFileError, match="is a folder"):
        check_output(tmp_path)


def test_a_full_disk_leaves_the_existing_file_untouched(tmp_path, monkeypatch):
    out = tmp_path / "r.json"
    out.write_text("the old report")

    def full(*args, **kwargs):
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(os, "replace", full)
    with pytest.raises(OutputFileError) as caught:
        write_output(out, "x" * 100_000)
    message = str(caught.value)
    assert "disk is full" in message and "left as it was" in message and "\n" not in message
    assert out.read_text() == "the old report"
    assert [p.name for p in tmp_path.iterdir()] == ["r.json"]


def test_a_path_writer_is_staged_or_copied_to_the_stream(tmp_path, capsysbinary):
    def writer(path: Path) -> None:
        path.write_bytes(b"PAR1...PAR1")

    out = tmp_path / "c.parquet"
    assert write_output_with(out, writer) is Kind.FILE
    assert out.read_bytes() == b"PAR1...PAR1"
    assert [p.name for p in tmp_path.iterdir()] == ["c.parquet"]
    assert write_output_with("-", writer) is Kind.STDOUT
    assert capsysbinary.readouterr().out == b"PAR1...PAR1"


def test_a_path_writer_failing_leaves_the_old_file(tmp_path):
    out = tmp_path / "c.parquet"
    out.write_bytes(b"old")

    def writer(path: Path) -> None:
        path.write_bytes(b"half")
        raise OSError(errno.ENOSPC, "No space left on device")

    with pytest.raises(OutputFileError, match="disk is full"):
        write_output_with(out, writer)
    assert out.read_bytes() == b"old"
    assert [p.name for p in tmp_path.iterdir()] == ["c.parquet"]
