"""What makes a tokenizer's parts trustworthy: special tokens, patterns, vocabularies and merges
checked before any table is built, and the error for a special token that was not allowed.

Every check raises `TokenizerError` naming the first inconsistency (one line a user can act
on). Not here: checking single ids and dense id ranges (`ids.py`), parsing files (`formats/`).
"""

from __future__ import annotations

import operator
from collections.abc import Iterable, Sequence
from collections.abc import Set as AbstractSet
from typing import Literal

import numpy as np
import regex

from workbench.engine.encode.ids import MAX_ID, check_dense, check_id
from workbench.engine.errors import TokenizerError
from workbench.engine.patterns.regexes import compile_pattern, resolve
from workbench.engine.patterns.specials import specials_regex
from workbench.engine.release import release_in_pieces

# tiktoken's convention: specials in the text are an error unless allowed ("all" or a set);
# `disallowed_special=()` encodes the ones not allowed as ordinary text. ("none": all of them
# as ordinary text, like `encode_ordinary`.)
AllowedSpecial = Literal["all", "none"] | AbstractSet[str] | Sequence[str]
DisallowedSpecial = Literal["all"] | AbstractSet[str] | Sequence[str]


class DisallowedSpecialError(TokenizerError, ValueError):
    """The text holds a special token that was not allowed (tiktoken raises ValueError too)."""

    def __init__(self, token: str, position: int) -> None:
        self.token = token
        self.position = position
        super().__init__(
            f"the text contains the special token {token!r} (at character {position}); pass"
            f" allowed_special={{{token!r}}} (or 'all') to encode it as that special token, or"
            " disallowed_special=() to encode it as ordinary text"
        )


def refuse(refused: regex.Pattern | None, text: str) -> None:
    """Raise `DisallowedSpecialError` for the first refused special in `text`, if any."""
    # `concurrent`: the GIL is released while it looks (encode_batch's threads go on meanwhile)
    found = refused.search(text, concurrent=True) if refused is not None else None
    if found is not None:
        raise DisallowedSpecialError(found.group(), found.start())


def special_rules(
    special_tokens: dict[str, int],
    allowed_special: AllowedSpecial,
    disallowed_special: DisallowedSpecial,
) -> tuple[tuple[str, ...], regex.Pattern | None]:
    """(the specials of `special_tokens` to split out, a matcher of the refused ones or None)."""
    allowed = _names(special_tokens, allowed_special, "allowed_special")
    if allowed_special == "none":  # the older spelling of encode_ordinary
        return (), None
    if disallowed_special == "all":
        disallowed = tuple(t for t in special_tokens if t not in set(allowed))
    else:
        disallowed = _names(special_tokens, disallowed_special, "disallowed_special")
    return allowed, specials_regex(tuple(sorted(disallowed))) if disallowed else None


def _names(
    special_tokens: dict[str, int], chosen: AllowedSpecial | DisallowedSpecial, what: str
) -> tuple[str, ...]:
    if chosen == "all":
        return tuple(special_tokens)
    if chosen == "none":
        return ()
    if isinstance(chosen, str):
        raise TokenizerError(f"{what} must be 'all' or a set of special tokens, not {chosen!r}")
    unknown = set(chosen) - set(special_tokens)
    if unknown:
        raise TokenizerError(f"not special tokens of this tokenizer: {sorted(unknown)}")
    return tuple(dict.fromkeys(chosen))


def check_specials(specials: dict[str, int]) -> None:
    """Names are non-empty strings, ids valid and distinct (`ids.check_id`).

    An empty special would match at every position; an id past 32 bits would be cut short.
    """
    owner: dict[int, str] = {}
    for name, tid in specials.items():
        if not isinstance(name, str):
            raise TokenizerError(f"special token {name!r} is not a string")
        if not name:
            raise TokenizerError("a special token cannot be empty")
        check_id(tid, f"special token {name!r}")
        if tid in owner:
            raise TokenizerError(f"special tokens {owner[tid]!r} and {name!r} share id {tid}")
        owner[tid] = name


def checked_pattern(pattern: str) -> str:
    """The pattern a preset name stands for (or `pattern` itself), once it compiles."""
    resolved = resolve(pattern)
    compile_pattern(resolved)
    return resolved


def number_specials(names: Sequence[str], first_id: int) -> dict[str, int]:
    """The trainer's convention: specials numbered in order from `first_id`."""
    specials: dict[str, int] = {}
    for name in names:
        if not name:
            raise TokenizerError("a special token cannot be empty")
        if name in specials:
            raise TokenizerError(f"special token {name!r} is listed twice")
        specials[name] = first_id + len(specials)
    return specials


def check_vocab_merges(
    vocab: dict[int, bytes],
    merges: Sequence[tuple[int, int]],
    specials: dict[str, int],
    orphans_ok: bool = False,
) -> list[int]:
    """The id each merge makes; raises TokenizerError naming the first inconsistency.

    `orphans_ok` skips the "every token is made by a merge" check (ranks-only files).
    """
    check_specials(specials)
    id_of = _ids_of_tokens(vocab)
    made = {tid for token, tid in id_of.items() if len(token) == 1}
    results = _results_at_once(vocab, merges, id_of, made)
    if results is None:  # something is wrong: find the first merge at fault, by name
        results = _merge_results(vocab, merges, id_of, made)
    if len(made) < len(vocab) and not orphans_ok:  # `made` holds ids of `vocab` only
        for tid, token in vocab.items():
            if tid not in made:
                raise TokenizerError(
                    f"token id {tid} ({token!r}) is not a byte and no merge makes it"
                )
    check_special_ids(vocab, specials)
    return results


def check_special_ids(vocab: dict[int, bytes], specials: dict[str, int]) -> None:
    """`check_specials`, and no special takes an ordinary token's id."""
    check_specials(specials)
    for name, tid in specials.items():
        if tid in vocab:
            raise TokenizerError(f"special token {name!r} has id {tid}, already a token's id")
    if len(set(specials.values())) != len(specials):
        raise TokenizerError("two special tokens share an id")


def _ids_of_tokens(vocab: dict[int, bytes]) -> dict[bytes, int]:
    """bytes -> id of a vocabulary of distinct, non-empty tokens with valid, dense ids that
    holds every single byte."""
    id_of = _ids_at_once(vocab)
    if id_of is None:  # something is wrong: find the first token at fault, by name
        id_of = {}
        for tid, token in vocab.items():
            if not isinstance(token, bytes):
                raise TokenizerError(f"token {token!r} is not bytes")
            check_id(tid, f"token {token[:40]!r}")
            if not token:
                raise TokenizerError(f"token id {tid} is empty")
            if token in id_of:
                raise TokenizerError(f"ids {id_of[token]} and {tid} are the same bytes {token!r}")
            id_of[token] = tid
    for b in range(256):
        if bytes([b]) not in id_of:
            raise TokenizerError(f"the single byte 0x{b:02X} is missing from the vocabulary")
    check_dense(vocab, len(vocab))
    return id_of


def plain_items(vocab: dict[int, bytes]) -> tuple[list[int], list[bytes]] | None:
    """(ids, tokens) of `vocab` when every id is a plain `int` and every token plain `bytes`
    (no bool, no subclass), else None: what the checks and digests done at once can take."""
    ids, tokens = list(vocab), list(vocab.values())
    if not set(map(type, ids)) <= {int} or not set(map(type, tokens)) <= {bytes}:  # C loops
        return None
    return ids, tokens


def _ids_at_once(vocab: dict[int, bytes]) -> dict[bytes, int] | None:
    """`_ids_of_tokens`' checks on the whole vocabulary at once (o200k: 0.03 s, not 0.15), or
    None when one fails. Plain `int` ids and `bytes` tokens only; anything else goes one by one."""
    items = plain_items(vocab)
    if items is None:
        return None
    ids, tokens = items
    if ids and (min(ids) < 0 or max(ids) > MAX_ID) or not all(tokens):
        return None
    id_of = dict(zip(tokens, ids, strict=True))
    return id_of if len(id_of) == len(tokens) else None


def _results_at_once(
    vocab: dict[int, bytes],
    merges: Sequence[tuple[int, int]],
    id_of: dict[bytes, int],
    made: set[int],
) -> list[int] | None:
    """`_merge_results` done on all merges at once (o200k: 0.1 s, not 0.8), or None (`made`
    left as it was) when a check fails: the merges are then gone through one by one, which
    names the first at fault. Pairs (tuples or lists) of plain `int` ids only. `vocab`'s ids
    have passed `_ids_of_tokens` (dense), so arrays indexed by id are bounded by its size."""
    pairs = list(merges)
    if not pairs:
        return []
    if not {type(pair) for pair in pairs} <= {tuple, list} or {len(p) for p in pairs} != {2}:
        return None
    lefts, rights = [p[0] for p in pairs], [p[1] for p in pairs]
    if {type(tid) for tid in lefts} | {type(tid) for tid in rights} != {int}:
        return None
    top = max(vocab)
    if min(min(lefts), min(rights)) < 0 or max(max(lefts), max(rights)) > top:
        return None
    sides = np.array([lefts, rights], dtype=np.int64).T
    ids = np.fromiter(vocab, dtype=np.int64, count=len(vocab))
    known = np.zeros(top + 1, dtype=bool)
    known[ids] = True
    if not known[sides].all():
        return None
    if np.unique((sides[:, 0] << 32) | sides[:, 1]).shape[0] != len(pairs):  # listed twice
        return None
    results = _results_by_bytes(vocab, ids, sides, top)
    if results is None:
        tokens = vocab.__getitem__
        results = list(map(id_of.get, map(operator.add, map(tokens, lefts), map(tokens, rights))))
        if None in results:  # a result not in the vocabulary
            return None
    # Each side is a byte's token or the result of an earlier merge.
    made_at = np.full(top + 1, len(pairs), dtype=np.int64)
    made_at[np.fromiter(made, dtype=np.int64, count=len(made))] = -1
    made_ids, first = np.unique(np.array(results, dtype=np.int64), return_index=True)
    made_at[made_ids] = np.minimum(made_at[made_ids], first)
    if not (made_at[sides] < np.arange(len(pairs))[:, None]).all():
        return None
    made.update(results)
    return results


def _results_by_bytes(
    vocab: dict[int, bytes], ids: np.ndarray, sides: np.ndarray, top: int
) -> list[int] | None:
    """The id each merge (`sides`: left and right ids) makes, if merge r makes the r-th token of
    two or more bytes in id order (every file we know: a trained vocabulary is numbered so):
    each such token's bytes compared with its merge's sides' in arrays, no bytes object made or
    hashed (o200k: 0.03 s, not 0.12). None if any merge makes another token. The tokens are
    distinct (`_ids_of_tokens`), so a token with the merged bytes is the one `id_of` gives.
    `ids`: `vocab`'s keys in its order."""
    tokens = list(vocab.values())
    lengths = np.fromiter(map(len, tokens), dtype=np.int64, count=len(tokens))
    arena = np.frombuffer(b"".join(tokens), dtype=np.uint8)
    starts = np.zeros(top + 1, dtype=np.int64)  # by id
    sizes = np.zeros(top + 1, dtype=np.int64)
    starts[ids] = np.cumsum(lengths) - lengths
    sizes[ids] = lengths
    guess = np.sort(ids[lengths > 1])[: sides.shape[0]]
    if guess.shape[0] < sides.shape[0]:
        return None
    left, right = sides[:, 0], sides[:, 1]
    if not np.array_equal(sizes[guess], sizes[left] + sizes[right]):
        return None
    for side, skip in ((left, 0), (right, sizes[left])):
        count = sizes[side]
        within = np.arange(int(count.sum())) - np.repeat(np.cumsum(count) - count, count)
        made = arena[np.repeat(starts[guess] + skip, count) + within]
        if not np.array_equal(made, arena[np.repeat(starts[side], count) + within]):
            return None
    return guess.tolist()


def _merge_results(
    vocab: dict[int, bytes],
    merges: Sequence[tuple[int, int]],
    id_of: dict[bytes, int],
    made: set[int],
) -> list[int]:
    """The id each merge makes, checking that it is a new pair of tokens already made; adds
    each result to `made`."""
    results: list[int] = []
    seen: set[tuple[int, int]] = set()
    for rank, merge in enumerate(merges):
        if not isinstance(merge, tuple | list) or len(merge) != 2:
            raise TokenizerError(f"merge {rank} is not a pair of ids: {merge!r}")
        left, right = merge
        if (left, right) in seen:
            raise TokenizerError(f"merge {rank} ({left}, {right}) is listed twice")
        seen.add((left, right))
        for part in (left, right):
            _check_part(rank, part, vocab, made)
        merged = vocab[left] + vocab[right]
        if merged not in id_of:
            raise TokenizerError(f"merge {rank}: the result {merged!r} is not in the vocabulary")
        results.append(id_of[merged])
        made.add(id_of[merged])
    release_in_pieces(seen)  # 200k pairs freed at once held the GIL for ~40 ms
    return results


def _check_part(rank: int, part: object, vocab: dict[int, bytes], made: set[int]) -> None:
    """One side of merge `rank` is the id of a token some earlier merge (or a byte) made."""
    if isinstance(part, bool) or not isinstance(part, int):
        raise TokenizerError(f"merge {rank}: {part!r} is not a token id")
    if part not in vocab:
        raise TokenizerError(f"merge {rank}: token id {part} is not in the vocabulary")
    if part not in made:
        raise TokenizerError(
            f"merge {rank}: token {vocab[part]!r} is used before any merge makes it"
        )


def check_text(text: object, name: str = "text") -> None:
    """TypeError naming the parameter for anything but a str (None, bytes, a number, a list)."""
    if not isinstance(text, str):
        what = "items of texts" if name == "texts" else name
        raise TypeError(f"{what} must be str, not {type(text).__name__}")


def checked_texts(texts: object) -> list[str]:
    """`texts` as a list of str; TypeError naming `texts` for a bare str (its letters would be
    encoded one by one), bytes, a non-iterable or an item that is not a str."""
    if isinstance(texts, str | bytes | bytearray) or not isinstance(texts, Iterable):
        raise TypeError(f"texts must be a list of str, not {type(texts).__name__}")
    texts = list(texts)
    for text in texts:
        check_text(text, "texts")
    return texts
