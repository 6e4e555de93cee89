"""A slow, obviously correct BPE trainer: recount every pair after every merge.

Tokens are their bytes, so two merge paths to the same bytes make the same token (as in the
CS336 reference, whose words are tuples of bytes). Among equal counts the greatest
(left bytes, right bytes) wins. Stops when the vocabulary (256 bytes + distinct merged tokens +
specials) reaches `vocab_size`, when no pair is left, or when the best count is below
`min_frequency`. With `max_token_length`, a pair whose bytes would be longer is not counted at
all (it is neither merged nor a tie), and the stop reason says when only such pairs were left.
"""

from __future__ import annotations

import re
from collections import Counter


def train_reference(
    words: dict[bytes, int],
    vocab_size: int,
    n_specials: int = 0,
    min_frequency: int = 0,
    max_token_length: int = 0,
) -> tuple[list[tuple[bytes, bytes]], list[int]]:
    """Returns the merges as byte pairs and the pair count at each merge."""
    merges, counts, _ = train_reference_why(
        words, vocab_size, n_specials, min_frequency, max_token_length
    )
    return merges, counts


def train_reference_why(
    words: dict[bytes, int],
    vocab_size: int,
    n_specials: int = 0,
    min_frequency: int = 0,
    max_token_length: int = 0,
    max_token_chars: int = 0,
) -> tuple[list[tuple[bytes, bytes]], list[int], str]:
    """`train_reference`, and why it stopped: vocab_size, no_pairs, min_frequency or
    max_token_length (pairs were left, all too long)."""
    table = {tuple(bytes([b]) for b in word): count for word, count in words.items()}
    tokens = {bytes([b]) for b in range(256)}
    return train_reference_from(
        table, tokens, vocab_size, n_specials, min_frequency, max_token_length, max_token_chars
    )


# A token's characters (`engine.train.char_count`'s rule), spelled as a regex: a token's leading
# continuation bytes (up to 3), else a lead byte with the continuation bytes its form allows,
# else any one byte.
_CHARACTER = re.compile(
    rb"\A[\x80-\xbf]{1,3}|[\xc0-\xdf][\x80-\xbf]?|[\xe0-\xef][\x80-\xbf]{0,2}"
    rb"|[\xf0-\xf7][\x80-\xbf]{0,3}|.",
    re.DOTALL,
)


def reference_chars(token: bytes) -> int:
    return len(_CHARACTER.findall(token))


def train_reference_from(
    table: dict[tuple[bytes, ...], int],
    tokens: set[bytes],
    vocab_size: int,
    n_specials: int = 0,
    min_frequency: int = 0,
    max_token_length: int = 0,
    max_token_chars: int = 0,
) -> tuple[list[tuple[bytes, bytes]], list[int], str]:
    """The same, from words already cut into the tokens of a starting vocabulary `tokens`
    (extending a tokenizer): `vocab_size` counts them too."""
    tokens = set(tokens)
    table = dict(table)
    merges: list[tuple[bytes, bytes]] = []
    counts: list[int] = []
    reason = "vocab_size"
    while len(tokens) + n_specials < vocab_size:
        pairs: Counter[tuple[bytes, bytes]] = Counter()
        too_long = False
        for word, count in table.items():
            for pair in zip(word, word[1:], strict=False):
                if (max_token_length and len(pair[0]) + len(pair[1]) > max_token_length) or (
                    max_token_chars and reference_chars(pair[0] + pair[1]) > max_token_chars
                ):
                    too_long = True
                else:
                    pairs[pair] += count
        if not pairs:
            reason = "max_token_length" if too_long else "no_pairs"
            break
        best = max(pairs, key=lambda p: (pairs[p], p))
        if pairs[best] < max(min_frequency, 1):
            reason = "min_frequency"
            break
        merges.append(best)
        counts.append(pairs[best])
        tokens.add(best[0] + best[1])
        table = _apply(table, best)
    return merges, counts, reason


def _apply(table: dict[tuple, int], pair: tuple[bytes, bytes]) -> dict[tuple, int]:
    merged: dict[tuple, int] = {}
    for word, count in table.items():
        out = []
        i = 0
        while i < len(word):
            if i + 1 < len(word) and (word[i], word[i + 1]) == pair:
                out.append(word[i] + word[i + 1])  # left to right: `aaa` -> `aa a`
                i += 2
            else:
                out.append(word[i])
                i += 1
        key = tuple(out)
        merged[key] = merged.get(key, 0) + count
    return merged


def runner_ups_reference(
    words: dict[bytes, int], merges: list[tuple[bytes, bytes]], counts: list[int]
) -> list[int]:
    """Replays `merges` (any tie-break's) and recounts every pair before each: the count of
    the best pair other than the merged one (0 when none is left). Asserts on the way that
    each merged pair had the highest count, and the count given."""
    table = {tuple(bytes([b]) for b in word): count for word, count in words.items()}
    runner_ups = []
    for pair, count in zip(merges, counts, strict=True):
        pairs: Counter[tuple[bytes, bytes]] = Counter()
        for word, n in table.items():
            for p in zip(word, word[1:], strict=False):
                pairs[p] += n
        assert pairs[pair] == count == max(pairs.values()), (pair, count)
        runner_ups.append(max((n for p, n in pairs.items() if p != pair), default=0))
        table = _apply(table, pair)
    return runner_ups
