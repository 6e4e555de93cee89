"""fsspec URLs as corpus inputs: `file://` URLs count what the plain paths count (locally and on
Dask), other URLs are copied through fsspec, and what is missing is a one-line error."""

from __future__ import annotations

import sys

import pytest
from _corpus_formats import SPECIAL, documents, jsonl_bytes, write_parquet_shards
from workbench.engine.pretokenize.counting import count_corpus

from workbench.cli import main
from workbench.engine.config import TrainConfig
from workbench.engine.errors import WorkbenchError

fsspec = pytest.importorskip("fsspec")


@pytest.fixture(scope="module")
def corpus(tmp_path_factory):
    root = tmp_path_factory.mktemp("urls")
    shards = write_parquet_shards(root / "pq", documents(40, 3), shards=2, rows_per_group=5)
    (root / "docs.jsonl").write_bytes(jsonl_bytes(documents(20, 4)))
    (root / "note.txt").write_text("A plain note, read as one document.\n", encoding="utf-8")
    return root, shards


def _count(argv, out):
    assert main(["count", *argv, "--out", str(out), "--special", SPECIAL]) == 0
    return out.read_bytes()


@pytest.mark.parametrize("dask", [False, pytest.param(True, marks=pytest.mark.dask)])
def test_file_urls_give_the_counts_file_of_the_plain_paths(corpus, tmp_path, dask):
    root, shards = corpus
    paths = [str(shards), str(root / "docs.jsonl"), str(root / "note.txt")]
    more = ["--dask", "local:2"] if dask else []
    plain = _count([*paths, *more], tmp_path / "plain.parquet")
    as_urls = _count([*(f"file://{p}" for p in paths), *more], tmp_path / "urls.parquet")
    assert as_urls == plain


def test_other_urls_are_read_through_fsspec(corpus):
    root, _ = corpus
    memory = fsspec.filesystem("memory")
    memory.pipe("/bpe-workbench-test/docs.jsonl", (root / "docs.jsonl").read_bytes())
    config = TrainConfig(vocab_size=300)
    local = count_corpus([root / "docs.jsonl"], config, workers=1)
    remote = count_corpus(["memory://bpe-workbench-test/docs.jsonl"], config, workers=1)
    assert remote.words.to_dict() == local.words.to_dict()
    assert remote.stats.documents == local.stats.documents == 20


def test_what_is_missing_is_one_line(tmp_path, capsys, monkeypatch):
    out = tmp_path / "c.parquet"
    assert main(["count", "nosuchscheme://bucket/x.txt", "--out", str(out)]) == 2
    error = capsys.readouterr().err.strip()
    assert "Protocol not known: nosuchscheme" in error and "\n" not in error
    with pytest.raises(WorkbenchError, match="no such file or folder"):
        count_corpus(["memory://bpe-workbench-test/absent.txt"], TrainConfig(vocab_size=300))
    monkeypatch.setitem(sys.modules, "fsspec", None)  # as if fsspec were not installed
    assert main(["count", "memory://x/y.txt", "--out", str(out)]) == 2
    assert "pip install fsspec" in capsys.readouterr().err
    assert not out.exists()


def test_a_scheme_whose_package_is_missing_names_it(tmp_path, capsys):
    try:
        fsspec.get_filesystem_class("s3")
        pytest.skip("s3fs is installed")
    except ImportError:
        pass
    assert main(["count", "s3://bucket/x.txt", "--out", str(tmp_path / "c.parquet")]) == 2
    assert "s3fs" in capsys.readouterr().err
