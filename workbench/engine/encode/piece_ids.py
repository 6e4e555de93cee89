"""Encode pre-tokens that are already cut (a word table's unique pieces) without cutting again.

    ids, id_offsets = tokenizer.encode_pieces(data, offsets)
    # piece i is data[offsets[i]:offsets[i + 1]]; its ids are ids[id_offsets[i]:id_offsets[i + 1]]

Each piece is merged by rank exactly as `Tokenizer.encode` merges a piece of a text (the same
kernel), but the pattern is not applied again: a piece cut out of its text can be cut
differently alone (`\\s+(?!\\S)` sees no following letter). Used to replay a base tokenizer's
merges on a new corpus's word table when extending it.
"""

from __future__ import annotations

import numpy as np

from workbench.engine.encode import _merge
from workbench.engine.errors import TokenizerError

PIECES_CHUNK = 4 << 20  # bytes of pieces per kernel call: its worst-case buffers stay small


def encode_pieces(
    tables: tuple, max_rank: int, data: np.ndarray, offsets: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """(ids, id offsets) of the pieces `data[offsets[i]:offsets[i + 1]]` (every piece at least
    one byte): the ids of piece i are `ids[id_offsets[i]:id_offsets[i + 1]]`. One kernel call
    per `PIECES_CHUNK` bytes of pieces (SuperBPE's stage 2 encodes a million distinct pieces:
    a call per piece cost about 30 us each), so its buffers (a token per byte at worst) stay
    small however many pieces come."""
    offsets = np.ascontiguousarray(offsets, dtype=np.int64)
    if offsets.ndim != 1 or offsets.size < 1 or offsets[0] != 0 or offsets[-1] != len(data):
        raise TokenizerError("piece offsets must run from 0 to the end of the data")
    starts, ends = offsets[:-1], offsets[1:]
    if np.any(ends <= starts):
        raise TokenizerError("every piece needs at least one byte")
    # Read-only bytes, as `Tokenizer.encode` passes them: the same compiled kernel.
    buf = np.frombuffer(np.ascontiguousarray(data, dtype=np.uint8).tobytes(), dtype=np.uint8)
    pieces = starts.size
    id_offsets = np.zeros(pieces + 1, dtype=np.int64)
    chunks: list[np.ndarray] = []
    k = base = 0
    while k < pieces:
        # pieces k..j-1: about PIECES_CHUNK bytes, at least one piece
        j = int(np.searchsorted(offsets, offsets[k] + PIECES_CHUNK, side="right")) - 1
        j = min(max(j, k + 1), pieces)
        size = int(offsets[j] - offsets[k])
        out_ids = np.empty(size + 1, dtype=np.int32)
        out_starts = np.empty(size + 1, dtype=np.int64)
        count = _merge.encode_pieces(
            buf,
            starts[k:j].copy(),
            ends[k:j].copy(),
            np.full(j - k, -1, dtype=np.int32),
            np.int32(max_rank),
            tables,
            out_ids,
            out_starts,
        )
        # Piece i's ids are the tokens that start inside it (every token is at least a byte).
        id_offsets[k:j] = base + np.searchsorted(out_starts[:count], offsets[k:j], side="left")
        chunks.append(out_ids[:count].copy())
        base += count
        k = j
    id_offsets[pieces] = base
    return (np.concatenate(chunks) if chunks else np.zeros(0, np.int32)), id_offsets
