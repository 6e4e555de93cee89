"""Documents given in memory, as the bytes units the counters take from files: strings,
iterables of strings or of lists of strings (Hugging Face batch iterators), rows or batches as
dicts, `datasets.Dataset` / `IterableDataset`, pyarrow tables, record batches and string arrays.

Each document is a record of its own, exactly as a JSONL record is (`units.jsonl_units`): no
piece crosses from one document into the next, and each is split on the special tokens. The
documents are encoded to UTF-8 and packed, a unit of about `units.UNIT_BYTES` at a time (never
the whole corpus joined); a document larger than a unit is cut at safe points as a plain text
file is (`units.text_units`), so one huge string is still counted on every core. Arrow text
(a Dataset's, a table's) goes to the counter from its UTF-8 buffer, with no Python string per
row. `datasets` and `pyarrow` are only used when given one of their objects.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from typing import Any

import numpy as np
import regex

from workbench.engine.corpus import units
from workbench.engine.corpus.units import Unit
from workbench.engine.errors import ConfigError, CorpusError

WHERE = "documents"  # how errors name a corpus given in memory
DATASET_ROWS = 8192  # rows per batch read from a Dataset / IterableDataset

_ARROW_KINDS = {"Table", "RecordBatch", "ChunkedArray"}
_DATASET_KINDS = {"Dataset", "IterableDataset"}
_SPLITS_KINDS = {"DatasetDict", "IterableDatasetDict"}

Progress = Callable[[int], None]  # documents done so far


def _kind(corpus: object) -> tuple[str, str]:
    """(top-level package, class name) of the corpus's type, found without importing either."""
    kind = type(corpus)
    return kind.__module__.partition(".")[0], kind.__name__


def is_table(corpus: object) -> bool:
    """Whether `corpus` is a Dataset, IterableDataset or pyarrow table, batch or array: its rows
    are the documents (rather than the items it iterates)."""
    package, name = _kind(corpus)
    if package == "datasets":
        return name in _DATASET_KINDS | _SPLITS_KINDS
    return package == "pyarrow" and (name in _ARROW_KINDS or name.endswith("Array"))


def row_count(corpus: object) -> int | None:
    """The documents in a table-like corpus, when it knows (an IterableDataset does not)."""
    name = _kind(corpus)[1]
    if name == "IterableDataset" or name in _SPLITS_KINDS:
        return None
    return len(corpus)  # type: ignore[arg-type]


def memory_units(
    corpus: Any,
    specials: regex.Pattern | None,
    reach: int,
    text_column: str = "text",
    progress: Progress | None = None,
    after_newline: bool = False,
) -> Iterator[tuple[Unit, int]]:
    """(unit, documents completed) of the documents of `corpus`, in order; `reach`: the
    longest special token's UTF-8 length. Raises CorpusError for an item that is not text.
    `after_newline`: a long document is cut after a newline only (SuperBPE's stage 2)."""
    packer = _Packer(specials, reach, progress, after_newline)
    if is_table(corpus):
        for where, first, array in _text_arrays(corpus, text_column):
            data, offsets = _utf8_block(array, where, first)
            yield from packer.add_block(data, offsets)
    else:
        yield from packer.add_texts(documents(corpus, text_column))
    yield from packer.flush()


def memory_texts(
    corpus: Any, text_column: str = "text", progress: Progress | None = None
) -> Iterator[str]:
    """Each document of `corpus` as a string (the regex pre-tokenizer's path)."""
    done = 0
    if is_table(corpus):
        for where, first, array in _text_arrays(corpus, text_column):
            _utf8_block(array, where, first)  # the same checks as the scanner's path
            yield from array.to_pylist()
            done += len(array)
            if progress is not None:
                progress(done)
        return
    for done, text in enumerate(documents(corpus, text_column), 1):
        if not text.isascii():
            _encoded(text, done)  # a lone surrogate is named here, as on the scanner's path
        if done % 1024 == 0 and progress is not None:
            progress(done)
        yield text
    if progress is not None:
        progress(done)


def documents(items: Iterable[Any], text_column: str = "text") -> Iterator[str]:
    """The documents of an iterable: each string is one, a list or tuple holds several (a batch),
    a dict holds one or a batch under `text_column` (a row or a batch of a Dataset)."""
    for number, item in enumerate(items, 1):
        if isinstance(item, str):
            yield item
            continue
        if isinstance(item, dict):
            if text_column not in item:
                shown = ", ".join(map(str, list(item)[:8]))
                raise CorpusError(WHERE, f'item {number} has no "{text_column}" ({shown})')
            item = item[text_column]
            if isinstance(item, str):
                yield item
                continue
        if not isinstance(item, list | tuple):
            raise CorpusError(WHERE, f"item {number} is {type(item).__name__}, not str")
        for place, text in enumerate(item):
            if not isinstance(text, str):
                kind = type(text).__name__
                raise CorpusError(WHERE, f"item {number}, element {place} is {kind}, not str")
        yield from item


class _Packer:
    """Documents laid end to end into units of about `units.UNIT_BYTES`, cut between them."""

    def __init__(
        self,
        specials: regex.Pattern | None,
        reach: int,
        progress: Progress | None,
        after_newline: bool = False,
    ):
        self.after_newline = after_newline
        self.specials = specials
        self.reach = reach
        self.progress = progress
        self.parts: list[bytes] = []
        self.edges: list[int] = []  # each packed document's end
        self.size = 0
        self.documents = 0  # documents yielded so far, for progress

    def add_texts(self, texts: Iterable[str]) -> Iterator[tuple[Unit, int]]:
        parts, edges = self.parts, self.edges  # emptied in place by flush
        for text in texts:
            data = _encoded(text, self.documents + len(edges) + 1)
            if len(data) >= units.UNIT_BYTES:
                yield from self.flush()
                yield from self._large(data)
                continue
            parts.append(data)
            self.size += len(data)
            edges.append(self.size)
            if self.size >= units.UNIT_BYTES:
                yield from self.flush()

    def add_block(self, data: memoryview, offsets: np.ndarray) -> Iterator[tuple[Unit, int]]:
        """Rows laid end to end (row k is data[offsets[k]:offsets[k+1]], offsets[0] == 0)."""
        rows = offsets.shape[0] - 1
        large = np.flatnonzero(np.diff(offsets) >= units.UNIT_BYTES).tolist()
        row = 0
        for stop in [*large, rows]:
            yield from self._add_rows(data, offsets, row, stop)
            if stop < rows:
                yield from self.flush()
                yield from self._large(data[offsets[stop] : offsets[stop + 1]])
            row = stop + 1

    def _add_rows(
        self, data: memoryview, offsets: np.ndarray, row: int, stop: int
    ) -> Iterator[tuple[Unit, int]]:
        """Rows [row, stop), none as large as a unit, packed a slice of rows at a time."""
        while row < stop:
            base = int(offsets[row])
            room = base + units.UNIT_BYTES - self.size
            end = int(np.searchsorted(offsets, room, side="right")) - 1
            end = min(max(end, row + 1), stop)  # at least one row: it fits in a unit of its own
            self.parts.append(data[base : int(offsets[end])])
            self.edges.extend((offsets[row + 1 : end + 1] - base + self.size).tolist())
            self.size += int(offsets[end]) - base
            if self.size >= units.UNIT_BYTES:
                yield from self.flush()
            row = end

    def _large(self, data: bytes | memoryview) -> Iterator[tuple[Unit, int]]:
        """One document larger than a unit, cut where no preset piece crosses (as a plain file
        is): the cuts change no piece, and all its units are counted in parallel."""
        step = units.UNIT_BYTES
        chunks = (data[at : at + step] for at in range(0, len(data), step))
        # head=False: a document is taken as it is (no byte-order mark dropped, no binary check),
        # as a JSONL record's text is
        yield from units.text_units(
            Path(WHERE),
            self.specials,
            self.reach,
            chunks,
            head=False,
            after_newline=self.after_newline,
        )
        self.documents += 1
        self._report()

    def flush(self) -> Iterator[tuple[Unit, int]]:
        """The unit of the documents packed so far, if any."""
        if not self.edges:
            return
        offsets = np.array([0, *self.edges], np.int64)
        data = b"".join(self.parts)  # parts may be views of an arrow buffer: copied here
        count = len(self.edges)
        self.parts.clear()
        self.edges.clear()
        self.size = 0
        yield units.records_unit(data, offsets, self.specials), count
        self.documents += count
        self._report()

    def _report(self) -> None:
        if self.progress is not None:
            self.progress(self.documents)


def _encoded(text: str, number: int) -> bytes:
    try:
        return text.encode("utf-8")
    except UnicodeEncodeError as exc:  # a lone surrogate: not a character, it has no UTF-8
        code = ord(text[exc.start])
        message = f"document {number} holds a lone surrogate (\\u{code:04x}), not a character"
        raise CorpusError(WHERE, message) from None


def _text_arrays(corpus: Any, column: str) -> Iterator[tuple[str, int, Any]]:
    """(where, first row, string array) of each stretch of the text column, in order."""
    package, name = _kind(corpus)
    if name in _SPLITS_KINDS:
        splits = ", ".join(map(repr, list(corpus)))
        raise ConfigError(f"a {name} holds splits ({splits}): give one, e.g. corpus['train']")
    if package == "datasets":
        arrays = _dataset_arrays(corpus, column)
    elif name in ("Table", "RecordBatch"):
        arrays = _columns(corpus, column, corpus.schema.names)
    else:
        arrays = [corpus]
    first = 0
    for array in arrays:
        for chunk in getattr(array, "chunks", [array]):
            yield "row", first, chunk
            first += len(chunk)


def _columns(table: Any, column: str, names: list[str]) -> list[Any]:
    _check_column(column, names)
    return [table.column(names.index(column))]


def _check_column(column: str, names: list[str]) -> None:
    if column not in names:
        shown = ", ".join(names[:8]) + (", …" if len(names) > 8 else "")
        raise ConfigError(f'no column "{column}" (columns: {shown}); give text_column=')


def _dataset_arrays(dataset: Any, column: str) -> Iterator[Any]:
    """The text column of a Dataset / IterableDataset as arrow arrays, batch by batch (the
    Dataset's own arrow data, shuffles and selections applied; nothing else is read)."""
    names = dataset.column_names
    if names is not None:
        _check_column(column, list(names))
        dataset = dataset.select_columns([column])  # the other columns are not even read
    # else an IterableDataset that does not know its columns before it is read: each batch's
    # columns are checked as it comes
    batches = dataset.with_format("arrow").iter(DATASET_ROWS)
    for batch in batches:
        yield from _columns(batch, column, batch.schema.names)


def _utf8_block(array: Any, where: str, first: int) -> tuple[memoryview, np.ndarray]:
    """A string array's text as a view of its buffer (no copy) and its len+1 row offsets
    from 0; a null, a
    column not of strings or text not UTF-8 raises CorpusError naming the row."""
    import pyarrow as pa  # given an arrow array, pyarrow is installed

    kind = array.type
    if hasattr(pa.types, "is_string_view") and pa.types.is_string_view(kind):
        array, kind = array.cast(pa.large_string()), pa.large_string()
    if not (pa.types.is_string(kind) or pa.types.is_large_string(kind)):
        raise CorpusError(WHERE, f"{where} {first}: the text column holds {kind}, not strings")
    if array.null_count:
        row = first + int(np.flatnonzero(~np.asarray(array.is_valid()))[0])
        raise CorpusError(WHERE, f"{where} {row}: the text is null")
    try:
        array.validate(full=True)  # UTF-8 and offsets, in C++
    except pa.ArrowInvalid as exc:
        message = str(exc).strip().splitlines()[0] if str(exc).strip() else "invalid"
        raise CorpusError(WHERE, f"{where} {first}: malformed text ({message})") from None
    _, offsets_buffer, data_buffer = array.buffers()
    width = np.int64 if pa.types.is_large_string(kind) else np.int32
    offsets = np.frombuffer(offsets_buffer, dtype=width)[
        array.offset : array.offset + len(array) + 1
    ]
    offsets = offsets.astype(np.int64)
    start, end = int(offsets[0]), int(offsets[-1])
    data = memoryview(data_buffer)[start:end] if data_buffer is not None else memoryview(b"")
    return data, offsets - start
