"""A slow, obviously-correct parity-aware BPE (Foroutan et al., 2025) for differential tests:
every merge recounts every group's held-out tokens and the chosen group's pairs from scratch.

Rules (the ones `engine.train.parity` documents): the worst group has the lowest held-out
bytes per token (ties: the earlier group); its most frequent training pair is merged (ties:
the greatest (left bytes, right bytes)); a group with no pair, or whose best is below
`min_frequency`, is passed over; the merge rewrites every word of every group left to right.
"""

from __future__ import annotations

from collections import Counter
from fractions import Fraction

from reference_bpe import reference_chars

Words = dict[bytes, int]


def _apply(word: list[bytes], left: bytes, right: bytes) -> list[bytes]:
    out: list[bytes] = []
    i = 0
    while i < len(word):
        if i + 1 < len(word) and word[i] == left and word[i + 1] == right:
            out.append(left + right)
            i += 2
        else:
            out.append(word[i])
            i += 1
    return out


def _fits(token: bytes, max_bytes: int, max_chars: int) -> bool:
    return (not max_bytes or len(token) <= max_bytes) and (
        not max_chars or reference_chars(token) <= max_chars
    )


def parity_reference(
    groups: list[tuple[Words, Words]],
    merges: int,
    min_frequency: int = 0,
    window: int = 0,
    alpha: int = 2,
    max_token_length: int = 0,
    max_token_chars: int = 0,
) -> list[tuple[bytes, bytes, int, int, list[int]]]:
    """(left, right, chosen group, pair count, every group's held-out tokens after) per merge.
    `window` > 0: the moving-window variant (a group chosen more than alpha * window / groups
    times in the last `window` merges is tried only after the others). `max_token_length`,
    `max_token_chars`: a pair whose token would be longer (in bytes; in characters as
    `reference_bpe.reference_chars` counts them) is not counted at all."""
    train = [[([bytes([b]) for b in w], c) for w, c in t.items()] for t, _ in groups]
    dev = [[([bytes([b]) for b in w], c) for w, c in d.items()] for _, d in groups]
    dev_bytes = [sum(len(w) * c for w, c in d.items()) for _, d in groups]
    out = []
    chosen_so_far: list[int] = []
    for _ in range(merges):
        tokens = [sum(len(w) * c for w, c in d) for d in dev]
        last = chosen_so_far[-window:] if window else []

        def over_share(g: int, last: list[int] = last) -> bool:
            return bool(window) and Fraction(last.count(g), window) > Fraction(alpha, len(groups))

        order = sorted(
            range(len(groups)),
            key=lambda g: (over_share(g), Fraction(dev_bytes[g], tokens[g]), g),
        )
        chosen = None
        for g in order:
            pairs: Counter[tuple[bytes, bytes]] = Counter()
            for word, count in train[g]:
                for pair in zip(word, word[1:], strict=False):
                    if _fits(pair[0] + pair[1], max_token_length, max_token_chars):
                        pairs[pair] += count
            if not pairs:
                continue
            best = max(pairs, key=lambda p: (pairs[p], p))
            if pairs[best] < min_frequency:
                continue
            chosen = (g, best, pairs[best])
            break
        if chosen is None:
            break
        g, (left, right), count = chosen
        chosen_so_far.append(g)
        train = [[(_apply(w, left, right), c) for w, c in t] for t in train]
        dev = [[(_apply(w, left, right), c) for w, c in d] for d in dev]
        after = [sum(len(w) * c for w, c in d) for d in dev]
        out.append((left, right, g, count, after))
    return out
