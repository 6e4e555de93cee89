"""Parquet and Arrow IPC files: each record a document, its text in one string column.

Parquet is streamed row group by row group (and batch by batch inside one), never loaded whole;
an Arrow file (`.arrow`, the IPC stream format `datasets.save_to_disk` writes, or the IPC file
format) batch by batch from a memory map. The text column's UTF-8 buffer goes to the counter as
it is (one bytes object + document offsets), with no Python string per record.

Memory is bounded by bytes, not rows: a 336-byte Parquet file can hold one 100 KB dictionary
value repeated in 5,000 rows (500 MB once decoded). So a row group is read in batches of as many
rows as `BATCH_BYTES` allows at its longest dictionary value or its mean row size
(`_batch_rows`), and every batch is cut into slices of at most `BATCH_BYTES` of text before any
copy is made (`_bounded`); a dictionary-encoded column is decoded slice by slice. A single
record is never cut: one record larger than the budget is one slice.

Bad input raises `CorpusError` naming the file and where: `shard.parquet: row group 3, row 17:
the text is null`, a missing or non-text column, invalid UTF-8, a file pyarrow cannot read.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import numpy as np

from workbench.engine.corpus.readers.meter import advance_share
from workbench.engine.corpus.readers.optional import require
from workbench.engine.errors import CorpusError

BATCH_ROWS = 8192  # at most this many rows per Parquet read inside a row group
BATCH_BYTES = 4 << 20  # text per Parquet read (estimated) and per slice handed on (exact)
# A chunk whose dictionary, repeated over its rows, could decode to more than this many times
# its own size is read at its longest value per row (see _batch_rows).
REPEAT_FACTOR = 8
READ_BUFFER = 1 << 20  # Parquet pages are read through a buffer of this size, not chunk-whole
BLOCK_BYTES = 2 << 20  # text per block handed to the counter (as scan_count's units)


def is_parquet(path: Path) -> bool:
    return path.name.lower().endswith(".parquet")


def is_arrow(path: Path) -> bool:
    return path.name.lower().endswith(".arrow")


def is_columnar(path: Path) -> bool:
    return is_parquet(path) or is_arrow(path)


def _pyarrow():
    pa = require("pyarrow", "parquet", "to read Parquet and Arrow files")
    require("pyarrow.compute", "parquet", "to read Parquet and Arrow files")  # pa.compute
    return pa


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()
    return text[0] if text else type(exc).__name__


def parquet_row_groups(path: Path) -> list[int]:
    """Uncompressed bytes of each row group of a Parquet file (the Dask planner's task sizes)."""
    pa = _pyarrow()
    pq = require("pyarrow.parquet", "parquet")
    try:
        meta = pq.ParquetFile(path).metadata
        return [meta.row_group(g).total_byte_size for g in range(meta.num_row_groups)]
    except (pa.ArrowException, OSError) as exc:
        raise CorpusError(str(path), f"not a readable Parquet file ({_first_line(exc)})") from None


def _text_column(path: Path, schema, column: str) -> int:
    names = list(schema.names)
    if column not in names:
        shown = ", ".join(names[:8]) + (", …" if len(names) > 8 else "")
        raise CorpusError(str(path), f'no column "{column}" (columns: {shown}); see --text-column')
    return names.index(column)


def _as_text(path: Path, array, where: str):
    """The array as string/large_string, or a CorpusError for any other type."""
    pa = _pyarrow()
    kind = array.type
    if pa.types.is_string(kind) or pa.types.is_large_string(kind):
        return array
    if hasattr(pa.types, "is_string_view") and pa.types.is_string_view(kind):
        return array.cast(pa.large_string())
    raise CorpusError(str(path), f"{where}: the text column holds {kind}, not strings")


def _parquet_arrays(path: Path, column: str, row_groups: list[int] | None):
    pa = _pyarrow()
    pq = require("pyarrow.parquet", "parquet")
    try:
        handle = pq.ParquetFile(path, buffer_size=READ_BUFFER)
    except (pa.ArrowException, OSError) as exc:
        raise CorpusError(str(path), f"not a readable Parquet file ({_first_line(exc)})") from None
    with handle:
        _text_column(path, handle.schema_arrow, column)
        groups = range(handle.num_row_groups) if row_groups is None else row_groups
        rows = sum(handle.metadata.row_group(g).num_rows for g in groups)
        read = 0
        for g in groups:
            first = 0
            try:
                size = _batch_rows(path, handle, g, column)
                batches = handle.iter_batches(size, row_groups=[g], columns=[column])
            except (pa.ArrowException, OSError) as exc:
                message = f"row group {g}: cannot read ({_first_line(exc)})"
                raise CorpusError(str(path), message) from None
            while True:
                try:
                    batch = next(batches, None)
                except (pa.ArrowException, OSError) as exc:
                    message = f"row group {g}: cannot read ({_first_line(exc)})"
                    raise CorpusError(str(path), message) from None
                if batch is None:
                    break
                read += batch.num_rows
                advance_share(read, rows)
                yield f"row group {g}, row", first, batch.column(0)
                first += batch.num_rows


def _batch_rows(path: Path, handle, group: int, column: str) -> int:
    """Rows per read of row group `group` so that a read decodes about `BATCH_BYTES`.

    The column chunk's mean bytes per row (its uncompressed size / rows) is right for plain
    pages. A dictionary value costs an index per row whatever its length, so a chunk whose
    longest value times its rows exceeds REPEAT_FACTOR times its size (a 100 KB value in 5,000
    rows of a 336-byte file) is read at that longest value per row; below the factor, a read
    of the mean's rows decodes at most REPEAT_FACTOR x BATCH_BYTES even if every row in it is
    the longest value.

    _batch_rows(.., 100 KB value x 2,500 rows, ..) -> 40; plain text of 600 bytes a row -> 6990."""
    meta = handle.metadata.row_group(group)
    rows = max(1, meta.num_rows)
    chunk = next(
        (
            meta.column(i)
            for i in range(meta.num_columns)
            if meta.column(i).path_in_schema == column
        ),
        None,
    )
    size = max(1, chunk.total_uncompressed_size if chunk is not None else meta.total_byte_size)
    per_row = size / rows
    if chunk is None or chunk.has_dictionary_page:
        longest = _longest_dictionary_value(path, group, column)
        if longest * rows > REPEAT_FACTOR * size:
            per_row = max(per_row, longest)
    return int(min(BATCH_ROWS, max(1, BATCH_BYTES // max(1, int(per_row)))))


def _longest_dictionary_value(path: Path, group: int, column: str) -> int:
    """Bytes of the longest value in the dictionary of `column`'s chunk in row group `group`
    (reads its dictionary page and one row, as a dictionary array; 0 if it has none)."""
    pa = _pyarrow()
    pq = require("pyarrow.parquet", "parquet")
    with pq.ParquetFile(path, read_dictionary=[column], buffer_size=READ_BUFFER) as handle:
        batch = next(handle.iter_batches(1, row_groups=[group], columns=[column]), None)
    if batch is None or not pa.types.is_dictionary(batch.column(0).type):
        return 0
    values = batch.column(0).dictionary
    if not len(values) or not _is_text_type(values.type):
        return 0
    return int(pa.compute.max(pa.compute.binary_length(values)).as_py() or 0)


def _is_text_type(kind) -> bool:
    pa = _pyarrow()
    view = getattr(pa.types, "is_string_view", lambda _: False)
    return bool(pa.types.is_string(kind) or pa.types.is_large_string(kind) or view(kind))


def _bounded(array, budget: int = BATCH_BYTES):
    """(first row, slice) of `array` cut into slices of at most `budget` bytes of text (a
    longer record alone), a dictionary array decoded slice by slice; other types as they are.

    Rows of 10, 10, 10 bytes with budget 20 -> (0, rows 0-1), (2, row 2)."""
    pa = _pyarrow()
    pc = pa.compute
    dictionary = pa.types.is_dictionary(array.type)
    values = array.dictionary if dictionary else array
    if not _is_text_type(values.type) or len(array) == 0:
        yield 0, array
        return
    lengths = pc.binary_length(values).fill_null(0).to_numpy(zero_copy_only=False)
    if dictionary:
        indices = array.indices.fill_null(0).to_numpy(zero_copy_only=False)
        lengths = lengths[indices] if len(lengths) else np.zeros(len(array), np.int64)
    ends = np.cumsum(lengths, dtype=np.int64)
    if ends[-1] <= budget and not dictionary:
        yield 0, array
        return
    start = 0
    while start < len(array):
        before = int(ends[start - 1]) if start else 0
        stop = max(start + 1, int(np.searchsorted(ends, before + budget, side="right")))
        piece = array.slice(start, stop - start)
        yield start, (piece.dictionary_decode() if dictionary else piece)
        start = stop


def _arrow_reader(path: Path):
    """(batches, schema, how far) over an Arrow IPC stream (as `save_to_disk` writes) or IPC
    file; `how far()` is (done, whole) after a batch: a stream's position in the mapped file,
    a file's batches read (it reads them by index, not in order on disk)."""
    pa = _pyarrow()
    try:
        source = pa.memory_map(str(path))
    except (pa.ArrowException, OSError) as exc:
        raise CorpusError(str(path), f"cannot read: {_first_line(exc)}") from None
    try:
        stream = pa.ipc.open_stream(source)
        return iter(stream), stream.schema, lambda: (source.tell(), source.size())
    except (pa.ArrowException, OSError):
        pass
    try:
        reader = pa.ipc.open_file(source)
    except (pa.ArrowException, OSError) as exc:
        source.close()
        raise CorpusError(str(path), f"not an Arrow IPC file ({_first_line(exc)})") from None
    count = reader.num_record_batches
    read = iter(range(1, count + 1))  # how_far is asked once per batch
    batches = (reader.get_batch(i) for i in range(count))
    return batches, reader.schema, lambda: (next(read, count), count)


def _arrow_arrays(path: Path, column: str):
    pa = _pyarrow()
    batches, schema, how_far = _arrow_reader(path)
    index = _text_column(path, schema, column)
    first = 0
    while True:
        try:
            batch = next(batches, None)
        except (pa.ArrowException, OSError) as exc:
            raise CorpusError(str(path), f"row {first}: cannot read ({_first_line(exc)})") from None
        if batch is None:
            return
        advance_share(*how_far())
        yield "row", first, batch.column(index)
        first += batch.num_rows


def text_arrays(path: Path, column: str, row_groups: list[int] | None = None):
    """(where, first row, string array) of each batch of the text column, in file order.

    Nulls raise CorpusError naming the first null row (a record with no text is a bad record,
    as a JSONL line without its text field is)."""
    arrays = (
        _parquet_arrays(path, column, row_groups)
        if is_parquet(path)
        else _arrow_arrays(path, column)
    )
    for where, batch_first, batch in arrays:
        for offset, array in _bounded(batch):
            first = batch_first + offset
            array = _as_text(path, array, f"{where} {first}")
            if array.null_count:
                row = first + int(np.flatnonzero(~np.asarray(array.is_valid()))[0])
                raise CorpusError(str(path), f"{where} {row}: the text is null")
            yield where, first, array


def _utf8_block(array) -> tuple[bytes, np.ndarray]:
    """The array's text as one bytes object and len+1 document offsets starting at 0."""
    _, offsets_buffer, data_buffer = array.buffers()
    pa = _pyarrow()
    width = np.int64 if pa.types.is_large_string(array.type) else np.int32
    offsets = np.frombuffer(offsets_buffer, dtype=width)[
        array.offset : array.offset + len(array) + 1
    ]
    offsets = offsets.astype(np.int64)
    start, end = int(offsets[0]), int(offsets[-1])
    data = bytes(memoryview(data_buffer)[start:end]) if data_buffer is not None else b""
    # a hand-made file can hold any offsets: they index the counter's buffer, so check them
    if start < 0 or end - start != len(data) or np.any(np.diff(offsets) < 0):
        raise ValueError("offsets out of order or past the end of the data")
    return data, offsets - start


def _check_utf8(path: Path, data: bytes, offsets: np.ndarray, where: str, first: int) -> None:
    try:
        data.decode("utf-8")
    except UnicodeDecodeError as exc:
        row = first + int(np.searchsorted(offsets, exc.start, side="right")) - 1
        message = f"{where} {row}: invalid UTF-8 (byte 0x{data[exc.start]:02X})"
        raise CorpusError(str(path), message) from None


def text_blocks(
    path: Path, column: str, row_groups: list[int] | None = None, block_bytes: int = BLOCK_BYTES
) -> Iterator[tuple[bytes, np.ndarray]]:
    """(UTF-8 bytes, document offsets) of consecutive records, about `block_bytes` at a time.

    Example: records "ab", "c" -> (b"abc", [0, 2, 3])."""
    parts: list[bytes] = []
    edges: list[np.ndarray] = []
    size = 0
    for where, first, array in text_arrays(path, column, row_groups):
        try:
            data, offsets = _utf8_block(array)
        except ValueError as exc:
            raise CorpusError(
                str(path), f"{where} {first}: malformed text column ({exc})"
            ) from None
        _check_utf8(path, data, offsets, where, first)
        parts.append(data)
        edges.append(offsets[1:] + size)
        size += len(data)
        if size >= block_bytes:
            yield _joined(parts, edges)
            parts, edges, size = [], [], 0
    if parts:
        yield _joined(parts, edges)


def _joined(parts: list[bytes], edges: list[np.ndarray]) -> tuple[bytes, np.ndarray]:
    offsets = np.concatenate([np.zeros(1, np.int64), *edges])
    return b"".join(parts), offsets


def record_texts(path: Path, column: str) -> Iterator[str]:
    """Each record's text as a string (the regex pre-tokenizer's path)."""
    for data, offsets in text_blocks(path, column):
        text_edges = offsets.tolist()
        for a, b in zip(text_edges[:-1], text_edges[1:], strict=True):
            yield data[a:b].decode("utf-8")
