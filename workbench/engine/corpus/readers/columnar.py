"""Parquet and Arrow IPC files: each record a document, its text in one string column.

Parquet is streamed row group by row group (and batch by batch inside one), never loaded whole;
an Arrow file (`.arrow`, the IPC stream format `datasets.save_to_disk` writes, or the IPC file
format) batch by batch from a memory map. The text column's UTF-8 buffer goes to the counter as
it is (one bytes object + document offsets), with no Python string per record.

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

BATCH_ROWS = 8192  # rows per Parquet read inside a row group
BLOCK_BYTES = 2 << 20  # text per block handed to the counter (as scan_count's units)


def is_parquet(path: Path) -> bool:
    return path.name.lower().endswith(".parquet")


def is_arrow(path: Path) -> bool:
    return path.name.lower().endswith(".arrow")


def is_columnar(path: Path) -> bool:
    return is_parquet(path) or is_arrow(path)


def _pyarrow():
    return require("pyarrow", "parquet", "to read Parquet and Arrow files")


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
        handle = pq.ParquetFile(path)
    except (pa.ArrowException, OSError) as exc:
        raise CorpusError(str(path), f"not a readable Parquet file ({_first_line(exc)})") from None
    with handle:
        _text_column(path, handle.schema_arrow, column)
        groups = range(handle.num_row_groups) if row_groups is None else row_groups
        rows = sum(handle.metadata.row_group(g).num_rows for g in groups)
        read = 0
        for g in groups:
            first = 0
            batches = handle.iter_batches(BATCH_ROWS, row_groups=[g], columns=[column])
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
    for where, first, array in arrays:
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
