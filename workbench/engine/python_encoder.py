"""A pure-Python encoder for rank files (tiktoken's view), used while the fast encoder compiles.

A first use of `bpe-workbench eval --tokenizer o200k` would otherwise wait 15-30 s of CPU for
the o200k encoder's kernels. A few MB of text encode here in about a second a 3 MB (measured
on the eval benchmark's 5 MB: 0.7 s to load the ranks, 0.7 s of `regex.findall`, 0.4 s of
merging 21k distinct pieces), so `session.startup` lets a small job start here at once while
helpers compile the kernels for the next run. The ids are the compiled encoder's exactly
(`tests/test_python_encoder.py` compares them on real text for each reference): the pieces are
`regex.findall(pattern)` (the scanner is checked equal to it), and each piece is merged as
tiktoken does, repeatedly joining the adjacent pair whose bytes have the lowest rank, which for a
rank file is what the compiled encoder's rebuilt merges do.

Qt-free and Numba-free: importing it compiles nothing.
"""

from __future__ import annotations

import numpy as np
import regex

from workbench.engine._native.utf8_text import utf8
from workbench.engine.patterns.specials import specials_regex

# Distinct pieces kept with their ids; past this the cache starts afresh (a corpus's frequent
# pieces come early, so a fresh cache fills with them again at once).
CACHE_PIECES = 1 << 18


class PythonEncoder:
    """`encode_array(text, "all")` as `Tokenizer.from_ranks(ranks, pattern, specials)` gives it,
    with `vocab`, `special_tokens`, `vocab_size`, `pattern` and `merge_count` alike."""

    def __init__(self, ranks: dict[int, bytes], pattern: str, special_tokens: dict[str, int]):
        self.vocab = ranks
        self.pattern = pattern
        self.special_tokens = dict(special_tokens)
        self._rank = {token: rank for rank, token in ranks.items()}
        self._pieces = regex.compile(pattern)
        self._cache: dict[str, tuple[int, ...]] = {}
        # from_ranks makes one merge per token longer than a byte.
        self.merge_count = sum(1 for token in ranks.values() if len(token) > 1)

    @property
    def vocab_size(self) -> int:
        return len(self.vocab) + len(self.special_tokens)

    def encode_array(self, text: str, allowed_special: str = "all") -> np.ndarray:
        """The ids of `text` as int32, every special token split out as its id (the only mode
        evaluation uses)."""
        if allowed_special != "all":
            raise ValueError('the Python encoder splits out every special token ("all") only')
        text = utf8(text)[0]  # lone surrogates replaced, as the compiled encoder does
        ids: list[int] = []
        matcher = specials_regex(tuple(sorted(self.special_tokens)))
        position = 0
        if matcher is not None:
            for match in matcher.finditer(text):
                self._ordinary(text[position : match.start()], ids)
                ids.append(self.special_tokens[match.group()])
                position = match.end()
        self._ordinary(text[position:], ids)
        return np.array(ids, dtype=np.int32)

    def _ordinary(self, text: str, ids: list[int]) -> None:
        cache = self._cache
        for piece in self._pieces.findall(text):
            found = cache.get(piece)
            if found is None:
                found = self._merge(piece.encode("utf-8"))
                if len(cache) >= CACHE_PIECES:
                    cache.clear()
                cache[piece] = found
            ids.extend(found)

    def _merge(self, data: bytes) -> tuple[int, ...]:
        """tiktoken's byte-pair merge of one piece: join the lowest-ranked adjacent pair (the
        leftmost of equals) until no adjacent pair is a token."""
        rank = self._rank
        whole = rank.get(data)
        if whole is not None:
            return (whole,)
        parts = [data[i : i + 1] for i in range(len(data))]
        while len(parts) > 1:
            best, at = -1, -1
            for i in range(len(parts) - 1):
                found = rank.get(parts[i] + parts[i + 1])
                if found is not None and (best < 0 or found < best):
                    best, at = found, i
            if at < 0:
                break
            parts[at : at + 2] = [parts[at] + parts[at + 1]]
        return tuple(rank[part] for part in parts)
