"""The scanner against its slow, obviously correct reference: `regex.findall` with the preset.

Pieces are compared as decoded strings on every corpus file (whole, and split at <|endoftext|>), on
Hypothesis text from an alphabet of the hard cases, and on golden cases; counts are compared with
`collections.Counter`; invalid UTF-8 must terminate, cover every byte and match the documented
"surrogateescape" behaviour. HYPOTHESIS_PROFILE=long runs twenty times the generated examples.
"""

from __future__ import annotations

import random
from collections import Counter
from pathlib import Path

import numpy as np
import pytest
import regex
from _bpe_helpers import examples
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from workbench.engine.patterns.regexes import PRESETS, compile_pattern

from workbench.engine.patterns import unicode_classes as uc
from workbench.engine.pretokenize import scan as scanner

SCANNABLE = scanner.PRESETS_SCANNABLE
EXAMPLES = examples(20)
EOT = "<|endoftext|>"
HYPOTHESIS = settings(
    max_examples=EXAMPLES, deadline=None, suppress_health_check=[HealthCheck.too_slow]
)


def expected(text: str, preset: str) -> list[str]:
    """The reference pieces (`regex`, seeing the text as the scanner's Unicode version does)."""
    return compile_pattern(PRESETS[preset]).findall(text)


def scanned(text: str, preset: str) -> list[str]:
    """The scanner's pieces, decoded (any piece that is not whole UTF-8 fails here)."""
    return [piece.decode("utf-8") for piece in scanner.pieces(text.encode("utf-8"), preset)]


def assert_same_pieces(got: list[str], want: list[str], label: str) -> None:
    """Equal piece lists, or a message showing the first difference with some context."""
    if got == want:
        return
    k = next((k for k, (a, b) in enumerate(zip(got, want, strict=False)) if a != b), None)
    k = min(len(got), len(want)) if k is None else k
    context = slice(max(0, k - 3), k + 3)
    pytest.fail(f"{label}: first difference at piece {k}: {got[context]!r} != {want[context]!r}")


def corpus_texts(folder: Path) -> list[tuple[str, str]]:
    """(name, text) for every file in the corpora folder that is UTF-8 text."""
    texts = []
    for path in sorted(folder.iterdir()):
        try:
            texts.append((path.name, path.read_text(encoding="utf-8")))
        except (UnicodeDecodeError, IsADirectoryError):
            continue
    return texts


# --- golden cases ------------------------------------------------------------------------------

GOLDEN = [
    ("gpt2", "a   b", ["a", "  ", " b"]),
    ("gpt2", "Hello world!", ["Hello", " world", "!"]),
    ("gpt2", "I'm here, you're not", ["I", "'m", " here", ",", " you", "'re", " not"]),
    ("gpt2", "IT'S", ["IT", "'", "S"]),  # gpt2 contractions are lowercase only
    ("gpt2", "x  \n\ny", ["x", "  \n", "\n", "y"]),  # the run gives its last "\n" back
    ("gpt2", "end   ", ["end", "   "]),  # trailing whitespace is one piece
    ("gpt2", "12345 67", ["12345", " 67"]),
    ("gpt2", "a\u00a0b", ["a", "\u00a0", "b"]),  # NBSP is \s but not " ": no prefix
    ("cl100k", "IT'S", ["IT", "'S"]),
    ("cl100k", "it'ſ", ["it", "'ſ"]),  # regex folds U+017F long s to s
    ("cl100k", "12345", ["123", "45"]),
    ("cl100k", " \tword", [" ", "\tword"]),
    ("cl100k", "x  \n\n  y", ["x", "  \n\n", " ", " y"]),
    ("cl100k", "!!\n\nx", ["!!\n\n", "x"]),
    ("o200k", "HelloWorld's", ["Hello", "World's"]),
    ("o200k", "ABC def", ["ABC", " def"]),
    ("o200k", "ǅa ǅ", ["ǅa", " ǅ"]),  # Lt is upper-only
    ("o200k", "!\n/x", ["!\n/", "x"]),
    ("o200k", "e\u0301x", ["e\u0301x"]),  # a combining mark is in both case classes
    ("cl100k", "a\u0301\u0301b", ["a", "\u0301\u0301", "b"]),  # ...but it is not \p{L}
    ("o200k", "\u0301A", ["\u0301", "A"]),  # backtracking: the mark alone is [Lo]+
    ("o200k", "\u02b0A's", ["\u02b0", "A's"]),  # Lm is upper and lower; A is upper only
    ("o200k", " ABC'S x", [" ABC'S", " x"]),
]


@pytest.mark.parametrize(("preset", "text", "want"), GOLDEN)
def test_golden(preset: str, text: str, want: list[str]) -> None:
    assert expected(text, preset) == want  # the golden case itself is right
    assert scanned(text, preset) == want


def test_piece_bounds_example_and_inputs() -> None:
    want = [0, 1, 3, 5]
    assert scanner.piece_bounds(b"a   b", "gpt2").tolist() == want
    assert scanner.piece_bounds(bytearray(b"a   b"), "gpt2").tolist() == want
    assert scanner.piece_bounds(np.frombuffer(b"a   b", np.uint8).copy(), "gpt2").tolist() == want
    assert scanner.piece_bounds(b"", "o200k").tolist() == [0]
    assert scanner.piece_bounds(b"x", scanner.PRESETS_SCANNABLE[0]).dtype == np.int64


@pytest.mark.parametrize("preset", SCANNABLE)
def test_many_short_pieces_and_long_runs(preset: str) -> None:
    """More pieces than the first output block holds, and pieces far longer than a block."""
    for text in ["a!" * 40_000, "x" * 200_000 + " " * 70_000 + "1" * 9, "\n" * 100_000 + "é" * 9]:
        assert_same_pieces(scanned(text, preset), expected(text, preset), preset)


def test_presets_and_errors() -> None:
    for name in SCANNABLE:
        assert scanner.can_scan(PRESETS[name])
        assert scanner.piece_bounds(b"a b", PRESETS[name]).tolist() == [0, 1, 3]
    assert not scanner.can_scan(r"\w+")
    assert not scanner.can_scan("gpt2")  # a name, not the pattern string
    with pytest.raises(ValueError, match="presets"):
        scanner.piece_bounds(b"a", "llama")
    with pytest.raises(TypeError):
        scanner.piece_bounds("text", "gpt2")  # type: ignore[arg-type]
    with pytest.raises(TypeError):
        scanner.piece_bounds(np.zeros(3, dtype=np.int32), "gpt2")


# --- corpora -----------------------------------------------------------------------------------


@pytest.mark.parametrize("preset", SCANNABLE)
def test_corpora_match_regex(corpora: Path, preset: str) -> None:
    for name, text in corpus_texts(corpora):
        assert_same_pieces(scanned(text, preset), expected(text, preset), f"{preset} {name}")
        if EOT in text:
            for k, doc in enumerate(text.split(EOT)):
                label = f"{preset} {name} document {k}"
                assert_same_pieces(scanned(doc, preset), expected(doc, preset), label)


@pytest.mark.parametrize("preset", SCANNABLE)
def test_corpora_counts_match_counter(corpora: Path, preset: str) -> None:
    for name, text in corpus_texts(corpora):
        want = Counter(piece.encode("utf-8") for piece in expected(text, preset))
        assert scanner.count_pieces(text.encode("utf-8"), preset) == want, name


# --- Hypothesis --------------------------------------------------------------------------------

HARD_CASES = [
    # whitespace: \s in regex (not "\x1c", which str.isspace() accepts), and CR/LF runs
    " ",
    " ",
    " ",
    "\t",
    "\r",
    "\n",
    "\r\n",
    "\x0b",
    "\x0c",
    "\x85",
    "\u00a0",
    "\u1680",
    "\u2000",
    "\u2028",
    "\u2029",
    "\u202f",
    "\u3000",
    "\x1c",
    # contraction letters in both cases, with apostrophes (also the curly one)
    "'",
    "'",
    "\u2019",
    "s",
    "t",
    "d",
    "m",
    "l",
    "v",
    "r",
    "e",
    "S",
    "T",
    "D",
    "M",
    "L",
    "LL",
    "V",
    "R",
    "E",
    "'s",
    "'S",
    "'ll",
    "'LL",
    "'Ll",
    "'re",
    "'RE",
    "'Ve",
    "'d",
    "ſ",
    "'ſ",
    "\u212a",
    "İ",
    "ß",
    "a",
    "z",
    "Q",
    # cased, titlecase, modifier and other letters; marks
    "ǅ",
    "ǈ",
    "ᾈ",
    "ʰ",
    "ー",
    "Ω",
    "ω",
    "Д",
    "д",
    "あ",
    "中文",
    "한",
    "ا",
    "لعربية",
    "क",
    "हिन्दी",
    "\u0301",
    "\u093f",
    "\u0651",
    "\u20dd",
    "\ufe0f",
    "é",
    "e\u0301",
    # numbers of all kinds
    "0",
    "1",
    "9",
    "123",
    "4567",
    "٣",
    "²",
    "Ⅻ",
    "½",
    "१",
    "\U0001d7d9",
    # emoji, ZWJ sequences, format and odd characters
    "😀",
    "👍🏽",
    "\u200d",
    "👨\u200d👩\u200d👧",
    "\ufeff",
    "\x00",
    "\x7f",
    "\ue000",
    "\u0378",
    "\ufffd",
    "\U000e0001",
    # punctuation, and "/" for o200k's suffix
    "!",
    ".",
    ",",
    "?",
    "-",
    '"',
    "/",
    "//",
    "\\",
    "(",
    "¿",
    "—",
    "…",
    "«",
    "$",
    "€",
    "_",
    "@",
]


def class_representatives() -> list[str]:
    """A few code points of every combination of class bits that occurs in the table."""
    flags = uc.tables().flags
    chars = []
    for value in np.unique(flags):
        cps = np.flatnonzero(flags == value)
        cps = cps[(cps < 0xD800) | (cps > 0xDFFF)]  # lone surrogates cannot be encoded
        chars.extend(chr(int(cp)) for cp in cps[:: max(1, len(cps) // 3)][:4])
    return chars


ALPHABET = HARD_CASES + class_representatives()
TEXTS = st.one_of(
    st.lists(st.sampled_from(ALPHABET), max_size=40).map("".join),
    st.text(max_size=40),
)


@HYPOTHESIS
@given(TEXTS)
def test_generated_text_matches_regex(text: str) -> None:
    for preset in SCANNABLE:
        assert scanned(text, preset) == expected(text, preset), preset


def test_long_random_texts_match_regex() -> None:
    """Longer mixes than Hypothesis makes (seeded, so a failure reproduces)."""
    rng = random.Random(20240601)
    for _ in range(150):
        text = "".join(rng.choice(ALPHABET) for _ in range(rng.randint(100, 600)))
        for preset in SCANNABLE:
            assert_same_pieces(scanned(text, preset), expected(text, preset), preset)


@settings(max_examples=max(1, EXAMPLES // 5), deadline=None)
@given(TEXTS)
def test_generated_counts_match_counter(text: str) -> None:
    for preset in SCANNABLE:
        want = Counter(piece.encode("utf-8") for piece in expected(text, preset))
        assert scanner.count_pieces(text.encode("utf-8"), preset) == want, preset


# --- count_pieces_arrays -----------------------------------------------------------------------


def test_count_arrays_layout() -> None:
    buf, offsets, counts = scanner.count_pieces_arrays(b"a a a", "gpt2")
    assert buf.tobytes() == b"a a"
    assert offsets.tolist() == [0, 1, 3]
    assert counts.tolist() == [1, 2]
    assert (buf.dtype, offsets.dtype, counts.dtype) == (np.uint8, np.int64, np.int64)
    buf, offsets, counts = scanner.count_pieces_arrays(b"", "gpt2")
    assert (len(buf), offsets.tolist(), len(counts)) == (0, [0], 0)


def as_counts(table: tuple[np.ndarray, np.ndarray, np.ndarray]) -> dict[bytes, int]:
    """A (buf, offsets, counts) table as piece -> count."""
    buf, offsets, counts = table
    raw = buf.tobytes()
    return {raw[a:b]: int(c) for a, b, c in zip(offsets[:-1], offsets[1:], counts, strict=True)}


def test_count_arrays_many_unique_pieces() -> None:
    """Enough unique pieces to grow the table and the arena several times."""
    words = ["".join(chr(97 + int(d)) for d in str(k)) for k in range(50_000)]  # a, b, ..., bj
    text = " ".join(words + words[::7]).encode()
    table = scanner.count_pieces_arrays(text, "gpt2")
    assert as_counts(table) == Counter(p.encode() for p in expected(text.decode(), "gpt2"))
    assert table[0].tobytes().startswith(b"a b c")  # unique pieces in order of first occurrence


def test_count_arrays_long_pieces_told_apart_by_their_bytes() -> None:
    """Pieces over 8 bytes with the same first 8 bytes and length, and pieces longer than the
    table's 8-bit length field, each keep their own count."""
    words = [f"prefixed{k:04d}" for k in range(3000)]
    text = " ".join(words * 2) + " " + "z" * 70_000 + " " + "z" * 70_001 + " " + "z" * 70_000
    for preset in SCANNABLE:
        want = Counter(p.encode() for p in expected(text, preset))
        assert scanner.count_pieces(text.encode(), preset) == want, preset


# --- invalid UTF-8 -----------------------------------------------------------------------------


def escaped_reference(data: bytes, preset: str) -> list[bytes]:
    """The documented behaviour: regex over the "surrogateescape" decoding, encoded back."""
    text = data.decode("utf-8", "surrogateescape")
    return [p.encode("utf-8", "surrogateescape") for p in expected(text, preset)]


INVALID = [b"\xff", b"\x80abc", b"ab\xe2\x82", b"\xe2\x82 x", b"\xed\xa0\x80", b"\xf4\x90\x80\x80"]
INVALID += [b"\xc0\xaf", b"\xe0\x80\x80", b"a \xf0\x9f\x98", b"it\xe2\x80\x99s \xc3", b"\xc3 \xa9"]


@pytest.mark.parametrize("data", INVALID)
def test_invalid_utf8_examples(data: bytes) -> None:
    for preset in SCANNABLE:
        assert scanner.pieces(data, preset) == escaped_reference(data, preset)


@settings(max_examples=max(1, EXAMPLES // 3), deadline=None)
@given(
    st.one_of(
        st.binary(max_size=60),
        st.lists(st.one_of(st.sampled_from(ALPHABET).map(str.encode), st.binary(max_size=3))).map(
            b"".join
        ),
    )
)
def test_invalid_utf8_terminates_and_covers(data: bytes) -> None:
    for preset in SCANNABLE:
        bounds = scanner.piece_bounds(data, preset)
        assert bounds[0] == 0 and bounds[-1] == len(data)
        assert np.all(np.diff(bounds) > 0) or len(data) == 0
        assert scanner.pieces(data, preset) == escaped_reference(data, preset)
        want = Counter(escaped_reference(data, preset))
        assert scanner.count_pieces(data, preset) == want


# --- tables ------------------------------------------------------------------------------------


def test_tables_agree_with_regex_on_a_sample() -> None:
    """Against `regex` on the stand-in text; this guards the bit layout and the ranges."""
    flags = uc.tables().flags
    rng = np.random.default_rng(0)
    sample = set(rng.integers(0, uc.N_CODE_POINTS, 3000).tolist()) | {ord(c[0]) for c in ALPHABET}
    classes = {
        uc.L: r"\p{L}",
        uc.N: r"\p{N}",
        uc.S: r"\s",
        uc.UPPERISH: r"[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]",
        uc.LOWERISH: r"[\p{Ll}\p{Lm}\p{Lo}\p{M}]",
    }
    for cp in sample:
        for bit, pattern in classes.items():
            found = regex.fullmatch(pattern, uc.stand_in(chr(cp)))
            assert bool(flags[cp] & bit) == bool(found), (hex(cp), bit)


def test_folds_include_long_s() -> None:
    folds = dict(zip(uc.tables().fold_cps.tolist(), uc.tables().fold_letters.tolist(), strict=True))
    assert folds[0x17F] == ord("s") and folds[ord("S")] == ord("s") and folds[ord("l")] == ord("l")


# --- the piece hash: pieces near 8 bytes, NUL bytes, the end of the data ------------------------


def test_pieces_of_7_to_17_bytes_with_shared_prefixes_and_nuls() -> None:
    """Pieces of exactly 8 and 9 bytes (the packed word's edge), pieces that differ only in their
    trailing NUL bytes (the word zero-pads them, so only the length tells them apart), and every
    suffix of the text, so each piece is also the last one (fewer than 8 bytes left to load)."""
    stems = ["abcdefg", "abcdefgh", "abcdefgz", "abcdefghi", "abcdefghz", "abcdefghijklmnopq"]
    runs = [
        "\x00",
        "\x00\x00",
        "\x00" * 8,
        "\x00" * 9,
        "!\x00",
        "!\x00\x00",
        "\x00!",
        "\x00" * 7 + "!",
    ]
    words = [*stems, *(s[:k] for s in stems for k in (1, 7, 8)), *runs]
    text = " ".join(words * 3) + "".join(runs) + "abcdefgh"
    for preset in SCANNABLE:
        for start in range(0, len(text), 3):
            part = text[start:]
            want = Counter(p.encode() for p in expected(part, preset))
            assert scanner.count_pieces(part.encode(), preset) == want, (preset, start)


def test_count_table_grows_with_short_pieces_and_nuls() -> None:
    """Thousands of distinct pieces of 1 to 12 bytes, many with NUL bytes, force the table to
    grow (refiling every piece) while counts accumulate; merged tables sum like Counters."""
    rng = random.Random(8)
    alphabet = ["a", "b", "Q", "\x00", "7", " ", "!", "é"]
    tokens = ["".join(rng.choice(alphabet) for _ in range(rng.randint(1, 12))) for _ in range(9000)]
    texts = [" ".join(rng.choice(tokens) for _ in range(6000)) for _ in range(3)]
    for preset in SCANNABLE:
        wants = [Counter(p.encode() for p in expected(t, preset)) for t in texts]
        tables = [scanner.count_pieces_arrays(t.encode(), preset) for t in texts]
        for table, want in zip(tables, wants, strict=True):
            assert as_counts(table) == want, preset
        merged = scanner.merge_count_tables(tables)
        assert as_counts(merged) == sum(wants, Counter()), preset
        assert len(as_counts(merged)) == len(merged[2])  # each piece filed once
