"""Turn a merge-list search into one SQL query, fast enough to run on every keystroke.

Filters combine with AND. Text is a case-insensitive substring of the readable form (typed
spaces become `·`, so " the" finds `·the`); with three or more characters it goes through the
trigram index, shorter text scans (a one- or two-letter query matches so much that the first
page fills at once). Regex runs on the real text of each token (a space is a space, so `\\sthe`
and ` the` both find ` the`; a byte that is not a whole character is a lone surrogate no ordinary
pattern matches), in Python over a cached list of the run's texts (a SQL function costs ~1 us a
row, too slow for a rare match in 200,000), chunk by chunk in rank order until the page is full;
stdlib `re` when the pattern compiles there (3x faster), else the `regex` module (so `\\p{L}`
works). Hex matches raw token bytes. Ranges are inclusive `(low, high)`, either end may be None.

Order: `rank` or `newest` (keyset paging with `after_rank`, the last rank shown, or offset), or
a sort by `count`, `length` or `token` (bytes), ascending or with a leading `-` descending, ties
in rank order (offset paging): the sort is SQLite's, so a page costs one query, never a load of
the whole run.
"""

from __future__ import annotations

import functools
import json
import re
from collections.abc import Iterator, Sequence
from dataclasses import dataclass

import regex

from workbench.store.errors import StoreError
from workbench.store.models import MERGE_COLUMNS
from workbench.store.readable import readable_query
from workbench.store.schema import FTS_RANK_BITS

Range = tuple[int | None, int | None]
KEYSET_ORDERS = ("rank", "newest")
SORT_KEYS = {"rank": "m.rank", "count": "m.count", "length": "m.length", "token": "m.token"}
ORDERS = (*KEYSET_ORDERS, *SORT_KEYS, *(f"-{key}" for key in SORT_KEYS))
_TRIGRAM = 3
REGEX_CHUNK = 8192


@dataclass(frozen=True, slots=True)
class SearchQuery:
    """What the search box and filter fields ask for; every field is optional."""

    text: str | None = None
    regex: str | None = None
    hex: str | None = None
    rank_range: Range | None = None
    id_range: Range | None = None
    count_range: Range | None = None
    length_range: Range | None = None
    case_sensitive: bool = False
    order: str = "rank"


def parse_hex(text: str) -> bytes:
    """ "e2 80 99", "E28099", "0xe2,0x80" or "<E2><80>" -> the bytes; raises StoreError."""
    cleaned = re.sub(r"0[xX]|[\s,<>]", "", text)
    if len(cleaned) % 2 or not re.fullmatch(r"[0-9a-fA-F]*", cleaned):
        raise StoreError(f"not a hex byte string: {text!r} (write bytes like 'e2 80 99')")
    return bytes.fromhex(cleaned)


@functools.lru_cache(maxsize=32)
def compile_regex(pattern: str) -> re.Pattern[str] | regex.Pattern:
    try:
        return re.compile(pattern)
    except (re.error, FutureWarning):
        pass
    try:
        return regex.compile(pattern)
    except regex.error as exc:
        raise StoreError(f"the search regex does not compile: {exc}") from None


def regex_candidates(
    texts: Sequence[str], pattern: str, ranks: range, chunk: int = REGEX_CHUNK
) -> Iterator[list[int]]:
    """Ranks (walked in `ranks` order) whose text matches, a chunk at a time.

    regex_candidates(["ab", "b", "ba"], "^b", range(3)) yields [1, 2].
    """
    search = compile_regex(pattern).search
    for start in range(0, len(ranks), chunk):
        found = [r for r in ranks[start : start + chunk] if search(texts[r])]
        if found:
            yield found


def _like_escape(text: str) -> str:
    return text.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")


def _fts_phrase(text: str) -> str:
    """A literal FTS5 phrase: quoted, inner quotes doubled."""
    return '"' + text.replace('"', '""') + '"'


class _Sql:
    """Accumulates the FROM, WHERE and ORDER BY of one search query."""

    def __init__(self, run_id: int) -> None:
        self.source = "merges m"
        self.where = ["m.run_id = ?"]
        self.params: list[object] = [run_id]
        self.source_params: list[object] = []
        self.order_key = "m.rank"

    def add(self, condition: str, *params: object) -> None:
        self.where.append(condition)
        self.params.extend(params)

    def add_range(self, column: str, bounds: Range | None) -> None:
        if bounds is None:
            return
        low, high = bounds
        if low is not None:
            self.add(f"{column} >= ?", int(low))
        if high is not None:
            self.add(f"{column} <= ?", int(high))


def _add_text(sql: _Sql, run_id: int, q: SearchQuery, use_fts: bool) -> None:
    assert q.text
    text = readable_query(q.text)
    if use_fts and len(text) >= _TRIGRAM:
        # Drive the query from the index, restricted to this run's rowid block (and the rank
        # range when given), walking rowids in rank order so LIMIT stops early.
        base = run_id << FTS_RANK_BITS
        low, high = q.rank_range or (None, None)
        low = max(0, low or 0)
        high = (1 << FTS_RANK_BITS) - 1 if high is None else min(high, (1 << FTS_RANK_BITS) - 1)
        sql.source = "merges_fts f JOIN merges m ON m.run_id = ? AND m.rank = f.rowid - ?"
        sql.source_params = [run_id, base]
        sql.add("merges_fts MATCH ?", _fts_phrase(text))
        sql.add("f.rowid BETWEEN ? AND ?", base + low, base + high)
        sql.order_key = "f.rowid"
        if q.case_sensitive:
            sql.add("instr(m.readable, ?) > 0", text)
    elif q.case_sensitive:
        sql.add("instr(m.readable, ?) > 0", text)
    else:
        sql.add("m.readable LIKE ? ESCAPE '\\'", f"%{_like_escape(text)}%")


def build(
    run_id: int,
    q: SearchQuery,
    *,
    use_fts: bool,
    after_rank: int | None = None,
) -> _Sql:
    """The query parts for `q`, validated (bad regex, hex or order raise StoreError)."""
    if q.order not in ORDERS:
        raise StoreError(f"unknown order {q.order!r}; choose one of {', '.join(ORDERS)}")
    sql = _Sql(run_id)
    if q.text:
        _add_text(sql, run_id, q, use_fts)
    if q.regex:
        compile_regex(q.regex)  # raise now; the caller supplies candidates (`restrict_to`)
    if q.hex:
        needle = parse_hex(q.hex)
        if needle:
            sql.add("instr(m.token, ?) > 0", needle)
    sql.add_range("m.rank", q.rank_range)
    if q.order not in KEYSET_ORDERS and q.rank_range is None and sql.source == "merges m":
        # A sort reads the whole run: through the primary key (run_id, rank) that is one
        # sequential walk; left to itself the planner takes `merges_by_right (run_id)` and
        # looks every row up out of order, ten times slower (650 ms vs 63 ms at 200k merges).
        sql.add("m.rank >= 0")
    sql.add_range("m.new_id", q.id_range)
    sql.add_range("m.count", q.count_range)
    sql.add_range("m.length", q.length_range)
    if after_rank is not None:
        if q.order not in KEYSET_ORDERS:
            raise StoreError(f"order {q.order!r} pages by offset, not after_rank")
        sql.add("m.rank > ?" if q.order == "rank" else "m.rank < ?", after_rank)
    return sql


def restrict_to(sql: _Sql, ranks: list[int]) -> _Sql:
    """A copy of `sql` limited to the given ranks (a regex chunk's candidates)."""
    out = _Sql.__new__(_Sql)
    out.source, out.order_key, out.source_params = sql.source, sql.order_key, sql.source_params
    out.where = [*sql.where, "m.rank IN (SELECT value FROM json_each(?))"]
    out.params = [*sql.params, json.dumps(ranks)]
    return out


def rank_span(q: SearchQuery, after_rank: int | None, stored: int) -> range:
    """The ranks a scan must visit, in the query's order (rank order for a sort)."""
    low, high = q.rank_range or (None, None)
    low = 0 if low is None else max(0, low)
    high = stored - 1 if high is None else min(high, stored - 1)
    if after_rank is not None:
        if q.order == "rank":
            low = max(low, after_rank + 1)
        else:
            high = min(high, after_rank - 1)
    if q.order == "newest":
        return range(high, low - 1, -1)
    return range(low, high + 1)


def order_clause(sql: _Sql, order: str) -> str:
    """ORDER BY for an order name: order_clause(sql, "-count") -> "m.count DESC, m.rank ASC"."""
    if order in KEYSET_ORDERS:
        return f"{sql.order_key} {'ASC' if order == 'rank' else 'DESC'}"
    key = order.lstrip("-")
    direction = "DESC" if order.startswith("-") else "ASC"
    if key == "rank":
        return f"m.rank {direction}"
    return f"{SORT_KEYS[key]} {direction}, m.rank ASC"


def select_sql(sql: _Sql, order: str, limit: int, offset: int) -> tuple[str, list[object]]:
    columns = ", ".join(f"m.{c.strip()}" for c in MERGE_COLUMNS.split(","))
    where = " AND ".join(sql.where)
    if order not in KEYSET_ORDERS:
        # Sort only (key, rank) pairs, then read the page's rows: a sort that carries every
        # column (token, readable) past a deep offset costs seconds at 200k merges.
        key = order_clause(sql, order)
        text = (
            f"SELECT {columns} FROM merges m JOIN (SELECT m.rank AS page_rank FROM {sql.source}"
            f" WHERE {where} ORDER BY {key} LIMIT ? OFFSET ?) p"
            f" ON m.run_id = ? AND m.rank = p.page_rank ORDER BY {key}"
        )
        return text, [*sql.source_params, *sql.params, limit, offset, sql.params[0]]
    text = (
        f"SELECT {columns} FROM {sql.source} WHERE {where} "
        f"ORDER BY {order_clause(sql, order)} LIMIT ? OFFSET ?"
    )
    return text, [*sql.source_params, *sql.params, limit, offset]


def count_sql(sql: _Sql) -> tuple[str, list[object]]:
    text = f"SELECT count(*) FROM {sql.source} WHERE {' AND '.join(sql.where)}"
    return text, [*sql.source_params, *sql.params]
