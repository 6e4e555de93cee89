"""gpt2's scan 32 bytes at a time (piece starts from the kinds of the characters before, at
and after each byte) against `regex.findall`: random ASCII over the alphabet of the rules' cases
(spaces, other whitespace, apostrophes and contraction letters, letters, digits, punctuation),
ASCII mixed with characters of two to four bytes (whitespace, letters, digits, marks, others) and
invalid UTF-8, pieces ending at every offset from the data's end and from a 32-byte step,
and counting with short output blocks and segments cut anywhere."""

from __future__ import annotations

import random
from collections import Counter
from pathlib import Path

import numpy as np
import pytest
from _bpe_helpers import examples
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from workbench.engine.patterns.regexes import PRESETS, compile_pattern

from workbench.engine.pretokenize import scan as scanner

ASCII_UNITS = [" ", "\n", "\t", "'", "s", "t", "l", "v", "e", "A", "1", ".", "ab"]
# Characters of 2-4 bytes: letters (é, 中, 𝐀), whitespace (NBSP and NEL: \s but not " ";
# U+3000, U+2028), a digit (½), a combining mark and an emoji ("other").
OTHER_UNITS = ["é", "中", "𝐀", "\u00a0", "\x85", "\u3000", "\u2028", "½", "\u0301", "😀"]
HYPOTHESIS = settings(
    max_examples=examples(20), deadline=None, suppress_health_check=[HealthCheck.too_slow]
)


def expected(text: str, preset: str = "gpt2") -> list[str]:
    return compile_pattern(PRESETS[preset]).findall(text)


def scanned(text: str, preset: str = "gpt2") -> list[str]:
    return [p.decode("utf-8") for p in scanner.pieces(text.encode("utf-8"), preset)]


def counted(data: bytes, preset: str, edges: list[int]) -> dict[bytes, int]:
    starts = np.array(edges[:-1], dtype=np.int64)
    ends = np.array(edges[1:], dtype=np.int64)
    buf, offsets, counts = scanner.count_pieces_arrays(data, preset, (starts, ends))
    return {buf[offsets[k] : offsets[k + 1]].tobytes(): int(counts[k]) for k in range(len(counts))}


def counter(data: bytes, preset: str, edges: list[int]) -> Counter[bytes]:
    pattern = compile_pattern(PRESETS[preset])
    want: Counter[bytes] = Counter()
    for a, b in zip(edges[:-1], edges[1:], strict=True):
        want.update(p.encode("utf-8") for p in pattern.findall(data[a:b].decode("utf-8")))
    return want


@HYPOTHESIS
@given(st.lists(st.sampled_from(ASCII_UNITS), max_size=200).map("".join))
def test_random_ascii_matches_regex(text: str) -> None:
    assert scanned(text) == expected(text)


@HYPOTHESIS
@given(st.lists(st.sampled_from(ASCII_UNITS + OTHER_UNITS), max_size=120).map("".join))
def test_random_ascii_with_non_ascii_matches_regex(text: str) -> None:
    for preset in scanner.PRESETS_SCANNABLE:
        assert scanned(text, preset) == expected(text, preset), preset


def test_every_offset_from_the_start_and_the_end() -> None:
    """The same text after 0-39 bytes of each kind and cut 0-39 bytes short: every piece end
    falls at every offset of a 32-byte step and of the data's last bytes."""
    rng = random.Random(7)
    for _ in range(40):
        body = "".join(rng.choice(ASCII_UNITS) for _ in range(rng.randint(10, 40)))
        for lead in ["x", " ", "\n", ".", "1", "é"]:
            for k in range(40):
                text = lead * k + body
                assert scanned(text) == expected(text), text
                cut = body[: max(0, len(body) - k)]
                assert scanned(cut) == expected(cut), cut


def test_long_mixed_texts_match_regex() -> None:
    """Stretches of ASCII of every length between non-ASCII characters (seeded)."""
    rng = random.Random(20261123)
    for _ in range(100):
        parts = []
        for _ in range(rng.randint(1, 30)):
            parts.append("".join(rng.choice(ASCII_UNITS) for _ in range(rng.randint(0, 24))))
            parts.append(rng.choice(OTHER_UNITS) * rng.randint(1, 3))
        text = "".join(parts)
        assert scanned(text) == expected(text), text


def test_corpora_with_non_ascii_sprinkled_in(corpora: Path) -> None:
    """Real English with a non-ASCII character every few dozen bytes, at random places."""
    rng = random.Random(5)
    text = (corpora / "tinyshakespeare.txt").read_text(encoding="utf-8")[:60_000]
    chars = list(text)
    for at in sorted(rng.sample(range(len(chars)), 1500), reverse=True):
        chars.insert(at, rng.choice(OTHER_UNITS))
    mixed = "".join(chars)
    for sample in (text, mixed):
        assert scanned(sample) == expected(sample)


@pytest.mark.parametrize("preset", scanner.PRESETS_SCANNABLE)
def test_counts_in_short_blocks_and_segments(preset: str) -> None:
    """More pieces than one output block of the counting kernel holds, in segments cut at random
    characters: a segment's end ends a piece even inside an ASCII stretch."""
    rng = random.Random(11)
    units = ASCII_UNITS * 4 + OTHER_UNITS
    data = "".join(rng.choice(units) for _ in range(6000)).encode("utf-8")
    starts_of_chars = [i for i, b in enumerate(data) if b & 0xC0 != 0x80]
    for cuts in (0, 3, 200):
        edges = [0, *sorted(rng.sample(starts_of_chars[1:], cuts)), len(data)]
        assert counted(data, preset, edges) == counter(data, preset, edges), cuts


def test_invalid_utf8_mixed_in() -> None:
    """Bytes that start no well-formed character are one "other" character each (as the
    "surrogateescape" decoding has them), wherever they fall in a step."""
    rng = random.Random(9)
    units = [u.encode("utf-8") for u in ASCII_UNITS + OTHER_UNITS] + [b"\x80", b"\xff", b"\xc3"]
    pattern = compile_pattern(PRESETS["gpt2"])
    for _ in range(300):
        data = b"".join(rng.choice(units) for _ in range(rng.randint(0, 120)))
        text = data.decode("utf-8", "surrogateescape")
        want = [p.encode("utf-8", "surrogateescape") for p in pattern.findall(text)]
        assert scanner.pieces(data, "gpt2") == want, data


# cl100k's scan 32 bytes at a time: its rules look at the kinds of the two characters before, the
# one after, digit runs (`\p{N}{1,3}` from the run's start), whitespace runs (`\s*[\r\n]+` to the
# run's last \r or \n) and case-insensitive contractions; the units cover each case.
CL100K_UNITS = [
    " ", "\t", "\n", "\r", "'", "s", "a", "A", "1", ".", ";", "é", "中", "٣", "\u00a0",
    "'s", "'S", "'ll", "'LL", "'Re", "'ſ", "\r\n", "\n    ", "  ", "1234567", "٣٣1",
]  # fmt: skip
# text after a run, long enough that windows (64 bytes with the lookahead) reach past the run
FAR_END = " and then the text goes on for long enough, well past every window's lookahead"
BAD_BYTES = [b"\x80", b"\xff", b"\xc3", b"\xe4\xb8"]


def cl100k_expected(data: bytes, preset: str = "cl100k") -> list[bytes]:
    text = data.decode("utf-8", "surrogateescape")
    return [
        p.encode("utf-8", "surrogateescape") for p in compile_pattern(PRESETS[preset]).findall(text)
    ]


cl100k_units = st.one_of(st.sampled_from(CL100K_UNITS).map(str.encode), st.sampled_from(BAD_BYTES))


@HYPOTHESIS
@given(st.lists(cl100k_units, max_size=160).map(b"".join))
def test_cl100k_random_units_match_regex(data: bytes) -> None:
    assert scanner.pieces(data, "cl100k") == cl100k_expected(data)


@HYPOTHESIS
@given(st.lists(st.sampled_from(["\n", " ", "\r", "\t", ".", "a", "1", "\u00a0"]), max_size=160))
def test_cl100k_whitespace_runs_match_regex(units: list[str]) -> None:
    """Long runs of whitespace with \\r and \\n anywhere in them, after punctuation or not."""
    data = "".join(units).encode("utf-8")
    assert scanner.pieces(data, "cl100k") == cl100k_expected(data)


def test_cl100k_every_offset_from_the_start_and_the_end() -> None:
    """Each rule's case at every offset of a 32-byte step and of the data's last bytes."""
    rng = random.Random(12)
    for _ in range(30):
        body = "".join(rng.choice(CL100K_UNITS) for _ in range(rng.randint(10, 40))).encode()
        for lead in [b"x", b" ", b"\n", b".", b"1", "é".encode(), b"\n \n", b"\xff"]:
            for k in range(0, 72, 1 if lead in (b" ", b"1") else 5):
                data = lead * k + body
                assert scanner.pieces(data, "cl100k") == cl100k_expected(data), data
                cut = body[: max(0, len(body) - k)]
                assert scanner.pieces(cut, "cl100k") == cl100k_expected(cut), cut


def test_cl100k_long_runs_cross_windows() -> None:
    """Digit, whitespace and punctuation runs longer than a window and its lookahead, at every
    offset: their pieces depend on where the run started, bytes or windows earlier."""
    runs = [
        "1" * 70,
        "٣" * 30,
        " " * 50,
        "\n" * 40,
        "\n \n" * 20,
        ".\n" + " " * 40 + "\n",
        "." * 60,
        "\n" * 50 + " \n",  # the R run begins past the lookback: its tail is unknown
        "\r\n" * 12 + "\t \n",
    ]
    for run in runs:
        for lead in range(0, 40, 3):
            for tail in ["a", " a", "\n", "'s", "1"]:
                data = ("x" * lead + "." + run + tail + FAR_END).encode()
                assert scanner.pieces(data, "cl100k") == cl100k_expected(data), data


def check_counts_in_segments(preset: str, units: list[str], seed: int) -> None:
    """Counting 8,000 random units over segments cut at any character, and output blocks filled
    to the last window, against `regex` segment by segment."""
    rng = random.Random(seed)
    data = b"".join(rng.choice(units).encode() for _ in range(8000))
    starts_of_chars = [i for i, b in enumerate(data) if b & 0xC0 != 0x80]
    for cuts in (0, 5, 300):
        edges = [0, *sorted(rng.sample(starts_of_chars[1:], cuts)), len(data)]
        assert counted(data, preset, edges) == counter(data, preset, edges), cuts


def test_cl100k_counts_in_short_blocks_and_segments() -> None:
    check_counts_in_segments("cl100k", CL100K_UNITS, 13)


def test_cl100k_real_text_with_non_ascii_and_bad_bytes(corpora: Path) -> None:
    """English with characters of 2-4 bytes and invalid bytes sprinkled in."""
    rng = random.Random(14)
    text = (corpora / "tinyshakespeare.txt").read_bytes()[:40_000]
    chunks = [text[a : a + 37] for a in range(0, len(text), 37)]
    extra = [u.encode() for u in OTHER_UNITS] + BAD_BYTES + [b"'S", b"2024", b"\n   \n"]
    mixed = b"".join(c + rng.choice(extra) for c in chunks)
    for sample in (text, mixed):
        assert scanner.pieces(sample, "cl100k") == cl100k_expected(sample)


# o200k's windows take ASCII only: letter runs split where an upper-case letter follows a
# lower-case one, a contraction after letters ends the piece, `[\r\n/]*` after a P run.
O200K_UNITS = [
    " ", "\t", "\n", "\r", "'", "s", "a", "A", "B", "1", ".", "/", ";", "'s", "'S", "'ll",
    "'t", "'Re", "Ab", "aB", "ABc", "\n    ", "  ", "1234567", "./\n", "\n/", "/\n/", "\x0b",
]  # fmt: skip
o200k_units = st.one_of(
    st.sampled_from(O200K_UNITS).map(str.encode),
    st.sampled_from(["é", "中", "ſ", "\u0301", "ǅ", "\u00a0"]).map(str.encode),
    st.sampled_from(BAD_BYTES),
)


@HYPOTHESIS
@given(st.lists(st.sampled_from(O200K_UNITS), max_size=160).map("".join))
def test_o200k_random_ascii_matches_regex(text: str) -> None:
    data = text.encode()
    assert scanner.pieces(data, "o200k") == cl100k_expected(data, "o200k")


@HYPOTHESIS
@given(st.lists(o200k_units, max_size=160).map(b"".join))
def test_o200k_ascii_with_other_bytes_matches_regex(data: bytes) -> None:
    """Non-ASCII characters and invalid bytes: windows around them hand over."""
    assert scanner.pieces(data, "o200k") == cl100k_expected(data, "o200k")


def test_o200k_every_offset_and_long_runs() -> None:
    rng = random.Random(15)
    for _ in range(20):
        body = "".join(rng.choice(O200K_UNITS) for _ in range(rng.randint(10, 40))).encode()
        for lead in [b"x", b" ", b"\n", b".", b"/", b"1", b"aB", b"\n/"]:
            for k in range(0, 72, 1 if lead in (b" ", b"/") else 5):
                data = lead * k + body
                assert scanner.pieces(data, "o200k") == cl100k_expected(data, "o200k"), data
    runs = ["1" * 70, " " * 50, "\n" * 40, "/\n" * 30, ".\n" + " " * 40 + "\n", "aB" * 30]
    runs += ["\n" * 50 + "/", "\n" * 50 + " \n"]  # the run begins past the lookback
    for run in runs:
        for lead in range(0, 40, 3):
            for tail in ["a", " a", "\n", "'s", "/x", "A"]:
                data = ("x" * lead + "." + run + tail + FAR_END).encode()
                assert scanner.pieces(data, "o200k") == cl100k_expected(data, "o200k"), data


def test_o200k_counts_in_short_blocks_and_segments() -> None:
    rng = random.Random(16)
    data = b"".join(rng.choice(O200K_UNITS).encode() for _ in range(8000))
    for cuts in (0, 5, 300):
        edges = [0, *sorted(rng.sample(range(1, len(data)), cuts)), len(data)]
        assert counted(data, "o200k", edges) == counter(data, "o200k", edges), cuts


@pytest.mark.parametrize("preset", ["cl100k", "o200k"])
def test_runs_after_a_character_cut_by_the_lookback(preset: str) -> None:
    """A digit or newline run right after a character of several bytes whose first byte lies
    before a window's 16 bytes of lookback (its kind unknown there): digit groups count from
    that character ("¼12", "345", ...), a `[\\r\\n]*` tail follows it if it is punctuation.
    Counting fills large blocks, so the windows run here (short texts through `pieces` never
    reach them). Found by the encoder's Hypothesis test: "¼" + 30 digits + text."""
    rng = random.Random(5)
    units = ["¼", "٣", "1", "2", "\n", "\r", "!", "—", "。", "中", " ", "a", "é", "\t", ".", "é\n"]
    tail = "Hello world, it's a test. Hello world, it's a test. " * 2
    for _ in range(600):
        head = "".join(rng.choice(units) for _ in range(rng.randint(0, 20)))
        run = rng.choice(["1", "\n", "\r\n", " ", "\n "]) * rng.randint(1, 40)
        data = (head + rng.choice(["¼", "—", "。", "é", ".", "中"]) + run + tail).encode("utf-8")
        assert counted(data, preset, [0, len(data)]) == counter(data, preset, [0, len(data)])


# o200k's windows over characters of 2-4 bytes: a letter run splits before an upper-only letter
# (Lu, Lt) that follows a lower-only one (Ll), found across continuation bytes; one that follows
# a letter of both classes (Lm, Lo: "中A" splits, "中Ab" does not) and marks (M: letters to the
# case classes, "other" to the prefix and to P runs) hand over. The units cover each kind: Lo
# (中 文), Ll (é), Lu (É), Lt (ǅ), Lm (ʰ), M, whitespace of 2-3 bytes, P of 3 bytes, a digit of
# 2 bytes, letters and an "other" of 4 bytes (𝐀 Lu, 𝐚 Ll, 😀), and runs long enough to cross
# windows.
O200K_MULTI_UNITS = [
    "中", "文", "é", "É", "ǅ", "ʰ", "\u0301", "\u3000", "\u00a0", "。", "١", "/", "\r", "\n",
    " ", "'", "s", "A", "a", "1", ".", "ſ", "é's", "中A", "中Ab", "Éa", "éÉ", "ʰA", "。/\n",
    "中文中文中文中文中文中文", "éééééééééééé", "\u3000" * 12, "\n \u00a0 \n", "1" * 7,
    "𝐀", "𝐚", "😀", "中𝐀", "𝐚𝐀",
]  # fmt: skip
# long runs of one unit that cross windows and their lookback
O200K_LONG_RUNS = ["中" * 30, "é" * 40, "É" * 40, "Éa" * 20, "中A" * 20, " " * 50, "\n" * 20]
o200k_multi_units = st.one_of(
    st.sampled_from(O200K_MULTI_UNITS).map(str.encode),
    st.sampled_from(O200K_LONG_RUNS).map(str.encode),
    st.sampled_from(BAD_BYTES),
)


# texts of 100 bytes and more take Hypothesis ~20 ms an example to make: a fifth of the budget
LONG_TEXTS = settings(HYPOTHESIS, max_examples=examples(4))


def o200k_expected(data: bytes) -> list[bytes]:
    return cl100k_expected(data, "o200k")


@LONG_TEXTS
@given(st.lists(o200k_multi_units, min_size=60, max_size=200).map(b"".join))
def test_o200k_multibyte_units_match_regex(data: bytes) -> None:
    """Texts of 100 bytes and more: the windows (64 bytes with their look-around) take them."""
    assert scanner.pieces(data, "o200k") == o200k_expected(data)


@LONG_TEXTS
@given(
    st.lists(
        st.sampled_from(["中", "文", "é", "É", "ǅ", "ʰ", "a", "A", "s", "'", " "]),
        min_size=80,
        max_size=200,
    )
)
def test_o200k_letter_runs_of_every_case_match_regex(units: list[str]) -> None:
    """Letters of every case class side by side, with apostrophes and spaces between words."""
    data = "".join(units).encode()
    assert scanner.pieces(data, "o200k") == o200k_expected(data)


def test_o200k_multibyte_every_offset_from_a_window_and_the_end() -> None:
    """Each case at every offset of a 32-byte window (after leads of 1-3-byte characters) and of
    the data's last bytes."""
    rng = random.Random(17)
    leads = [b"x", b" ", b"\n", b".", b"/", "中".encode(), "é".encode(), "É".encode(), b"\xff"]
    for _ in range(20):
        body = b"".join(rng.choice(O200K_MULTI_UNITS).encode() for _ in range(rng.randint(10, 40)))
        for lead in leads:
            for k in range(0, 72, 1 if lead in (b" ", "中".encode()) else 5):
                data = lead * k + body + FAR_END.encode()
                assert scanner.pieces(data, "o200k") == o200k_expected(data), data
                cut = body[: max(0, len(body) - k)]
                assert scanner.pieces(cut, "o200k") == o200k_expected(cut), cut


def test_o200k_multibyte_runs_cross_windows() -> None:
    """Letter, whitespace, digit and punctuation runs of characters of several bytes, longer than
    a window, after every lead and before every kind of tail."""
    runs = [*O200K_LONG_RUNS, "。" * 30, "١" * 30, "\u3000" * 30, "ʰ" * 30, "ǅ" * 30, "中é" * 20]
    runs += ["\u0301" * 20, "。\n/" * 10, "\u00a0\n" * 15]
    for run in runs:
        for lead in range(0, 40, 3):
            for head in ["x", "中", "é", ".", "1", " "]:
                for tail in ["a", " a", "\n", "'s", "/x", "A", "中", "Éa", "ǅ"]:
                    data = ("x" * lead + head + run + tail + FAR_END).encode()
                    assert scanner.pieces(data, "o200k") == o200k_expected(data), data


def test_o200k_multibyte_counts_in_short_blocks_and_segments() -> None:
    check_counts_in_segments("o200k", O200K_MULTI_UNITS, 18)


MULTILINGUAL = Path("/work/bench-data/multi-2.txt")  # man pages in Italian, Japanese, Korean


def test_o200k_real_multilingual_text(corpora: Path) -> None:
    """Real text in several scripts, whole and in slices cut at any byte (a cut character is
    invalid UTF-8 at the edge), with and without characters of every case class sprinkled in.
    The benchmark's multilingual file when it is there, else Taylor Swift's article."""
    source = MULTILINGUAL if MULTILINGUAL.is_file() else corpora / "taylorswift.txt"
    text = source.read_bytes()[:300_000]
    rng = random.Random(19)
    chunks = [text[a : a + 41] for a in range(0, len(text), 41)]
    extra = [u.encode() for u in O200K_MULTI_UNITS] + BAD_BYTES
    mixed = b"".join(c + rng.choice(extra) for c in chunks)
    for sample in (text, mixed):
        check_o200k_text(sample, rng, slices=20, longest=5000)


def check_o200k_text(data: bytes, rng: random.Random, slices: int, longest: int) -> None:
    """o200k on `data` counted whole, then `slices` slices of 100..`longest` bytes cut at any
    byte, scanned, against `regex`."""
    assert counted(data, "o200k", [0, len(data)]) == counter_bytes(data)
    for _ in range(slices):
        a = rng.randrange(max(1, len(data) - longest))
        part = data[a : a + rng.randint(100, longest)]
        assert scanner.pieces(part, "o200k") == o200k_expected(part)


def counter_bytes(data: bytes) -> Counter[bytes]:
    return Counter(o200k_expected(data))


# o200k's windows take a mark right after a letter (or after such marks, up to three in a row)
# as a letter of both case classes: Indic and Thai words are letters and marks in turn. A mark
# after anything else (a digit, a space, a P, the start) still hands over: there it may be the
# prefix of a letter piece or part of a P run. Units: Devanagari letters (Lo), signs (Mn, Mc),
# a digit (Nd) and a danda (Po); Thai letters and marks; decomposed Latin; ZWJ (Cf: "other").
MARK_UNITS = [
    "क", "ष", "\u094d", "\u093f", "\u0902", "\u0940", "क्ष", "कि", "किं", "\u096a", "\u0964",
    "ก", "\u0e31", "\u0e48", "กั่", "a\u0323\u0302", "A\u0301", "A\u0301B", "a\u0301B",
    "中\u0301A", "中\u0301a", "ʰ\u0301A", "1\u0301", " \u0301a", ".\u0301a", "((\u0301a",
    "\u0301\u0301a", "क\u093f\u0902\u0301\u0301\u0301", "क\u0301'\u0301s", "\u200d", "क\u200d",
    " ", "'", "s", "A", "a", "1", ".", "/", "\n", "\u00a0",
]  # fmt: skip


@LONG_TEXTS
@given(st.lists(st.sampled_from(MARK_UNITS), min_size=40, max_size=150).map("".join))
def test_o200k_marks_after_letters_match_regex(text: str) -> None:
    data = text.encode()
    assert scanner.pieces(data, "o200k") == o200k_expected(data)


def test_o200k_marks_every_offset_from_a_window() -> None:
    """Each mark case at every offset of a 32-byte window, after leads of 1-3 bytes (a mark
    right at the masks' start follows a letter whose first byte is out of sight)."""
    rng = random.Random(23)
    for _ in range(12):
        body = "".join(rng.choice(MARK_UNITS) for _ in range(rng.randint(10, 30))).encode()
        for lead in (b"x", b" ", "क".encode(), "\u094d".encode(), "é".encode()):
            for k in range(0, 70, 1 if lead == "क".encode() else 3):
                data = lead * k + body + FAR_END.encode()
                assert scanner.pieces(data, "o200k") == o200k_expected(data), data


def test_o200k_real_text_with_marks() -> None:
    """Translations in scripts full of marks (Hindi, Thai, Bengali, Tamil, Vietnamese) from the
    system's message catalogs, when the machine has them."""
    import gettext
    import glob

    parts = []
    for lang in ("hi", "th", "bn", "ta", "vi", "my", "km"):
        for path in sorted(glob.glob(f"/usr/share/locale/{lang}/LC_MESSAGES/*.mo"))[:3]:
            with open(path, "rb") as handle:
                try:
                    catalog = gettext.GNUTranslations(handle)._catalog
                except (OSError, ValueError):
                    continue
            parts += [v for v in catalog.values() if isinstance(v, str)][:400]
    if not parts:
        pytest.skip("no message catalogs in scripts with marks on this machine")
    check_o200k_text("\n".join(parts).encode(), random.Random(29), slices=30, longest=3000)
