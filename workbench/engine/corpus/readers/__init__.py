"""Corpus formats beyond plain text and JSONL: compressed streams, Parquet, Arrow.

The corpus modules (`corpus/opening.py`, `documents.py`, ...) read plain text and JSONL and ask
this package what a file is:
- `compressed`: `.zst`, `.xz` and `.bz2` (text and JSONL alike; `opening.OPENERS` is the table
  of every compression, `.gz` included);
- `columnar`: `.parquet` files (streamed by row group) and Arrow IPC `.arrow` files, each record
  a document, its text in one column;
- `datasets`: folders written by Hugging Face `datasets.save_to_disk` (Arrow files plus JSON
  metadata), read with pyarrow alone;
- `optional`: the one-line message when an optional package is missing.
"""

from __future__ import annotations

from pathlib import Path

from workbench.engine.corpus.readers.columnar import is_columnar
from workbench.engine.corpus.readers.compressed import is_compressed

# What the window's "Open corpus files" dialog offers (any file is still read as text).
CORPUS_FILE_PATTERNS = [
    "*.txt",
    "*.md",
    "*.py",
    "*.jsonl",
    "*.parquet",
    "*.arrow",
    "*.gz",
    "*.zst",
    "*.xz",
    "*.bz2",
    "*.jsonl.gz",
    "*.jsonl.zst",
    "*.jsonl.xz",
    "*.jsonl.bz2",
]


def corpus_file_filter() -> str:
    """The Qt file-dialog filter for corpus files (a counts file is a `.parquet` too)."""
    return f"Corpora ({' '.join(CORPUS_FILE_PATTERNS)});;All files (*)"


def streams_only(path: Path) -> bool:
    """Whether a file's size on disk says nothing about how much text it holds (compressed or
    columnar), so it must be streamed rather than read whole."""
    return is_compressed(path) or is_columnar(path)


__all__ = [
    "CORPUS_FILE_PATTERNS",
    "corpus_file_filter",
    "is_columnar",
    "is_compressed",
    "streams_only",
]
