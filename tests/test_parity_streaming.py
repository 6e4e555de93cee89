"""A large plain-text document in parity-aware counting is streamed, never held whole: under
`folder` its text is fed in passages and handed on to counting only at safe cut points, with
exactly the counts of the whole document; guessed by script, it is grouped a bounded block at a
time (`corpus.groups.script_blocks`), checked against a slow reference of the rule."""

from __future__ import annotations

import random

import pytest

from workbench.engine.config import TrainConfig
from workbench.engine.corpus import groups as groups_module
from workbench.engine.corpus import opening
from workbench.engine.corpus.groups import _LINE_END, file_documents, script_blocks
from workbench.engine.patterns.scripts import UNKNOWN, dominant_script
from workbench.engine.pretokenize import group_counts
from workbench.engine.pretokenize.counting import count_in_memory
from workbench.engine.pretokenize.group_counts import GroupCounter
from workbench.engine.train.parity import count_group_files, split_held_out

CUSTOM = r"\w+|\s+|[^\w\s]+"  # not a preset: no cut point promised, a part is held whole
ENDS = ["\n", "\n", "\n", "\r\n", "\r", "\n\n", "\u2028", " \n", "\x0c"]
WORDS = {
    "Latin": ["the", "quick", "brown", "fox", "jumps", "über", "den", "Zaun", "école"],
    "Cyrillic": ["съешь", "же", "ещё", "этих", "мягких", "французских", "булок"],
    "Han": ["中文", "文本", "测试", "分词", "语言"],
    "none": ["123", "--", "4.5", "!!", "()"],
}


def _lines(rng: random.Random, script: str, count: int) -> list[str]:
    out = []
    for _ in range(count):
        width = rng.choice([0, 1, 3, 8, 20, 300])  # some lines longer than a chunk
        words = [rng.choice(WORDS[script]) for _ in range(width)]
        out.append(rng.choice([" ", "  ", "\t"]).join(words) + rng.choice(ENDS))
    return out


def _text(seed: int, scripts: list[str], lines: int) -> str:
    rng = random.Random(seed)
    return "".join(line for s in scripts for line in _lines(rng, s, lines))


def _cut_anywhere(text: str, rng: random.Random) -> list[str]:
    cuts = sorted(rng.sample(range(1, len(text)), min(len(text) - 1, len(text) // 500 + 3)))
    return [text[a:b] for a, b in zip([0, *cuts], [*cuts, len(text)], strict=True)]


def _whole(grouped: dict[str, list[str]], pattern: str) -> dict[str, tuple[dict, dict]]:
    """Each group's parts counted whole, the way counting worked before it streamed."""
    config = TrainConfig(pattern=pattern)
    out = {}
    for name in sorted(grouped):
        train, dev = split_held_out(grouped[name])
        parts = [count_in_memory(part, config).words.to_dict() for part in (train, dev)]
        out[name] = (parts[0], parts[1])
    return out


@pytest.mark.parametrize("pattern", ["gpt2", "cl100k", CUSTOM])
def test_a_document_fed_in_pieces_counts_as_the_whole_document(pattern):
    rng = random.Random(1)
    documents = {
        "a": [_text(2, ["Latin"], 400), "x\r", "\ny\n" * 30],
        "b": [_text(3, ["Han"], 300)],
    }
    config = TrainConfig(parity_by="lang", pattern=pattern)
    counter = GroupCounter(config, chunk_chars=700, buffered_chars=3000)
    for name, texts in documents.items():
        for text in texts:
            counter.start(name)
            for piece in _cut_anywhere(text, rng):  # "\r\n" cut in two among them
                counter.feed(piece)
    counter.commit()
    got = {name: (t.to_dict(), d.to_dict()) for name, (t, d) in counter.tables().items()}
    assert got == _whole(documents, pattern)
    assert counter.documents == 4


@pytest.mark.parametrize("pattern", ["gpt2", "cl100k"])
def test_a_large_file_under_folder_is_counted_in_bounded_pieces(tmp_path, monkeypatch, pattern):
    text = _text(4, ["Latin", "Cyrillic", "Latin"], 1500)  # ~400 KB, one document
    assert len(text) > 300_000
    (tmp_path / "en").mkdir()
    (tmp_path / "en" / "big.txt").write_bytes(text.encode("utf-8"))
    (tmp_path / "ru").mkdir()
    small = _text(5, ["Cyrillic"], 50)
    (tmp_path / "ru" / "small.txt").write_bytes(small.encode("utf-8"))
    monkeypatch.setattr(opening, "READ_BYTES", 4099)  # reads cut characters and "\r\n" apart
    largest = {"passage": 0, "counted": 0}
    counting = group_counts.count_in_memory

    def counted(texts, *args, **kwargs):
        largest["counted"] = max(largest["counted"], *map(len, texts))
        return counting(texts, *args, **kwargs)

    monkeypatch.setattr(group_counts, "count_in_memory", counted)
    config = TrainConfig(parity_by="folder", pattern=pattern)
    counter = GroupCounter(config, chunk_chars=8000, buffered_chars=20_000)
    for _, passages in file_documents([tmp_path], "folder"):
        for group, piece, starts in passages:
            largest["passage"] = max(largest["passage"], len(piece))
            if starts:
                counter.start(group)
            counter.feed(piece)
        counter.commit()
    got = {name: (t.to_dict(), d.to_dict()) for name, (t, d) in counter.tables().items()}
    # read ~4 KB at a time, handed on to counting at most a chunk and what the last read added
    # (cut at a safe point): never the 400 KB document
    assert largest["passage"] <= 4099
    assert 0 < largest["counted"] < 8000 + 4099
    expected = _whole({"en": [text], "ru": [small]}, pattern)
    assert got == expected
    # the trainer's own counting of the files: the same
    groups, documents = count_group_files([tmp_path], config)
    assert {g.name: (g.train.to_dict(), g.dev.to_dict()) for g in groups} == expected
    assert documents == 2


def _reference_blocks(text: str, size: int) -> list[tuple[str, str]]:
    """The block rule on the whole text, slowly: (group, document) in order."""
    out: list[tuple[str, str]] = []
    pos, group = 0, ""
    while pos < len(text) or not out:
        if len(text) - pos < size:
            head = block = text[pos:]
        else:
            head = text[pos : pos + size]
            end = _LINE_END.search(text, pos + size - 1)
            block = text[pos : end.end() if end else len(text)]
        pos += len(block)
        guess = dominant_script(head)
        if out and guess in (group, UNKNOWN):
            out[-1] = (group, out[-1][1] + block)
        else:
            group = guess
            out.append((group, block))
    return out


def _documents(passages) -> list[tuple[str, str]]:
    out: list[tuple[str, str]] = []
    for group, text, starts in passages:
        if starts:
            out.append((group, text))
        else:
            assert out and out[-1][0] == group
            out[-1] = (group, out[-1][1] + text)
    return out


@pytest.mark.parametrize("seed", range(6))
def test_script_blocks_follow_the_rule(seed):
    rng = random.Random(seed)
    scripts = [rng.choice(list(WORDS)) for _ in range(rng.randint(1, 5))]
    text = _text(seed, scripts, rng.randint(5, 60))
    size = rng.choice([50, 200, 1000, 10**6])
    passages = list(script_blocks(_cut_anywhere(text, rng), size))
    assert _documents(passages) == _reference_blocks(text, size)
    if len(text) < size:  # a file smaller than a block: guessed whole, as before blocks
        assert [(p.group, p.starts) for p in passages] == [(dominant_script(text), True)]


def test_a_mixed_file_goes_to_its_scripts_a_block_at_a_time(tmp_path, monkeypatch):
    latin, cyrillic = _text(7, ["Latin"], 200), _text(8, ["Cyrillic"], 200)
    path = tmp_path / "mixed.txt"
    text = latin + cyrillic + "12345\n"
    path.write_bytes(text.encode("utf-8"))
    monkeypatch.setattr(groups_module, "BLOCK_CHARS", 2000)
    monkeypatch.setattr(opening, "READ_BYTES", 1000)
    for by in ("script", "lang"):
        passages = [p for _, found in file_documents([path], by) for p in found]
        assert max(len(p.text) for p in passages) <= 2000 + 1000  # a block and a read
        docs = _documents(passages)
        assert [g for g, _ in docs] == ["Latin", "Cyrillic"]  # the digits stay with Cyrillic
        assert "".join(t for _, t in docs) == text
    # an empty file is still one document (of no group a script names)
    (tmp_path / "empty.txt").write_text("")
    assert [list(p) for _, p in file_documents([tmp_path / "empty.txt"], "script")] == [
        [("Unknown", "", True)]
    ]
