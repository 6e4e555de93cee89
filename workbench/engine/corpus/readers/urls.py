"""Corpus inputs named by fsspec URLs (`file:///data/shard.parquet`, `s3://bucket/docs.jsonl.zst`).

Every reader works on local paths (memory maps, `os.open`, pyarrow's own files), so a URL is
resolved before the corpus is listed: a `file://` URL becomes its plain path (the local fast
path, no copy); any other URL is copied through fsspec into a temporary folder that lives as
long as the process, keeping the file's name (the name says the format: `.parquet`,
`.jsonl.zst`). A folder URL is copied whole. Plain paths never touch fsspec.

Missing pieces are one-line errors: fsspec itself, the filesystem package a scheme needs
(`s3fs` for `s3://`, as fsspec names it), a scheme fsspec does not know.
"""

from __future__ import annotations

import atexit
import os
import re
import shutil
import tempfile
from collections.abc import Iterable
from pathlib import Path, PurePosixPath

from workbench.engine.corpus.readers.optional import MissingPackageError
from workbench.engine.errors import CorpusError

# "scheme://..." or a chained fsspec URL "simplecache::s3://..."; two letters at least, so a
# Windows drive ("C:/") is never taken for a scheme.
_URL = re.compile(r"^[A-Za-z][A-Za-z0-9+.\-]+(://|::)")

_downloads: Path | None = None


def is_url(raw: str | os.PathLike) -> bool:
    # a Path has already collapsed "//": only strings can be URLs
    return isinstance(raw, str) and _URL.match(raw) is not None


def local_paths(paths: Iterable[str | os.PathLike]) -> list[str | os.PathLike]:
    """`paths` with each URL replaced by a local path holding the same file or folder."""
    return [local_path(raw) if is_url(raw) else raw for raw in paths]


def input_name(raw: str | os.PathLike) -> str:
    """How a counts file records an input: a local path resolved (a `file://` URL as its path,
    so both spellings give the same file), any other URL as given."""
    if is_url(raw):
        if not str(raw).lower().startswith("file://"):
            return str(raw)
        raw = local_path(str(raw))
    return str(Path(raw).resolve())


def local_path(url: str) -> str:
    fsspec = _fsspec(url)
    try:
        fs, path = fsspec.core.url_to_fs(url)
    except ImportError as exc:  # fsspec's own words: "Install s3fs to access S3"
        raise MissingPackageError(f"{url}: {_first_line(exc)}") from None
    except ValueError as exc:  # "Protocol not known: foo"
        raise CorpusError(url, f"not a URL fsspec can read ({_first_line(exc)})") from None
    if isinstance(fs, fsspec.implementations.local.LocalFileSystem):
        return path  # the existing local path: errors for a missing file come from the lister
    target = _download_folder() / (PurePosixPath(path.rstrip("/")).name or "input")
    target = _unused(target)
    try:
        if fs.isdir(path):
            fs.get(path.rstrip("/") + "/", str(target), recursive=True)
        else:
            fs.get_file(path, str(target))
    except FileNotFoundError:
        raise CorpusError(url, "no such file or folder") from None
    except (OSError, ValueError) as exc:
        raise CorpusError(url, f"cannot read: {_first_line(exc)}") from None
    return str(target)


def _fsspec(url: str):
    try:
        import fsspec
        import fsspec.implementations.local
    except ImportError:
        raise MissingPackageError(
            f"{url}: reading URLs needs fsspec, which is not installed: pip install fsspec"
        ) from None
    return fsspec


def _download_folder() -> Path:
    global _downloads
    if _downloads is None:
        _downloads = Path(tempfile.mkdtemp(prefix="bpe-workbench-urls-"))
        atexit.register(shutil.rmtree, _downloads, True)
    return _downloads


def _unused(target: Path) -> Path:
    """`target`, or `<n>/name` beside it when two URLs end in the same name."""
    folder, name, n = target.parent, target.name, 0
    while target.exists():
        n += 1
        target = folder / str(n) / name
    target.parent.mkdir(parents=True, exist_ok=True)
    return target


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()
    return text[0] if text else type(exc).__name__
