r"""Code-point class tables for the scanner, derived from the `regex` package itself.

The scanner must split exactly like `regex.findall`, so its idea of `\p{L}`, `\p{N}`, `\s` and
the o200k case classes is not taken from `unicodedata` (another Unicode version, another `\s`):
every code point 0..0x10FFFF is run through the compiled `regex` classes once, and the answers are
kept as one uint8 of bit flags per code point (1.1 MB). Example: `flags[ord("a")] == L | LOWERISH`.

The same goes for the contractions' `(?i:'s|...)`: which code points match each ASCII letter
case-insensitively is asked of `regex` too (it answers that `ſ` U+017F matches `s`).

The tables are cached under `$XDG_CACHE_HOME/bpe-workbench/` (default `~/.cache/...`) in a file
named after the `regex` version, so a new `regex` (new Unicode) rebuilds them; computing them takes
about half a second, loading them a few milliseconds. Nothing here knows about patterns or bytes.
"""

from __future__ import annotations

import functools
import os
import tempfile
from pathlib import Path
from typing import NamedTuple

import numpy as np
import regex

N_CODE_POINTS = 0x110000
TABLE_FORMAT = 1  # bump when the meaning of the bits changes

# Bit flags, one uint8 per code point. UPPERISH / LOWERISH are o200k's two case classes; Lm, Lo and
# M belong to both, and M is not \p{L} (so a combining mark is "other" for gpt2 and cl100k).
L = 1  # \p{L}
N = 2  # \p{N}
S = 4  # \s
UPPERISH = 8  # [\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]
LOWERISH = 16  # [\p{Ll}\p{Lm}\p{Lo}\p{M}]

_CLASS_PATTERNS: tuple[tuple[int, str], ...] = (
    (L, r"\p{L}+"),
    (N, r"\p{N}+"),
    (S, r"\s+"),
    (UPPERISH, r"[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]+"),
    (LOWERISH, r"[\p{Ll}\p{Lm}\p{Lo}\p{M}]+"),
)

CONTRACTION_LETTERS = "stremvld"  # the letters of 's 't 're 've 'm 'll 'd


class ClassTables(NamedTuple):
    """The scanner's tables: per-code-point flags and the case-insensitive letter matches.

    `fold_cps[k]` matches the lowercase ASCII letter `fold_letters[k]` under `(?i:...)`; the list
    holds both cases of each letter plus the few non-ASCII extras `regex` accepts (`ſ` for `s`).
    """

    flags: np.ndarray  # uint8[0x110000]
    fold_cps: np.ndarray  # int32[k], sorted
    fold_letters: np.ndarray  # uint8[k]


def _all_code_points() -> str:
    """Every code point once, in order (lone surrogates included; `regex` classifies them too)."""
    return "".join(map(chr, range(N_CODE_POINTS)))


def compute_flags(text: str | None = None) -> np.ndarray:
    """Ask `regex` which class each code point is in; runs of a class are set with one slice.

    Example: `compute_flags()[0x20] == S`.
    """
    text = _all_code_points() if text is None else text
    flags = np.zeros(N_CODE_POINTS, dtype=np.uint8)
    for bit, pattern in _CLASS_PATTERNS:
        for match in regex.finditer(pattern, text):
            flags[match.start() : match.end()] |= bit
    return flags


def compute_folds(text: str | None = None) -> tuple[np.ndarray, np.ndarray]:
    """The code points that `(?i:x)` matches for each contraction letter x, per `regex`.

    Example: the pairs include `(ord("S"), ord("s"))` and `(0x17F, ord("s"))`.
    """
    text = _all_code_points() if text is None else text
    pairs: list[tuple[int, int]] = []
    for letter in CONTRACTION_LETTERS:
        for match in regex.finditer(f"(?i:{letter})", text):
            pairs.append((match.start(), ord(letter)))
    pairs.sort()
    cps = np.array([cp for cp, _ in pairs], dtype=np.int32)
    letters = np.array([letter for _, letter in pairs], dtype=np.uint8)
    return cps, letters


def compute_tables() -> ClassTables:
    """Build all tables from scratch (about half a second)."""
    text = _all_code_points()
    fold_cps, fold_letters = compute_folds(text)
    return ClassTables(compute_flags(text), fold_cps, fold_letters)


def cache_path() -> Path:
    """Where the tables are cached; the `regex` version is in the name because it fixes Unicode."""
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    name = f"unicode_classes-regex{regex.__version__}-f{TABLE_FORMAT}.npz"
    return Path(base) / "bpe-workbench" / name


def _load(path: Path) -> ClassTables | None:
    """The cached tables, or None when the file is missing or damaged (then they are rebuilt)."""
    try:
        with np.load(path) as data:
            tables = ClassTables(data["flags"], data["fold_cps"], data["fold_letters"])
    except (OSError, KeyError, ValueError):
        return None
    ok = tables.flags.shape == (N_CODE_POINTS,) and tables.flags.dtype == np.uint8
    return tables if ok else None


def _save(path: Path, tables: ClassTables) -> None:
    """Write atomically (temp file + rename) so concurrent processes never read half a file.

    A cache that cannot be written (read-only home) is not an error: the tables are just rebuilt
    next time.
    """
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=path.parent, suffix=".tmp")
    except OSError:
        return
    try:
        with os.fdopen(fd, "wb") as handle:
            np.savez(handle, **tables._asdict())
        os.replace(tmp, path)
    except OSError:
        Path(tmp).unlink(missing_ok=True)


@functools.cache
def tables() -> ClassTables:
    """The tables for this process: from the disk cache if present, else computed and cached."""
    path = cache_path()
    loaded = _load(path)
    if loaded is not None:
        return loaded
    built = compute_tables()
    _save(path, built)
    return built
