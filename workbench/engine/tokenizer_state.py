"""What a pickled `Tokenizer` holds: its defining data, packed into a few byte strings.

    state = pack(vocab, merges, results, trainer_ids, pattern, specials, max_rank, "auto")
    unpack(state)  # -> (vocab, merges, results, trainer_ids), (pattern, specials, max_rank, ...)

Only what defines the tokenizer travels: the tokens, the merges, the id each merge makes, the
pattern, the special tokens, the prefix length and the pre-tokenizer choice. The encoder's
tables, each thread's buffers and piece cache, and the helper threads are per process: they are
rebuilt on first use after loading, which is what makes a tokenizer cross a `spawn` boundary.

Why byte strings and not the dicts themselves: the same tokenizer must pickle to the same bytes
every time (`datasets.map` fingerprints a function by pickling it, and a fingerprint that changes
between sessions means a cache never reused). A dict of `bytes` and a list of tuples pickle with
memo references that depend on which objects happen to be shared; a few flat byte strings do
not, and they pickle and load at memory speed (GPT-2's 50k tokens: 1.3 MB). Ids are int32,
as everywhere in the engine (`ids.check_id`).

Not here: building the tokenizer from the unpacked data (`tokenizer.py`).
"""

from __future__ import annotations

from typing import Any

import numpy as np

VERSION = 1  # bump when the packed layout changes; an unknown one is refused on load


def pack(
    vocab: dict[int, bytes],
    merges: list[tuple[int, int]],
    results: list[int],
    trainer_ids: bool,
    pattern: str,
    special_tokens: dict[str, int],
    max_rank: int,
    splitter: Any,
) -> dict[str, Any]:
    """The state `Tokenizer.__getstate__` returns: plain types only, the same bytes each time.

    `pack({0: b"a", 1: b"bc"}, [], [], False, "p", {}, 0, "auto")["token_lengths"]` holds
    the int32s 1 and 2; `"token_bytes"` is `b"abc"`."""
    tokens = list(vocab.values())
    return {
        "version": VERSION,
        "token_ids": np.fromiter(vocab.keys(), dtype=np.int32, count=len(vocab)).tobytes(),
        "token_lengths": np.fromiter(map(len, tokens), dtype=np.int32, count=len(tokens)).tobytes(),
        "token_bytes": b"".join(tokens),
        "merges": np.asarray(merges, dtype=np.int32).reshape(-1, 2).tobytes(),
        "results": np.asarray(results, dtype=np.int32).tobytes(),
        "trainer_ids": bool(trainer_ids),
        "pattern": pattern,
        "special_tokens": dict(special_tokens),
        "max_rank": int(max_rank),
        "splitter": splitter,
    }


def unpack(
    state: dict[str, Any],
) -> tuple[dict[int, bytes], list[tuple[int, int]], list[int], bool, tuple[Any, ...]]:
    """(vocab, merges, results, trainer_ids, (pattern, specials, max_rank, splitter)) from
    `pack`'s state, in the order and types the tokenizer had."""
    if state.get("version") != VERSION:
        raise ValueError(
            f"this pickled tokenizer has layout {state.get('version')!r}; this version of the"
            f" workbench reads layout {VERSION}: export it to a file (hf, tiktoken) instead"
        )
    ids = np.frombuffer(state["token_ids"], dtype=np.int32).tolist()
    ends = np.cumsum(np.frombuffer(state["token_lengths"], dtype=np.int32), dtype=np.int64)
    blob = state["token_bytes"]
    starts = [0, *ends[:-1].tolist()]
    vocab = {tid: blob[a:b] for tid, a, b in zip(ids, starts, ends.tolist(), strict=True)}
    pairs = np.frombuffer(state["merges"], dtype=np.int32).reshape(-1, 2).tolist()
    merges = [(a, b) for a, b in pairs]
    results = np.frombuffer(state["results"], dtype=np.int32).tolist()
    rest = (state["pattern"], state["special_tokens"], state["max_rank"], state["splitter"])
    return vocab, merges, results, state["trainer_ids"], rest
