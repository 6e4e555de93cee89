"""Held-out text for an evaluation: documents read by the trainer's corpus readers, in groups.

A document is what the trainer calls one (a file, or a JSONL record); its whole text is kept,
special tokens included, because a tokenizer is evaluated on text as a model would see it.
`--group-by` puts each document in a group: `file`, `folder`, or `field:NAME` (a record's field,
e.g. `lang`, from any record-based reader that fills `Document.record`); no grouping gives the
one group `all`. Documents come in batches of about `batch_bytes`, so a large corpus streams.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path

from workbench.engine.corpus import Document, Segmenter, list_files, read_documents
from workbench.engine.errors import ConfigError

ALL = "all"
NO_FIELD = "(no field)"
_WHOLE = Segmenter((), cut_inside=False)  # no specials, no cuts: one segment per document


@dataclass(frozen=True)
class Doc:
    text: str
    group: str


def parse_group_by(value: str | None) -> str | None:
    """`file`, `folder`, `field:NAME` or None; anything else is the user's mistake."""
    if value in (None, "", "none"):
        return None
    if value in ("file", "folder") or (value.startswith("field:") and len(value) > 6):
        return value
    raise ConfigError(f"--group-by {value!r}: use file, folder or field:NAME (e.g. field:lang)")


def group_of(document: Document, group_by: str | None) -> str:
    if group_by is None:
        return ALL
    if group_by == "file":
        return str(document.path)
    if group_by == "folder":
        return str(document.path.parent)
    value = (document.record or {}).get(group_by[len("field:") :])
    return NO_FIELD if value is None else str(value)


def iter_docs(paths: Iterable[str | os.PathLike], group_by: str | None = None) -> Iterator[Doc]:
    """Every document under `paths`, whole, with its group. CorpusError names a bad file."""
    for path in list_files(paths):
        for document in read_documents(Path(path), _WHOLE):
            yield Doc("".join(document.segments), group_of(document, group_by))


def batches(docs: Iterable[Doc], batch_bytes: int = 8 << 20) -> Iterator[list[Doc]]:
    """Documents in lists of about `batch_bytes` characters (the last may be shorter)."""
    batch: list[Doc] = []
    size = 0
    for doc in docs:
        batch.append(doc)
        size += len(doc.text)
        if size >= batch_bytes:
            yield batch
            batch, size = [], 0
    if batch:
        yield batch
