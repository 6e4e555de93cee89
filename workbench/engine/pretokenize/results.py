"""What counting a corpus gives: the word table, the statistics of the corpus read
(`CorpusStats`) and the files counted (`PretokenizeResult`).

Only the records: every counter (regex, scanner, Dask, a counts file) fills them alike.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from workbench.engine.pretokenize.words import WordTable


@dataclass
class CorpusStats:
    files: int = 0
    documents: int = 0
    bytes: int = 0  # UTF-8 bytes of text pre-tokenized (special tokens not counted)
    pieces: int = 0
    unique_pieces: int = 0
    skipped: list[str] = field(default_factory=list)  # one message per file left out
    seconds: float = 0.0


@dataclass
class PretokenizeResult:
    words: WordTable
    stats: CorpusStats
    files: Sequence[Path]
    # Left out by a bound on the unique pieces' bytes (SuperBPE's stage 2): piece occurrences
    # and their bytes; `words` holds the rest.
    dropped_pieces: int = 0
    dropped_bytes: int = 0
