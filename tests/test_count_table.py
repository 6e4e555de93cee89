"""The scanner's count table at the edges of its slot layout.

Pieces of up to 7 bytes are keyed by their bytes and length; longer ones by their length (capped
at 255), 8 hash bits and their place in the arena, with counts kept in the slots and gathered at
the end. These tests file pieces directly (`merge_count_tables`, `CountTable`), so they also
cover pieces the scanner never makes (empty, NUL-only, invalid UTF-8), and check every result
against a plain dict.
"""

from __future__ import annotations

import random
from collections import Counter

import numpy as np
import regex
from workbench.engine.patterns.regexes import PRESETS
from workbench.engine.pretokenize.scan.fold import CountTable

from workbench.engine.pretokenize import scan as scanner

Table = tuple[np.ndarray, np.ndarray, np.ndarray]


def make_table(pieces: list[bytes], counts: list[int] | None = None) -> Table:
    """A (buf, offsets, counts) table of `pieces` (repeats allowed) with `counts` (default 1s)."""
    buf = np.frombuffer(b"".join(pieces), dtype=np.uint8)
    offsets = np.zeros(len(pieces) + 1, dtype=np.int64)
    offsets[1:] = np.cumsum([len(p) for p in pieces])
    weights = np.array(counts if counts is not None else [1] * len(pieces), dtype=np.int64)
    return buf, offsets, weights


def as_list(table: Table) -> list[tuple[bytes, int]]:
    """The table's (piece, count) pairs in its order."""
    buf, offsets, counts = table
    raw = buf.tobytes()
    edges = offsets.tolist()
    return [(raw[edges[k] : edges[k + 1]], int(c)) for k, c in enumerate(counts.tolist())]


def reference(tables: list[Table]) -> list[tuple[bytes, int]]:
    """Pieces in order of first occurrence over the tables, counts summed (a dict keeps order)."""
    total: dict[bytes, int] = {}
    for table in tables:
        for piece, count in as_list(table):
            total[piece] = total.get(piece, 0) + count
    return list(total.items())


EDGES = [
    b"",
    b"\x00",
    b"\x00" * 6,
    b"\x00" * 7,
    b"\x00" * 8,
    b"\x00" * 9,
    b"a",
    b"a\x00",
    b"abcdefg",  # 7 bytes: the longest piece keyed by its bytes
    b"abcdefg\x00",
    b"abcdefg\x08",  # its last byte equals the 7-byte key's length tag
    b"abcdefg\xff",  # its last byte equals the long pieces' tag
    b"abcdefgh",
    b"abcdefghi",
    b"abcdefgh\x00",
    b"\xff" * 7,
    b"\xff" * 8,
    b"\xff" * 16,
    b"abcdefghijklmnop",  # 16 bytes: the longest compared as two words
    b"abcdefghijklmnopq",
    b"abcdefghijklmnoq",
    b"x" * 254,
    b"x" * 255,  # the key's length field is capped here: told apart by the arena offsets
    b"x" * 256,
    b"x" * 511,
    b"y" + b"x" * 510,
]


def test_edge_pieces_keep_their_own_counts_in_order() -> None:
    counts = [k + 1 for k in range(len(EDGES))]
    table = make_table(EDGES, counts)
    merged = scanner.merge_count_tables([table, table])
    assert as_list(merged) == [(p, 2 * c) for p, c in zip(EDGES, counts, strict=True)]


def test_repeats_within_one_table_and_large_weights() -> None:
    """The same piece several times in one table (found in its slot, not filed again), and
    weights whose sum passes 2**32 and 2**40: counts are 64-bit all the way."""
    pieces = [*EDGES, *EDGES[::-1], *EDGES[::3]]
    weights = [(1 << 33) + k for k in range(len(pieces))]
    tables = [make_table(pieces, weights), make_table(EDGES[::2], [1 << 41] * len(EDGES[::2]))]
    merged = scanner.merge_count_tables(tables)
    assert as_list(merged) == reference(tables)


def random_pieces(rng: random.Random, n: int) -> list[bytes]:
    """Pieces of 0 to 300 bytes, mostly short, over a small alphabet with NUL and 0xFF bytes, so
    many share prefixes, lengths and trailing NULs."""
    alphabet = b"ab\x00\xff\x08 "
    lengths = [0, 1, 2, 5, 6, 7, 7, 8, 8, 9, 12, 15, 16, 17, 40, 255, 256, 300]
    return [bytes(rng.choices(alphabet, k=rng.choice(lengths))) for _ in range(n)]


def test_many_unique_pieces_grow_the_table_between_folds() -> None:
    """Thousands of unique short and long pieces force several regrowths, which refile long
    pieces by hashing their bytes in the arena again; a CountTable folded table by table (counts
    kept up to date per piece) equals the merge of all at once and the dict reference."""
    rng = random.Random(12)
    tables = []
    for _ in range(4):
        pieces = random_pieces(rng, 5000)
        tables.append(make_table(pieces, [rng.randint(1, 1 << 40) for _ in pieces]))
    want = reference(tables)
    assert len(want) > 4000  # many unique pieces: the 4096-slot table grows several times
    assert as_list(scanner.merge_count_tables(tables)) == want
    folded = CountTable()
    for table in tables:
        folded.add(table)
    assert as_list(folded.table()) == want
    assert len(folded) == len(want)


def test_scanned_counts_of_many_unique_long_pieces() -> None:
    """Counting text (the table grows between blocks of pieces) with many distinct pieces of 8
    to 20 bytes and a few long runs equals Counter over regex's pieces; merging sums them."""
    rng = random.Random(5)
    words = ["".join(rng.choices("abcdefgh", k=rng.randint(6, 19))) for _ in range(6000)]
    texts = [" ".join(rng.choices(words, k=9000)) + " " + "z" * 300 for _ in range(2)]
    wants = [Counter(p.encode() for p in regex.findall(PRESETS["gpt2"], t)) for t in texts]
    tables = [scanner.count_pieces_arrays(t.encode(), "gpt2") for t in texts]
    for table, want in zip(tables, wants, strict=True):
        assert dict(as_list(table)) == want
    merged = scanner.merge_count_tables(tables)
    assert dict(as_list(merged)) == sum(wants, Counter())
    assert len(as_list(merged)) == len(sum(wants, Counter()))  # each piece filed once
