"""The tables of every tokenizer made from the same ranks, built once while any of them lives.

`Tokenizer.from_ranks` (and so every tiktoken file, `to_tiktoken` round trip and preset loaded
from ranks) checks the ranks, rebuilds their merges and builds the encoder's tables: 0.3 s for
GPT-2, 0.6 s for cl100k, 1.4 s for o200k, where tiktoken builds its encoder in 0.05-0.25 s. A
program that makes a new tokenizer per file or per request would pay that each time; here a
second tokenizer of ranks already built (and still alive somewhere) takes the same `Core`, whose
tables are immutable, in the time it takes to hash the ranks (about 30 ms for o200k). Nothing
learned from text is shared: each tokenizer keeps its own piece caches.

Ranks are identified by a BLAKE2 digest of their ids, lengths and bytes in the dict's order;
only ranks whose ids are all `int` and tokens all `bytes` are looked up (anything else goes the
checked way and fails there). The cores are held weakly: the last tokenizer of some ranks
going away frees their tables.
"""

from __future__ import annotations

import hashlib
import threading
import weakref
from collections.abc import Callable

import numpy as np

from workbench.engine.encode import _core
from workbench.engine.encode._core import Core
from workbench.engine.encode.validation import (
    check_special_ids,
    check_vocab_merges,
    plain_items,
)

_LOCK = threading.Lock()
_CORES: weakref.WeakValueDictionary[bytes, Core] = weakref.WeakValueDictionary()


def ranks_digest(ranks: dict[int, bytes]) -> bytes | None:
    """A digest of `ranks` (id -> bytes, in order), or None when they are not plain ints and
    bytes (they then go through the checks, which name what is wrong)."""
    items = plain_items(ranks)
    if items is None:
        return None
    ids, tokens = items
    if ids and (min(ids) < 0 or max(ids) >= 2**63):
        return None
    digest = hashlib.blake2b(digest_size=32)
    digest.update(np.array(ids, dtype=np.int64).tobytes())
    digest.update(np.fromiter(map(len, tokens), dtype=np.int64, count=len(tokens)).tobytes())
    digest.update(b"".join(tokens))
    return digest.digest()


def core_for(ranks: dict[int, bytes], build: Callable[[], Core]) -> tuple[Core, bool]:
    """(the core of `ranks`, whether it was already built): a living tokenizer's, else
    `build()` (which checks the ranks), remembered for the next tokenizer of the same ranks."""
    key = ranks_digest(ranks)
    if key is not None:
        with _LOCK:
            found = _CORES.get(key)
        if found is not None:
            return found, True
    core = build()
    if key is not None:
        with _LOCK:
            _CORES.setdefault(key, core)
    return core, False


def checked_core_of_ranks(ranks: dict[int, bytes], specials: dict[str, int]) -> Core:
    """The core of tiktoken-style `ranks` for `Tokenizer.from_ranks`: a living tokenizer's when
    the same ranks are loaded (their checks were made then; only `specials` are checked now),
    else checked and built here."""

    def checked_core() -> Core:
        check_vocab_merges(ranks, [], specials, orphans_ok=True)
        return _core.core_of_ranks(ranks)

    core, shared = core_for(ranks, checked_core)
    if shared:
        check_special_ids(core.vocab, specials)
    return core
