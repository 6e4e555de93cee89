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


def encode_pieces(
    tables: tuple, max_rank: int, data: np.ndarray, offsets: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """(ids, id offsets) of the pieces `data[offsets[i]:offsets[i + 1]]` (every piece at least
    one byte): the ids of piece i are `ids[id_offsets[i]:id_offsets[i + 1]]`."""
    offsets = np.ascontiguousarray(offsets, dtype=np.int64)
    if offsets.ndim != 1 or offsets.size < 1 or offsets[0] != 0 or offsets[-1] != len(data):
        raise TokenizerError("piece offsets must run from 0 to the end of the data")
    starts, ends = offsets[:-1], offsets[1:]
    if np.any(ends <= starts):
        raise TokenizerError("every piece needs at least one byte")
    # Read-only bytes, as `Tokenizer.encode` passes them: the same compiled kernel.
    buf = np.frombuffer(np.ascontiguousarray(data, dtype=np.uint8).tobytes(), dtype=np.uint8)
    out_ids = np.empty(len(buf) + 1, dtype=np.int32)
    out_starts = np.empty(len(buf) + 1, dtype=np.int64)
    count = _merge.encode_pieces(
        buf,
        starts,
        ends,
        np.full(starts.size, -1, dtype=np.int32),
        np.int32(max_rank),
        tables,
        out_ids,
        out_starts,
    )
    ids = out_ids[:count].copy()
    # Token k belongs to the piece its first byte is in; pieces tile the data in order.
    piece_of = np.searchsorted(offsets, out_starts[:count], side="right") - 1
    id_offsets = np.zeros(starts.size + 1, dtype=np.int64)
    np.cumsum(np.bincount(piece_of, minlength=starts.size), out=id_offsets[1:])
    return ids, id_offsets
