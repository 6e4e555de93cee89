"""Crafted counts files (issue 33): counts that overflow 64 bits, alone or summed by
`count --merge`, negative counts, and metadata of the wrong form are refused in one line
naming the file, on read, on `train --from-counts` and on `count --merge`."""

from __future__ import annotations

import pytest

from tests._crafted_counts import GOOD_ROWS, meta_with, write_crafted
from tests._harden_helpers import assert_one_line_error, run_cli
from workbench.engine.patterns.regexes import resolve
from workbench.engine.pretokenize.counts_file import CountsFileError, merge_counts, read_counts

SPECIALS = ["<|endoftext|>"]
HALF = 2**62


def _train(capsys, tmp_path, counts) -> tuple[int, str, str]:
    code, out, err = run_cli(capsys, "train", "--from-counts", str(counts), "--vocab-size", "260",
                             "--special", SPECIALS[0], "--out", str(tmp_path / "o"), "--no-db")  # fmt: skip
    err = "\n".join(x for x in err.splitlines() if not x.startswith("preparing the fast"))
    return code, out, err


@pytest.mark.parametrize(
    ("rows", "words"),
    [
        ([(b"ab", HALF)], "overflow 64 bits"),  # 2 bytes x 2**62 pieces = 2**63
        ([(b"a", HALF), (b"b", HALF)], "overflow 64 bits"),  # the sum overflows
        ([(b"a", 2**63 - 1), (b"bcd", 1)], "overflow 64 bits"),
        ([(b"a", -5), (b"b", 3)], "below 1"),
        ([(b"a", 0)], "below 1"),
    ],
)
def test_counts_that_overflow_or_are_negative(tmp_path, capsys, rows, words):
    path = write_crafted(tmp_path / "c.parquet", rows)
    with pytest.raises(CountsFileError, match=words) as info:
        read_counts(path)
    assert str(path) in str(info.value) and "\n" not in str(info.value)
    code, out, err = _train(capsys, tmp_path, path)
    assert_one_line_error(code, err, "c.parquet", words)
    assert not (tmp_path / "o").exists() or not any((tmp_path / "o").iterdir())


def test_the_largest_counts_that_fit_still_read(tmp_path):
    path = write_crafted(tmp_path / "c.parquet", [(b"a", HALF), (b"b", HALF - 1)])
    result = read_counts(path)
    assert result.stats.pieces == 2**63 - 1 and result.stats.bytes == 2**63 - 1


def test_merge_whose_sum_would_overflow_is_refused(tmp_path, capsys):
    a = write_crafted(tmp_path / "a.parquet", [(b"x", HALF + 1)])
    b = write_crafted(tmp_path / "b.parquet", [(b"x", HALF + 1)])
    out = tmp_path / "all.parquet"
    with pytest.raises(
        CountsFileError, match="b.parquet: its counts with those before it overflow"
    ):
        merge_counts([a, b], out)
    assert not out.exists()
    code, _, err = run_cli(capsys, "count", "--merge", str(a), str(b), "--out", str(out))
    assert_one_line_error(code, err, "b.parquet", "overflow 64 bits")
    assert not out.exists()


def test_merge_of_a_negative_count_is_refused(tmp_path, capsys):
    a = write_crafted(tmp_path / "a.parquet")
    b = write_crafted(tmp_path / "b.parquet", [(b"x", -(2**63))])
    code, _, err = run_cli(capsys, "count", "--merge", str(a), str(b), "--out",
                           str(tmp_path / "all.parquet"))  # fmt: skip
    assert_one_line_error(code, err, "b.parquet", "below 1")


def test_a_good_merge_reads_back(tmp_path):
    a = write_crafted(tmp_path / "a.parquet")
    b = write_crafted(tmp_path / "b.parquet", [(b" the", 2)])
    merged = merge_counts([a, b], tmp_path / "all.parquet")
    assert merged.words.to_dict()[b" the"] == 42
    assert read_counts(tmp_path / "all.parquet").words.to_dict() == merged.words.to_dict()


META_CASES = {
    "pattern a number": (meta_with(pattern=5), "pattern"),
    "pattern not a regex": (meta_with(pattern="(unclosed"), "pattern"),
    "specials a bare string": (meta_with(specials="<|endoftext|>"), "special tokens"),
    "specials of numbers": (meta_with(specials=[1, 2]), "special tokens"),
    "specials twice": (meta_with(specials=["a", "a"]), "special tokens"),
    "unicode another version": (meta_with(unicode="regex 1999.1.1"), "Unicode tables"),
    "unicode a number": (meta_with(unicode=7), "Unicode version"),
    "fingerprint a number": (meta_with(fingerprint=123), "fingerprint"),
    "fingerprint not hex": (meta_with(fingerprint="../../etc"), "fingerprint"),
    "stats files text": (meta_with(stats={"files": "x", "documents": 1}), "'files'"),
    "stats a list": (meta_with(stats=[1, 2]), "statistics"),
    "skipped a string": (meta_with(stats={"files": 1, "skipped": "abc"}), "skipped"),
    "version a string": (meta_with(version="1"), "version"),
    "version missing": (meta_with(version=...), "version"),
    "pattern missing": (meta_with(pattern=...), "'pattern'"),
    "specials missing": (meta_with(specials=...), "'specials'"),
    "stats missing": (meta_with(stats=...), "'stats'"),
    "inputs of numbers": (meta_with(inputs=[1]), "inputs"),
    "meta a list": ([1, 2], "not a JSON object"),
}


@pytest.mark.parametrize("case", list(META_CASES))
def test_crafted_metadata_is_refused_in_one_line(tmp_path, capsys, case):
    meta, words = META_CASES[case]
    path = write_crafted(tmp_path / "c.parquet", GOOD_ROWS, meta)
    with pytest.raises(CountsFileError, match=words) as info:
        read_counts(path, resolve("gpt2"), SPECIALS)
    assert str(info.value).startswith(str(path)) and "\n" not in str(info.value)
    code, _, err = _train(capsys, tmp_path, path)
    assert_one_line_error(code, err, "c.parquet")
    good = write_crafted(tmp_path / "good.parquet")
    code, _, err = run_cli(capsys, "count", "--merge", str(good), str(path), "--out",
                           str(tmp_path / "all.parquet"))  # fmt: skip
    assert_one_line_error(code, err, "c.parquet")
    assert not (tmp_path / "all.parquet").exists()


def test_metadata_that_is_not_json(tmp_path):
    for raw in (b"{not json", b"[" * 100_000, b"\xff\xfe"):
        path = write_crafted(tmp_path / "c.parquet", raw_meta=raw)
        with pytest.raises(CountsFileError, match="not valid JSON"):
            read_counts(path)
