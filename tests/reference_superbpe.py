"""A slow, obviously correct SuperBPE: the authors' recipe step by step, recounting every pair
after every merge (`reference_bpe` for stage 1).

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
    texts: Iterable[str], pattern: str, vocab_size: int, transition: int
) -> list[tuple[bytes, bytes]]:
    texts = list(texts)
    split = compile_pattern(pattern)
    words = Counter(p.encode() for t in texts for p in split.findall(t))
    merges, _ = train_reference(dict(words), transition)
    table: dict[tuple, int] = {}
    for t in texts:
        for piece in stage2_pieces(t):
            key = tuple(bytes([b]) for b in piece.encode())
            table[key] = table.get(key, 0) + 1
    for pair in merges:
        table = _apply(table, pair)
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
