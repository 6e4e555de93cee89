"""A corpus's documents in groups (languages), for parity-aware BPE.

`by` says where a document's group comes from:
- `lang`: a record's `lang` field (JSONL, Parquet, Arrow); a document with no such field (a
  plain text file, or a record without it) is guessed from its dominant script;
- `folder`: for a folder given as the corpus, the first folder under it that holds the file (a
  file directly in it: the folder's own name); for a file given as the corpus, its folder's name;
- `script`: every document guessed from its dominant script (`patterns.scripts`).

A document comes out as `Passage`s of bounded size, so no document is held whole: a record is
one passage (bounded by the record); a plain text file is its text as read. Under `folder` its
group is known from its path; guessed from its script, a file is read in blocks: a block is
`BLOCK_CHARS` characters and the rest of the line it ends in, and its group is the dominant
script of those first characters (the whole file when shorter, so a small file is guessed as a
whole); a block with no letters stays in the group before it. Consecutive blocks of one group
are one document; a block of another group starts a new document. So memory holds a block, not
the file.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import NamedTuple

import regex

from workbench.engine.config import PARITY_BY
from workbench.engine.corpus.documents import (
    Document,
    Segmenter,
    holds_records,
    read_documents,
    text_chunks,
)
from workbench.engine.corpus.listing import list_files
from workbench.engine.errors import ConfigError, CorpusError
from workbench.engine.patterns.scripts import UNKNOWN, dominant_script

LANG_FIELD = "lang"
_WHOLE = Segmenter((), cut_inside=False)  # one segment per record: specials split later
BLOCK_CHARS = 1 << 20  # a plain text file's script is guessed a block of this many at a time
# what `str.splitlines` ends a line at ("\r\n" first: one line end)
_LINE_END = regex.compile(r"\r\n|[\n\r\x0b\x0c\x1c\x1d\x1e\x85\u2028\u2029]")


class Passage(NamedTuple):
    """A stretch of a document's text, in order: `starts` for the first of each document."""

    group: str
    text: str
    starts: bool


def file_documents(
    paths: Iterable[str | os.PathLike],
    by: str,
    text_column: str = "text",
    jsonl_field: str = "text",
    files: list[tuple[Path, Path]] | None = None,
) -> Iterator[tuple[Path, Iterator[tuple[str, str]]]]:
    """(file, its documents as `Passage`s, read as they are asked for) for every file under
    `paths` (or in `files`, as `corpus_files` lists them), in corpus order. Reading may raise
    CorpusError naming the file: its passages read before are then the caller's to drop."""
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
) -> Iterator[Passage]:
    if holds_records(path):
        for document in read_documents(path, _WHOLE, text_column, jsonl_field):
            text = "".join(document.segments)
            yield Passage(_group_of(document, text, by, root), text, True)
    elif by == "folder":
        group = _folder_group(path, root)
        for number, text in enumerate(text_chunks(path)):
            if text or number == 0:  # an empty file is still a document
                yield Passage(group, text, number == 0)
    else:
        yield from script_blocks(text_chunks(path))


def script_blocks(chunks: Iterable[str], size: int | None = None) -> Iterator[Passage]:
    """A plain text document given as `chunks`, grouped by script a block at a time (see the
    module's docstring): a block of at most `size` (`BLOCK_CHARS`) characters and a chunk are
    held."""
    size = BLOCK_CHARS if size is None else size
    group = ""  # the group of the block before ("": none yet)
    held = ""
    in_line = False  # the block's group is known and the rest of its last line is streamed
    for chunk in _whole_line_ends(chunks):
        if in_line:
            end = _LINE_END.search(chunk)
            if end is None:
                yield Passage(group, chunk, False)
                continue
            yield Passage(group, chunk[: end.end()], False)
            chunk, in_line = chunk[end.end() :], False
        held += chunk
        while len(held) >= size:
            guess = dominant_script(held[:size])
            starts = not group or guess not in (group, UNKNOWN)
            group = guess if starts else group
            end = _LINE_END.search(held, size - 1)
            if end is None:  # the line goes on past what is read: stream the rest of it
                yield Passage(group, held, starts)
                held, in_line = "", True
                break
            yield Passage(group, held[: end.end()], starts)
            held = held[end.end() :]
    if held or not group:  # the last block (or a file with no text: still a document)
        guess = dominant_script(held)
        starts = not group or guess not in (group, UNKNOWN)
        yield Passage(guess if starts else group, held, starts)


def _whole_line_ends(chunks: Iterable[str]) -> Iterator[str]:
    """`chunks`, a "\r" that ends one moved to the next, so no "\r\n" is cut in two."""
    carried = ""
    for chunk in chunks:
        chunk = carried + chunk
        carried = "\r" if chunk.endswith("\r") else ""
        if carried:
            chunk = chunk[:-1]
        if chunk:
            yield chunk
    if carried:
        yield carried


def grouped_texts(
    paths: Iterable[str | os.PathLike],
    by: str,
    text_column: str = "text",
    jsonl_field: str = "text",
    skipped: list[str] | None = None,
) -> dict[str, list[str]]:
    """Every document under `paths`, joined whole, in its group (groups in name order, documents in
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
        for group, text, starts in found:
            texts = groups.setdefault(group, [])
            if starts:
                texts.append(text)
            else:
                texts[-1] += text
    return dict(sorted(groups.items()))


def _group_of(document: Document, text: str, by: str, root: Path) -> str:
    if by == "folder":
        return _folder_group(Path(document.path), root)
    if by == "lang":
        label = (document.record or {}).get(LANG_FIELD)
        if isinstance(label, str) and label.strip():
            return label.strip()
    return dominant_script(text)


def _folder_group(path: Path, root: Path) -> str:
    if root.is_dir():
        inside = path.relative_to(root).parts
        return inside[0] if len(inside) > 1 else root.resolve().name
    return path.resolve().parent.name
