"""Training that starts from an existing vocabulary (extending a tokenizer), not from the bytes.

    start = StartVocab(tokens, symbols, offsets, counts)  # words already as token ids
    BpeTrainer(start, config)

`tokens[i]` is the bytes of starting id i: ids 0..255 must be the single bytes (the kernels'
tie-break rules and hashes rely on it), the rest any distinct multi-byte tokens. Word w is
`symbols[offsets[w]:offsets[w + 1]]` (ids below `len(tokens)`, each word's ids spelling its
bytes), occurring `counts[w]` times: typically each unique pre-token of a new corpus encoded by
the base tokenizer, so the base's merges are replayed exactly and training goes on from there.
New tokens take the ids after `tokens`; a merge whose bytes are a starting token reuses its id.

`merges` (with their result ids `merge_ids`) are the merges that made `tokens`, when the trainer
is to report them as its own first merges: SuperBPE's stage 2 goes on from stage 1's this way
(`stages`), so its next merge takes rank len(merges). Extending a tokenizer leaves them empty:
the base's merges are its own, and only the new ones are the trainer's.

The trainer merges in `symbols` in place (no copy: stage 2's can be hundreds of megabytes), so a
StartVocab trains one trainer.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from workbench.engine.errors import ConfigError
from workbench.engine.pretokenize.words import WordTable


@dataclass(frozen=True)
class StartVocab:
    tokens: list[bytes]
    symbols: np.ndarray  # int32
    offsets: np.ndarray  # int64, len = words + 1
    counts: np.ndarray  # int64
    merges: Sequence[tuple[int, int]] = ()
    merge_ids: Sequence[int] = ()

    def __post_init__(self) -> None:
        """Checked here: the kernels read these arrays without bounds checks."""
        if len(self.tokens) < 256 or any(
            self.tokens[b] != bytes([b]) for b in range(256)
        ):  # fmt: skip
            raise ConfigError("a starting vocabulary needs ids 0..255 to be the single bytes")
        if len(set(self.tokens)) != len(self.tokens) or min(map(len, self.tokens)) < 1:
            raise ConfigError("a starting vocabulary's tokens must be distinct and non-empty")
        if len(self.tokens) >= 2**31 - 1:
            raise ConfigError("a starting vocabulary must have fewer than 2^31 tokens")
        symbols = np.ascontiguousarray(self.symbols, dtype=np.int32)
        offsets = np.ascontiguousarray(self.offsets, dtype=np.int64)
        counts = np.ascontiguousarray(self.counts, dtype=np.int64)
        if offsets.ndim != 1 or offsets.size != counts.size + 1 or offsets[0] != 0:
            raise ConfigError("word offsets must start at 0 and have one more entry than counts")
        if np.any(np.diff(offsets) < 1) or offsets[-1] != symbols.size:
            raise ConfigError("every word needs at least one symbol, and offsets must end there")
        if symbols.size and (symbols.min() < 0 or symbols.max() >= len(self.tokens)):
            raise ConfigError("a word holds an id outside the starting vocabulary")
        if np.any(counts < 1):
            raise ConfigError("word counts must be positive")
        self._check_merges()
        object.__setattr__(self, "symbols", symbols)
        object.__setattr__(self, "offsets", offsets)
        object.__setattr__(self, "counts", counts)

    def _check_merges(self) -> None:
        """Each starting merge joins two tokens into the token of its result id."""
        if len(self.merges) != len(self.merge_ids):
            raise ConfigError("a starting vocabulary needs each merge's result id")
        n = len(self.tokens)
        for (left, right), made in zip(self.merges, self.merge_ids, strict=True):
            if not (0 <= left < n and 0 <= right < n and 0 <= made < n):
                raise ConfigError("a starting merge names an id outside the vocabulary")
            if self.tokens[left] + self.tokens[right] != self.tokens[made]:
                raise ConfigError("a starting merge's result is not its two tokens joined")

    def as_table(self) -> WordTable:
        """The words' bytes as a word table (what the trainer reports as the corpus)."""
        lengths = np.fromiter(map(len, self.tokens), dtype=np.int64, count=len(self.tokens))
        arena = np.frombuffer(b"".join(self.tokens), dtype=np.uint8)
        starts = np.concatenate(([0], np.cumsum(lengths)[:-1]))
        sym_len = lengths[self.symbols]
        ends = np.cumsum(sym_len)
        byte_offsets = np.concatenate(([0], ends[self.offsets[1:] - 1])).astype(np.int64)
        # Every symbol's bytes, gathered in one pass: position j of the output reads the arena at
        # its symbol's start plus its place inside the symbol.
        first = np.repeat(ends - sym_len, sym_len)
        inside = np.arange(int(sym_len.sum()), dtype=np.int64) - first
        data = arena[np.repeat(starts[self.symbols], sym_len) + inside]
        return WordTable.from_arrays(data, byte_offsets, self.counts)

    def token_arrays(self) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """(offsets, lengths, rolling hashes, arena) of the tokens, as the kernels keep them:
        the hash of bytes s is sum((s[i] + 1) * HASH_BASE ** (n - 1 - i)) in int64 arithmetic,
        so that a merge's hash `h(left) * HASH_BASE ** len(right) + h(right)` finds them."""
        from workbench.engine.train._state import HASH_BASE

        lengths = np.fromiter(map(len, self.tokens), dtype=np.int64, count=len(self.tokens))
        offsets = np.concatenate(([0], np.cumsum(lengths)[:-1])).astype(np.int64)
        arena = np.frombuffer(b"".join(self.tokens), dtype=np.uint8).copy()
        mask = (1 << 64) - 1
        hashes = []
        for token in self.tokens:
            h = 0
            for b in token:
                h = (h * HASH_BASE + b + 1) & mask
            hashes.append(h - (1 << 64) if h >= 1 << 63 else h)
        return offsets, lengths, np.array(hashes, dtype=np.int64), arena
