"""`--tie-break hf` against Hugging Face tokenizers' BpeTrainer: identical merges, in order."""

from __future__ import annotations

import pytest
from _bpe_helpers import examples, trained
from hypothesis import given, settings
from hypothesis import strategies as st

from workbench.engine.byte_mapping import to_mapped
from workbench.engine.config import TrainConfig

tokenizers = pytest.importorskip("tokenizers")

EXAMPLES = examples(1.5)


def hf_merges(documents: list[str], vocab_size: int) -> list[tuple[str, str]]:
    from tokenizers import Tokenizer, models, pre_tokenizers, trainers

    tokenizer = Tokenizer(models.BPE())
    tokenizer.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    trainer = trainers.BpeTrainer(
        vocab_size=vocab_size,
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
        show_progress=False,
    )
    tokenizer.train_from_iterator(documents, trainer)
    import json

    merges = json.loads(tokenizer.to_str())["model"]["merges"]
    return [tuple(m) if isinstance(m, list) else tuple(m.split(" ")) for m in merges]


def our_merges(documents: list[str], vocab_size: int) -> list[tuple[str, str]]:
    result = trained(documents, TrainConfig(vocab_size=vocab_size, tie_break="hf"))
    return [(to_mapped(a), to_mapped(b)) for a, b in result.merges()]


@pytest.mark.slow
@pytest.mark.parametrize(
    "name, vocab_size",
    [
        ("taylorswift.txt", 1000),
        ("taylorswift.txt", 5000),
        ("tinyshakespeare.txt", 8000),
        ("german.txt", 400),
        ("corpus.en", 3000),
    ],
)
def test_hf_identical_on_real_text(corpora, name, vocab_size):
    text = (corpora / name).read_text(encoding="utf-8")
    documents = text.split("<|endoftext|>")
    assert our_merges(documents, vocab_size) == hf_merges(documents, vocab_size)


# Characters both regex engines class alike (Oniguruma runs HF's ByteLevel pattern).
_pieces = st.sampled_from(
    list("abcab  \n\t.,'!?019")
    + ["'s", "'ll", "ab", "aaa", "é", "ß", "日本語", "😀", "👍🏽", "ё", "\r\n"]
)
_texts = st.lists(_pieces, min_size=1, max_size=50).map("".join)


@settings(max_examples=EXAMPLES, deadline=None)
@given(documents=st.lists(_texts, min_size=1, max_size=8), extra=st.integers(1, 80))
def test_hf_identical_on_generated_text(documents, extra):
    assert our_merges(documents, 256 + extra) == hf_merges(documents, 256 + extra)
