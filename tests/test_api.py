"""The public API: the README's example runs as written, and CLI, API and window agree."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

import workbench
from workbench.cli import main
from workbench.store import RunStore

README = Path(__file__).resolve().parents[1] / "README.md"


def readme_python_blocks() -> list[str]:
    return re.findall(r"```python\n(.*?)```", README.read_text(encoding="utf-8"), flags=re.S)


def test_the_readme_api_example_runs(tmp_path: Path, monkeypatch, capsys) -> None:
    blocks = readme_python_blocks()
    assert blocks, "the README has no Python example"
    monkeypatch.chdir(tmp_path)
    for block in blocks:
        exec(compile(block, str(README), "exec"), {"__name__": "readme"})
    printed = capsys.readouterr().out
    assert "reached vocabulary size" in printed
    assert (tmp_path / "out" / "tokenizer.json").is_file()


def test_public_surface_is_small() -> None:
    assert set(workbench.__all__) == {"train", "load", "extend", "Tokenizer", "TrainResult"}
    from workbench.engine.encode.tokenizer import Tokenizer

    assert workbench.Tokenizer is Tokenizer
    with pytest.raises(AttributeError):
        workbench.not_there  # noqa: B018


def test_paths_and_documents_are_told_apart(tmp_path: Path) -> None:
    corpus = tmp_path / "c.txt"
    corpus.write_text("abc abd abe " * 50, encoding="utf-8")
    from_path = workbench.train(corpus, vocab_size=260)
    from_list = workbench.train([str(corpus)], vocab_size=260)
    from_text = workbench.train(["abc abd abe " * 50], vocab_size=260)
    assert from_path.merges == from_list.merges == from_text.merges
    with pytest.raises(workbench.api.ConfigError, match="mixes paths and documents"):
        workbench.train([str(corpus), "some text"], vocab_size=260)


def _rows(db: Path) -> tuple[dict, list[tuple]]:
    """The stored run, minus what legitimately differs (ids, times, names, pids)."""
    with RunStore(db) as store:
        (run,) = store.list_runs()
        rows = store.conn.execute(
            "SELECT rank, new_id, left_id, right_id, token, readable, count, length, is_new, "
            "ties, corpus_tokens FROM merges WHERE run_id = ? ORDER BY rank",
            [run.id],
        ).fetchall()
        top = store.top_pieces(run.id, limit=1000)
    stats = {k: v for k, v in run.stats.items() if k != "seconds"}
    header = {
        "state": run.state,
        "stop_reason": run.stop_reason,
        "vocab_size": run.vocab_size,
        "merge_count": run.merge_count,
        "settings": run.settings,
        "stats": stats,
        "corpus": run.corpus,
        "top": top,
    }
    return header, rows


def test_cli_api_and_window_record_the_same_run(tmp_path: Path, qtbot) -> None:
    corpus = tmp_path / "corpus.txt"
    words = [f"w{i % 97}x{i % 13}" for i in range(4000)]
    corpus.write_text(" ".join(words) + "\n", encoding="utf-8")
    vocab = 400

    cli_db = tmp_path / "cli.db"
    assert main(["train", str(corpus), "--vocab-size", str(vocab), "--out",
                 str(tmp_path / "out"), "--db", str(cli_db), "--quiet", "--skip-bad-files"]) == 0  # fmt: skip
    api_db = tmp_path / "api.db"
    result = workbench.train(corpus, vocab_size=vocab, db=api_db, skip_bad_files=True)

    from gui_fixtures import train_in_window

    window_db = tmp_path / "window.db"
    train_in_window(qtbot, window_db, [corpus], vocab)

    cli, api, window = _rows(cli_db), _rows(api_db), _rows(window_db)
    assert cli[1] == api[1] == window[1]  # every stored merge row
    assert cli[0] == api[0] == window[0]  # state, reason, settings, stats, corpus, top pieces
    assert [(bytes(r[4])) for r in cli[1]] == [a + b for a, b in result.merges]
    assert cli[0]["state"] == "done"
    merges_txt = (tmp_path / "out" / "merges.txt").read_text(encoding="utf-8").splitlines()
    assert len([m for m in merges_txt if not m.startswith("#")]) == len(result.merges)
    json.dumps(cli[0]["stats"])  # plain JSON, nothing engine-specific
