"""Tokens of a text at EVERY prefix k of a tokenizer, from one pass over its distinct pieces.

The encoder merges a piece by repeatedly joining the adjacent pair whose joined bytes are the
lowest-ranked token (the leftmost of equals), as tiktoken does; a piece that is itself a token is
looked up whole. With only the first k merges, the same steps happen as long as the rank chosen
is below k, and it stops at the first one that is not: every earlier step had the lowest rank of
all pairs then, so the prefix sees the same pairs and picks the same one. So one run per distinct
piece with the whole tokenizer, noting the rank of each step, gives the piece's token count at
every k: `len(piece) - (steps before the first rank >= k)`, or 1 once k passes the rank of the
piece as a whole token. Summed over pieces (times their counts) with a difference array, that is
tokens(k) for k = 0..merges in O(pieces · log) instead of one encoding per k.

`tokens_at_every_k(tok, texts)` is checked against `len(tok.prefix(k).encode(text, "all"))` in
the tests (trainer runs, GPT-2 from its ranks, special tokens in the text). Pieces come from
`regex` with the tokenizer's pattern (the scanner the encoder uses is checked equal to it).
"""

from __future__ import annotations

import heapq
from collections import Counter
from collections.abc import Callable, Iterable

import numpy as np

from workbench.engine.encode.tokenizer import Tokenizer
from workbench.engine.errors import CancelledError
from workbench.engine.patterns.regexes import compile_pattern
from workbench.engine.patterns.specials import specials_regex


def count_pieces(
    tok: Tokenizer, texts: Iterable[str], cancelled: Callable[[], bool] = lambda: False
) -> tuple[Counter, int]:
    """(distinct pieces as bytes -> count, number of special tokens) of `texts`, split as
    `encode(text, "all")` splits them."""
    split = compile_pattern(tok.pattern)
    matcher = specials_regex(tuple(tok.special_tokens))
    pieces: Counter = Counter()
    specials = 0
    for text in texts:
        if cancelled():
            raise CancelledError("counting cancelled")
        stretches = [text] if matcher is None else matcher.split(text)
        specials += len(stretches) - 1
        for stretch in stretches:
            pieces.update(p.encode("utf-8", "surrogatepass") for p in split.findall(stretch))
    return pieces, specials


def merge_ranks(piece: bytes, rank_of: dict[bytes, int]) -> list[int]:
    """The rank of each join BPE makes in `piece`, in order (a heap keyed by (rank, start);
    stale entries are found by reading the pair's bytes again).

    `merge_ranks(b"abc", {b"ab": 0, b"bc": 1}) -> [0]` (a|b|c -> ab|c: "abc" is no token);
    with `b"abc": 2` too -> [0, 2]."""
    n = len(piece)
    end = list(range(1, n + 1))  # end[s]: where the symbol starting at s ends (while alive)
    nxt = list(range(1, n + 1))  # nxt[s]: the start of the next symbol (n: none)
    prev = list(range(-1, n - 1))
    alive = [True] * n
    heap: list[tuple[int, int]] = []

    def push(s: int) -> None:
        t = nxt[s]
        if t < n:
            rank = rank_of.get(piece[s : end[t]], -1)
            if rank >= 0:
                heapq.heappush(heap, (rank, s))

    for s in range(n - 1):
        push(s)
    out: list[int] = []
    while heap:
        rank, s = heapq.heappop(heap)
        t = nxt[s] if alive[s] else n
        if t >= n or rank_of.get(piece[s : end[t]], -1) != rank:
            continue  # stale: one side was joined to something else since
        out.append(rank)
        end[s] = end[t]
        alive[t] = False
        nxt[s] = nxt[t]
        if nxt[s] < n:
            prev[nxt[s]] = s
        push(s)
        if prev[s] >= 0:
            push(prev[s])
    return out


def tokens_at_every_k(
    tok: Tokenizer, texts: Iterable[str], cancelled: Callable[[], bool] = lambda: False
) -> np.ndarray:
    """`out[k]` = tokens of `texts` encoded with `tok.prefix(k)` ("all" specials), k = 0..merges."""
    merges = len(tok.merges)
    rank_of = {raw: tok.token_rank(tid) for tid, raw in tok.vocab.items()}
    pieces, specials = count_pieces(tok, texts, cancelled)
    delta = np.zeros(merges + 2, dtype=np.int64)
    base = specials
    for i, (piece, count) in enumerate(pieces.items()):
        if i % 4096 == 0 and cancelled():
            raise CancelledError("counting cancelled")
        base += len(piece) * count
        whole = rank_of.get(piece, -1) if len(piece) > 1 else -1
        # a join at step i counts for k > (the largest rank of steps 0..i): the prefix stops at
        # the first step whose rank it lacks
        made, highest = 0, -1
        for rank in merge_ranks(piece, rank_of):
            highest = max(highest, rank)
            if whole >= 0 and highest >= whole:
                break  # from k = whole + 1 the piece is one token: handled below
            delta[highest + 1] -= count
            made += 1
        if whole >= 0:  # looked up whole from k = whole + 1: one token, whatever merged before
            delta[whole + 1] -= (len(piece) - made - 1) * count
    return base + np.cumsum(delta)[: merges + 1]
