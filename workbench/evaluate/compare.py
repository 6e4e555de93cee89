"""Two merge lists side by side: where they part, how much they share, and what it costs on a text.

Merges and tokens are compared by their bytes, never by id, so a run, a tokenizer file and a
reference (whose ids differ) compare alike. For A and B:

- `first_divergence(a, b)`: the first rank whose merge differs (None when one list is a
  prefix of the other). `[(b"t", b"h"), (b"th", b"e")]` vs `[(b"t", b"h"), (b"e", b"r")]` -> 1.
- `overlap_curve(a, b, ks)`: |first k merges of A ∩ first k of B| / k at each k, every k in
  O(total) (`overlap_counts`).
- `only_in(a, b)`: the tokens of A's vocabulary that B lacks, in A's merge order.
- `attribute(a, b, texts)`: where on a text the token counts differ, and why (below).

How a token-count difference is attributed (exact, nothing left over): both encodings cut the
same bytes; the byte offsets where BOTH put a token boundary cut the text into *segments*, the
smallest stretches that the two encodings tokenize independently. A segment where A uses `a`
tokens and B uses `b` contributes `b - a` to the difference, so the segments' contributions sum to
exactly `tokens(B) - tokens(A)`. Each segment is credited to its *winner*'s tokens there (the
side with fewer tokens) that the loser's vocabulary lacks, the saving split equally among them:
`" the|re"` (A, 2) vs `" t|he|re"` (B, 3) saves A one token, all of it credited to `" the"` when B
has no `" the"`. When the loser has every one of the winner's tokens there, the loser could have
made the same cut and did not because of its merge order: that saving is credited to "merge
order" instead of any token. Segments are also counted by their pair of cuts, so the commonest
differences can be read as they are. Equal-length segments with different cuts cost nothing.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field

import numpy as np

from workbench.engine.encode.tokenizer import Tokenizer

Merge = tuple[bytes, bytes]
MERGE_ORDER = "merge order"  # the credit of a saving that no missing token explains


def first_divergence(a: Sequence[Merge], b: Sequence[Merge]) -> int | None:
    """The first rank where `a` and `b` hold different merges; None if one is a prefix of the
    other (then they agree on all `min(len(a), len(b))` ranks both have)."""
    for rank, (left, right) in enumerate(zip(a, b, strict=False)):
        if left != right:
            return rank
    return None


def overlap_counts(a: Sequence[Merge], b: Sequence[Merge]) -> np.ndarray:
    """`out[k - 1]` = |set(a[:k]) ∩ set(b[:k])| for k = 1..min(len(a), len(b)), in one pass.

    `overlap_counts([x, y, z], [y, x, w]) -> [0, 2, 2]`. Growing k by one adds a[k] to A's set
    and b[k] to B's; the intersection grows by one for each newcomer the other set already holds
    (a merge listed twice in one list counts once, as a set would).
    """
    n = min(len(a), len(b))
    seen_a: set[Merge] = set()
    seen_b: set[Merge] = set()
    out = np.zeros(n, dtype=np.int64)
    shared = 0
    for k in range(n):
        x, y = a[k], b[k]
        if x not in seen_a:
            seen_a.add(x)
            shared += x in seen_b
        if y not in seen_b:
            seen_b.add(y)
            shared += y in seen_a
        out[k] = shared
    return out


def overlap_curve(a: Sequence[Merge], b: Sequence[Merge], ks: Iterable[int]) -> list[float]:
    """|first k of A ∩ first k of B| / k for each k of `ks` (1 <= k <= the shorter list)."""
    counts = overlap_counts(a, b)
    return [float(counts[k - 1]) / k for k in ks]


def overlap_grid(n: int, points: int = 200) -> list[int]:
    """k from 1 to n on a log grid of about `points` values (every k while n <= points)."""
    if n <= points:
        return list(range(1, n + 1))
    raw = np.geomspace(1, n, points)
    return sorted({int(round(v)) for v in raw} | {1, n})


def only_in(a: Tokenizer, b: Tokenizer) -> list[tuple[int, bytes]]:
    """(id in A, bytes) of A's ordinary tokens that B's vocabulary lacks, in A's merge order."""
    theirs = set(b.vocab.values())
    mine = [(tid, tok) for tid, tok in a.vocab.items() if tok not in theirs]
    return sorted(mine, key=lambda item: (a.token_rank(item[0]), item[0]))


@dataclass
class Attribution:
    """Where two encodings of the same texts differ in length, and what explains it."""

    tokens_a: int = 0
    tokens_b: int = 0
    bytes: int = 0
    saved_by_a: int = 0  # sum over segments where A used fewer tokens of (b - a)
    saved_by_b: int = 0
    segments_differing: int = 0  # segments cut differently (equal counts included)
    # token bytes (or MERGE_ORDER) -> tokens saved, per side
    credit_a: Counter = field(default_factory=Counter)
    credit_b: Counter = field(default_factory=Counter)
    # (A's cut, B's cut) as tuples of token bytes -> how many times that segment occurs
    cuts: Counter = field(default_factory=Counter)

    @property
    def difference(self) -> int:
        """tokens(B) - tokens(A): positive when A is the shorter encoding."""
        return self.tokens_b - self.tokens_a


def segments(ends_a: np.ndarray, ends_b: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Segment index of each token of A and of B, from the byte offsets where tokens end.

    `segments([2, 5], [1, 2, 5]) -> ([0, 1], [0, 0, 1])`: both cut at 2 and 5, so A's first token
    faces B's first two. Both arrays must end at the same offset (the same text).
    """
    common = np.intersect1d(ends_a, ends_b, assume_unique=True)
    return np.searchsorted(common, ends_a), np.searchsorted(common, ends_b)


def _token_ends(tok: Tokenizer, ids: np.ndarray, lengths: dict[int, int]) -> np.ndarray:
    sizes = np.fromiter((lengths[i] for i in ids.tolist()), dtype=np.int64, count=ids.shape[0])
    return np.cumsum(sizes)


class _Side:
    """One tokenizer's byte strings and lengths by id, and which of its tokens the other lacks."""

    def __init__(self, tok: Tokenizer, other: Tokenizer) -> None:
        self.tok = tok
        self.bytes_of = tok.decode_table()
        self.length = {tid: len(raw) for tid, raw in self.bytes_of.items()}
        theirs = set(other.vocab.values()) | {s.encode() for s in other.special_tokens}
        self.lacking = {tid for tid, raw in self.bytes_of.items() if raw not in theirs}

    def encode(self, text: str) -> np.ndarray:
        return self.tok.encode_array(text, "all")


def attribute(
    a: Tokenizer,
    b: Tokenizer,
    texts: Iterable[str],
    cancelled: Callable[[], bool] = lambda: False,
) -> Attribution:
    """The token-count difference of A and B on `texts`, cut into segments and credited (see the
    module docstring); `cancelled()` is asked between texts."""
    side_a, side_b = _Side(a, b), _Side(b, a)
    out = Attribution()
    for text in texts:
        if cancelled():
            break
        ids_a, ids_b = side_a.encode(text), side_b.encode(text)
        out.tokens_a += int(ids_a.shape[0])
        out.tokens_b += int(ids_b.shape[0])
        if ids_a.shape[0] == 0:
            continue
        ends_a = _token_ends(a, ids_a, side_a.length)
        ends_b = _token_ends(b, ids_b, side_b.length)
        out.bytes += int(ends_a[-1])
        _add_segments(out, side_a, side_b, ids_a, ids_b, *segments(ends_a, ends_b))
    return out


def _add_segments(
    out: Attribution,
    side_a: _Side,
    side_b: _Side,
    ids_a: np.ndarray,
    ids_b: np.ndarray,
    seg_a: np.ndarray,
    seg_b: np.ndarray,
) -> None:
    count_a = np.bincount(seg_a)
    count_b = np.bincount(seg_b, minlength=count_a.shape[0])
    # A segment of one token each is the same token on both sides (same bytes, same span):
    # only the others can differ, and they are few, so the loop below runs over them alone.
    differing = np.flatnonzero((count_a != 1) | (count_b != 1))
    if differing.size == 0:
        return
    start_a = np.concatenate(([0], np.cumsum(count_a)))
    start_b = np.concatenate(([0], np.cumsum(count_b)))
    list_a, list_b = ids_a.tolist(), ids_b.tolist()
    for s in differing.tolist():
        cut_a = list_a[start_a[s] : start_a[s + 1]]
        cut_b = list_b[start_b[s] : start_b[s + 1]]
        out.segments_differing += 1
        out.cuts[
            (
                tuple(side_a.bytes_of[i] for i in cut_a),
                tuple(side_b.bytes_of[i] for i in cut_b),
            )
        ] += 1
        saved = len(cut_b) - len(cut_a)
        if saved > 0:
            out.saved_by_a += saved
            _credit(out.credit_a, side_a, cut_a, saved)
        elif saved < 0:
            out.saved_by_b += -saved
            _credit(out.credit_b, side_b, cut_b, -saved)


def _credit(credit: Counter, winner: _Side, cut: list[int], saved: int) -> None:
    """`saved` tokens split equally over the winner's tokens in `cut` that the loser lacks."""
    missing = [i for i in cut if i in winner.lacking]
    if not missing:
        credit[MERGE_ORDER] += saved
        return
    share = saved / len(missing)
    for i in missing:
        credit[winner.bytes_of[i]] += share


def top_credits(credit: Counter, limit: int) -> list[tuple[bytes | str, float]]:
    """The `limit` largest credits, largest first (ties by bytes, for a stable order)."""
    return sorted(credit.items(), key=lambda item: (-item[1], str(item[0])))[:limit]
