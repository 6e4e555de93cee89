"""The counts file: a corpus's word table (piece bytes, int64 count) in Parquet, with what it
was counted with, so training can start from it anywhere and counts made apart can be summed.

    write_counts(result, config, "counts.parquet", inputs)   # after count_corpus
    read_counts("counts.parquet", expected_pattern=..., expected_specials=...)  # -> as count_corpus
    merge_counts(["a.parquet", "b.parquet"], "all.parquet")

Columns `piece` (large_binary) and `count` (int64), rows sorted by piece bytes, so the same
counts always make the same file. The schema metadata key `bpe_workbench.counts` holds JSON:
the pattern (resolved string), the special tokens, the corpus statistics that do not depend on
the tie-break (files, documents, bytes, pieces, unique pieces, files skipped), a fingerprint of
the inputs, the inputs, and the Unicode tables' version (the `regex` package's, which fixes them).
Reading checks every row before the table reaches a kernel: pieces non-empty and unique, counts
positive. Writes go to a temporary file, then a rename. Needs pyarrow (`bpe-workbench[parquet]`).
"""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Iterable, Sequence
from pathlib import Path

import numpy as np
import regex

from workbench.engine.config import TrainConfig
from workbench.engine.corpus.readers import urls
from workbench.engine.corpus.readers.optional import require
from workbench.engine.errors import CorpusError, WorkbenchError
from workbench.engine.patterns.regexes import preset_name
from workbench.engine.pretokenize.results import CorpusStats, PretokenizeResult
from workbench.engine.pretokenize.words import WordTable

KEY = b"bpe_workbench.counts"
FORMAT_VERSION = 1
STAT_FIELDS = ("files", "documents", "skipped")  # bytes, pieces, unique: from the table itself


class CountsFileError(CorpusError):
    """A counts file that cannot be read or does not fit the settings asked for."""


def unicode_version() -> str:
    """What fixes the pre-tokenizer's Unicode classes: the `regex` package's version."""
    return f"regex {regex.__version__}"


def _arrow():
    pa = require("pyarrow", "parquet", "for counts files")
    pq = require("pyarrow.parquet", "parquet", "for counts files")
    require("pyarrow.compute", "parquet", "for counts files")  # pa.compute from here on
    return pa, pq


def is_counts_file(path: str | os.PathLike) -> bool:
    """A `.parquet` file whose schema says it is a counts file (cheap: reads the footer)."""
    path = Path(path)
    if not path.name.lower().endswith(".parquet") or not path.is_file():
        return False
    pa, pq = _arrow()
    try:
        metadata = pq.read_schema(path).metadata or {}
    except (pa.ArrowException, OSError):
        return False  # not readable as Parquet: the corpus reader will say so
    return KEY in metadata


def counts_path(paths: Sequence[str | os.PathLike]) -> Path | None:
    """The counts file when `paths` names exactly one, else None (a corpus to count)."""
    if len(paths) != 1 or not str(paths[0]).lower().endswith(".parquet"):
        return None
    return Path(paths[0]) if is_counts_file(paths[0]) else None


def write_counts(
    result: PretokenizeResult,
    config: TrainConfig,
    out: str | os.PathLike,
    inputs: Iterable[str | os.PathLike] = (),
    fingerprint: str | None = None,
) -> Path:
    """Write `result`'s word table and metadata to `out` atomically; the path written."""
    from workbench.engine.corpus.identity import fingerprint as files_fingerprint

    meta = {
        "format": "bpe-workbench counts",
        "version": FORMAT_VERSION,
        "pattern": config.pattern_string,
        "specials": list(config.special_tokens),
        "text_column": config.text_column,
        "jsonl_field": config.jsonl_field,
        "stats": {
            "files": result.stats.files,
            "documents": result.stats.documents,
            "bytes": result.stats.bytes,
            "pieces": result.stats.pieces,
            "unique_pieces": result.stats.unique_pieces,
            "skipped": list(result.stats.skipped),
        },
        "fingerprint": fingerprint or files_fingerprint(result.files),
        "inputs": [urls.input_name(p) for p in inputs],
        "unicode": unicode_version(),
    }
    return _write(result.words, meta, Path(out))


def _write(words: WordTable, meta: dict, out: Path) -> Path:
    pa, pq = _arrow()
    n = len(words)
    pieces = pa.LargeBinaryArray.from_buffers(
        pa.large_binary(), n, [None, pa.py_buffer(words.offsets), pa.py_buffer(words.data)]
    )
    table = pa.table({"piece": pieces, "count": pa.array(words.counts, pa.int64())})
    table = table.take(pa.compute.sort_indices(table, sort_keys=[("piece", "ascending")]))
    table = table.replace_schema_metadata({KEY: json.dumps(meta, sort_keys=True).encode()})
    out.parent.mkdir(parents=True, exist_ok=True)
    temp = out.with_name(f".{out.name}.{os.getpid()}.tmp")
    try:
        pq.write_table(table, temp, compression="zstd")
        os.replace(temp, out)
    except BaseException:
        temp.unlink(missing_ok=True)
        raise
    return out


def _load(path: Path) -> tuple[WordTable, dict]:
    """The checked word table and metadata of a counts file."""
    pa, pq = _arrow()
    where = str(path)
    try:
        table = pq.read_table(path)
    except (pa.ArrowException, OSError) as exc:
        line = (str(exc).strip().splitlines() or [type(exc).__name__])[0]
        raise CountsFileError(where, f"not a readable counts file ({line})") from None
    raw = (table.schema.metadata or {}).get(KEY)
    if raw is None:
        raise CountsFileError(where, "a Parquet file, but not a bpe-workbench counts file")
    try:
        meta = json.loads(raw)
    except ValueError:
        raise CountsFileError(where, "its counts metadata is not valid JSON") from None
    if not isinstance(meta, dict) or meta.get("version") != FORMAT_VERSION:
        raise CountsFileError(where, f"unknown counts file version {meta.get('version')!r}")
    if table.column_names != ["piece", "count"]:
        raise CountsFileError(where, f"expected columns piece, count; found {table.column_names}")
    return _checked_table(where, table), meta


def _checked_table(where: str, table) -> WordTable:
    pa, _ = _arrow()
    pc = pa.compute
    pieces, counts = table.column("piece"), table.column("count")
    if not pa.types.is_int64(counts.type) or not (
        pa.types.is_binary(pieces.type) or pa.types.is_large_binary(pieces.type)
    ):
        raise CountsFileError(
            where, f"column types {pieces.type}, {counts.type}; expected binary, int64"
        )
    if pieces.null_count or counts.null_count:
        raise CountsFileError(where, "a piece or a count is missing (null)")
    if len(table) and pc.min(counts).as_py() < 1:
        raise CountsFileError(where, "a count is below 1")
    if len(table) and pc.min(pc.binary_length(pieces)).as_py() < 1:
        raise CountsFileError(where, "a piece is empty")
    if len(pc.unique(pieces)) != len(table):
        raise CountsFileError(where, "a piece is listed twice")
    array = pieces.combine_chunks().cast(pa.large_binary())
    _, offsets, data = array.buffers()
    offsets = np.frombuffer(offsets, np.int64)[array.offset : array.offset + len(array) + 1]
    start = int(offsets[0]) if len(offsets) else 0
    end = int(offsets[-1]) if len(offsets) else 0
    buf = np.frombuffer(data, np.uint8)[start:end] if data is not None else np.empty(0, np.uint8)
    return WordTable.from_arrays(buf.copy(), offsets - start, counts.to_numpy())


def read_meta(path: str | os.PathLike) -> dict:
    """The metadata of a counts file (reads only the footer)."""
    pa, pq = _arrow()
    try:
        raw = (pq.read_schema(path).metadata or {}).get(KEY)
    except (pa.ArrowException, OSError) as exc:
        raise CountsFileError(str(path), f"not a readable counts file ({exc})") from None
    if raw is None:
        raise CountsFileError(str(path), "a Parquet file, but not a bpe-workbench counts file")
    return json.loads(raw)


def _check_settings(where: str, meta: dict, pattern: str | None, specials: Iterable[str] | None):
    if pattern is not None and meta.get("pattern") != pattern:
        theirs = preset_name(meta.get("pattern", "")) or repr(meta.get("pattern"))
        ours = preset_name(pattern) or repr(pattern)
        raise CountsFileError(
            where, f"counted with pattern {theirs}, but {ours} is asked for: count again"
        )
    if specials is not None and set(meta.get("specials", [])) != set(specials):
        theirs = ", ".join(meta.get("specials", [])) or "none"
        ours = ", ".join(specials) or "none"
        raise CountsFileError(
            where, f"counted with special tokens [{theirs}], but [{ours}] are asked for"
        )


def _result(words: WordTable, stats: CorpusStats, files: list[Path]) -> PretokenizeResult:
    stats.pieces = words.total_pieces
    stats.unique_pieces = len(words)
    stats.bytes = words.total_bytes
    return PretokenizeResult(words, stats, files)


def read_counts(
    path: str | os.PathLike,
    expected_pattern: str | None = None,
    expected_specials: Iterable[str] | None = None,
) -> PretokenizeResult:
    """A counts file as `count_corpus` returns a corpus (words, stats, files = [the file]).

    `expected_pattern` (a resolved pattern string) and `expected_specials`, when given, must be
    what the file was counted with, or CountsFileError says which differs."""
    path = Path(path)
    words, meta = _load(path)
    _check_settings(str(path), meta, expected_pattern, expected_specials)
    if len(words) == 0:
        raise CountsFileError(str(path), "the counts file holds no pieces to train on")
    saved = meta.get("stats", {})
    stats = CorpusStats(
        files=int(saved.get("files", 0)),
        documents=int(saved.get("documents", 0)),
        skipped=[str(s) for s in saved.get("skipped", [])],
    )
    return _result(words, stats, [path])


def merge_counts(paths: Sequence[str | os.PathLike], out: str | os.PathLike) -> PretokenizeResult:
    """Sum counts files into one at `out`; they must share a pattern and special tokens."""
    if not paths:
        raise WorkbenchError("no counts files to merge")
    from workbench.engine.pretokenize import scan as scanner

    tables, metas = [], []
    for path in paths:
        words, meta = _load(Path(path))
        if metas:
            _check_settings(str(path), meta, metas[0]["pattern"], metas[0]["specials"])
        tables.append((words.data, words.offsets, words.counts))
        metas.append(meta)
    merged = WordTable.from_arrays(*scanner.merge_count_tables(tables))
    first = metas[0]
    stats = CorpusStats(
        files=sum(m["stats"]["files"] for m in metas),
        documents=sum(m["stats"]["documents"] for m in metas),
        skipped=[s for m in metas for s in m["stats"]["skipped"]],
    )
    result = _result(merged, stats, [Path(p) for p in paths])
    meta = dict(first)
    meta["stats"] = {
        "files": stats.files,
        "documents": stats.documents,
        "bytes": result.stats.bytes,
        "pieces": result.stats.pieces,
        "unique_pieces": result.stats.unique_pieces,
        "skipped": stats.skipped,
    }
    meta["inputs"] = [i for m in metas for i in m.get("inputs", [])]
    joined = "\n".join(m.get("fingerprint", "") for m in metas)
    meta["fingerprint"] = hashlib.sha256(joined.encode()).hexdigest()[:32]
    _write(merged, meta, Path(out))
    return result
