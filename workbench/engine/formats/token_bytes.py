"""The per-id byte length table that bits-per-byte needs, written beside every export.

    lengths = token_byte_lengths(tokenizer)   # int32, one entry per id up to the largest
    np.load("out/token_bytes.npy")            # the same, from an exported folder

Bits per byte divides a model's loss in nats by the BYTES its tokens stand for, so a table of
each id's byte length is what an evaluation loop sums. It is taken from the tokens' bytes
(`Tokenizer.vocab`, id -> bytes), never through `str`: a token that is part of a UTF-8
character decodes to U+FFFD (3 bytes) through `decode`, which is how nanochat's `token_bytes`
came to have 193 of 32,768 entries wrong.

Special tokens count 0 bytes, by the bits-per-byte convention: they are markup the loop adds
around documents, not text of the corpus, so they must add no bytes to the denominator (and an
evaluation usually masks them out of the loss too). Ids that are no token (holes between the
ordinary ids and the specials, as in cl100k) are 0 as well. `.npy` because it is one dense
array that numpy loads in one call and `torch.from_numpy` takes without a copy.
"""

from __future__ import annotations

import io
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from workbench.engine.formats._common import write_atomic

if TYPE_CHECKING:
    from workbench.engine.encode.tokenizer import Tokenizer

FILE = "token_bytes.npy"


def token_byte_lengths(tokenizer: Tokenizer) -> np.ndarray:
    """int32 array of `tokenizer.n_vocab` entries: each ordinary id's byte length, 0 for the
    special tokens and for ids that are no token."""
    vocab = tokenizer.vocab
    size = max([*vocab, *tokenizer.special_tokens.values()], default=-1) + 1
    lengths = np.zeros(size, dtype=np.int32)
    ids = np.fromiter(vocab.keys(), dtype=np.int64, count=len(vocab))
    lengths[ids] = np.fromiter(map(len, vocab.values()), dtype=np.int32, count=len(vocab))
    return lengths


def export(tokenizer: Tokenizer, out_dir: Path) -> list[Path]:
    """Write `token_bytes.npy` into `out_dir`."""
    buffer = io.BytesIO()
    np.save(buffer, token_byte_lengths(tokenizer), allow_pickle=False)
    return [write_atomic(Path(out_dir) / FILE, buffer.getvalue())]
