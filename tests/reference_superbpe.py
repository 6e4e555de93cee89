"""A slow, obviously correct SuperBPE: the authors' recipe step by step, recounting every pair
after every merge (`reference_bpe` for stage 1).

`tie_break="hf"`: among equal counts the pair of smallest (left id, right id) in Hugging Face's
ids wins, as HF's `BpeTrainer` takes it (a byte's id is its place in HF's initial alphabet,
`hf_byte_order`; a merged token's is 256 + the number of distinct tokens merged before it), in
both stages, recounting every pair after every merge as well.

Stage 2 follows the authors' code as written, not this project's translation of it: each
line (with its `\\n`) is split by their regex in Hugging Face's "isolated" way (matches and the
text between them are pieces), stage 1's merges are applied to each piece one after another,
and training goes on, never making a token that holds `: ` or more than four words.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable

import regex
from reference_bpe import _apply, train_reference

from workbench.engine.byte_mapping import hf_byte_order
from workbench.engine.patterns.regexes import compile_pattern

# scripts/extend_tokenizer.sh in github.com/PythonNut/superbpe
AUTHORS_REGEX = regex.compile(r"\p{N}{1,3}| ?[^\s\p{L}\p{N}]{2,}[\r\n/]*| +(?!\S)")


def stage2_pieces(text: str) -> list[str]:
    pieces = []
    for line in regex.findall(r"[^\n]*\n|[^\n]+", text):  # lines keep their `\n`
        at = 0
        for m in AUTHORS_REGEX.finditer(line):
            if m.start() > at:
                pieces.append(line[at : m.start()])
            pieces.append(m.group())
            at = m.end()
        if at < len(line):
            pieces.append(line[at:])
    return pieces


def allowed(token: bytes) -> bool:
    """The fork's rules: no `:` + space, at most 4 non-empty parts between spaces."""
    return b": " not in token and len([p for p in token.split(b" ") if p]) <= 4


def train_superbpe_reference(
    texts: Iterable[str],
    pattern: str,
    vocab_size: int,
    transition: int,
    tie_break: str = "lexicographic",
    ties: list[int] | None = None,
) -> list[tuple[bytes, bytes]]:
    """The merges of SuperBPE; `ties` (if given) gets, per merge, how many pairs had its count
    (HF order only)."""
    texts = list(texts)
    split = compile_pattern(pattern)
    words = Counter(p.encode() for t in texts for p in split.findall(t))
    if tie_break == "hf":
        return _train_superbpe_hf(texts, words, vocab_size, transition, ties)
    merges, _ = train_reference(dict(words), transition)
    table = _stage2_table(texts, merges)
    tokens = {bytes([b]) for b in range(256)} | {a + b for a, b in merges}
    while len(tokens) < vocab_size:
        pairs: Counter[tuple[bytes, bytes]] = Counter()
        for word, count in table.items():
            for pair in zip(word, word[1:], strict=False):
                if allowed(pair[0] + pair[1]):
                    pairs[pair] += count
        if not pairs:
            break
        best = max(pairs, key=lambda p: (pairs[p], p))
        merges.append(best)
        tokens.add(best[0] + best[1])
        table = _apply(table, best)
    return merges


def _stage2_table(texts: list[str], merges: list[tuple[bytes, bytes]]) -> dict[tuple, int]:
    """Each stage-2 piece as tokens: its bytes, then stage 1's merges one after another."""
    table: dict[tuple, int] = {}
    for t in texts:
        for piece in stage2_pieces(t):
            key = tuple(bytes([b]) for b in piece.encode())
            table[key] = table.get(key, 0) + 1
    for pair in merges:
        table = _apply(table, pair)
    return table


def _train_superbpe_hf(
    texts: list[str],
    words: Counter[bytes],
    vocab_size: int,
    transition: int,
    ties: list[int] | None,
) -> list[tuple[bytes, bytes]]:
    """Both stages in HF's order: stage 1 over the pattern's pieces to `transition`, then
    stage 2 over the stage-2 pieces (stage 1's merges applied) with the fork's rules."""
    order = hf_byte_order()
    ids = {bytes([b]): order[b] for b in range(256)}  # token bytes -> HF id
    merges: list[tuple[bytes, bytes]] = []
    stage_one = {tuple(bytes([b]) for b in word): count for word, count in words.items()}
    _train_hf(stage_one, ids, merges, transition, lambda token: True, ties)
    _train_hf(_stage2_table(texts, merges), ids, merges, vocab_size, allowed, ties)
    return merges


def _train_hf(table, ids, merges, vocab_size, may_make, ties) -> None:
    """Merge the most frequent pair (smallest ids among equal counts) until `ids` holds
    `vocab_size` tokens or no pair `may_make` is left; grows `ids` and `merges`."""
    while len(ids) < vocab_size:
        pairs: Counter[tuple[bytes, bytes]] = Counter()
        for word, count in table.items():
            for pair in zip(word, word[1:], strict=False):
                if may_make(pair[0] + pair[1]):
                    pairs[pair] += count
        if not pairs:
            return
        top = max(pairs.values())
        tied = [pair for pair, count in pairs.items() if count == top]
        best = min(tied, key=lambda p: (ids[p[0]], ids[p[1]]))
        if ties is not None:
            ties.append(len(tied))
        merges.append(best)
        ids.setdefault(best[0] + best[1], len(ids))
        table = _apply(table, best)
