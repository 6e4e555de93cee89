"""The counts file: written atomically, read back as `count_corpus` returns a corpus, merged,
refused when its settings differ, and opened as a corpus by `count_corpus` itself."""

from __future__ import annotations

import os

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from _corpus_formats import SPECIAL, documents, write_text_folder
from workbench.engine.pretokenize.counting import PretokenizeResult, count_corpus
from workbench.engine.pretokenize.counts_file import CountsFileError, read_counts, write_counts
from workbench.engine.train.trainer import BpeTrainer

from workbench.cli import main
from workbench.engine.config import TrainConfig
from workbench.engine.pretokenize import counts_file

CONFIG = TrainConfig(vocab_size=400, special_tokens=(SPECIAL,))


@pytest.fixture(scope="module")
def corpus(tmp_path_factory):
    return write_text_folder(tmp_path_factory.mktemp("c") / "docs", documents(80))


def test_a_counts_file_reads_back_as_the_counted_corpus(corpus, tmp_path):
    counted = count_corpus([corpus], CONFIG)
    path = write_counts(counted, CONFIG, tmp_path / "c.parquet", [corpus])
    again = read_counts(path, CONFIG.pattern_string, CONFIG.special_tokens)
    assert isinstance(again, PretokenizeResult)
    assert again.words.to_dict() == counted.words.to_dict()
    for name in ("files", "documents", "bytes", "pieces", "unique_pieces", "skipped"):
        assert getattr(again.stats, name) == getattr(counted.stats, name), name
    meta = counts_file.read_meta(path)
    assert meta["pattern"] == CONFIG.pattern_string and meta["specials"] == [SPECIAL]
    assert meta["unicode"].startswith("regex ") and len(meta["fingerprint"]) == 32
    assert [f for f in os.listdir(tmp_path) if f != "c.parquet"] == []  # no temp file left
    # the same counts always make the same bytes (rows sorted by piece)
    write_counts(counted, CONFIG, tmp_path / "d.parquet", [corpus])
    assert (tmp_path / "c.parquet").read_bytes() == (tmp_path / "d.parquet").read_bytes()


def test_count_corpus_opens_a_counts_file_as_a_corpus(corpus, tmp_path):
    counted = count_corpus([corpus], CONFIG)
    path = write_counts(counted, CONFIG, tmp_path / "c.parquet", [corpus])
    assert count_corpus([path], CONFIG).words.to_dict() == counted.words.to_dict()
    with pytest.raises(CountsFileError, match="counted with special tokens"):
        count_corpus([path], TrainConfig(vocab_size=400))


def test_settings_that_differ_are_refused_with_a_clear_line(corpus, tmp_path, capsys):
    path = write_counts(count_corpus([corpus], CONFIG), CONFIG, tmp_path / "c.parquet")
    with pytest.raises(CountsFileError, match=r"c.parquet: counted with pattern gpt2, but cl100k"):
        read_counts(path, TrainConfig(pattern="cl100k").pattern_string, (SPECIAL,))
    with pytest.raises(CountsFileError, match=r"special tokens \[<\|endoftext\|>\], but \[none\]"):
        read_counts(path, CONFIG.pattern_string, ())
    out = tmp_path / "tok"
    code = main(["train", "--from-counts", str(path), "--vocab-size", "300", "--out", str(out), "--no-db", "--pattern", "o200k", "--special", SPECIAL])  # fmt: skip
    assert code == 2 and "counted with pattern gpt2, but o200k" in capsys.readouterr().err
    assert main(["train", "--vocab-size", "300", "--out", str(out), "--no-db"]) == 2
    assert "--from-counts" in capsys.readouterr().err


def test_counts_files_merge_into_the_counts_of_both(corpus, tmp_path, capsys):
    files = sorted(corpus.iterdir())
    a = write_counts(count_corpus(files[:30], CONFIG), CONFIG, tmp_path / "a.parquet")
    b = write_counts(count_corpus(files[30:], CONFIG), CONFIG, tmp_path / "b.parquet")
    assert main(["count", "--merge", str(a), str(b), "--out", str(tmp_path / "all.parquet")]) == 0
    merged = read_counts(tmp_path / "all.parquet")
    whole = count_corpus([corpus], CONFIG)
    assert merged.words.to_dict() == whole.words.to_dict()
    assert merged.stats.documents == 80 and merged.stats.files == 80
    other = TrainConfig(vocab_size=400)
    c = write_counts(count_corpus([corpus], other), other, tmp_path / "c.parquet")
    assert main(["count", "--merge", str(a), str(c), "--out", str(tmp_path / "x.parquet")]) == 2
    assert "special tokens" in capsys.readouterr().err
    assert not (tmp_path / "x.parquet").exists()


def test_a_failed_write_leaves_the_old_file_and_no_temp(corpus, tmp_path, monkeypatch):
    counted = count_corpus([corpus], CONFIG)
    path = write_counts(counted, CONFIG, tmp_path / "c.parquet")
    before = path.read_bytes()

    def broken(table, where, **kw):
        with open(where, "wb") as handle:
            handle.write(b"half")
        raise OSError("disk full")

    monkeypatch.setattr(pq, "write_table", broken)
    with pytest.raises(OSError, match="disk full"):
        write_counts(counted, TrainConfig(vocab_size=400), path)
    assert path.read_bytes() == before and os.listdir(tmp_path) == ["c.parquet"]


@pytest.mark.parametrize(
    ("pieces", "counts", "message"),
    [
        ([b"a", b"a"], [1, 2], "a piece is listed twice"),
        ([b"a", b"b"], [1, 0], "a count is below 1"),
        ([b"a", b""], [1, 1], "a piece is empty"),
        ([b"a", None], [1, 1], "null"),
    ],
)
def test_a_tampered_counts_file_never_reaches_the_trainer(tmp_path, pieces, counts, message):
    good = tmp_path / "good.parquet"
    write_counts(count_corpus([_one_file(tmp_path)], CONFIG), CONFIG, good)
    metadata = pq.read_schema(good).metadata
    table = pa.table(
        {"piece": pa.array(pieces, pa.large_binary()), "count": pa.array(counts, pa.int64())}
    )
    bad = tmp_path / "bad.parquet"
    pq.write_table(table.replace_schema_metadata(metadata), bad)
    with pytest.raises(CountsFileError, match=message):
        read_counts(bad)
    plain = tmp_path / "plain.parquet"
    pq.write_table(pa.table({"text": ["just a corpus"]}), plain)
    assert not counts_file.is_counts_file(plain)
    with pytest.raises(CountsFileError, match="not a bpe-workbench counts file"):
        read_counts(plain)


def _one_file(tmp_path):
    path = tmp_path / "one.txt"
    path.write_text("hello world, hello counts")
    return path


@pytest.mark.parametrize("tie_break", ["lexicographic", "hf"])
def test_training_from_counts_gives_the_merges_of_the_corpus(corpora, tmp_path, tie_break):
    config = TrainConfig(vocab_size=700, special_tokens=(SPECIAL,), tie_break=tie_break)
    text = corpora / "taylorswift.txt"
    counted = count_corpus([text], config)
    path = write_counts(counted, config, tmp_path / "c.parquet")
    direct = BpeTrainer(counted.words, config)
    direct.run()
    from_file = BpeTrainer(
        read_counts(path, config.pattern_string, config.special_tokens).words, config
    )
    from_file.run()
    assert from_file.merge_pairs() == direct.merge_pairs() and len(direct.merge_pairs()) > 400
