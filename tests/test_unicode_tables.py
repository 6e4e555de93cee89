"""Unicode version skew (issue 11, item 6): every code point is classified and split as tiktoken
does, on the scanner path and on the `regex` path.

tiktoken's engine (Rust `regex` via `fancy-regex`) is asked directly: with a pattern that is one
class, `encode_ordinary` of all code points keeps exactly the members (unmatched text is dropped).
Splits are compared as ids under real ranks (cl100k and o200k from the `bpe-openai` wheel, read
offline), for text that puts every code point in contexts where its class decides the split.
"""

from __future__ import annotations

import base64
import gzip
import importlib.resources
import os

import numpy as np
import pytest
import tiktoken
from workbench.engine.encode.tokenizer import Tokenizer
from workbench.engine.patterns.regexes import PRESETS, PinnedPattern

from workbench.engine.patterns import unicode_classes as uc

BYTES = {bytes([b]): b for b in range(256)}
# Surrogates cannot be UTF-8, so tiktoken never sees them; every other code point is checked.
CODE_POINTS = [cp for cp in range(uc.N_CODE_POINTS) if not 0xD800 <= cp < 0xE000]
EVERYTHING = "".join(map(chr, CODE_POINTS))
CLASSES = {
    r"\p{L}": uc.L,
    r"\p{N}": uc.N,
    r"\s": uc.S,
    r"[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]": uc.UPPERISH,
    r"[\p{Ll}\p{Lm}\p{Lo}\p{M}]": uc.LOWERISH,
}
FULL = os.environ.get("BPE_WORKBENCH_UNICODE", "") == "full"


def tiktoken_members(pattern: str) -> set[int]:
    enc = tiktoken.Encoding("class", pat_str=pattern, mergeable_ranks=BYTES, special_tokens={})
    return set(map(ord, enc.decode_bytes(enc.encode_ordinary(EVERYTHING)).decode("utf-8")))


def table_members(bit: int) -> set[int]:
    flags = uc.tables().flags
    return {cp for cp in np.flatnonzero(flags & bit).tolist() if not 0xD800 <= cp < 0xE000}


def test_the_version_is_the_references() -> None:
    assert uc.UNICODE_VERSION == "16.0.0"
    # U+0558 is unassigned in 16.0 (a letter to newer `regex`): not a letter here.
    assert not uc.tables().flags[0x558] & uc.L and uc.has_skew("a\u0558")


@pytest.mark.parametrize("pattern", CLASSES)
def test_scanner_classes_equal_tiktokens_for_every_code_point(pattern: str) -> None:
    assert table_members(CLASSES[pattern]) == tiktoken_members(pattern)


@pytest.mark.parametrize("pattern", CLASSES)
def test_regex_path_classes_equal_the_tables_for_every_code_point(pattern: str) -> None:
    """The `regex` package sees the stand-in text, so it agrees with the pinned tables."""
    found = {ord(EVERYTHING[a]) for a, _ in PinnedPattern(pattern).finditer(EVERYTHING)}
    assert found == table_members(CLASSES[pattern])


@pytest.mark.parametrize("letter", uc.CONTRACTION_LETTERS)
def test_case_insensitive_letters_equal_tiktokens(letter: str) -> None:
    tables = uc.tables()
    ours = {
        int(cp)
        for cp, lt in zip(tables.fold_cps, tables.fold_letters, strict=True)
        if lt == ord(letter)
    }
    assert ours == tiktoken_members(f"(?i:{letter})")


def openai_ranks(name: str) -> dict[int, bytes]:
    """rank -> bytes from the `bpe-openai` wheel (the `test` extra), never from the network."""
    pytest.importorskip("bpe_openai")
    path = importlib.resources.files("bpe_openai") / "data" / f"{name}.tiktoken.gz"
    ranks: dict[int, bytes] = {}
    with gzip.open(str(path), "rt", encoding="ascii") as handle:
        for line in handle:
            token, rank = line.split()
            ranks[int(rank)] = base64.b64decode(token)
    return ranks


@pytest.fixture(scope="module")
def ranks() -> dict[str, dict[int, bytes]]:
    return {"cl100k": openai_ranks("cl100k_base"), "o200k": openai_ranks("o200k_base")}


def contexts(cps: list[int]) -> str:
    """Each code point where its classes decide: after a letter and before a contraction, after
    a space, after an upper-case letter, before a digit. (The contraction letters' case
    matches, such as `'ſ`, are checked exactly above.)"""
    return "".join(f"a{c}'s {c}A{c}1\n" for c in map(chr, cps))


# The gpt2 pattern runs with cl100k's ranks: the split, not the vocabulary, is under test.
PAIRS = [("gpt2", "cl100k"), ("cl100k", "cl100k"), ("o200k", "o200k")]


@pytest.fixture(scope="module")
def tokenizers(ranks) -> dict[str, Tokenizer]:
    return {preset: Tokenizer.from_ranks(ranks[name], preset) for preset, name in PAIRS}


@pytest.mark.parametrize("splitter", ["auto", "regex"])
@pytest.mark.parametrize("preset, rank_name", PAIRS)
def test_every_code_point_splits_like_tiktoken(
    ranks, tokenizers, preset: str, rank_name: str, splitter: str
) -> None:
    """The issue's example: `"a\\u0558's"` gave `[64, 145, 246, 338]` instead of tiktoken's
    `[64, 145, 246, 6, 82]` (GPT-2 ranks): U+0558 was a letter to `regex`, not to tiktoken."""
    table = ranks[rank_name]
    ours = tokenizers[preset].with_splitter(splitter)
    enc = tiktoken.Encoding(
        preset, pat_str=PRESETS[preset], mergeable_ranks={b: r for r, b in table.items()},
        special_tokens={},
    )  # fmt: skip
    # The scanner: every code point. The regex path (slower): every assigned code point whose
    # class `regex` sees otherwise, every 16th unassigned one and every 16th other one; all of
    # them with BPE_WORKBENCH_UNICODE=full.
    cps = CODE_POINTS
    if splitter == "regex" and not FULL:
        skew = uc.skew_table()
        cps = [cp for k, cp in enumerate(CODE_POINTS) if k % 16 == 0 or skew[cp] and k % 16 == 1]
        cps += list(uc.RECATEGORISED)
    step = 1 << 16
    for first in range(0, len(cps), step):
        text = contexts(cps[first : first + step])
        if ours.encode_ordinary(text) != enc.encode_ordinary(text):
            bad = next(
                cp
                for cp in cps[first : first + step]
                if ours.encode_ordinary(contexts([cp])) != enc.encode_ordinary(contexts([cp]))
            )
            pytest.fail(f"{preset}/{splitter}: U+{bad:04X} splits otherwise than tiktoken")
