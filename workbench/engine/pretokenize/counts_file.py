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
_MAX_META_TEXT = 1 << 16  # a pattern, a special token or a field name longer is not ours


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
    except (pa.ArrowException, OSError, UnicodeDecodeError):
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
    except (pa.ArrowException, OSError, UnicodeDecodeError) as exc:
        line = (str(exc).strip().splitlines() or [type(exc).__name__])[0]
        raise CountsFileError(where, f"not a readable counts file ({line})") from None
    raw = (table.schema.metadata or {}).get(KEY)
    if raw is None:
        raise CountsFileError(where, "a Parquet file, but not a bpe-workbench counts file")
    try:
        meta = json.loads(raw)
    except (ValueError, RecursionError):  # RecursionError: '[[[[...' nested very deep
        raise CountsFileError(where, "its counts metadata is not valid JSON") from None
    meta = _checked_meta(where, meta)
    try:
        names = table.column_names
    except UnicodeDecodeError:  # a damaged footer's column name
        raise CountsFileError(where, "a column name is not UTF-8") from None
    if names != ["piece", "count"]:
        raise CountsFileError(where, f"expected columns piece, count; found {names}"[:200])
    return _checked_table(where, table), meta


def _checked_meta(where: str, meta: object) -> dict:
    """The metadata if every field has the type and form this app writes; else one line.

    `{"version": 1, "pattern": "...", "specials": [...], "stats": {...}, "fingerprint": "ab12..",
    "unicode": "regex 2024.11.6", ...}`: a bare string for `specials` would be taken letter by
    letter, a number for `pattern` would fail far from here, so each is refused now."""
    if not isinstance(meta, dict):
        raise CountsFileError(where, "its counts metadata is not a JSON object")
    if meta.get("version") != FORMAT_VERSION or type(meta.get("version")) is not int:
        raise CountsFileError(
            where, f"unknown counts file version {str(meta.get('version'))[:40]!r}"
        )
    for key in ("pattern", "specials", "stats", "fingerprint", "unicode"):
        if key not in meta:
            raise CountsFileError(where, f"its counts metadata has no {key!r}")
    pattern = meta["pattern"]
    if type(pattern) is not str or not pattern or len(pattern) > _MAX_META_TEXT:
        raise CountsFileError(where, "its pattern is not a pattern string")
    try:
        regex.compile(pattern)
    except (regex.error, RecursionError, OverflowError):
        raise CountsFileError(where, "its pattern is not a valid regular expression") from None
    specials = meta["specials"]
    if (
        not isinstance(specials, list)
        or not all(type(t) is str and t and len(t) <= _MAX_META_TEXT for t in specials)
        or len(set(specials)) != len(specials)
    ):
        raise CountsFileError(where, "its special tokens are not a list of distinct strings")
    fingerprint = meta["fingerprint"]
    if type(fingerprint) is not str or not regex.fullmatch(r"[0-9a-f]{8,128}", fingerprint):
        raise CountsFileError(where, "its fingerprint is not a hex digest")
    _check_unicode(where, meta["unicode"])
    _check_stats(where, meta["stats"])
    for key in ("text_column", "jsonl_field"):
        if key in meta and (type(meta[key]) is not str or len(meta[key]) > _MAX_META_TEXT):
            raise CountsFileError(where, f"its {key} is not a string")
    inputs = meta.get("inputs", [])
    if not isinstance(inputs, list) or not all(type(i) is str for i in inputs):
        raise CountsFileError(where, "its inputs are not a list of names")
    return meta


def _check_unicode(where: str, value: object) -> None:
    """Counts made with other Unicode tables split text differently from this install's."""
    if type(value) is not str or not regex.fullmatch(r"regex [0-9][0-9A-Za-z.+-]{0,40}", value):
        raise CountsFileError(where, "its Unicode version is not one this app writes")
    if value != unicode_version():
        raise CountsFileError(
            where,
            f"counted with the Unicode tables of {value}, this install has {unicode_version()};"
            " count again here (or install that regex version)",
        )


def _check_stats(where: str, stats: object) -> None:
    if not isinstance(stats, dict):
        raise CountsFileError(where, "its corpus statistics are not a JSON object")
    for key in ("files", "documents", "bytes", "pieces", "unique_pieces"):
        value = stats.get(key, 0)
        if type(value) is not int or not 0 <= value < 2**63:
            raise CountsFileError(where, f"its statistic {key!r} is not a count")
    skipped = stats.get("skipped", [])
    if not isinstance(skipped, list) or not all(type(s) is str for s in skipped):
        raise CountsFileError(where, "its list of skipped files is not a list of strings")


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
    words = WordTable.from_arrays(buf.copy(), offsets - start, counts.to_numpy())
    check_totals(where, [words])
    return words


def _exact_total(counts: np.ndarray, weights: np.ndarray) -> int:
    """sum(counts * weights) as an exact Python int, never wrapping at 64 bits.

    _exact_total([2**62, 2**62], [1, 1]) == 2**63. A float estimate settles nearly every file;
    only totals near the limit are summed exactly, in 32-bit halves (each product fits)."""
    estimate = float(np.dot(counts.astype(np.float64), weights.astype(np.float64)))
    if estimate < 2.0**61:
        return int(np.dot(counts, weights))  # far below the limit: int64 cannot wrap here
    high, low = counts >> 32, counts & 0xFFFFFFFF
    return sum(
        (int(h) * int(w) << 32) + int(lo) * int(w)
        for h, lo, w in zip(high.tolist(), low.tolist(), weights.tolist(), strict=True)
    )


def check_totals(where: str, tables: Sequence[WordTable]) -> None:
    """Refuse counts whose bytes, summed over `tables`, reach 2**63: the trainer's pair counts,
    the corpus's token count and a merge's sums are at most that, and int64 would wrap to a
    negative count ("compression -8.000 bytes/token"). Summing counts files checks them
    together, since each may be within the limit and their sum not."""
    total = sum(_exact_total(t.counts, np.diff(t.offsets)) for t in tables)
    if total >= 2**63:
        whose = "its counts" if len(tables) == 1 else "its counts with those before it"
        raise CountsFileError(where, f"{whose} overflow 64 bits ({total:,} bytes in all)")


def read_meta(path: str | os.PathLike) -> dict:
    """The metadata of a counts file (reads only the footer)."""
    pa, pq = _arrow()
    try:
        raw = (pq.read_schema(path).metadata or {}).get(KEY)
    except (pa.ArrowException, OSError, UnicodeDecodeError) as exc:
        raise CountsFileError(str(path), f"not a readable counts file ({exc})") from None
    if raw is None:
        raise CountsFileError(str(path), "a Parquet file, but not a bpe-workbench counts file")
    try:
        meta = json.loads(raw)
    except (ValueError, RecursionError):
        raise CountsFileError(str(path), "its counts metadata is not valid JSON") from None
    return _checked_meta(str(path), meta)


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
        tables.append(words)
        metas.append(meta)
        if len(tables) > 1:  # names the file whose counts push the sum past 64 bits
            check_totals(str(path), tables)
    arrays = [(w.data, w.offsets, w.counts) for w in tables]
    merged = WordTable.from_arrays(*scanner.merge_count_tables(arrays))
    first = metas[0]
    stats = CorpusStats(
        files=sum(m["stats"].get("files", 0) for m in metas),
        documents=sum(m["stats"].get("documents", 0) for m in metas),
        skipped=[s for m in metas for s in m["stats"].get("skipped", [])],
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
