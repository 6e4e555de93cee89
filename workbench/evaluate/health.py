"""Token health: which tokens of a vocabulary are wasted, each list sorted and exportable.

- unreachable: encoding the token's own text does not give the token (`pre-tokenizer`: the
  pattern cuts it into several pieces; checked on the text alone, the "Magikarp" test), or the
  merges never build it (`merges`: BPE of its bytes with the earlier merges does not leave two
  tokens, so it is emitted only where a whole pre-token equals it -- never, for part of a
  character). The encoder looks a whole pre-token up first, as tiktoken does, which is why the
  second case needs its own test.
- never completes a character: not valid UTF-8 alone, and no bytes before or after it make
  valid UTF-8 (a stray continuation run, a lead byte with a bad second byte, 0xC0/0xC1/0xF5+).
- never emitted: a merged token (not a byte, not a special) that encoding the given text (or the
  run's training corpus) never produced.
- residue: counted often when it was merged, rarely emitted by the finished tokenizer (its
  occurrences were eaten by later merges): both counts and `emitted / count at merge` shown.
- rare: emitted at least once but fewer than N times.
"""

from __future__ import annotations

import codecs
import itertools
from dataclasses import dataclass

import numpy as np

from workbench.engine.encode.tokenizer import Tokenizer
from workbench.store.readable import readable


@dataclass(frozen=True)
class TokenRow:
    """One token in a health list; the fields not relevant to a list stay None."""

    id: int
    rank: int  # the merge that first makes it (-1 for a byte)
    text: str  # readable form
    reason: str | None = None
    emitted: int | None = None
    merge_count: int | None = None
    ratio: float | None = None

    def as_dict(self) -> dict[str, object]:
        return {k: v for k, v in self.__dict__.items() if v is not None or k == "rank"}


def merged_ids(tok: Tokenizer) -> list[int]:
    """Ids made by merges (not the 256 bytes, not specials), by rank."""
    return sorted((t for t in tok.vocab if tok.token_rank(t) >= 0), key=tok.token_rank)


def _row(tok: Tokenizer, tid: int, **extra: object) -> TokenRow:
    return TokenRow(tid, tok.token_rank(tid), readable(tok.vocab[tid]), **extra)  # type: ignore[arg-type]


def unreachable(tok: Tokenizer, among: set[int] | None = None) -> list[TokenRow]:
    """Tokens that encoding their own text misses, or that the merges never build (only those
    in `among` when given: an extension's new tokens)."""
    rows: list[TokenRow] = []
    rebuilt = tok.rebuilt_merges()
    for tid in merged_ids(tok):
        if among is not None and tid not in among:
            continue
        try:
            text = tok.vocab[tid].decode("utf-8")
        except UnicodeDecodeError:
            text = None
        if rebuilt[tok.token_rank(tid)] is None:
            why = (
                "merges: never built, and as part of a character no whole pre-token equals it"
                if text is None
                else "merges: never built; emitted only where a whole pre-token equals it"
            )
            rows.append(_row(tok, tid, reason=why))
            continue
        if text is not None:
            got = tok.encode(text, "none")
            if got != [tid]:
                why = f"pre-tokenizer: its text alone gives {len(got)} tokens"
                rows.append(_row(tok, tid, reason=why))
    return rows


_CONT = (0x80, 0x90, 0xA0)  # one continuation byte from each range a lead byte may demand
_PREFIXES = [b""] + [
    bytes([lead, *filler])
    for lead in range(0xC2, 0xF5)
    for n in range(3)
    for filler in itertools.product(_CONT, repeat=n)
]
_SUFFIXES = [b""] + [bytes(s) for n in range(1, 4) for s in itertools.product(_CONT, repeat=n)]


def completes_a_character(token: bytes) -> bool:
    """Whether some bytes before and after `token` make valid UTF-8.

    `completes_a_character(b"\\xc3") -> True` (é is C3 A9); `(b"\\xc0") -> False`.
    """
    prefixes = _PREFIXES if token and 0x80 <= token[0] < 0xC0 else [b""]
    for prefix in prefixes:
        try:
            codecs.getincrementaldecoder("utf-8")().decode(prefix + token, False)
        except UnicodeDecodeError:
            continue
        for suffix in _SUFFIXES:
            try:
                (prefix + token + suffix).decode("utf-8")
                return True
            except UnicodeDecodeError:
                pass
    return False


def never_completes(tok: Tokenizer) -> list[TokenRow]:
    """Tokens that are not UTF-8 alone and cannot be part of any UTF-8 text."""
    rows = []
    for tid in merged_ids(tok):
        token = tok.vocab[tid]
        try:
            token.decode("utf-8")
        except UnicodeDecodeError:
            if not completes_a_character(token):
                rows.append(_row(tok, tid, reason="no UTF-8 text contains these bytes"))
    return rows


def never_emitted(tok: Tokenizer, emitted: np.ndarray) -> list[TokenRow]:
    """Merged tokens with a zero count in `emitted` (counts by id), by rank."""
    return [_row(tok, t, emitted=0) for t in merged_ids(tok) if emitted[t] == 0]


def rare(tok: Tokenizer, emitted: np.ndarray, below: int) -> list[TokenRow]:
    """Merged tokens emitted 1 .. below-1 times, fewest first (ties by rank)."""
    rows = [
        _row(tok, t, emitted=int(emitted[t])) for t in merged_ids(tok) if 0 < emitted[t] < below
    ]
    return sorted(rows, key=lambda r: (r.emitted, r.rank))


def residues(
    tok: Tokenizer,
    merge_counts: np.ndarray,
    emitted: np.ndarray,
    max_ratio: float = 0.05,
    min_merge_count: int = 100,
) -> list[TokenRow]:
    """Tokens merged with a count >= `min_merge_count` and emitted <= `max_ratio` of it.

    `merge_counts[r]` is the pair count when merge r was made; the first merge that makes a
    token names it. Sorted by ratio, then by the count at merge time (largest first).
    """
    rows = []
    for rank, tid in enumerate(tok.merge_results):
        if tok.token_rank(tid) != rank or rank >= len(merge_counts):
            continue  # a second merge making the same bytes: the first one counts
        count = int(merge_counts[rank])
        if count < min_merge_count:
            continue
        ratio = int(emitted[tid]) / count
        if ratio <= max_ratio:
            rows.append(_row(tok, tid, emitted=int(emitted[tid]), merge_count=count, ratio=ratio))
    return sorted(rows, key=lambda r: (r.ratio, -(r.merge_count or 0)))
