"""Writing tokenizer files safely: check the output folder before any work, then write all the
files of a run into a staging folder and rename them into place together.

    check_output_folder(out)                                # before counting: fail in a second
    write_formats_atomically(tokenizer, ["gpt2", "hf"], out)  # after training

Every set of files carries `token_bytes.npy`, the per-id byte lengths (`token_bytes.py`).

Why staging: a format is several files (vocab.json + merges.txt, a .tiktoken + its sidecar).
Written one by one over an older set, a full disk halfway leaves a new vocab.json beside an
old merges.txt, and two trainings into one folder mix their files. Here every file is written
and flushed in a hidden folder inside `out` first (so any write error happens before anything
is replaced), then renamed into place while holding a lock on `out`, so two writers' sets never
interleave. Files are created with mode 0666 less the umask (0644 usually), like any program's.

Leaves out: what each format writes (see `formats/`), and fsync of the folder (a power cut may
lose the renames, never leave a half-written file).
"""

from __future__ import annotations

import contextlib
import errno
import os
import shutil
import tempfile
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING

from workbench.engine.errors import WorkbenchError

if TYPE_CHECKING:
    from workbench.engine.encode.tokenizer import Tokenizer

STAGE_PREFIX = ".bpe-workbench-writing-"


class OutputError(WorkbenchError):
    """An output folder that cannot be made or written to, with a message fit to show as is."""

    def __init__(self, path: str | os.PathLike[str], message: str) -> None:
        self.path = str(path)
        super().__init__(f"{path}: {message}")


def check_output_folder(path: str | os.PathLike[str]) -> Path:
    """Refuse, before any work, an output folder that cannot be written: a file, a folder
    under a file, or a place this user may not write. Creates nothing; returns the path."""
    out = Path(path)
    if out.exists() and not out.is_dir():
        raise OutputError(out, "is a file, not a folder (choose a folder for the tokenizer files)")
    existing = out
    while not existing.exists():  # the nearest part of the path that exists
        if existing.parent == existing:
            break
        existing = existing.parent
    if not existing.is_dir():
        raise OutputError(out, f"cannot make this folder: {existing} is a file")
    try:  # really try: permission bits, read-only file systems and ACLs all answer here
        os.rmdir(tempfile.mkdtemp(prefix=STAGE_PREFIX, dir=existing))
    except OSError as exc:
        where = "" if existing == out else f" (in {existing})"
        raise OutputError(out, f"cannot write here{where}: {exc.strerror or exc}") from None
    return out


def write_formats_atomically(
    tokenizer: Tokenizer, formats: Iterable[str], out: str | os.PathLike[str]
) -> list[Path]:
    """Write `tokenizer` in every format into folder `out` (created if needed), all files
    staged first and renamed into place together; returns the paths written."""
    from workbench.engine import formats as registry
    from workbench.engine.formats import token_bytes

    chosen = list(dict.fromkeys(formats))
    for fmt in chosen:
        registry.exporter(fmt)  # an unknown format fails before anything is written

    def write(stage: Path) -> list[Path]:
        written = [p for fmt in chosen for p in registry.exporter(fmt)(tokenizer, stage)]
        return written + token_bytes.export(tokenizer, stage)  # for bits per byte

    return write_staged(out, write)


def write_staged(out: str | os.PathLike[str], write: Callable[[Path], list[Path]]) -> list[Path]:
    """Call `write(stage)` on a fresh hidden folder inside `out`, then move what it wrote into
    `out` under the same names. Nothing in `out` changes unless every file was written."""
    out = Path(out)
    try:
        out.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        check_output_folder(out)  # the clearer message, when it has one
        raise OutputError(out, f"cannot make this folder: {exc.strerror or exc}") from None
    try:
        stage = Path(tempfile.mkdtemp(prefix=STAGE_PREFIX, dir=out))
    except OSError as exc:
        raise OutputError(out, f"cannot write here: {exc.strerror or exc}") from None
    try:
        staged = write(stage)
        names = [p.relative_to(stage) for p in staged]
        with _folder_lock(out):
            for name in names:
                os.replace(stage / name, out / name)
        return [out / name for name in names]
    except OSError as exc:
        reason = "the disk is full" if exc.errno == errno.ENOSPC else exc.strerror or str(exc)
        message = f"cannot write the tokenizer files ({reason}); nothing was replaced"
        raise OutputError(out, message) from None
    finally:
        shutil.rmtree(stage, ignore_errors=True)


@contextlib.contextmanager
def _folder_lock(folder: Path) -> Iterator[None]:
    """An exclusive lock on the folder itself while renaming, where the system has flock
    (so two writers' renames never interleave); elsewhere renames are merely quick."""
    try:
        import fcntl
    except ImportError:  # Windows
        yield
        return
    fd = os.open(folder, os.O_RDONLY)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)  # closing releases the lock
