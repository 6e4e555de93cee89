"""Parity-aware BPE in the window: the Settings choice, the live per-group curves with the worst
group named, and the same curves when the stored run is opened again."""

# ruff: noqa: F811  (fixtures imported from gui_fixtures are "redefined" as test arguments)
from __future__ import annotations

import html

import pytest

pytest.importorskip("pytestqt")

from gui_fixtures import (  # noqa: E402
    COLD_START_MS,
    click,
    close_window,
    db_path,  # noqa: F401
    make_window,
    no_qthread_left,  # noqa: F401  (autouse fixture)
    settings_path,  # noqa: F401
    train_to,
    window,  # noqa: F401
)

from workbench.engine.config import TrainConfig  # noqa: E402
from workbench.engine.train.parity import ParityTrainer, count_groups  # noqa: E402
from workbench.store import RunStore  # noqa: E402

GROUPS = {
    "en": "".join(f"the quick brown fox {i} jumps over the lazy dog\n" for i in range(50)),
    "ru": "".join(f"съешь же ещё этих мягких булок {i} да выпей чаю\n" for i in range(50)),
    "<b>x</b>": "".join(f"いろはにほへと ちりぬるを {i} わかよたれそ\n" for i in range(50)),
}


@pytest.fixture()
def corpus(tmp_path):
    root = tmp_path / "corpus"
    for name, text in GROUPS.items():
        folder = root / name.replace("/", "_")
        folder.mkdir(parents=True)
        (folder / "a.txt").write_text(text)
    return root


def test_charts_show_each_group_and_name_the_worst_escaped(qtbot):
    from workbench.gui.charts import ChartsPanel

    panel = ChartsPanel()
    qtbot.addWidget(panel)
    panel.show()
    config = TrainConfig(vocab_size=300, parity_by="folder")
    trainer = ParityTrainer(count_groups({k: [v] for k, v in GROUPS.items()}, config), config)
    for batch in trainer.batches(batch_seconds=None):
        panel.add_batch(batch)
    panel.redraw_if_dirty()
    groups = panel.groups
    assert groups.shown and len(groups._curves) == 3
    worst = trainer.group_names[trainer.worst_order()[0]]
    assert groups.worst() == worst
    title = groups.plot.titleLabel.text
    assert title.endswith(html.escape(worst))
    # a group name is text, not markup, in the legend too
    labels = [label.text for _, label in groups.legend.items]
    assert all("<b>" not in label for label in labels)
    # each entry: the escaped name and its group's bytes/token now
    expected = dict(zip(trainer.group_names, trainer.compression(), strict=True))
    assert labels == [f"{html.escape(n)} {expected[n]:.3f}" for n in trainer.group_names]
    rates = groups.rates()
    assert rates.shape == (trainer.n_merges, 3)
    assert rates[-1].tolist() == pytest.approx(trainer.compression())
    panel.reset()
    assert not groups.shown  # a classic run's charts look as before
    panel.close()


def test_window_trains_parity_aware_and_reopens_the_curves(qtbot, window, corpus, db_path):
    window.controls.parity.setCurrentIndex(window.controls.parity.findData("folder"))
    assert window.controls.config().parity_by == "folder"
    window.load_corpus([corpus])
    train_to(qtbot, window, 256 + 40)
    qtbot.waitUntil(lambda: window.charts.groups.shown, timeout=5000)
    window.charts.redraw_if_dirty()
    live = window.charts.groups.rates().copy()
    assert live.shape == (40, 3)
    with RunStore(db_path) as store:
        (run,) = store.list_runs()
    assert run.settings["parity_by"] == "folder"
    window.charts.reset()
    assert not window.charts.groups.shown
    window.open_run(run.id)
    qtbot.waitUntil(lambda: window.charts.groups.shown, timeout=5000)
    assert window.charts.groups.rates().tolist() == live.tolist()


def test_counting_in_groups_moves_the_corpus_bar_to_the_total(qtbot, window, corpus):
    seen: list[tuple[int, int]] = []
    window.worker.sigProgress.connect(lambda done, total: seen.append((done, total)))
    window.controls.parity.setCurrentIndex(window.controls.parity.findData("folder"))
    window.load_corpus([corpus])
    train_to(qtbot, window, 256 + 5)
    total = sum(f.stat().st_size for f in corpus.rglob("*.txt"))
    qtbot.waitUntil(lambda: bool(seen) and seen[-1] == (total, total), timeout=5000)
    # from the first report of this corpus (the window may count its starting corpus first)
    # The last count (the window counts its starting corpus, and the new one at once, before
    # Train counts it in groups): from the last report that went back.
    start = max(i for i in range(len(seen)) if i == 0 or seen[i][0] < seen[i - 1][0])
    ours = seen[start:]
    assert {t for _, t in ours} == {total}
    assert [d for d, _ in ours] == sorted(d for d, _ in ours)
    assert len({d for d, _ in ours}) >= 3  # a report at each of the 3 files' ends at least


def test_the_choice_is_kept_across_a_restart(qtbot, settings_path, db_path):
    win = make_window(settings_path, db_path)
    win.show()
    win.controls.parity.setCurrentIndex(win.controls.parity.findData("script"))
    close_window(qtbot, win)
    again = make_window(settings_path, db_path)
    again.show()
    try:
        assert again.controls.config().parity_by == "script"
    finally:
        close_window(qtbot, again)


def _merges(trainer) -> list[bytes]:
    return [token for batch in trainer.batches(batch_seconds=None) for token in batch.tokens]


def test_the_moving_window_trains_is_stored_and_kept(qtbot, settings_path, db_path, corpus):
    win = make_window(settings_path, db_path)
    win.show()
    try:
        box = win.controls.parity_window
        assert not box.isEnabled()  # classic BPE: no window to set
        assert box.text() == "off (greedy rule)" and box.whatsThis()
        win.controls.parity.setCurrentIndex(win.controls.parity.findData("folder"))
        assert box.isEnabled()
        box.setValue(4)
        assert win.controls.config().parity_window == 4
        win.load_corpus([corpus])
        train_to(qtbot, win, 256 + 40)
        run_id = win.run_id
        win.controls.set_settings_enabled(False)  # as while a run trains
        assert not box.isEnabled()
        win.controls.set_settings_enabled(True)
        assert box.isEnabled()
    finally:
        close_window(qtbot, win)
    with RunStore(db_path) as store:
        run = store.get_run(run_id)
        stored = [a + b for a, b in store.merges_as_pairs(run_id)]
    assert run.settings["parity_window"] == 4
    # the window's merges are the engine's with W = 4, and not the greedy rule's
    groups = {name.replace("/", "_"): [text] for name, text in GROUPS.items()}
    windowed = TrainConfig(vocab_size=256 + 40, parity_by="folder", parity_window=4)
    greedy = TrainConfig(vocab_size=256 + 40, parity_by="folder")
    assert stored == _merges(ParityTrainer(count_groups(groups, windowed), windowed))
    assert stored != _merges(ParityTrainer(count_groups(groups, greedy), greedy))

    again = make_window(settings_path, db_path)
    again.show()
    try:
        assert again.controls.parity_window.value() == 4
        assert again.controls.config().parity_window == 4
        again.controls.parity.setCurrentIndex(again.controls.parity.findData(""))
        assert not again.controls.parity_window.isEnabled()
        assert again.controls.config().parity_window == 0  # kept, but classic BPE has none
    finally:
        close_window(qtbot, again)


def test_a_parity_run_continues_after_a_restart_with_its_curves(
    qtbot, settings_path, db_path, corpus
):
    first = make_window(settings_path, db_path)
    first.show()
    first.controls.parity.setCurrentIndex(first.controls.parity.findData("folder"))
    first.load_corpus([corpus])
    train_to(qtbot, first, 256 + 30)
    run_id = first.run_id
    close_window(qtbot, first)

    second = make_window(settings_path, db_path)
    second.show()
    try:
        second.runs.refresh()
        second.runs.select_run(run_id)
        second.runs.open_selected()
        second.controls.vocab.setValue(256 + 60)
        click(qtbot, second, "resume")
        qtbot.waitUntil(lambda: second.mode == "finished", timeout=COLD_START_MS)
        assert second.merges_done == 60
    finally:
        close_window(qtbot, second)
    config = TrainConfig(vocab_size=256 + 60, parity_by="folder")
    straight = ParityTrainer(count_groups({k: [v] for k, v in GROUPS.items()}, config), config)
    list(straight.batches(batch_seconds=None))
    with RunStore(db_path) as store:
        (run,) = store.list_runs()
        assert store.merges_as_pairs(run_id) == straight.merge_pairs()
    assert run.stats["parity"]["chosen"] == straight.chosen  # the curves go on, whole
