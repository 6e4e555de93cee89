"""The machinery under `Tokenizer`: its shared tables, each thread's reused buffers and piece
cache, and the segment tables its kernels read.

Private to `encode/`: `tokenizer.py` holds the public API and calls these. Nothing here checks
user input (`validation.py` does) or talks about specials' allow rules (`tokenizer.py`).
"""

from __future__ import annotations

import functools
import threading
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
import regex

from workbench.engine._native import portable, utf8_text
from workbench.engine._native.huge_pages import huge_page_copy
from workbench.engine._native.id_lists import ReadyInts, shared_ready_ints
from workbench.engine._native.utf8_text import utf8
from workbench.engine.encode import _chars, _merge, _scanned, _tables
from workbench.engine.encode.pieces import RegexSplitter, Splitter
from workbench.engine.errors import TokenizerError
from workbench.engine.patterns.specials import specials_bytes_regex
from workbench.engine.pretokenize import scan as scanner


@dataclass(frozen=True, eq=False)
class Core:
    """Everything prefixes share: built once, never copied by `prefix(k)`."""

    vocab: dict[int, bytes]  # ordinary tokens (no specials)
    merges: list[tuple[int, int]]  # id pairs in rank order
    results: list[int]  # the id each merge makes
    tok_rank: np.ndarray  # per id: -1 byte, first making merge, or NEVER
    arrays: tuple  # (tok_bytes, tok_off, byte_id): what the encoder's tables are built from
    trainer_ids: bool  # ids follow the trainer's convention (from_merges)

    @property
    def id_bound(self) -> int:
        """Ordinary ids are below it (the arena holds a token per id up to it); specials may
        not be."""
        return len(self.arrays[1]) - 1

    @functools.cached_property
    def tables(self) -> tuple:
        """The encoder's tables, built on first use: a tokenizer that is only exported (as after
        training) never compiles or runs the table kernels."""
        tok_bytes, tok_off, byte_id = self.arrays
        whole = _tables.build_whole_table(
            tok_bytes, tok_off, self.tok_rank, capacity(len(self.vocab))
        )
        lefts, rights, made = _tables.collect_splits(
            tok_bytes, tok_off, self.tok_rank, byte_id, whole
        )
        pairs = _tables.build_pair_table(lefts, rights, made, self.tok_rank, capacity(len(lefts)))
        byte_pairs = _tables.byte_pair_table(lefts, rights, made, tok_bytes, tok_off, self.tok_rank)
        chars = _chars.build_char_tables(tok_bytes, tok_off, self.tok_rank)
        pair_bits = _tables.key_filter(pairs[:, 0])
        whole_bits = _tables.key_filter(np.where(whole[:, 1] >= 0, whole[:, 0], -1))
        whole, pairs = huge_page_copy(whole), huge_page_copy(pairs)  # read at random: 2 MB pages
        return (
            *(tok_bytes, tok_off, self.tok_rank, byte_id, whole, pairs, byte_pairs, chars),
            *(pair_bits, whole_bits),
        )

    @functools.cached_property
    def seed(self) -> np.ndarray:
        """The fused encoder's seed of whole tokens (`_scanned.build_seed`), built on first use
        (`core_of_ranks` builds it with the tables): 16 bytes a row, twice the tokens' rows."""
        seed = _scanned.build_seed(self.tables, capacity(len(self.vocab)).bit_length() - 1)
        return huge_page_copy(seed)

    @functools.cached_property
    def ready_ints(self) -> ReadyInts:
        """The ordinary ids as ready-made Python ints, for the lists `encode` and `encode_batch`
        return (see `id_lists`): 40 bytes an id, shared by every tokenizer of the process."""
        return shared_ready_ints(self.id_bound)


def seed_for(core: Core, max_rank: int) -> np.ndarray:
    """The fused encoder's seed for a tokenizer of `core` that makes its first `max_rank`
    merges: the core's, which holds every token, or none for a prefix that may not make them
    all."""
    return core.seed if max_rank == len(core.merges) else _scanned.NO_SEED


def capacity(count: int) -> int:
    """Rows of an open-addressing table for `count` keys: a power of 2, at most half full."""
    return max(16, 1 << int(2 * max(count, 1) - 1).bit_length())


# Tokens or ids per call of the whole-vocabulary steps below and of `Tokenizer.from_merges`'
# vocabulary fill: each such call over 200k tokens (a join, a conversion to an array) held the
# GIL for 2-14 ms in one piece, stretching the turns of a window whose UI thread waited for it;
# a piece of this size is well under a millisecond.
PIECE = 16_384


def _in_pieces(values: list, convert: Callable[[list], np.ndarray]) -> np.ndarray:
    """`convert(values)` as the concatenation of `convert` over pieces of `values`; between two
    pieces other threads may take the GIL."""
    parts = [convert(values[s : s + PIECE]) for s in range(0, len(values), PIECE)]
    return np.concatenate(parts) if parts else convert([])


def _int64s(values: list) -> np.ndarray:
    return np.asarray(values, dtype=np.int64)


def _lengths(tokens: list[bytes]) -> np.ndarray:
    return np.fromiter(map(len, tokens), dtype=np.int64, count=len(tokens))


def _arena(tokens: list[bytes], order: np.ndarray) -> bytes:
    """The bytes of `tokens` in `order`, joined a piece at a time."""
    pieces = []
    for s in range(0, len(order), PIECE):
        pieces.append(b"".join([tokens[i] for i in order[s : s + PIECE].tolist()]))
    return b"".join(pieces)  # a few pieces: over 1 MB CPython copies them without the GIL


def build_core(
    vocab: dict[int, bytes], merges: list[tuple[int, int]], results: list[int], trainer_ids: bool
) -> Core:
    """The byte arena and ranks of `vocab` (checked already), its tables left for first use."""
    # Vectorised: per-token Python loops here took a tenth of a 32k-token export.
    ids = _in_pieces(list(vocab.keys()), _int64s)
    tokens = list(vocab.values())
    size = int(ids.max()) + 1
    lengths = np.zeros(size, dtype=np.int64)
    lengths[ids] = _in_pieces(tokens, _lengths)
    tok_rank = np.full(size, _tables.NEVER, dtype=np.int32)
    byte_id = np.full(256, -1, dtype=np.int32)
    for tid in np.flatnonzero(lengths == 1).tolist():
        byte_id[vocab[tid][0]] = tid
        tok_rank[tid] = -1
    if results:  # the first merge that makes a token gives its rank
        made, first = np.unique(_in_pieces(results, _int64s), return_index=True)
        tok_rank[made] = first
    tok_off = np.zeros(size + 1, dtype=np.int64)
    np.cumsum(lengths, out=tok_off[1:])
    order = np.argsort(ids, kind="stable")  # absent ids have length 0: the arena is in id order
    tok_bytes = np.frombuffer(_arena(tokens, order), dtype=np.uint8)
    return Core(vocab, merges, results, tok_rank, (tok_bytes, tok_off, byte_id), trainer_ids)


def core_of_ranks(ranks: dict[int, bytes]) -> Core:
    """tiktoken's view (id = rank, no merges listed) with the merges rebuilt from the ranks.

    The merge of the r-th multi-byte token is what BPE leaves of its bytes when only the r - 1
    earlier tokens may be made; more or fewer than two parts is an inconsistent file.
    """
    order = [tid for tid in sorted(ranks) if len(ranks[tid]) > 1]
    core = build_core(dict(ranks), [], order, trainer_ids=False)
    pairs = _merge.recover_merges(np.array(order, dtype=np.int64), core.tables)
    broken = np.flatnonzero(pairs[:, 0] < 0)
    if broken.size:
        r = int(broken[0])
        raise TokenizerError(
            f"token {ranks[order[r]]!r} (rank {order[r]}) is not two earlier tokens merged"
        )
    # columns, not rows: a list per row was 0.2 s of o200k's load (200,000 small containers)
    merges = list(zip(pairs[:, 0].tolist(), pairs[:, 1].tolist(), strict=True))
    tables = core.tables
    core = Core(core.vocab, merges, order, core.tok_rank, core.arrays, False)
    core.__dict__["tables"] = tables  # the same ranks and bytes: share, do not rebuild
    if not portable():  # built with the tables, as a tiktoken file is loaded; the scanner reads it
        core.seed  # noqa: B018
    return core


def choose_splitter(pattern: str, splitter: object) -> tuple[int | None, Splitter | None]:
    """(the scanner's preset code, None) for the fused fast path, or (None, a splitter), for
    `splitter` "auto" (also None), "scanner", "regex" or a `Splitter` callable."""
    if splitter in (None, "auto", "scanner") and scanner.can_scan(pattern):
        return scanner.preset_code(pattern), None
    if splitter == "scanner" and portable():
        raise TokenizerError(
            "the scanner is off (BPE_WORKBENCH_PORTABLE is set): use splitter='auto' or 'regex'"
        )
    if splitter == "scanner":
        raise TokenizerError(
            "the scanner only reproduces the gpt2, cl100k and o200k patterns; "
            "use splitter='regex' for a custom pattern"
        )
    if splitter in (None, "auto", "regex"):
        return None, RegexSplitter(pattern)
    if callable(splitter):
        return None, splitter
    raise TokenizerError(f"unknown splitter {splitter!r}: use 'auto', 'scanner' or 'regex'")


def clean_text(text: str) -> str:
    """Lone surrogates cannot be UTF-8: replace them, as tiktoken does."""
    return utf8(text)[0]


# Runs a thread gets: the last run to finish leaves the other threads idle for up to its length,
# so more, shorter runs balance better; a run of 64K characters still costs the pool little.
RUNS_PER_THREAD = 16
# A run is one kernel call: above 256K characters its ids would outgrow the thread's reused
# output buffer (`_REUSED_OUT`), and a fresh one a call costs page faults and unmapping.
LONGEST_RUN = 1 << 18


_REUSED_OUT = 1 << 20  # ids: a thread keeps at most a 4 MB output buffer between calls
_REUSED_TEXT = 1 << 22  # bytes: and at most a 4 MB text buffer (a run's UTF-8 bound: 4 a character)
# A thread's reused buffers: name -> (dtype, the least it makes, the most it keeps).
_REUSED = {"out": (np.int32, 1 << 16, _REUSED_OUT), "text": (np.uint8, 1 << 18, _REUSED_TEXT)}


def taken(local: threading.local, name: str, size: int) -> np.ndarray:
    """The thread's buffer `name` ("out": int32 ids, "text": uint8 bytes) of at least `size`
    items, out of the thread's keeping (`local`) until `give_back` (up to its limit in
    `_REUSED`; a larger one is made for the call alone).

    A fresh megabyte buffer a call is mapped and unmapped by the system each time, and
    unmapping stops every thread of the process (TLB shootdown): `encode_batch` would
    serialise on it. Larger texts get their own buffer (pages never written cost nothing).
    Taken, not lent: an encode nested in this one on the same thread (a finalizer run by
    the garbage collector at an allocation) finds no buffer and makes its own, instead of
    overwriting text or ids this call has not read yet. A call that fails gives nothing
    back; the next one makes a new buffer.
    """
    dtype, least, limit = _REUSED[name]
    if size > limit:
        return np.empty(size, dtype=dtype)
    buffer = local.__dict__.pop(name, None)
    if buffer is None or buffer.shape[0] < size:
        buffer = np.empty(max(size, least), dtype=dtype)
    return buffer


def give_back(local: threading.local, name: str, used: np.ndarray | bytes) -> None:
    """Keep the buffer behind `used` (a `taken` buffer or a view of one) for the thread's next
    call, once nothing reads it any more. A buffer made for one call (over the limit, or the
    regex path's own) is kept only if it is small enough to have been taken; bytes, not at all."""
    if not isinstance(used, np.ndarray):
        return
    buffer = used if used.base is None else used.base
    if buffer.shape[0] <= _REUSED[name][2]:
        setattr(local, name, buffer)


def text_utf8(local: threading.local, text: str) -> np.ndarray | bytes:
    """`text`'s UTF-8 as `utf8` gives it: a long text's written by a kernel into the thread's
    "text" buffer (taken: `give_back` it once read), which is 2x faster than `str.encode` on
    text that CPython stores 2 bytes a character but is mostly ASCII (English with a dash or an
    accent: 2.2 MB in 1.0-1.1 ms with the buffer, not 2.1); a short one's by `str.encode`."""
    if len(text) < utf8_text.KERNEL_FROM:
        return utf8(text)[1]
    return utf8_text.joined_utf8([text], lambda size: taken(local, "text", size))[0]


def cache_bits(size: int) -> int:
    """log2 of the piece cache's rows for `size` bytes: a few short texts get a small table;
    2**17 rows (2 MB) hold the ~65k most frequent pieces of a large text."""
    return min(17, max(8, (size // 4).bit_length()))


def piece_cache(local: threading.local, size: int) -> _scanned.PieceCache:
    """The thread's piece cache, grown (afresh) when a larger text wants more rows."""
    bits = cache_bits(size)
    cache = getattr(local, "piece_cache", None)
    if cache is None or cache.cache.shape[0] < 1 << bits:
        cache = _scanned.new_piece_cache(bits)
        local.piece_cache = cache
    return cache


def segments(
    data: bytes, specials: tuple[str, ...], special_tokens: dict[str, int]
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(starts, ends, ids) covering `data`: a special token (its id) or ordinary text (-1)."""
    matcher = specials_bytes_regex(tuple(sorted(specials))) if specials else None
    rows: list[tuple[int, int, int]] = []
    position = 0
    if matcher is not None:
        id_of = {name.encode("utf-8"): special_tokens[name] for name in specials}
        for match in matcher.finditer(data):
            if match.start() > position:
                rows.append((position, match.start(), -1))
            rows.append((match.start(), match.end(), id_of[match.group()]))
            position = match.end()
    if position < len(data):
        rows.append((position, len(data), -1))
    table = np.array(rows, dtype=np.int64).reshape(-1, 3)
    return table[:, 0].copy(), table[:, 1].copy(), table[:, 2].copy()


def run_segments(
    parts: list[bytes], allowed: tuple[str, ...], special_tokens: dict[str, int], mark: int
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(starts, ends, ids) of the texts `parts` joined: each text's `segments` (specials split
    out), then an empty segment at its end that emits `mark`."""
    sizes = np.fromiter(map(len, parts), dtype=np.int64, count=len(parts))
    ends = np.cumsum(sizes)
    rows = [segments(part, allowed, special_tokens) for part in parts]
    counts = np.array([len(r[0]) + 1 for r in rows])
    shift = np.repeat(ends - sizes, counts)
    seg_starts = np.concatenate([x for r in rows for x in (r[0], [0])]) + shift
    seg_ends = np.concatenate([x for r in rows for x in (r[1], [0])]) + shift
    seg_ids = np.concatenate([x for r in rows for x in (r[2], [mark])])
    at = np.cumsum(counts) - 1  # the marks: empty, at each text's end
    seg_starts[at] = seg_ends[at] = ends
    return seg_starts, seg_ends, seg_ids


def plain_run_segments(sizes: np.ndarray, mark: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """`run_segments` without specials: text j is segment 2j, its mark 2j + 1."""
    ends = np.cumsum(sizes)
    seg_starts = np.repeat(ends - sizes, 2)
    seg_starts[1::2] = ends
    seg_ends = np.repeat(ends, 2)
    seg_ids = np.tile(np.array([-1, mark], dtype=np.int64), len(sizes))
    return seg_starts, seg_ends, seg_ids


def regex_pieces(
    text: str,
    data: bytes,
    matcher: regex.Pattern | None,
    special_tokens: dict[str, int],
    splitter: Splitter,
) -> tuple[bytes, np.ndarray, np.ndarray, np.ndarray]:
    """Bytes of `text` (given as `data`) and its pieces (byte spans) cut by `splitter`; the
    specials `matcher` finds are pieces with their id."""
    found = list(matcher.finditer(text)) if matcher is not None else []
    if not found:
        starts, ends = splitter(text, data)
        return data, starts, ends, np.full(len(starts), -1, dtype=np.int32)
    chunks: list[bytes] = []
    spans: list[tuple[np.ndarray, np.ndarray, np.ndarray]] = []
    offset = 0
    position = 0

    def ordinary(segment: str) -> None:
        nonlocal offset
        if not segment:
            return
        seg_data = segment.encode("utf-8")
        s, e = splitter(segment, seg_data)
        spans.append((s + offset, e + offset, np.full(len(s), -1, dtype=np.int32)))
        chunks.append(seg_data)
        offset += len(seg_data)

    for match in found:
        ordinary(text[position : match.start()])
        raw = match.group().encode("utf-8")
        one = np.array([offset], dtype=np.int64)
        tid = np.array([special_tokens[match.group()]], dtype=np.int32)
        spans.append((one, one + len(raw), tid))
        chunks.append(raw)
        offset += len(raw)
        position = match.end()
    ordinary(text[position:])
    starts = np.concatenate([s for s, _, _ in spans]).astype(np.int64)
    ends = np.concatenate([e for _, e, _ in spans]).astype(np.int64)
    special_ids = np.concatenate([t for _, _, t in spans])
    return b"".join(chunks), starts, ends, special_ids


def token_lengths(core: Core, special_tokens: dict[str, int], ids: np.ndarray) -> np.ndarray:
    """The byte length of each token of `ids`."""
    tok_off = core.arrays[1]
    inside = ids < core.id_bound
    safe = np.where(inside, ids, 0)
    lengths = np.where(inside, tok_off[safe + 1] - tok_off[safe], 0)
    for name, tid in special_tokens.items():
        lengths[ids == tid] = len(name.encode())
    return lengths


def char_spans(
    text: str, offsets: np.ndarray, starts: np.ndarray, ends: np.ndarray
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(char start, char end, splits a character) of byte spans of `text`, whose characters
    start at byte `offsets` (`pieces.char_to_byte`)."""
    char_start = np.searchsorted(offsets, starts, side="right") - 1
    char_end = np.searchsorted(offsets, ends, side="left")
    on_start = offsets[char_start] == starts
    on_end = offsets[np.minimum(char_end, len(text))] == ends
    return char_start, char_end, ~(on_start & on_end)


def end_mark(special_tokens: dict[str, int], id_bound: int) -> int:
    """An id that is neither an ordinary token's (below `id_bound`) nor a special's."""
    taken_ids = set(special_tokens.values())
    return next(t for t in range(id_bound, id_bound + len(taken_ids) + 1) if t not in taken_ids)
