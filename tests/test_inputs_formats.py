"""Parquet, Arrow, saved datasets and compressed inputs give the pieces, merges and errors that
the same documents give as plain text files."""

from __future__ import annotations

import json
import sys

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from _corpus_formats import (
    SPECIAL,
    compress,
    documents,
    jsonl_bytes,
    write_all_formats,
    write_parquet_shards,
    write_saved_dataset,
)
from workbench.engine.pretokenize.counting import count_corpus

from workbench.cli import main
from workbench.engine.config import TrainConfig
from workbench.engine.corpus import list_files
from workbench.engine.errors import CorpusError, WorkbenchError

CUSTOM = r"\w+|\s+|[^\w\s]+"


@pytest.fixture(scope="module")
def forms(tmp_path_factory):
    return write_all_formats(tmp_path_factory.mktemp("forms"), documents())


@pytest.mark.parametrize("pattern", ["gpt2", "cl100k", CUSTOM])
@pytest.mark.parametrize("specials", [(), (SPECIAL,)])
def test_every_form_counts_the_same_pieces(forms, pattern, specials):
    config = TrainConfig(vocab_size=400, pattern=pattern, special_tokens=specials)
    reference = count_corpus([forms["txt"]], config, workers=1)
    for name, path in forms.items():
        result = count_corpus([path], config, workers=2)
        assert result.words.to_dict() == reference.words.to_dict(), name
        assert result.stats.documents == 120, name


def _merges(out) -> list[str]:
    return (out / "merges.txt").read_text(encoding="utf-8").splitlines()


@pytest.mark.parametrize("tie_break", ["lexicographic", "hf"])
def test_train_and_train_from_counts_give_identical_merges(forms, tmp_path, tie_break, capsys):
    common = ["--vocab-size", "420", "--special", SPECIAL, "--tie-break", tie_break, "--no-db"]
    merges = {}
    for name, path in forms.items():
        out = tmp_path / name
        assert main(["train", str(path), "--out", str(out), *common, "--quiet"]) == 0
        merges[name] = _merges(out)
        counts = tmp_path / f"{name}.parquet"
        assert main(["count", str(path), "--out", str(counts), "--special", SPECIAL]) == 0
        out = tmp_path / f"{name}-from-counts"
        assert main(["train", "--from-counts", str(counts), "--out", str(out), *common]) == 0
        merges[f"{name} from counts"] = _merges(out)
    capsys.readouterr()
    reference = merges["txt"]
    assert len(reference) > 100
    for name, got in merges.items():
        assert got == reference, name


def test_text_files_compressed_read_as_plain(tmp_path):
    text = "".join(documents(40)).encode()
    (tmp_path / "plain.txt").write_bytes(text)
    config = TrainConfig(vocab_size=300)
    reference = count_corpus([tmp_path / "plain.txt"], config).words.to_dict()
    for suffix in (".zst", ".xz", ".bz2"):
        path = tmp_path / f"packed.txt{suffix}"
        path.write_bytes(compress(text, suffix))
        assert count_corpus([path], config).words.to_dict() == reference, suffix
    # several zstd frames one after another (as `cat a.zst b.zst` makes) read as one stream
    half = len(text) // 2
    frames = compress(text[:half], ".zst") + compress(text[half:], ".zst")
    (tmp_path / "frames.txt.zst").write_bytes(frames)
    assert count_corpus([tmp_path / "frames.txt.zst"], config).words.to_dict() == reference


def test_text_column_and_jsonl_field_choose_where_the_text_is(tmp_path):
    docs = documents(30)
    write_parquet_shards(tmp_path / "pq", docs, column="content")
    (tmp_path / "d.jsonl").write_bytes(jsonl_bytes(docs, field="body"))
    write_saved_dataset(tmp_path / "ds", docs)
    config = TrainConfig(vocab_size=300, text_column="content", jsonl_field="body")
    reference = count_corpus([tmp_path / "ds"], TrainConfig(vocab_size=300)).words.to_dict()
    assert count_corpus([tmp_path / "pq"], config).words.to_dict() == reference
    assert count_corpus([tmp_path / "d.jsonl"], config).words.to_dict() == reference
    with pytest.raises(CorpusError, match='no column "text".*--text-column'):
        count_corpus([tmp_path / "pq"], TrainConfig(vocab_size=300))


def test_a_saved_dataset_folder_reads_only_its_arrow_files(tmp_path):
    folder = write_saved_dataset(tmp_path / "ds", documents(10))
    dict_meta = tmp_path / "dataset_dict.json"
    dict_meta.write_text(json.dumps({"splits": ["ds"]}))
    names = [p.name for p in list_files([tmp_path])]
    assert names == ["data-00000-of-00002.arrow", "data-00001-of-00002.arrow"]
    assert (folder / "state.json").exists()


def _bad_null_parquet(path):
    table = pa.table({"text": ["fine", "also fine", None, "x"]})
    pq.write_table(table, path, row_group_size=2)


def test_bad_shards_name_the_file_and_row_group(tmp_path):
    good = tmp_path / "good.parquet"
    pq.write_table(pa.table({"text": ["hello world"] * 5}), good)
    null = tmp_path / "null.parquet"
    _bad_null_parquet(null)
    cut = tmp_path / "cut.parquet"
    cut.write_bytes(good.read_bytes()[:-30])
    numbers = tmp_path / "numbers.parquet"
    pq.write_table(pa.table({"text": [1, 2, 3]}), numbers)
    config = TrainConfig(vocab_size=300)
    for pretokenizer in ("auto", "regex"):
        config = TrainConfig(vocab_size=300, pretokenizer=pretokenizer)
        with pytest.raises(
            CorpusError, match=r"null.parquet: row group 1, row 0: the text is null"
        ):
            count_corpus([null], config)
        with pytest.raises(CorpusError, match=r"cut.parquet: not a readable Parquet file"):
            count_corpus([cut], config)
        with pytest.raises(
            CorpusError, match=r"numbers.parquet: row group 0, row 0: the text column holds int64"
        ):
            count_corpus([numbers], config)
    skip = TrainConfig(vocab_size=300, on_bad_file="skip")
    result = count_corpus([good, null, cut, numbers], skip)
    assert result.stats.documents == 5 and len(result.stats.skipped) == 3
    assert result.words.to_dict() == count_corpus([good], skip).words.to_dict()


def _raw_arrow_file(path, offsets: list[int], data: bytes):
    """An Arrow IPC stream whose text column has these raw offsets and bytes (no checks)."""
    buffers = [None, pa.array(offsets, pa.int32()).buffers()[1], pa.py_buffer(data)]
    array = pa.Array.from_buffers(pa.string(), len(offsets) - 1, buffers)
    schema = pa.schema([("text", pa.string())])
    with pa.OSFile(str(path), "wb") as sink, pa.ipc.new_stream(sink, schema) as writer:
        writer.write_batch(pa.record_batch([array], schema=schema))
    return path


def test_invalid_utf8_in_an_arrow_file_names_the_row(tmp_path):
    path = _raw_arrow_file(tmp_path / "bad.arrow", [0, 4, 8, 12], b"okay" + b"bad\xff" + b"fine")
    with pytest.raises(CorpusError, match=r"bad.arrow: row 1: invalid UTF-8 \(byte 0xFF\)"):
        count_corpus([path], TrainConfig(vocab_size=300))


@pytest.mark.parametrize("damage", ["zeroed", "truncated"])
@pytest.mark.parametrize("suffix", [".zst", ".xz", ".bz2"])
def test_a_corrupt_compressed_file_is_one_clear_line(tmp_path, suffix, damage, capsys):
    packed = compress(jsonl_bytes(documents(50)), suffix)
    path = tmp_path / f"docs.jsonl{suffix}"
    half = len(packed) // 2
    if damage == "zeroed":
        path.write_bytes(packed[:half] + bytes(64) + packed[half + 64 :])
    else:
        path.write_bytes(packed[:half])
    assert (
        main(["train", str(path), "--vocab-size", "300", "--out", str(tmp_path / "o"), "--no-db"])
        == 2
    )
    err = capsys.readouterr().err.strip()
    assert err.startswith(f"bpe-workbench: {path}") and "\n" not in err


def test_a_missing_optional_package_says_which_extra(tmp_path, monkeypatch):
    write_parquet_shards(tmp_path / "pq", documents(5), shards=1)
    monkeypatch.setitem(sys.modules, "pyarrow", None)  # import pyarrow now raises ImportError
    monkeypatch.setitem(sys.modules, "pyarrow.parquet", None)
    with pytest.raises(
        WorkbenchError, match=r'pyarrow is not installed .*pip install "bpe-workbench\[parquet\]"'
    ):
        count_corpus([tmp_path / "pq"], TrainConfig(vocab_size=300))


def test_the_window_offers_the_new_formats():
    from workbench.engine.corpus.readers import CORPUS_FILE_PATTERNS

    for pattern in ("*.parquet", "*.arrow", "*.jsonl.zst", "*.zst", "*.xz", "*.bz2", "*.gz"):
        assert pattern in CORPUS_FILE_PATTERNS


def test_the_preview_shows_the_text_of_packed_files(forms):
    from workbench.gui.corpus_panel import read_head

    first = documents()[0]
    for name in ("jsonl.zst", "parquet", "arrow"):
        path = forms[name]
        if path.is_dir():
            path = next(p for p in sorted(path.iterdir()) if p.suffix in (".parquet", ".arrow"))
        head = read_head(path, 200)
        assert first[:20] in head or '"text"' in head, name


def test_arrow_offsets_out_of_order_never_reach_the_counter(tmp_path):
    path = _raw_arrow_file(tmp_path / "offsets.arrow", [0, 4, 2, 12], b"okaybadXfine")
    with pytest.raises(CorpusError, match=r"offsets.arrow: row 0: malformed text column"):
        count_corpus([path], TrainConfig(vocab_size=300))
