"""A corpus's documents in groups (languages), for parity-aware BPE.

`by` says where a document's group comes from:
- `lang`: a record's `lang` field (JSONL, Parquet, Arrow); a document with no such field (a
  plain text file, or a record without it) is guessed from its dominant script;
- `folder`: for a folder given as the corpus, the first folder under it that holds the file (a
  file directly in it: the folder's own name); for a file given as the corpus, its folder's name;
- `script`: every document guessed from its dominant script (`patterns.scripts`).

A document is read whole (a plain text file is one document; a JSONL or columnar record is
one): the held-out lines are counted across a group's documents, and a document's kept lines are
counted as one text, so memory holds the largest document, not the corpus.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Iterator
from pathlib import Path

from workbench.engine.config import PARITY_BY
from workbench.engine.corpus.documents import Document, Segmenter, read_documents
from workbench.engine.corpus.listing import list_files
from workbench.engine.errors import ConfigError, CorpusError
from workbench.engine.patterns.scripts import dominant_script

LANG_FIELD = "lang"
_WHOLE = Segmenter((), cut_inside=False)  # one segment per document: specials split later


def file_documents(
    paths: Iterable[str | os.PathLike],
    by: str,
    text_column: str = "text",
    jsonl_field: str = "text",
    files: list[tuple[Path, Path]] | None = None,
) -> Iterator[tuple[Path, Iterator[tuple[str, str]]]]:
    """(file, its documents as (group, whole text), read one at a time as they are asked for)
    for every file under `paths` (or in `files`, as `corpus_files` lists them), in corpus
    order. Reading a document may raise CorpusError naming the file: its documents read before
    are then the caller's to drop."""
    if by not in PARITY_BY:
        raise ConfigError(f"parity-by {by!r}: use one of {', '.join(PARITY_BY)}")
    for path, root in corpus_files(paths) if files is None else files:
        yield path, _documents(path, root, by, text_column, jsonl_field)


def corpus_files(paths: Iterable[str | os.PathLike]) -> list[tuple[Path, Path]]:
    """(file, the corpus path it is under) for every file under `paths`, in corpus order: what
    `file_documents` reads, listed first so a reader of it can know the bytes to come."""
    return [(Path(path), Path(root)) for root in paths for path in list_files([Path(root)])]


def _documents(
    path: Path, root: Path, by: str, text_column: str, jsonl_field: str
) -> Iterator[tuple[str, str]]:
    for document in read_documents(path, _WHOLE, text_column, jsonl_field):
        text = "".join(document.segments)
        yield _group_of(document, text, by, root), text


def grouped_texts(
    paths: Iterable[str | os.PathLike],
    by: str,
    text_column: str = "text",
    jsonl_field: str = "text",
    skipped: list[str] | None = None,
) -> dict[str, list[str]]:
    """Every document under `paths`, whole, in its group (groups in name order, documents in
    corpus order): the whole corpus in memory, for small inputs and tests (training counts
    `file_documents` as they come). CorpusError names a bad file; with a `skipped` list the
    file is left out whole instead and its message appended there."""
    groups: dict[str, list[str]] = {}
    for _, documents in file_documents(paths, by, text_column, jsonl_field):
        try:
            found = list(documents)  # a file's documents, kept only if all read
        except CorpusError as exc:
            if skipped is None:
                raise
            skipped.append(str(exc))
            continue
        for group, text in found:
            groups.setdefault(group, []).append(text)
    return dict(sorted(groups.items()))


def _group_of(document: Document, text: str, by: str, root: Path) -> str:
    if by == "folder":
        if root.is_dir():
            inside = Path(document.path).relative_to(root).parts
            return inside[0] if len(inside) > 1 else root.resolve().name
        return Path(document.path).resolve().parent.name
    if by == "lang":
        label = (document.record or {}).get(LANG_FIELD)
        if isinstance(label, str) and label.strip():
            return label.strip()
    return dominant_script(text)
