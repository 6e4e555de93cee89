"""UTF-8 written by a kernel straight from Python strs (`utf8_text`): the same bytes as Python's
encoder for every way CPython stores a str, surrogates replaced as tiktoken does."""

from __future__ import annotations

import numpy as np
import pytest
from _bpe_helpers import examples
from hypothesis import given, settings
from hypothesis import strategies as st

from workbench.engine._native import utf8_text
from workbench.engine._native.utf8_text import joined_utf8, utf8
from workbench.engine.encode.tokenizer import Tokenizer

LONG = utf8_text.KERNEL_FROM


def fresh(size: int) -> np.ndarray:
    return np.full(size, 0xEE, dtype=np.uint8)  # not zeros: a byte left unwritten shows


def expected(texts: list[str]) -> tuple[bytes, list[int]]:
    parts = [utf8(text)[1] for text in texts]
    return b"".join(parts), [len(p) for p in parts]


# Characters of each storage width (ASCII, Latin-1, two bytes, four), and surrogates: lone
# ones (replaced by U+FFFD) and a pair (one character once replaced, as tiktoken does).
CHARS = ["a", " ", "\n", "\x7f", "\x80", "é", "ÿ", "Ā", "中", "\uffff", "😀", "\U0010ffff"]
SURROGATES = ["\ud800", "\udfff", "\ud83d\ude00"]


@settings(max_examples=examples(2), deadline=None)
@given(
    st.lists(
        st.tuples(
            st.lists(st.sampled_from(CHARS + SURROGATES), min_size=1, max_size=4),
            st.integers(0, 3 * LONG),
        ),
        max_size=6,
    )
)
def test_texts_of_every_width_come_out_as_python_encodes_them(specs) -> None:
    texts = [("".join(chars) * (size // len(chars) + 1))[:size] for chars, size in specs]
    data, sizes = joined_utf8(texts, fresh)
    want, want_sizes = expected(texts)
    assert data.tobytes() == want
    assert sizes.tolist() == want_sizes


@settings(max_examples=examples(3), deadline=None)
@given(
    st.sampled_from(["", "é", "Ā", "😀"]),  # makes the str 1, 1, 2 or 4 bytes a character
    st.integers(0, 40),
    st.lists(st.tuples(st.integers(0, LONG + 80), st.sampled_from(CHARS + SURROGATES)), max_size=8),
)
def test_mostly_ascii_text_of_every_width_comes_out_as_python_encodes_it(wide, extra, others):
    """ASCII goes 8 bytes of characters at a time (`_characters`): the other characters and
    the surrogates land at every offset within those 8 bytes and near the text's end."""
    chars = list(("The quick brown fox, 0123456789! " * (LONG // 16))[: LONG + extra])
    for at, char in others:
        chars[at % len(chars)] = char
    text = "".join(chars) + wide
    data, sizes = joined_utf8([text], fresh)
    want, want_sizes = expected([text])
    assert data.tobytes() == want and sizes.tolist() == want_sizes


@pytest.mark.parametrize("char", CHARS)
def test_one_long_text_of_each_width_fills_exactly_its_bytes(char: str) -> None:
    text = char * (LONG + 3)
    data, sizes = joined_utf8(["x", text, "y"], fresh)
    assert data.tobytes() == b"x" + text.encode() + b"y"
    assert sizes.tolist() == [1, len(text.encode()), 1]


def test_a_surrogate_at_the_end_of_a_long_text_is_replaced() -> None:
    text = "é" * LONG + "\ud800"
    data, _ = joined_utf8([text, "\ud83d\ude00" * LONG], fresh)
    assert data.tobytes() == ("é" * LONG + "\ufffd" + "😀" * LONG).encode()


def test_too_little_room_is_refused_before_the_kernel() -> None:
    with pytest.raises(ValueError, match="needs room for"):
        joined_utf8(["é" * LONG], lambda size: fresh(size - 1))
    with pytest.raises(ValueError, match="contiguous uint8"):
        joined_utf8(["a" * LONG], lambda size: np.zeros(size, dtype=np.int16))


def test_encode_batch_of_long_texts_with_surrogates_equals_encode() -> None:
    tok = Tokenizer.from_merges([(b"t", b"h"), (b"\xc3", b"\xa9"), (b" ", b"th")], "gpt2")
    texts = [
        "the thé " * 600,
        "中文 the" * 700 + "\ud800",
        "short",
        "\ud83d\ude00 th" * 900,
        "",
        "ÿ the" * 1000,
    ]
    with tok:
        batch = tok.encode_batch(texts, num_threads=2)
        arrays = tok.encode_batch_arrays(texts, num_threads=2)
    assert batch == [tok.encode(text) for text in texts]
    assert [a.tolist() for a in arrays] == batch


@pytest.mark.parametrize("bad", [b"x" * LONG, None, 7])
def test_a_text_that_is_not_a_str_is_refused_by_name(bad) -> None:
    with pytest.raises(TypeError, match=r"texts must be str, not (bytes|NoneType|int)$"):
        joined_utf8(["fine", bad], fresh)
