"""`train --vocab-size A,B --pattern P --pattern Q`: one count per pattern, one run per pair."""

from __future__ import annotations

from pathlib import Path

import pytest
from _bpe_helpers import trained

import workbench.session.counting as counting
from workbench.cli import main
from workbench.engine.config import TrainConfig
from workbench.session.sweep import parse_vocab_sizes
from workbench.store import RunStore

TEXT = " ".join(f"w{i % 151}z{i % 17} the{i % 5}" for i in range(6000)) + "\n"


def test_a_sweep_counts_once_per_pattern_and_stores_tagged_runs(
    tmp_path: Path, monkeypatch, capsys
) -> None:
    corpus = tmp_path / "c.txt"
    corpus.write_text(TEXT, encoding="utf-8")
    calls = []
    real = counting.count_paths

    def counting_spy(paths, config, **kw):
        calls.append(config.pattern)
        return real(paths, config, **kw)

    monkeypatch.setattr(counting, "count_paths", counting_spy)
    db = tmp_path / "runs.db"
    code = main(["train", str(corpus), "--vocab-size", "400,300", "--pattern", "gpt2",
                 "--pattern", "cl100k", "--out", str(tmp_path / "out"), "--db", str(db),
                 "--quiet"])  # fmt: skip
    assert code == 0
    assert calls == ["gpt2", "cl100k"]
    with RunStore(db) as store:
        runs = sorted(store.list_runs(), key=lambda r: r.id)
        merges = {r.id: store.merges_as_pairs(r.id) for r in runs}
    assert [(r.settings["pattern"], r.vocab_size) for r in runs] == [
        ("gpt2", 300), ("gpt2", 400), ("cl100k", 300), ("cl100k", 400),
    ]  # fmt: skip
    tags = [r.settings["sweep"] for r in runs]
    assert len({t["id"] for t in tags}) == 1
    assert [(t["index"], t["of"]) for t in tags] == [(1, 4), (2, 4), (3, 4), (4, 4)]
    for run in runs:
        alone = trained(
            [corpus], TrainConfig(vocab_size=run.vocab_size, pattern=run.settings["pattern"])
        )
        assert merges[run.id] == alone.merges()
        assert run.state == "done"
        label = f"{run.settings['pattern']}-{run.vocab_size}"
        assert (tmp_path / "out" / label / "merges.txt").is_file()
    assert "sweep" in capsys.readouterr().out


def test_vocab_size_lists_are_checked() -> None:
    assert parse_vocab_sizes("8000, 4000,8000") == [4000, 8000]
    for bad in ("8000,", "8k", "²", "-5"):
        with pytest.raises(Exception, match="--vocab-size"):
            parse_vocab_sizes(bad)
