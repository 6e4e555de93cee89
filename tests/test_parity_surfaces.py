"""Parity-aware BPE from the API and the CLI, stored with the run."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

import workbench
from workbench.engine.config import PARITY_BY, TrainConfig
from workbench.engine.errors import WorkbenchError
from workbench.engine.pretokenize.words import WordTable
from workbench.engine.train.parity import GroupWords, ParityTrainer, count_groups
from workbench.session.parity import group_curves
from workbench.store import RunStore

TEXTS = {
    "en": ["".join(f"the quick brown fox {i} jumps over the lazy dog\n" for i in range(60))],
    "ru": ["".join(f"съешь же ещё этих мягких булок {i} да выпей чаю\n" for i in range(60))],
    "ja": ["".join(f"いろはにほへと ちりぬるを {i} わかよたれそ\n" for i in range(60))],
}


def cli(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "workbench", *args], capture_output=True, text=True
    )


@pytest.fixture()
def by_folder(tmp_path):
    root = tmp_path / "corpus"
    for lang, texts in TEXTS.items():
        (root / lang).mkdir(parents=True)
        (root / lang / "a.txt").write_text(texts[0])
    return root


def _engine_merges(vocab_size: int) -> list[tuple[bytes, bytes]]:
    config = TrainConfig(vocab_size=vocab_size, parity_by="folder")
    trainer = ParityTrainer(count_groups(TEXTS, config), config)
    list(trainer.batches(batch_seconds=None))
    return trainer.merge_pairs()


def test_cli_trains_records_and_summarises_by_folder(by_folder, tmp_path):
    db = tmp_path / "runs.db"
    done = cli(
        "train", str(by_folder), "--vocab-size", "300", "--parity-by", "folder",
        "--out-dir", str(tmp_path / "out"), "--db", str(db), "--json", "-q",
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    summary = json.loads(done.stdout)
    parity = summary["parity"]
    assert sorted(parity["groups"]) == ["en", "ja", "ru"]
    assert parity["worst"] == min(parity["groups"], key=lambda g: (parity["groups"][g], g))
    assert 0 <= parity["gini"] < 1
    with RunStore(db) as store:
        run = store.get_run(summary["run_id"])
        merges = store.merges_as_pairs(summary["run_id"])
    assert run.settings["parity_by"] == "folder"
    curves = group_curves(run.stats)
    assert curves is not None and len(curves["dev_tokens"]) == len(merges) == summary["merges"]
    assert merges == _engine_merges(300)  # the same merges as the engine on the same groups
    shown = json.loads(
        cli("runs", "show", str(summary["run_id"]), "--db", str(db), "--json").stdout
    )
    brief = shown["stats"]["parity"]
    assert "dev_tokens" not in brief and brief["merges_recorded"] == summary["merges"]
    assert brief["worst"] == parity["worst"] and brief["gini"] == pytest.approx(parity["gini"])
    # the last stored row is the summary's figures
    last = curves["dev_tokens"][-1]
    rates = [b / t for b, t in zip(curves["dev_bytes"], last, strict=True)]
    assert rates == pytest.approx(list(parity["groups"].values()))


def test_cli_refuses_parity_with_a_counts_file_and_unknown_groupings(by_folder, tmp_path):
    done = cli(
        "train", "--from-counts", str(tmp_path / "x.counts"), "--vocab-size", "300",
        "--parity-by", "lang", "--out-dir", str(tmp_path / "out"), "--no-db",
    )  # fmt: skip
    assert done.returncode == 2 and "--parity-by" in done.stderr and "Traceback" not in done.stderr
    done = cli("train", str(by_folder), "--vocab-size", "300", "--parity-by", "country")
    assert done.returncode == 2 and "Traceback" not in done.stderr


def test_cli_names_a_group_too_small(tmp_path):
    (tmp_path / "c" / "en").mkdir(parents=True)
    (tmp_path / "c" / "en" / "a.txt").write_text("only a line\n")
    done = cli(
        "train", str(tmp_path / "c"), "--vocab-size", "300", "--parity-by", "folder",
        "--out-dir", str(tmp_path / "out"), "--no-db", "-q",
    )  # fmt: skip
    assert done.returncode == 2 and "'en'" in done.stderr and "Traceback" not in done.stderr


def test_api_takes_groups_in_memory_which_cannot_be_continued(tmp_path):
    db = tmp_path / "runs.db"
    result = workbench.train(TEXTS, 300, parity_by="lang", progress=False, db=db)
    assert result.merges == _engine_merges(300)
    assert sorted(result.parity["groups"]) == ["en", "ja", "ru"]
    with pytest.raises(WorkbenchError, match="did not record its corpus files"):
        from workbench.session.run import RunSession

        RunSession.resume(db, result.run_id, count=lambda paths, config: None)


def test_cli_continues_a_parity_run_as_if_trained_straight_through(by_folder, tmp_path):
    db = tmp_path / "runs.db"
    done = cli(
        "train", str(by_folder), "--vocab-size", "300", "--parity-by", "folder",
        "--parity-window", "6", "--db", str(db), "--json", "-q", "--out-dir", str(tmp_path / "o"),
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    run_id = json.loads(done.stdout)["run_id"]
    done = cli("runs", "continue", str(run_id), "--vocab-size", "420", "--db", str(db), "-q")
    assert done.returncode == 0, done.stderr
    config = TrainConfig(vocab_size=420, parity_by="folder", parity_window=6)
    straight = ParityTrainer(count_groups(TEXTS, config), config)
    batches = list(straight.batches(batch_seconds=None))
    with RunStore(db) as store:
        run = store.get_run(run_id)
        merges = store.merges_as_pairs(run_id)
    assert merges == straight.merge_pairs() and len(merges) > 300 - 256
    curves = group_curves(run.stats)  # the curves go on from the stored ones, whole
    assert curves is not None and curves["chosen"] == straight.chosen
    assert curves["dev_tokens"] == [row for b in batches for row in b.parity.dev_tokens.tolist()]
    # a stored record that disagrees with the corpus's is refused, not continued
    with RunStore(db) as store:
        stats = dict(run.stats)
        stats["parity"] = {**curves, "chosen": [1 - c if c < 2 else c for c in curves["chosen"]]}
        store.set_stats(run_id, stats)
    done = cli("runs", "continue", str(run_id), "--vocab-size", "500", "--db", str(db), "-q")
    assert done.returncode == 1 and "did not give the stored merges" in done.stderr
    assert "Traceback" not in done.stderr


def test_stored_curves_are_checked():
    assert group_curves({}) is None
    assert group_curves({"parity": {"groups": ["a"], "dev_bytes": [0]}}) is None
    good = {"groups": ["a"], "dev_bytes": [4], "chosen": [0], "dev_tokens": [[3]]}
    assert group_curves({"parity": good}) == good
    assert group_curves({"parity": {**good, "chosen": [5]}}) is None


def test_cli_choices_match_the_engine():
    from workbench.cli import train

    assert train.PARITY_BY == PARITY_BY


def test_trainer_needs_a_group():
    with pytest.raises(WorkbenchError):
        ParityTrainer([], TrainConfig(parity_by="lang"))
    table = WordTable.from_counts({b"ab": 1})
    assert ParityTrainer([GroupWords("x", table, table)], TrainConfig()).n_merges == 0


def test_cli_window_variant_matches_the_engine(by_folder, tmp_path):
    done = cli(
        "train", str(by_folder), "--vocab-size", "300", "--parity-by", "folder",
        "--parity-window", "5", "--parity-alpha", "1", "--out-dir", str(tmp_path / "out"),
        "--no-db", "--json", "-q",
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    config = TrainConfig(vocab_size=300, parity_by="folder", parity_window=5, parity_alpha=1)
    trainer = ParityTrainer(count_groups(TEXTS, config), config)
    list(trainer.batches(batch_seconds=None))
    rates = json.loads(done.stdout)["parity"]["groups"]
    assert list(rates.values()) == pytest.approx(trainer.compression())
    assert trainer.merge_pairs() != _engine_merges(300)  # the window changed the merges
    done = cli(
        "train", str(by_folder), "--vocab-size", "300", "--parity-window", "5",
        "--out-dir", str(tmp_path / "out2"),
    )  # fmt: skip
    assert done.returncode == 2 and "parity" in done.stderr and "Traceback" not in done.stderr
