"""The corpus reader: formats, folders, bad input, and chunking that never changes the pieces."""

from __future__ import annotations

import gzip
import json
import os
from collections import Counter
from pathlib import Path

import pytest
from _bpe_helpers import examples
from hypothesis import given, settings
from hypothesis import strategies as st
from workbench.engine.patterns.regexes import PRESETS, compile_pattern
from workbench.engine.pretokenize.counting import count_corpus

from workbench.engine.config import TrainConfig
from workbench.engine.corpus import Segmenter, _stream_text, list_files
from workbench.engine.errors import CorpusError

EXAMPLES = examples(1.5)


@pytest.fixture(params=["auto", "regex"])
def pretokenizer(request) -> str:
    """Both paths: the Numba scanner (auto, for presets) and the regex package."""
    return request.param


def pieces_of(texts: list[str], pattern: str = "gpt2") -> Counter[bytes]:
    compiled = compile_pattern(pattern)
    return Counter(p.encode() for t in texts for p in compiled.findall(t))


def test_files_folders_jsonl_and_gzip(tmp_path, pretokenizer):
    (tmp_path / "a.txt").write_text("hello world", encoding="utf-8")
    sub = tmp_path / "sub"
    sub.mkdir()
    (sub / "b.md").write_text("hello there", encoding="utf-8")
    (sub / ".hidden").write_text("secret", encoding="utf-8")
    with gzip.open(sub / "c.txt.gz", "wt", encoding="utf-8") as f:
        f.write("zipped words")
    (tmp_path / "d.jsonl").write_text(
        json.dumps({"text": "json one"}) + "\n\n" + json.dumps({"text": "json two"}) + "\n"
    )
    with gzip.open(tmp_path / "e.jsonl.gz", "wt", encoding="utf-8") as f:
        f.write(json.dumps({"text": "gz json", "id": 3}) + "\n")
    result = count_corpus([tmp_path], TrainConfig(pretokenizer=pretokenizer))
    assert result.stats.files == 5
    assert result.stats.documents == 1 + 1 + 1 + 2 + 1
    expected = pieces_of(
        ["hello world", "hello there", "zipped words", "json one", "json two", "gz json"]
    )
    assert result.words.to_dict() == dict(expected)
    assert result.stats.pieces == sum(expected.values())


@pytest.mark.parametrize(
    "content, message",
    [
        (b"\x00\x01\x02binary", "binary"),
        (b"line one\nline two\xff\xfe\n", ":2: invalid UTF-8"),
    ],
)
def test_bad_files_stop_with_a_clear_message(tmp_path, content, message, pretokenizer):
    bad = tmp_path / "bad.txt"
    bad.write_bytes(content)
    with pytest.raises(CorpusError, match=message) as info:
        count_corpus([bad], TrainConfig(pretokenizer=pretokenizer))
    assert "bad.txt" in str(info.value) and "\n" not in str(info.value)


@pytest.mark.parametrize(
    "line, message",
    [("{not json", ":2: not valid JSON"), ('{"title": "x"}', ':2: no "text"')],
)
def test_bad_jsonl_lines(tmp_path, line, message, pretokenizer):
    path = tmp_path / "d.jsonl"
    path.write_text(json.dumps({"text": "fine"}) + "\n" + line + "\n")
    with pytest.raises(CorpusError, match=message):
        count_corpus([path], TrainConfig(pretokenizer=pretokenizer))


def test_skip_bad_files_reports_them(tmp_path, pretokenizer):
    (tmp_path / "good.txt").write_text("good text here", encoding="utf-8")
    (tmp_path / "bad.txt").write_bytes(b"ok\n\xc3\x28")
    result = count_corpus([tmp_path], TrainConfig(on_bad_file="skip", pretokenizer=pretokenizer))
    assert result.words.to_dict() == dict(pieces_of(["good text here"]))
    assert len(result.stats.skipped) == 1 and "bad.txt:2" in result.stats.skipped[0]


def test_large_bad_file_is_dropped_whole(tmp_path, monkeypatch, pretokenizer):
    import workbench.engine.pretokenize.counting as pre
    import workbench.engine.pretokenize.scan.count as scan

    monkeypatch.setattr(pre, "BATCH_CHARS", 64)  # stream it in many tasks
    monkeypatch.setattr(scan, "UNIT_BYTES", 64)
    big = tmp_path / "big.txt"
    big.write_bytes(("word " * 200).encode() + b"\xff")
    (tmp_path / "small.txt").write_text("kept", encoding="utf-8")
    result = count_corpus(
        [tmp_path], TrainConfig(on_bad_file="skip", pretokenizer=pretokenizer), workers=1
    )
    assert result.words.to_dict() == {b"kept": 1}


def test_missing_path_and_empty_corpus(tmp_path, pretokenizer):
    with pytest.raises(CorpusError, match="no such file"):
        count_corpus([tmp_path / "nope.txt"], TrainConfig(pretokenizer=pretokenizer))
    (tmp_path / "empty.txt").write_text("")
    with pytest.raises(CorpusError, match="no text"):
        count_corpus([tmp_path / "empty.txt"], TrainConfig(pretokenizer=pretokenizer))
    empty_folder = tmp_path / "sub"
    empty_folder.mkdir()
    with pytest.raises(CorpusError, match="no files"):
        count_corpus([empty_folder], TrainConfig(pretokenizer=pretokenizer))


def test_unreadable_file(tmp_path):
    if os.geteuid() == 0:
        pytest.skip("root reads any file")
    path = tmp_path / "locked.txt"
    path.write_text("x")
    path.chmod(0)
    with pytest.raises(CorpusError, match="cannot read"):
        count_corpus([path], TrainConfig())


def test_list_files_is_sorted_and_recursive(tmp_path):
    for name in ["b/2.txt", "a/1.txt", "c.txt"]:
        (tmp_path / name).parent.mkdir(exist_ok=True)
        (tmp_path / name).write_text("x")
    assert [p.relative_to(tmp_path).as_posix() for p in list_files([tmp_path])] == [
        "c.txt",
        "a/1.txt",
        "b/2.txt",
    ]


_chunk_alphabet = st.sampled_from(
    list("ab  \n\t\r.'1") + ["Ab", "'s", "日本", "😀", "<eot>", "<e", "ot>", "\u00a0", "é"]
)


@settings(max_examples=EXAMPLES, deadline=None)
@given(
    text=st.lists(_chunk_alphabet, max_size=80).map("".join),
    chunk=st.integers(1, 12),
    preset=st.sampled_from(sorted(PRESETS)),
    specials=st.sampled_from([(), ("<eot>",)]),
)
def test_chunked_reading_gives_the_same_pieces(text, chunk, preset, specials):
    segmenter = Segmenter(specials, cut_inside=True)
    pieces = [text[i : i + chunk] for i in range(0, len(text), chunk)]
    segments = list(_stream_text(pieces, segmenter, chunk_chars=chunk))
    whole = segmenter.split(text)
    compiled = compile_pattern(PRESETS[preset])
    assert [p for s in segments for p in compiled.findall(s)] == [
        p for s in whole for p in compiled.findall(s)
    ]


def test_parallel_count_equals_single_process(corpora, tmp_path, monkeypatch):
    import workbench.engine.pretokenize.counting as pre

    monkeypatch.setattr(pre, "PARALLEL_FROM_BYTES", 0)
    monkeypatch.setattr(pre, "BATCH_CHARS", 50_000)
    config = TrainConfig(special_tokens=("<|endoftext|>",))
    paths = [corpora / "corpus.en", corpora / "tinyshakespeare.txt"]
    parallel = count_corpus(paths, config, workers=2)
    single = count_corpus(paths, config, workers=1)
    assert parallel.words.to_dict() == single.words.to_dict()
    text = "".join(p.read_text(encoding="utf-8") + "\n" for p in paths)
    expected = pieces_of(
        [s for p in paths for s in p.read_text(encoding="utf-8").split("<|endoftext|>")]
    )
    assert single.words.to_dict() == dict(expected)
    assert text  # both files were read


@pytest.mark.parametrize("specials", [(), ("<|endoftext|>",)])
def test_scanner_path_equals_regex_path_on_real_text(corpora, monkeypatch, specials):
    import workbench.engine.pretokenize.scan.count as scan

    monkeypatch.setattr(scan, "UNIT_BYTES", 20_000)  # many units, cut at safe points
    paths = sorted(corpora.glob("*.txt")) + [corpora / "corpus.en"]
    for pattern in sorted(PRESETS):
        fast = count_corpus(paths, TrainConfig(pattern=pattern, special_tokens=specials))
        slow = count_corpus(
            paths, TrainConfig(pattern=pattern, special_tokens=specials, pretokenizer="regex")
        )
        assert fast.words.to_dict() == slow.words.to_dict()
        assert fast.stats.documents == slow.stats.documents == len(paths)


def test_scanner_path_on_jsonl_with_specials(tmp_path):
    texts = ["a<s>b c", "<s><s>x", "plain words here", "ends<s"]
    path = tmp_path / "d.jsonl"
    path.write_text("".join(json.dumps({"text": t}) + "\n" for t in texts), encoding="utf-8")
    config = TrainConfig(special_tokens=("<s>",))
    fast = count_corpus([path], config)
    expected = pieces_of([part for t in texts for part in t.split("<s>")])
    assert fast.words.to_dict() == dict(expected)
    assert fast.stats.documents == 4


def test_a_corpus_fingerprint_is_its_files_resolved_paths_sizes_and_times(tmp_path, monkeypatch):
    """The fingerprint stored with a run (checked when it is continued) resolves each file as
    `Path.resolve` does, links and relative names included, and sums the sizes it stats."""
    import hashlib

    from workbench.engine.corpus import corpus_record, fingerprint

    real = tmp_path / "real"
    (real / "sub").mkdir(parents=True)
    (real / "a.txt").write_text("alpha\n")
    (real / "sub" / "b.txt").write_text("beta beta\n")
    (tmp_path / "elsewhere.txt").write_text("far away\n")
    (real / "link.txt").symlink_to(tmp_path / "elsewhere.txt")
    (tmp_path / "linked").symlink_to(real, target_is_directory=True)
    monkeypatch.chdir(tmp_path)
    files = [
        Path("linked/a.txt"),
        Path("./linked/sub/../sub/b.txt"),
        tmp_path / "linked" / "link.txt",
        Path("elsewhere.txt"),
    ]
    h = hashlib.sha256()
    for f in files:
        st = f.stat()
        h.update(f"{f.resolve()}\0{st.st_size}\0{st.st_mtime_ns}\n".encode())
    assert fingerprint(files) == h.hexdigest()[:32]
    record = corpus_record(["linked"], files)
    assert record["fingerprint"] == h.hexdigest()[:32]
    assert record["sizes"] == 6 + 10 + 9 + 9 and record["files"] == 4
    assert record["paths"] == [str(real)]
