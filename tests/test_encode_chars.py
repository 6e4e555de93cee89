"""Whole characters merged before BPE (`_encode_kernels.build_char_tables`): ids stay tiktoken's.

The shortcut is exact only when no token holding part of a character and a byte beside it can
form first; these tests build vocabularies full of such tokens (byte-level BPE trained across
character boundaries) and compare every prefix with tiktoken on the same ranks.
"""

from __future__ import annotations

import pytest
import tiktoken
from _bpe_helpers import EXAMPLES
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from reference_bpe import train_reference
from workbench.engine.encode.tokenizer import Tokenizer
from workbench.engine.patterns.regexes import CL100K, O200K

# Characters sharing lead and continuation bytes (中 E4 B8 AD, 丰 E4 B8 B0, 串 E4 B8 B2, ...),
# two-byte ones, and ASCII between them.
ALPHABET = "中丰串临丸丹为主之乐乔乙文字日本語のテキストéèêëàçЖжЯя a,.\n"
_TRAIN = (
    ALPHABET * 3
    + ALPHABET[::-1] * 2
    + ALPHABET[::3] * 3
    + "中文字中文日本語のテキスト éèê Жжя 乐乔乙 字中" * 4
) * 2


def _raw_merges(num_merges: int) -> list[tuple[bytes, bytes]]:
    """Byte-level BPE on whole lines (no pre-tokenizer): merges across character boundaries."""
    words: dict[bytes, int] = {}
    for line in _TRAIN.split("\n"):
        words[line.encode()] = words.get(line.encode(), 0) + 1
    return train_reference(words, 256 + num_merges)[0]


@pytest.fixture(scope="module")
def trained() -> Tokenizer:
    return Tokenizer.from_merges(_raw_merges(160), CL100K)


def _tiktoken_of(tokenizer: Tokenizer, pattern: str) -> tiktoken.Encoding:
    ranks = {token: tid for tid, token in tokenizer.vocab.items()}
    return tiktoken.Encoding("t", pat_str=pattern, mergeable_ranks=ranks, special_tokens={})


def test_training_made_tokens_across_characters(trained):
    # The point of the vocabulary: tokens that start or end inside a character.
    def cut(token: bytes) -> bool:
        return (token[0] & 0xC0) == 0x80 or (len(token) > 1 and token[-1] >= 0xC0)

    assert sum(cut(token) for token in trained.vocab.values()) >= 10


@settings(max_examples=EXAMPLES, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.text(alphabet=ALPHABET, max_size=80), st.integers(0, 160))
def test_every_prefix_equals_tiktoken(trained, text, k):
    k = min(k, len(trained.merges))
    for pattern in (CL100K, O200K):
        ours = Tokenizer.from_merges(trained.merge_bytes[:k], pattern)
        assert ours.encode_ordinary(text) == _tiktoken_of(ours, pattern).encode_ordinary(text)
        full = Tokenizer.from_merges(trained.merge_bytes, pattern).with_splitter("regex")
        assert full.prefix(k).encode_ordinary(text) == ours.encode_ordinary(text)


def test_a_token_across_the_boundary_merges_first():
    # `\xad\xe4` (the end of 中 and the start of the next) has the lowest rank: the characters
    # must not be made whole before it, and tiktoken's ids come out.
    ranks = {bytes([b]): b for b in range(256)}
    for token in (b"\xad\xe4", b"\xe4\xb8", b"\xe4\xb8\xad", b"\xb8\xad"):
        ranks[token] = len(ranks)
    ours = Tokenizer.from_ranks({rank: token for token, rank in ranks.items()}, O200K)
    enc = tiktoken.Encoding("t", pat_str=O200K, mergeable_ranks=ranks, special_tokens={})
    for text in ("中中", "中中中", "a中中b", "中", "中\u4e2d\u4e2d中" * 30):
        assert ours.encode_ordinary(text) == enc.encode_ordinary(text)
    assert ours.encode_ordinary("中中") != [ranks["中".encode()]] * 2


def test_long_pieces_take_the_same_shortcut(trained):
    # Pieces over 64 bytes go to the heap merger, which starts from whole characters too.
    text = "中文字日本語のテキスト丰串临丸丹为主之乐乔乙éèêëàçЖжЯя" * 20
    for pattern in (CL100K, O200K):
        ours = Tokenizer.from_merges(trained.merge_bytes, pattern)
        assert ours.encode_ordinary(text) == _tiktoken_of(ours, pattern).encode_ordinary(text)
