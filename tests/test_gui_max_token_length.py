"""The window's max token length: a Settings control that trains with the cap, is stored with the
run, shown when the run is opened, and comes back after a restart."""

# ruff: noqa: F811  (fixtures imported from gui_fixtures are "redefined" as test arguments)
from __future__ import annotations

import pytest

pytest.importorskip("pytestqt")

from gui_fixtures import (  # noqa: E402
    close_window,
    db_path,  # noqa: F401
    make_window,
    no_qthread_left,  # noqa: F401  (autouse fixture)
    settings_path,  # noqa: F401
    train_to,
)

from workbench.store import RunStore  # noqa: E402


def test_the_cap_trains_is_stored_shown_and_kept(qtbot, settings_path, db_path, tmp_path):
    corpus = tmp_path / "corpus.txt"
    corpus.write_text(" ".join(f"longword{i % 7}" for i in range(2000)), encoding="utf-8")
    first = make_window(settings_path, db_path)
    first.show()
    try:
        assert first.controls.max_token_length.text() == "no cap (bytes)"
        first.controls.max_token_length.setValue(3)
        first.load_corpus([corpus])
        train_to(qtbot, first, 256 + 400)
        run_id = first.run_id
    finally:
        close_window(qtbot, first)
    with RunStore(db_path) as store:
        run = store.get_run(run_id)
        assert run.settings["max_token_length"] == 3
        assert run.stop_reason == "max_token_length"  # 400 merges cannot all fit in 3 bytes
        pairs = store.merges_as_pairs(run_id)
    assert pairs and max(len(a + b) for a, b in pairs) == 3

    second = make_window(settings_path, db_path)
    second.show()
    try:
        assert second.controls.max_token_length.value() == 3
        second.open_run(run_id)
        assert "tokens up to 3 bytes" in second.charts.caption.full_text()
    finally:
        close_window(qtbot, second)


def test_the_cap_in_characters_trains_is_stored_shown_and_kept(
    qtbot, settings_path, db_path, tmp_path
):
    from workbench.engine.train.char_count import utf8_chars

    corpus = tmp_path / "corpus.txt"
    corpus.write_text(" ".join(f"слово{i % 7}" for i in range(2000)), encoding="utf-8")
    first = make_window(settings_path, db_path)
    first.show()
    try:
        box = first.controls.max_token_chars
        assert box.text() == "no cap (characters)" and box.whatsThis()
        box.setValue(3)
        first.load_corpus([corpus])
        train_to(qtbot, first, 256 + 400)
        run_id = first.run_id
    finally:
        close_window(qtbot, first)
    with RunStore(db_path) as store:
        run = store.get_run(run_id)
        assert run.settings["max_token_chars"] == 3
        assert run.settings["max_token_length"] == 0
        assert run.stop_reason == "max_token_length"
        tokens = [a + b for a, b in store.merges_as_pairs(run_id)]
    assert max(map(utf8_chars, tokens)) == 3
    assert max(map(len, tokens)) == 6  # three Cyrillic letters: 6 bytes, within 3 characters

    second = make_window(settings_path, db_path)
    second.show()
    try:
        assert second.controls.max_token_chars.value() == 3
        second.open_run(run_id)
        assert "tokens up to 3 characters" in second.charts.caption.full_text()
    finally:
        close_window(qtbot, second)
