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

Rebuilding costs (GPT-2: ~0.4 s for the tables of ids, ~0.3 s more for the encoder's on first
use), and `Pool.map(tok.encode, texts)` unpickles the tokenizer once per chunk of work; so each
process keeps the cores it has built or packed, by a digest of their packed bytes, for as long as
a tokenizer uses them: the second load in a worker, and a `deepcopy`, share the first one's core
(immutable, as `prefix(k)` shares it). Packing is cached per core for the same reason.

Not here: building the core from the unpacked data (`_core.build_core`).
"""

from __future__ import annotations

import hashlib
import threading
import weakref
from collections.abc import Callable
from typing import Any, Protocol

import numpy as np

VERSION = 1  # bump when the packed layout changes; an unknown one is refused on load
_CORE_FIELDS = ("token_ids", "token_lengths", "token_bytes", "merges", "results", "trainer_ids")


class CoreData(Protocol):
    """What is packed of a tokenizer's core (`tokenizer._Core`)."""

    vocab: dict[int, bytes]
    merges: list[tuple[int, int]]
    results: list[int]
    trainer_ids: bool


_packed: weakref.WeakKeyDictionary[Any, dict[str, Any]] = weakref.WeakKeyDictionary()
_built: weakref.WeakValueDictionary[bytes, Any] = weakref.WeakValueDictionary()
_lock = threading.Lock()  # two threads unpickling at once build one core


def pack(
    core: CoreData, pattern: str, special_tokens: dict[str, int], max_rank: int, splitter: Any
) -> dict[str, Any]:
    """The state `Tokenizer.__getstate__` returns: plain types only, the same bytes each time.

    A core of tokens `{0: b"a", 1: b"bc"}` packs `"token_lengths"` as the int32s 1 and 2 and
    `"token_bytes"` as `b"abc"`."""
    with _lock:
        fields = _packed.get(core)
        if fields is None:
            fields = _pack_core(core)
            _packed[core] = fields
            _built.setdefault(_digest(fields), core)  # a deepcopy or a reload here shares it
    return {
        "version": VERSION,
        **fields,
        "pattern": pattern,
        "special_tokens": dict(special_tokens),
        "max_rank": int(max_rank),
        "splitter": splitter,
    }


def _pack_core(core: CoreData) -> dict[str, Any]:
    vocab = core.vocab
    tokens = list(vocab.values())
    return {
        "token_ids": np.fromiter(vocab.keys(), dtype=np.int32, count=len(vocab)).tobytes(),
        "token_lengths": np.fromiter(map(len, tokens), dtype=np.int32, count=len(tokens)).tobytes(),
        "token_bytes": b"".join(tokens),
        "merges": np.asarray(core.merges, dtype=np.int32).reshape(-1, 2).tobytes(),
        "results": np.asarray(core.results, dtype=np.int32).tobytes(),
        "trainer_ids": bool(core.trainer_ids),
    }


def _digest(fields: dict[str, Any]) -> bytes:
    h = hashlib.blake2b(digest_size=20)
    for name in _CORE_FIELDS:
        value = fields[name]
        h.update(value if isinstance(value, bytes) else repr(value).encode())
        h.update(b"\0")
    return h.digest()


def core_of(
    state: dict[str, Any],
    build: Callable[[dict[int, bytes], list[tuple[int, int]], list[int], bool], Any],
) -> Any:
    """The core `pack`'s state describes: one this process already holds, else `build(vocab,
    merges, results, trainer_ids)` of the unpacked data."""
    if state.get("version") != VERSION:
        raise ValueError(
            f"this pickled tokenizer has layout {state.get('version')!r}; this version of the"
            f" workbench reads layout {VERSION}: export it to a file (hf, tiktoken) instead"
        )
    key = _digest(state)
    with _lock:
        core = _built.get(key)
        if core is None:
            core = build(*unpack_core(state))
            _built[key] = core
    return core


def settings(state: dict[str, Any]) -> tuple[str, dict[str, int], int, Any]:
    """(pattern, special tokens, prefix length, splitter choice): the rest of `Tokenizer`'s
    arguments."""
    return state["pattern"], state["special_tokens"], state["max_rank"], state["splitter"]


def unpack_core(
    state: dict[str, Any],
) -> tuple[dict[int, bytes], list[tuple[int, int]], list[int], bool]:
    """(vocab, merges, results, trainer_ids) from `pack`'s state, in the order and types the
    tokenizer had."""
    ids = np.frombuffer(state["token_ids"], dtype=np.int32).tolist()
    ends = np.cumsum(np.frombuffer(state["token_lengths"], dtype=np.int32), dtype=np.int64)
    blob = state["token_bytes"]
    starts = [0, *ends[:-1].tolist()]
    vocab = {tid: blob[a:b] for tid, a, b in zip(ids, starts, ends.tolist(), strict=True)}
    pairs = np.frombuffer(state["merges"], dtype=np.int32).reshape(-1, 2).tolist()
    merges = [(a, b) for a, b in pairs]
    results = np.frombuffer(state["results"], dtype=np.int32).tolist()
    return vocab, merges, results, bool(state["trainer_ids"])
