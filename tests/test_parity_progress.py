"""Progress while counting in groups (parity-aware BPE), as the classic count reports it:
bytes done of the bytes in all, on disk, moving inside a file and ending at the total; from the
engine, the session (the window's and the API's way in) and the API's bar."""

from __future__ import annotations

import json
import re

import pytest

import workbench
from workbench import progress_api
from workbench.engine.config import TrainConfig
from workbench.engine.corpus import opening
from workbench.engine.train.parity import count_group_files
from workbench.session.counting import count_documents, count_paths

LINES = {
    "en": "the quick brown fox {} jumps over the lazy dog\n",
    "ru": "съешь же ещё этих мягких булок {} да выпей чаю\n",
    "ja": "いろはにほへと ちりぬるを {} わかよたれそ\n",
}


@pytest.fixture()
def by_folder(tmp_path):
    root = tmp_path / "corpus"
    for lang, line in LINES.items():
        (root / lang).mkdir(parents=True)
        (root / lang / "a.txt").write_text("".join(line.format(i) for i in range(60)))
        records = [{"text": line.format(i) * 3} for i in range(40)]
        (root / lang / "b.jsonl").write_text("".join(json.dumps(r) + "\n" for r in records))
    return root


def _total(root) -> int:
    return sum(f.stat().st_size for f in root.rglob("*") if f.is_file())


def _check(seen: list[tuple[int, int]], total: int) -> None:
    assert seen, "no progress reported"
    assert {t for _, t in seen} == {total}
    done = [d for d, _ in seen]
    assert done == sorted(done) and done[-1] == total


def test_progress_reports_bytes_and_moves_inside_a_file(by_folder, monkeypatch):
    monkeypatch.setattr(opening, "READ_BYTES", 512)  # small reads: a few inside each file
    seen: list[tuple[int, int]] = []
    config = TrainConfig(vocab_size=300, parity_by="folder", pretokenizer="regex")
    count_group_files([by_folder], config, progress=lambda d, t: seen.append((d, t)))
    total = _total(by_folder)
    _check(seen, total)
    ends = set()
    done = 0
    for path in sorted(by_folder.rglob("*.*")):  # each file's end is reported
        done += path.stat().st_size
        ends.add(done)
    assert ends <= {d for d, _ in seen}
    assert len({d for d, _ in seen} - ends) >= 6  # and points inside the files


def test_a_bad_file_skipped_still_counts_as_read(by_folder):
    (by_folder / "en" / "c.jsonl").write_text('{"text": "fine"}\n{not json\n')
    seen: list[tuple[int, int]] = []
    config = TrainConfig(vocab_size=300, parity_by="folder", pretokenizer="regex")
    skipped: list[str] = []
    count_group_files([by_folder], config, skipped, progress=lambda d, t: seen.append((d, t)))
    assert len(skipped) == 1 and "c.jsonl" in skipped[0]
    _check(seen, _total(by_folder))


def test_the_session_count_passes_progress_on(by_folder):
    """The window (`TrainWorker._count`) and the API count through `count_paths`."""
    seen: list[tuple[int, int]] = []
    config = TrainConfig(vocab_size=300, parity_by="folder", pretokenizer="regex")
    counted = count_paths([by_folder], config, progress=lambda d, t: seen.append((d, t)))
    assert counted.parity is not None
    _check(seen, _total(by_folder))
    documents: list[int] = []
    grouped = {lang: [line.format(i) * 20 for i in range(5)] for lang, line in LINES.items()}
    count_documents(grouped, config, progress=documents.append)
    assert documents == list(range(1, 16))


def test_the_api_draws_a_counting_bar(by_folder, monkeypatch, capsys):
    monkeypatch.setattr(progress_api, "visible", lambda: True)
    workbench.train(by_folder, 280, parity_by="folder", progress=True)
    err = capsys.readouterr().err
    assert re.search(r"counting: 100%.*B", err), err[-400:]
    grouped = {lang: [line.format(i) * 20 for i in range(5)] for lang, line in LINES.items()}
    workbench.train(grouped, 280, parity_by="lang", progress=True)
    err = capsys.readouterr().err
    assert re.search(r"counting: 100%.* 15/15 ", err), err[-400:]
