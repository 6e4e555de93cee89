"""Batches and the piece cache that outlives a call (issue 12 item 4): `encode_batch`,
`encode_batch_arrays` and `bpe-workbench encode` with several files give exactly `encode`'s ids,
and later calls that reuse (or restart, or grow) a thread's cache change nothing."""

from __future__ import annotations

import random

import numpy as np
import pytest

from workbench.cli import main
from workbench.engine import formats
from workbench.engine.tokenizer import DisallowedSpecialError

EOT = "<|endoftext|>"
WORDS = ["the", " cat", " sat", "\n", "  ", "你好世界", " était", "int main(void) {", "—", "🙂"]


@pytest.fixture(scope="module")
def gpt2(corpora):
    return formats.load(corpora / "gpt2_vocab.json")


def _texts(count: int, seed: int) -> list[str]:
    """Texts of varied length and content, many pieces shared between them, some new."""
    rng = random.Random(seed)
    out = []
    for i in range(count):
        words = [rng.choice(WORDS) for _ in range(rng.randrange(0, 400))]
        words += [f" {i}x{rng.randrange(10**6)}" for _ in range(10)]  # pieces no other text has
        out.append("".join(words))
    return out


def test_batch_is_encode_of_each_text(gpt2):
    texts = _texts(300, seed=1)  # over 64K characters: runs of texts go to the threads
    assert sum(map(len, texts)) > 1 << 16
    expected = [gpt2.with_splitter("regex").encode(t) for t in texts]
    assert gpt2.encode_batch(texts, num_threads=2) == expected
    assert gpt2.encode_batch(texts, num_threads=1) == expected
    arrays = gpt2.encode_batch_arrays(texts, num_threads=2)
    assert all(a.dtype == np.int32 for a in arrays)
    assert [a.tolist() for a in arrays] == expected
    assert gpt2.encode_batch([]) == []


def test_batch_raises_for_a_refused_special(gpt2):
    texts = _texts(300, seed=2)
    texts[200] += EOT
    with pytest.raises(DisallowedSpecialError):
        gpt2.encode_batch(texts, num_threads=2)
    ids = gpt2.encode_batch(texts, num_threads=2, allowed_special="all")
    assert ids[200][-1] == gpt2.special_tokens[EOT]
    assert ids[:200] == gpt2.encode_batch(texts[:200], num_threads=2)


def test_piece_cache_kept_between_calls_changes_no_id(gpt2):
    """A small cache (short texts) fills up and restarts, then grows for a long text; a prefix
    (another rank cutoff) keeps its own cache."""
    fresh = gpt2.with_splitter("auto")
    reference = gpt2.with_splitter("regex")
    texts = _texts(40, seed=3)
    texts.insert(20, "".join(texts))  # the long one grows the cache mid-way
    for text in texts + texts:
        assert fresh.encode(text) == reference.encode(text)
    small = fresh.prefix(300)
    for text in texts[:5]:
        assert small.encode(text) == reference.prefix(300).encode(text)
        assert fresh.encode(text) == reference.encode(text)


def test_cli_encodes_several_files(gpt2, corpora, tmp_path, capsys):
    paths = []
    for i, text in enumerate(_texts(3, seed=4)):
        paths.append(tmp_path / f"t{i}.txt")
        paths[-1].write_text(text, "utf-8")
    tokenizer = str(corpora / "gpt2_vocab.json")
    assert main(["encode", "--tokenizer", tokenizer, "--threads", "2", *map(str, paths)]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0::2] == [f"==> {p} <==" for p in paths]
    for path, line in zip(paths, lines[1::2], strict=True):
        assert [int(x) for x in line.split()] == gpt2.encode(path.read_text("utf-8"))
    paths[1].write_text("ok " + EOT, "utf-8")
    assert main(["encode", "--tokenizer", tokenizer, *map(str, paths)]) == 2
    captured = capsys.readouterr()
    assert captured.out == "" and captured.err.count("\n") == 1 and str(paths[1]) in captured.err
    assert main(["encode", "--tokenizer", tokenizer, "--threads", "0", str(paths[0])]) == 2
    assert "--threads" in capsys.readouterr().err
