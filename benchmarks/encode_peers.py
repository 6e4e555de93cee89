"""The encoders `encode_matrix.py` races, each behind one small adapter: how to build a new
instance from a rank file on disk, and how to ask it for a Python list, an array and a batch.

Every peer is built from the same `.tiktoken` rank file (`write_rank_file`) and the preset's
pattern, with no special tokens, and asked for ordinary text (`encode_ordinary` where it has
one). A peer that is not installed is left out, with the reason printed once. The APIs, as read
from each package (`help()`, its stub files) on the versions in the `bench` extra:

- tiktoken: `Encoding(...).encode_ordinary` (list), `encode_to_numpy` (uint32 array, 0.8+),
  `encode_ordinary_batch(texts, num_threads=n)` (a thread pool in Python around the Rust core).
- riptoken: `CoreBPE(ranks, specials, pattern).encode_ordinary` (list),
  `encode_ordinary_batch(texts)` (Rust threads, all cores).
- gigatoken: `Tokenizer.from_tiktoken(path, pretokenizer=...)`; `.encode` gives a uint32 array,
  and its list is that array's `.tolist()`: 4x faster on a new instance than its tiktoken
  drop-in (`.as_tiktoken().encode_ordinary`, 16 against 63 MB per CPU second measured on 2 MB
  of English, cl100k), so its fastest list is the one raced; `encode_batch_list(texts, parallel=...)` lists,
  `encode_batch(...)` one ragged (awkward) array.
- fastokens: `Tokenizer.from_tiktoken(path, pattern=...)`; `.encode_ordinary(text).ids` (list);
  `encode_batch_flat([text])` is its array path (uint32 bytes, no Python int per id);
  `encode_batch(texts)` / `encode_batch_flat(texts)` on every core (rayon).
- quicktok: `BasicTokenizer().load(model)` of its own format ("quicktok v1", the pattern, a
  count of specials, then one merge a line as two ids); it numbers the 256 byte tokens by
  byte value (tiktoken's ranks order them otherwise), so its ids are compared after
  relabelling those 256 (outside the timing); `encode` (list).
"""

from __future__ import annotations

import base64
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

# gigatoken's name for each preset's pre-tokenizer.
_GIGATOKEN_PRESET = {"gpt2": "gpt2", "cl100k": "cl100k", "o200k": "o200k"}


@dataclass(frozen=True)
class RankFile:
    """One preset's ranks, on disk as tiktoken writes them and in memory."""

    name: str  # gpt2, cl100k, o200k
    path: Path
    pattern: str
    ranks: dict[bytes, int]


@dataclass
class Peer:
    """How to build and call one encoder. `as_list` / `as_array` / `batch_lists` /
    `batch_arrays` are None where the encoder has no such call."""

    name: str
    build: Callable[[RankFile], object]
    as_list: Callable[[object, str], list[int]] | None
    as_array: Callable[[object, str], np.ndarray] | None = None
    # (instance, texts, threads) -> one result per text; threads is a request the peer may ignore
    batch_lists: Callable[[object, list[str], int], list] | None = None
    batch_arrays: Callable[[object, list[str], int], object] | None = None
    threads_note: str = ""  # how the peer picks its threads for a batch
    relabel: Callable[[RankFile], np.ndarray] | None = None  # its id -> tiktoken's
    notes: list[str] = field(default_factory=list)


def write_rank_file(folder: Path, name: str, pattern: str, ranks: dict[bytes, int]) -> RankFile:
    """`folder/<name>.tiktoken` (base64 token, rank; a line each, in rank order)."""
    path = folder / f"{name}.tiktoken"
    lines = [
        f"{base64.b64encode(token).decode()} {rank}"
        for token, rank in sorted(ranks.items(), key=lambda item: item[1])
    ]
    path.write_text("\n".join(lines) + "\n", encoding="ascii")
    return RankFile(name, path, pattern, ranks)


def _read_ranks(rank_file: RankFile) -> dict[bytes, int]:
    """The ranks read back from disk (what building from a file costs a peer that takes a dict)."""
    ranks = {}
    for line in rank_file.path.read_bytes().splitlines():
        token, rank = line.split()
        ranks[base64.b64decode(token)] = int(rank)
    return ranks


def ours() -> Peer:
    from workbench.engine.encode.tokenizer import Tokenizer  # noqa: PLC0415
    from workbench.engine.formats import tiktoken_file  # noqa: PLC0415

    def build(rank_file: RankFile) -> Tokenizer:
        return tiktoken_file.load(rank_file.path, rank_file.pattern)

    def batch_lists(tok: Tokenizer, texts: list[str], threads: int) -> list:
        return tok.encode_batch(texts, num_threads=threads, allowed_special="none")

    def batch_arrays(tok: Tokenizer, texts: list[str], threads: int) -> list:
        return tok.encode_batch_arrays(texts, num_threads=threads, allowed_special="none")

    return Peer(
        "ours",
        build,
        lambda tok, text: tok.encode_ordinary(text),
        lambda tok, text: tok.encode_array(text, disallowed_special=()),
        batch_lists,
        batch_arrays,
        "num_threads",
    )


def tiktoken_peer() -> Peer:
    import tiktoken  # noqa: PLC0415

    def build(rank_file: RankFile) -> object:
        return tiktoken.Encoding(
            rank_file.name,
            pat_str=rank_file.pattern,
            mergeable_ranks=_read_ranks(rank_file),
            special_tokens={},
        )

    def batch(enc: object, texts: list[str], threads: int) -> list:
        return enc.encode_ordinary_batch(texts, num_threads=threads)  # type: ignore[attr-defined]

    array = getattr(tiktoken.Encoding, "encode_to_numpy", None)
    return Peer(
        "tiktoken",
        build,
        lambda enc, text: enc.encode_ordinary(text),  # type: ignore[attr-defined]
        (lambda enc, text: enc.encode_to_numpy(text, disallowed_special=()))  # type: ignore[attr-defined]
        if array is not None
        else None,
        batch,
        None,
        "num_threads (a Python thread pool)",
    )


def riptoken_peer() -> Peer:
    import riptoken  # noqa: PLC0415

    def build(rank_file: RankFile) -> object:
        return riptoken.CoreBPE(_read_ranks(rank_file), {}, rank_file.pattern)

    return Peer(
        "riptoken",
        build,
        lambda enc, text: enc.encode_ordinary(text),  # type: ignore[attr-defined]
        None,
        lambda enc, texts, threads: enc.encode_ordinary_batch(texts),  # type: ignore[attr-defined]
        None,
        "every core (its own)",
    )


def gigatoken_peer() -> Peer:
    import gigatoken  # noqa: PLC0415

    class Built:
        def __init__(self, rank_file: RankFile) -> None:
            self.tok = gigatoken.Tokenizer.from_tiktoken(
                str(rank_file.path),
                pretokenizer=_GIGATOKEN_PRESET[rank_file.name],
                special_tokens={},
            )

    return Peer(
        "gigatoken",
        Built,
        lambda b, text: b.tok.encode(text).tolist(),  # type: ignore[attr-defined]
        lambda b, text: b.tok.encode(text),  # type: ignore[attr-defined]
        lambda b, texts, threads: b.tok.encode_batch_list(texts, parallel=threads > 1),  # type: ignore[attr-defined]
        lambda b, texts, threads: b.tok.encode_batch(texts, parallel=threads > 1),  # type: ignore[attr-defined]
        "parallel=True: every core",
    )


def fastokens_peer() -> Peer:
    import fastokens  # noqa: PLC0415

    def build(rank_file: RankFile) -> object:
        return fastokens.Tokenizer.from_tiktoken(
            str(rank_file.path), pattern=rank_file.pattern, special_tokens={}
        )

    def array(tok: object, text: str) -> np.ndarray:
        ids, _ = tok.encode_batch_flat([text])  # type: ignore[attr-defined]
        return np.frombuffer(ids, dtype=np.uint32)

    def batch_arrays(tok: object, texts: list[str], threads: int) -> tuple:
        ids, offsets = tok.encode_batch_flat(texts)  # type: ignore[attr-defined]
        return np.frombuffer(ids, dtype=np.uint32), np.frombuffer(offsets, dtype=np.uint64)

    return Peer(
        "fastokens",
        build,
        lambda tok, text: tok.encode_ordinary(text).ids,  # type: ignore[attr-defined]
        array,
        lambda tok, texts, threads: [e.ids for e in tok.encode_batch(texts)],  # type: ignore[attr-defined]
        batch_arrays,
        "every core (rayon; RAYON_NUM_THREADS at start)",
    )


def _quicktok_merges(rank_file: RankFile) -> list[tuple[int, int]] | None:
    """Each multi-byte token's merge in quicktok's ids (byte value; 256 + i for the i-th merge),
    or None when the ranks do not number merged tokens 256, 257, ... in merge order."""
    from workbench.engine.encode._core import core_of_ranks  # noqa: PLC0415

    by_rank = {rank: token for token, rank in rank_file.ranks.items()}
    core = core_of_ranks(by_rank)
    if core.results != list(range(256, 256 + len(core.results))):
        return None
    byte_of = {rank: token[0] for rank, token in by_rank.items() if len(token) == 1}
    return [(byte_of.get(a, a), byte_of.get(b, b)) for a, b in core.merges]


def quicktok_peer() -> Peer:
    import quicktok  # noqa: PLC0415

    made: dict[Path, Path] = {}

    def model_file(rank_file: RankFile) -> Path:
        if rank_file.path not in made:
            merges = _quicktok_merges(rank_file)
            if merges is None or "\n" in rank_file.pattern:
                raise ValueError("these ranks are not in quicktok's merge order")
            path = rank_file.path.with_suffix(".quicktok")
            lines = ["quicktok v1", rank_file.pattern, "0", *(f"{a} {b}" for a, b in merges)]
            path.write_text("\n".join(lines) + "\n", encoding="utf-8")
            made[rank_file.path] = path
        return made[rank_file.path]

    def build(rank_file: RankFile) -> object:
        path = model_file(rank_file)  # written once, outside any timing
        tok = quicktok.BasicTokenizer()
        tok.load(str(path))
        return tok

    def relabel(rank_file: RankFile) -> np.ndarray:
        table = np.arange(max(rank_file.ranks.values()) + 1, dtype=np.int64)
        for token, rank in rank_file.ranks.items():
            if len(token) == 1:
                table[token[0]] = rank
        return table

    return Peer(
        "quicktok",
        build,
        lambda tok, text: tok.encode(text),  # type: ignore[attr-defined]
        relabel=relabel,
        threads_note="BasicTokenizer(num_threads=1)",
    )


PEERS: dict[str, Callable[[], Peer]] = {
    "ours": ours,
    "tiktoken": tiktoken_peer,
    "gigatoken": gigatoken_peer,
    "fastokens": fastokens_peer,
    "quicktok": quicktok_peer,
    "riptoken": riptoken_peer,
}


def available(names: list[str]) -> list[Peer]:
    """The peers among `names` that import, each reason for one that does not printed."""
    found = []
    for name in names:
        try:
            found.append(PEERS[name]())
        except ImportError as exc:
            print(f"{name}: not installed ({exc}); left out")
    return found
