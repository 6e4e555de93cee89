"""Continuing a stored SuperBPE run whose stage-2 memory bound filled: counted again within the
bound, by the counter the run was counted with, it replays its merges and goes on exactly as a
run that was never stopped (the scanner's large-file rule included)."""

from __future__ import annotations

import random
from pathlib import Path

import pytest
from _harden_helpers import run_cli

from workbench.engine.config import TrainConfig
from workbench.store import RunStore

BOUND = 4000  # distinct stage-2 bytes: the corpus below has several times as many
COMMON = ["the cat sat on the mat\n", "a dog ran to the end\n"]


def _corpus(folder: Path) -> Path:
    """A small file with the common lines, then a file large enough to be counted on its own
    (units of 4 KiB here) whose distinct lines fill the bound before it meets them again: on
    the scanner that file leaves them out there, where a cut afterwards would keep them."""
    rng = random.Random(5)

    def line(n: int) -> str:
        return "".join(rng.choice("abcdefgh ") for _ in range(n)).strip() + "\n"

    folder.mkdir()
    (folder / "a.txt").write_text("".join(COMMON * 20 + [line(30) for _ in range(20)]), "utf-8")
    big = [line(40) for _ in range(400)] + COMMON * 60
    (folder / "b.txt").write_text("".join(big), "utf-8")
    return folder


@pytest.fixture
def small_bound(monkeypatch):
    """A bound the corpus fills, large files counted on their own, the stage-2 scanner used."""
    from workbench.engine import warmup
    from workbench.engine.corpus import documents, opening, units
    from workbench.engine.pretokenize import counting, stage_two

    monkeypatch.setattr(stage_two, "MAX_DISTINCT_BYTES", BOUND)
    monkeypatch.setattr(units, "UNIT_BYTES", 1 << 12)  # the scanner streams b.txt
    monkeypatch.setattr(counting, "BATCH_CHARS", 1 << 12)  # and so does `regex`
    monkeypatch.setattr(opening, "READ_BYTES", 1 << 10)
    monkeypatch.setattr(documents, "CHUNK_CHARS", 1 << 11)
    monkeypatch.setattr(warmup, "stage_two_ready", lambda: True)  # no `regex` for a small corpus


def test_the_scanner_keeps_other_pieces_than_a_cut_afterwards(tmp_path, small_bound):
    """Why a continued run must count within the bound: the cut afterwards differs here."""
    from workbench.engine.pretokenize.counting import count_corpus
    from workbench.engine.pretokenize.stage_two import cap_pieces, count_stage_two, stage2_config

    corpus = _corpus(tmp_path / "corpus")
    config = TrainConfig(vocab_size=400, superbpe_transition=300)
    capped, _ = count_stage_two([corpus], config, workers=1)
    assert capped.max_distinct_bytes == BOUND and capped.counted_by == "scanner"
    after = cap_pieces(count_corpus([corpus], stage2_config(config), workers=1).words, BOUND)
    common = COMMON[0].encode()
    assert capped.words.to_dict()[common] == 20  # b.txt's 60 left out: its room was gone
    assert after.words.to_dict()[common] == 80
    assert capped.dropped_pieces > 0


@pytest.mark.parametrize("regex", [False, True], ids=["scanner", "regex"])
def test_a_run_whose_bound_filled_continues_as_if_never_stopped(
    tmp_path, capsys, small_bound, regex
):
    corpus = _corpus(tmp_path / "corpus")
    db = tmp_path / "runs.db"
    forced = ["--regex-pretokenizer"] if regex else []
    train = ["train", str(corpus), "--superbpe-transition", "300", "--db", str(db), *forced]
    train += ["--out-dir", str(tmp_path / "out"), "--format", "minbpe"]
    code, _, err = run_cli(capsys, *train, "--vocab-size", "340")  # stopped in stage 2
    assert code == 0, err
    code, out, err = run_cli(
        capsys, "runs", "continue", "1", "--vocab-size", "420", "--db", str(db)
    )
    assert code == 0, err
    assert "340 -> 420" not in out and "vocab 420" in out
    code, _, err = run_cli(capsys, *train, "--vocab-size", "420")  # never stopped
    assert code == 0, err
    with RunStore(db) as store:
        continued, whole = store.get_run(1), store.get_run(2)
        assert store.merges_as_pairs(1) == store.merges_as_pairs(2)
        assert len(store.merges_as_pairs(1)) == 420 - 256
    two = continued.stats["superbpe"]
    assert two["dropped_pieces"] > 0 and two["max_distinct_bytes"] == BOUND
    assert two["counted_by"] == ("regex" if regex else "scanner")
    assert two == whole.stats["superbpe"]


def test_a_run_counted_by_regex_is_counted_by_regex_again(tmp_path, small_bound, monkeypatch):
    """A small corpus counted by `regex` at the stage-2 counter's first use: continued later
    (the counter compiled by then) it is counted by `regex` again, within the stored bound."""
    from workbench.engine import warmup
    from workbench.engine.pretokenize import stage_two
    from workbench.engine.pretokenize.counting import count_corpus
    from workbench.session.counting import count_paths
    from workbench.session.run import RunSession

    corpus = _corpus(tmp_path / "corpus")
    monkeypatch.setattr(warmup, "stage_two_ready", lambda: False)  # not compiled: `regex`
    config = TrainConfig(vocab_size=420, superbpe_transition=300)
    db = tmp_path / "runs.db"
    session = RunSession.start(count_paths([corpus], config), config, store_path=db)
    session.advance(target_vocab_size=340)
    session.end()
    whole = RunSession.start(count_paths([corpus], config), config)
    whole.advance()
    monkeypatch.setattr(warmup, "stage_two_ready", lambda: True)
    monkeypatch.setattr(stage_two, "MAX_DISTINCT_BYTES", 10 * BOUND)  # today's bound: other
    asked: list[tuple[str, int | None]] = []

    def count(paths, cfg, max_bytes=None):
        asked.append((cfg.pretokenizer, max_bytes))
        return count_corpus(paths, cfg, max_bytes=max_bytes)

    again = RunSession.resume(db, session.run_id, count, 420)
    again.advance()
    again.end()
    assert asked == [("auto", None), ("regex", BOUND)]
    assert again.merges() == whole.merges()


def test_a_crafted_bound_is_refused_in_one_line(tmp_path, capsys, small_bound):
    import sqlite3

    corpus = _corpus(tmp_path / "corpus")
    db = tmp_path / "runs.db"
    train = ["train", str(corpus), "--superbpe-transition", "300", "--db", str(db)]
    train += ["--out-dir", str(tmp_path / "out"), "--format", "minbpe"]
    assert run_cli(capsys, *train, "--vocab-size", "320")[0] == 0
    with sqlite3.connect(db) as con:
        (stats,) = con.execute("select stats from runs where id = 1").fetchone()
        con.execute(
            "update runs set stats = ? where id = 1",
            (stats.replace(f'"max_distinct_bytes": {BOUND}', '"max_distinct_bytes": "lots"'),),
        )
    code, _, err = run_cli(capsys, "runs", "continue", "1", "--vocab-size", "400", "--db", str(db))
    assert code == 1 and "Traceback" not in err
    assert "SuperBPE bound cannot be used" in err and len(err.strip().splitlines()) == 1
