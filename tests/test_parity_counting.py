"""Parity-aware counting in groups, a document at a time (`pretokenize.group_counts`): the same
word tables as counting each group's text whole, whatever the chunk sizes, with a bad file left
out whole (its lines not counted either)."""

from __future__ import annotations

import gzip
import random
from pathlib import Path

import pytest

from workbench.engine.config import TrainConfig
from workbench.engine.corpus.groups import grouped_texts
from workbench.engine.errors import CorpusError
from workbench.engine.pretokenize.counting import count_in_memory
from workbench.engine.pretokenize.group_counts import GroupCounter
from workbench.engine.train.parity import (
    GroupWords,
    count_group_files,
    count_groups,
    split_held_out,
)

MAN = Path("/usr/share/man")
CUSTOM = r"\w+|\s+|[^\w\s]+"  # not a preset: counted by `regex`, summed in a dict


def _documents(lang: str, most: int) -> list[str]:
    pages = sorted((MAN / lang / "man1").glob("*.gz"))
    if not pages:
        pytest.skip(f"no {lang} man pages")
    texts, size = [], 0
    for page in pages:
        texts.append(gzip.decompress(page.read_bytes()).decode("utf-8", "replace"))
        size += len(texts[-1])
        if size >= most:
            return texts
    return texts


@pytest.fixture(scope="module")
def grouped() -> dict[str, list[str]]:
    return {lang: _documents(lang, 20_000) for lang in ("de", "ru", "ja")}


def _whole(grouped: dict[str, list[str]], config: TrainConfig) -> dict[str, tuple[dict, dict]]:
    """Each group's parts counted whole, the way counting worked before it streamed."""
    out = {}
    plain = TrainConfig(pattern=config.pattern, pretokenizer=config.pretokenizer)
    for name in sorted(grouped):
        train, dev = split_held_out(grouped[name])
        parts = [count_in_memory(part, plain).words.to_dict() for part in (train, dev)]
        out[name] = (parts[0], parts[1])
    return out


def _dicts(groups: list[GroupWords]) -> dict[str, tuple[dict, dict]]:
    return {g.name: (g.train.to_dict(), g.dev.to_dict()) for g in groups}


@pytest.mark.parametrize("pattern", ["gpt2", CUSTOM], ids=["scanner", "regex"])
def test_small_chunks_count_what_whole_groups_count(grouped, pattern):
    config = TrainConfig(parity_by="lang", pattern=pattern)
    expected = _whole(grouped, config)
    assert _dicts(count_groups(grouped, config)) == expected
    # chunks of a few hundred characters and a tiny buffer: many partial tables folded
    counter = GroupCounter(config, chunk_chars=300, buffered_chars=700)
    documents = [(name, text) for name, texts in grouped.items() for text in texts]
    random.Random(0).shuffle(documents)  # groups interleaved, each group's order kept below
    order = {name: iter(texts) for name, texts in grouped.items()}
    for name, _ in documents:
        counter.add(name, next(order[name]))
        assert counter._buffered < 700 + max(map(len, grouped[name]))  # bounded buffers
    counter.commit()
    got = {name: (t.to_dict(), d.to_dict()) for name, (t, d) in counter.tables().items()}
    assert got == expected


def test_files_counted_as_they_come_equal_the_whole_text(tmp_path, grouped):
    for name, texts in grouped.items():
        (tmp_path / name).mkdir()
        for i, text in enumerate(texts):
            (tmp_path / name / f"{i:03d}.txt").write_text(text, "utf-8")
    (tmp_path / "de" / "zz-bad.jsonl").write_text('{"text": "gut\\n"}\nnot json\n')
    config = TrainConfig(parity_by="folder")
    with pytest.raises(CorpusError, match="zz-bad.jsonl"):
        count_group_files([tmp_path], config)
    skipped: list[str] = []
    groups, documents = count_group_files([tmp_path], config, skipped)
    assert len(skipped) == 1 and "zz-bad.jsonl" in skipped[0]
    assert documents == sum(map(len, grouped.values()))
    # the bad file's good record and lines are not counted: as if the file were not there
    assert grouped_texts([tmp_path], "folder", skipped=[]) == grouped
    assert _dicts(groups) == _whole(grouped, config)


def test_a_file_dropped_after_part_of_it_was_counted_leaves_nothing(grouped):
    config = TrainConfig(parity_by="lang")
    counter = GroupCounter(config, chunk_chars=300, buffered_chars=700)
    for text in grouped["de"]:
        counter.add("de", text)
    counter.commit()
    for name in ("ru", "de"):  # a "file" of many documents: counted in chunks, then dropped
        for text in grouped[name]:
            counter.add(name, text)
    counter.rollback()
    got = {name: (t.to_dict(), d.to_dict()) for name, (t, d) in counter.tables().items()}
    assert got == _whole({"de": grouped["de"]}, config)
    assert counter.documents == len(grouped["de"])
