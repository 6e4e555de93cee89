"""Writing one output file a user named (`--out`, `--json`, `--csv`, `--html`), safely.

    write_output("-", text)                      # standard output
    write_output("report.json", text)            # staged in the same folder, then renamed
    write_output_with("counts.parquet", writer)  # for writers that need a path (Parquet, PNG)

The rule, by what the name is when the command starts:

- `-`, or the very file standard output / error already is (`/dev/stdout`, `/proc/self/fd/1`):
  written to that stream, as it stands.
- a regular file, or nothing yet: written to a temporary file in the same folder, then renamed
  over the name. A full disk or any other error leaves an existing file untouched.
- another kind of file (a FIFO, `/dev/null`, a terminal), directly or through a symbolic link:
  opened and written in place, never renamed over (a rename would swap a pipe for a file).
- a symbolic link to a regular file, or to nothing: refused. Renaming over it would replace the
  link; writing through it would write wherever the link leads, which in a shared folder may be
  a file someone planted the link to reach. Give the file itself.
- a folder: refused.

Leaves out: the multi-file tokenizer outputs (see `engine/outputs.py`, which stages a whole
folder), and fsync (a power cut may lose the rename, never leave half a file).
"""

from __future__ import annotations

import errno
import os
import secrets
import shutil
import stat
import sys
import tempfile
from collections.abc import Callable
from enum import Enum
from pathlib import Path

from workbench.engine.errors import WorkbenchError

STDOUT_NAME = "-"


class OutputFileError(WorkbenchError):
    """An output file that cannot be written, with a message fit to show as is."""

    def __init__(self, path: str | os.PathLike[str], message: str) -> None:
        self.path = str(path)
        super().__init__(f"{path}: {message}")


class Kind(Enum):
    STDOUT = "standard output"
    STDERR = "standard error"
    STREAM = "a special file, written in place"
    FILE = "a regular file, staged and renamed"


def is_stdout(target: str | os.PathLike[str] | None) -> bool:
    """True for `-` (and only `-`: `/dev/stdout` is found by `kind_of`)."""
    return target is not None and os.fspath(target) == STDOUT_NAME


def kind_of(target: str | os.PathLike[str]) -> Kind:
    """How `target` will be written (see the module docstring); an OutputFileError for a
    folder or a symbolic link to a regular file or to nothing."""
    if is_stdout(target):
        return Kind.STDOUT
    path = os.fspath(target)
    try:
        link = os.lstat(path)
    except FileNotFoundError:
        return Kind.FILE
    except OSError as exc:
        raise OutputFileError(path, f"cannot write: {exc.strerror or exc}") from None
    try:
        real = os.stat(path)
    except OSError:
        raise OutputFileError(
            path, "is a symbolic link to a missing file (give the file itself, or remove the link)"
        ) from None
    for fd, kind in ((1, Kind.STDOUT), (2, Kind.STDERR)):
        try:
            if os.path.samestat(real, os.fstat(fd)):
                return kind
        except OSError:  # that stream is closed
            continue
    if stat.S_ISDIR(real.st_mode):
        raise OutputFileError(path, "is a folder (give a file name)")
    if not stat.S_ISREG(real.st_mode):
        return Kind.STREAM
    if stat.S_ISLNK(link.st_mode):
        raise OutputFileError(
            path,
            f"is a symbolic link to {os.path.realpath(path)}; it is never followed nor replaced"
            " (give the file itself, or remove the link)",
        )
    return Kind.FILE


def check_output(target: str | os.PathLike[str], binary: bool = False) -> Kind:
    """Refuse, before any work, an output that `write_output` would refuse; the kind."""
    kind = kind_of(target)
    if binary and kind is Kind.STDOUT and _stream_is_terminal(sys.stdout):
        raise OutputFileError(
            os.fspath(target), "standard output is a terminal; redirect it to a file or a pipe"
        )
    return kind


def write_output(target: str | os.PathLike[str], data: str | bytes) -> Kind:
    """Write `data` (text as UTF-8) to `target` by the rule above; the kind written."""
    raw = data.encode("utf-8") if isinstance(data, str) else data
    kind = check_output(target, binary=isinstance(data, bytes))
    if kind is Kind.FILE:
        _staged(Path(target), lambda handle, _path: handle.write(raw))
    else:
        _to_stream(target, kind, lambda handle: handle.write(raw))
    return kind


def write_output_with(target: str | os.PathLike[str], write: Callable[[Path], object]) -> Kind:
    """`write(path)` writes a whole file at `path` (a Parquet or PNG writer); its bytes end up
    at `target` by the rule above. For a stream, the file is made in the temp folder first."""
    kind = check_output(target, binary=True)
    if kind is Kind.FILE:
        _staged(Path(target), lambda _handle, path: write(path))
        return kind
    with tempfile.TemporaryDirectory(prefix="bpe-workbench-") as folder:
        made = Path(folder) / "output"
        try:
            write(made)
        except OSError as exc:
            raise OutputFileError(target, f"cannot write: {_reason(exc)}") from None
        with made.open("rb") as source:
            _to_stream(target, kind, lambda handle: shutil.copyfileobj(source, handle))
    return kind


def _stream_is_terminal(stream) -> bool:
    try:
        return stream.isatty()
    except (AttributeError, ValueError):
        return False


def _reason(exc: OSError) -> str:
    return "the disk is full" if exc.errno == errno.ENOSPC else exc.strerror or str(exc)


def _staged(path: Path, fill: Callable[[object, Path], object]) -> None:
    """A temporary file beside `path`, filled by `fill(handle, temp_path)`, renamed over it."""
    existed = path.exists()
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        temp = path.with_name(f".{path.name}.{secrets.token_hex(6)}.tmp")
        # 0666 less the umask, as an editor makes a file (mkstemp's 0600 hides it from others).
        fd = os.open(temp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_BINARY", 0), 0o666)
    except OSError as exc:
        raise OutputFileError(path, f"cannot write: {_reason(exc)}") from None
    try:
        with os.fdopen(fd, "wb") as handle:
            fill(handle, temp)
        os.replace(temp, path)
    except OSError as exc:
        temp.unlink(missing_ok=True)
        kept = "; the existing file was left as it was" if existed else ""
        raise OutputFileError(path, f"cannot write: {_reason(exc)}{kept}") from None
    except BaseException:
        temp.unlink(missing_ok=True)
        raise


def _to_stream(
    target: str | os.PathLike[str], kind: Kind, fill: Callable[[object], object]
) -> None:
    """Write to standard output/error, or open a special file in place (no create, no rename)."""
    name = Kind.STDOUT.value if is_stdout(target) else os.fspath(target)
    try:
        if kind in (Kind.STDOUT, Kind.STDERR):
            stream = sys.stdout if kind is Kind.STDOUT else sys.stderr
            stream.flush()  # what was printed before comes first
            fill(stream.buffer)
            stream.buffer.flush()
            return
        fd = os.open(target, os.O_WRONLY | getattr(os, "O_NOCTTY", 0))
        if stat.S_ISREG(os.fstat(fd).st_mode):  # swapped for a regular file since the check
            os.close(fd)
            raise OutputFileError(name, "changed into a regular file while writing; try again")
        with os.fdopen(fd, "wb") as handle:
            fill(handle)
    except BrokenPipeError:
        raise  # the reader left: the command line stops quietly
    except OSError as exc:
        raise OutputFileError(name, f"cannot write: {_reason(exc)}") from None
