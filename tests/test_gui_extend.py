"""Extending a tokenizer in the window as a person does: "Start from" in Settings names a small
tokenizer file, Train extends it live; the merge list names the base's tokens and numbers the
new merges after the base's, the caption names the base, and the check's result ends up in the
status and the stored run (the same tokenizer `workbench.extend` makes)."""

# ruff: noqa: F811  (fixtures imported from gui_fixtures are "redefined" as test arguments)
from __future__ import annotations

import pytest

pytest.importorskip("pytestqt")

from gui_fixtures import (  # noqa: E402
    db_path,  # noqa: F401
    no_qthread_left,  # noqa: F401  (autouse fixture)
    settings_path,  # noqa: F401
    train_to,
    window,  # noqa: F401
)

import workbench  # noqa: E402
from workbench.display import readable  # noqa: E402
from workbench.gui.controls import NO_BASE  # noqa: E402
from workbench.gui.merge_table import BASE_TOKEN, LEFT, RANK  # noqa: E402
from workbench.store.tokenizer_of_run import tokenizer_of_run  # noqa: E402


def test_an_extension_trained_from_settings(qtbot, window, tmp_path, corpora):
    english = (corpora / "corpus.en").read_text("utf-8")[:8000]
    base_tok = workbench.train([english], 300, progress=False).tokenizer
    base_tok.export("hf", tmp_path / "base")
    base_file = tmp_path / "base" / "tokenizer.json"
    corpus = tmp_path / "zebras.txt"
    corpus.write_text((corpora / "german.txt").read_text("utf-8")[:8000], "utf-8")
    window.load_corpus([corpus])
    assert (
        window.controls.base_spec() is None and window.controls.start_from.currentText() == NO_BASE
    )
    window.controls.set_base(str(base_file))
    assert window.controls.base_spec() == str(base_file)
    stages: list[str] = []
    window.worker.sigStage.connect(stages.append)
    train_to(qtbot, window, 330)
    assert any(s.startswith("Loading the tokenizer to extend") for s in stages)
    assert window.charts.caption.text().endswith(", extending tokenizer.json")
    run = window.store.get_run(window.run_id)
    assert run.settings["extends"]["spec"] == str(base_file.resolve())
    assert run.stats["extension"]["ok"]
    summary = (
        f"Extension check passed: {len(base_tok.vocab):,} old ids unchanged, 30 new tokens all"
        " reachable — Finished"
    )
    assert window.status.stage.full_text().startswith(summary)
    reference = workbench.extend(base_file, [corpus], 330, progress=False)
    assert tokenizer_of_run(window.store, window.run_id) == reference.tokenizer
    # The merge list: ranks after the base's, the base's tokens named by their bytes.
    model = window.merge_list.model
    qtbot.waitUntil(lambda: model.rowCount() > 0 and model.cached_text(0, RANK) is not None)
    assert model.cached_text(0, RANK) == str(len(base_tok.merges))
    first = model.merge_at(0)
    left = readable(reference.tokenizer.vocab[first.left_id])
    assert model.cached_text(0, LEFT) == f"{first.left_id} {left}"
    assert window.target_merges == 30  # counted from the base's size, not from the bytes
    charts = window.charts
    axis = f"merges after the base's {len(base_tok.merges):,}"
    assert charts.bpt_plot.getAxis("bottom").labelText == axis  # live: the charts say so
    # Opened again from the store: still numbered after the base's merges, and the base is
    # loaded again (in the background, checked by its fingerprint) to name its tokens; until
    # then they are named as base tokens, never as the bytes their ids would be.
    run_id = window.run_id
    window.open_run(run_id)
    qtbot.waitUntil(lambda: model.cached_text(0, RANK) is not None)
    assert model.cached_text(0, RANK) == str(len(base_tok.merges))
    first = model.merge_at(0)
    base_part = next(i for i in (first.left_id, first.right_id) if i < len(base_tok.vocab))
    qtbot.waitUntil(lambda: not window.history.base_loading, timeout=30_000)
    assert model.token_name(base_part) == readable(base_tok.vocab[base_part])
    assert model.cached_text(0, LEFT).split(" ", 1)[1] == readable(
        reference.tokenizer.vocab[first.left_id]
    )
    assert charts.bpt_plot.getAxis("bottom").labelText == axis
    # The charts read the run's merges after the list's first paint: wait for them.
    qtbot.waitUntil(lambda: not window.history.loading and charts.data.n > 0, timeout=30_000)
    assert f"(rank {len(base_tok.merges)})" in charts.describe(0)
    assert charts.caption.full_text().endswith(", extending tokenizer.json")
    # The base file changed since: the run says it cannot load it, and names base tokens so.
    other = workbench.train([english[:4000]], 280, progress=False).tokenizer
    other.export("hf", tmp_path / "other")
    base_file.write_bytes((tmp_path / "other" / "tokenizer.json").read_bytes())
    window.open_run(run_id)
    qtbot.waitUntil(lambda: not window.history.base_loading, timeout=30_000)
    assert model.token_name(base_part) == BASE_TOKEN
    assert "cannot be loaded" in window.statusBar().currentMessage()
    assert "changed since" in window.statusBar().currentMessage()
    # A classic run opened after it: plain axes again.
    window.controls.set_base(NO_BASE)
    assert window.controls.base_spec() is None
    train_to(qtbot, window, 300)
    assert charts.bpt_plot.getAxis("bottom").labelText == "merges made"


def test_a_reopened_extension_run_whose_base_is_gone_or_crafted(qtbot, window, tmp_path, corpora):
    import json
    import sqlite3

    english = (corpora / "corpus.en").read_text("utf-8")[:8000]
    workbench.train([english], 300, progress=False).tokenizer.export("hf", tmp_path / "base")
    base_file = tmp_path / "base" / "tokenizer.json"
    text = (corpora / "taylorswift.txt").read_text("utf-8")[:8000]
    db = window.store.path
    gone = workbench.extend(base_file, [text], 330, db=db, progress=False, name="gone")
    crafted = workbench.extend(base_file, [text], 330, db=db, progress=False, name="crafted")
    base_file.unlink()
    with sqlite3.connect(db) as con:  # a record this app never writes: its spec not a string
        (settings,) = con.execute(
            "SELECT settings FROM runs WHERE id = ?", (crafted.run_id,)
        ).fetchone()
        settings = json.loads(settings)
        settings["extends"]["spec"] = 5
        con.execute(
            "UPDATE runs SET settings = ? WHERE id = ?", (json.dumps(settings), crafted.run_id)
        )
    model = window.merge_list.model
    for run_id, why in ((gone.run_id, "cannot be loaded any more"), (crafted.run_id, "record")):
        window.open_run(run_id)
        qtbot.waitUntil(lambda: not window.history.base_loading, timeout=30_000)
        qtbot.waitUntil(lambda: model.cached_text(0, RANK) is not None)
        first = model.merge_at(0)
        assert model.token_name(min(first.left_id, first.right_id)) == BASE_TOKEN
        message = window.statusBar().currentMessage()
        assert f"The base of run {run_id} cannot be loaded" in message and why in message
