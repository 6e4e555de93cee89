"""Long runs of one character (base64 blobs, `=====` rulers, space runs in code): the trainer,
the corpus reader and the encoder against slow references on pieces longer than the kernels'
spans and blocks (no timing here: `benchmarks/long_runs.py` shows the scaling)."""

from __future__ import annotations

import pytest
from reference_bpe import train_reference
from workbench.engine.encode.tokenizer import Tokenizer
from workbench.engine.patterns.regexes import GPT2, O200K
from workbench.engine.pretokenize.counting import count_corpus, count_texts
from workbench.engine.pretokenize.scan.count import UNIT_BYTES
from workbench.engine.pretokenize.words import WordTable
from workbench.engine.train._kernels import SPAN
from workbench.engine.train.trainer import BpeTrainer

from workbench.engine.config import TrainConfig


def _train(words: dict[bytes, int], vocab_size: int) -> tuple[BpeTrainer, list[int]]:
    """The trained trainer and the pair count at each merge."""
    trainer = BpeTrainer(WordTable.from_counts(words), TrainConfig(vocab_size=vocab_size))
    counts = [c for batch in trainer.batches(batch_seconds=None) for c in batch.count.tolist()]
    return trainer, counts


@pytest.mark.parametrize(
    "words",
    [
        {b"a" * (2 * SPAN + 3): 1},  # one word over several spans of the merge loop
        {b"a" * (SPAN + 1): 2, b"ab" * 500: 3, b"b" * 70: 1},
        {b"ab" * (SPAN // 2 + 7): 1, b"aab" * 1000: 2},
    ],
    ids=["one-run", "run-and-others", "alternating"],
)
def test_long_words_train_like_the_reference(words):
    expected, expected_counts = train_reference(words, 256 + 24)
    trainer, counts = _train(words, 256 + 24)
    assert trainer.merge_pairs() == expected
    assert counts == expected_counts


def test_file_with_a_run_longer_than_a_reading_unit_counts_like_the_text(tmp_path):
    """A run without a cut point spans several reading units: one piece, as regex finds it."""
    text = "start " + "=" * (UNIT_BYTES + 12345) + " x " + "a" * (UNIT_BYTES // 2) + " end\n"
    path = tmp_path / "ruler.txt"
    path.write_bytes(text.encode())
    config = TrainConfig(vocab_size=300)
    from_file = count_corpus([path], config).words.to_dict()
    assert from_file == count_texts([text], config).to_dict()
    assert from_file.get(b" " + b"=" * (UNIT_BYTES + 12345)) == 1  # gpt2: ` ?[^\s\p{L}\p{N}]+`


@pytest.mark.parametrize("pattern", [GPT2, O200K])
def test_long_pieces_encode_like_tiktoken(pattern):
    tiktoken = pytest.importorskip("tiktoken")
    text = "a" * 5000 + " " + "ab" * 3000 + " " * 4000 + "x" + "=" * 3001
    trainer, _ = _train(count_texts([text], TrainConfig(vocab_size=300)).to_dict(), 300)
    ours = Tokenizer.from_merges(trainer.merge_pairs(), pattern)
    ranks = {token: tid for tid, token in ours.vocab.items()}
    enc = tiktoken.Encoding("long", pat_str=pattern, mergeable_ranks=ranks, special_tokens={})
    assert ours.encode(text) == enc.encode_ordinary(text)
    assert ours.with_splitter("regex").encode(text) == enc.encode_ordinary(text)
    assert ours.decode(ours.encode(text)) == text
