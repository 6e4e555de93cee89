"""Restart where you left off: what the window keeps in its settings at close (the open run,
the tab, the Tokens text, the Evaluate tab's choices) and puts back at start.

What is gone since (a deleted run, a moved file) is dropped without a word.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from workbench.store import StoreError

if TYPE_CHECKING:
    from workbench.gui.main_window import MainWindow


def restore(window: MainWindow) -> None:
    """Put back what `remember` kept (the run is opened last but one, the tab last)."""
    v = window.values
    if v.tokens_text:
        window.tokens.panel.set_text(v.tokens_text)
    window.evaluate.refresh_runs()
    window.evaluate.tokenizers.restore(v.eval_tokenizers)
    window.evaluate.text.restore(v.eval_paths, v.eval_pasted, v.eval_group, v.eval_field)
    if v.open_run:
        try:
            window.store.get_run(v.open_run)
        except StoreError:
            pass
        else:
            window.open_run(v.open_run)
    if 0 <= v.tab < window.tabs.count():
        window.tabs.setCurrentIndex(v.tab)


def remember(window: MainWindow) -> None:
    """Keep in `window.values` what a restart should put back (saved with the settings)."""
    v = window.values
    v.open_run = window.run_id or 0
    v.tab = window.tabs.currentIndex()
    v.tokens_text = window.tokens.panel.view.text()
    v.eval_tokenizers = window.evaluate.tokenizers.specs()
    v.eval_paths = window.evaluate.text.path_list()
    v.eval_pasted = window.evaluate.text.pasted.toPlainText()
    v.eval_group = window.evaluate.text.group_by.currentText()
    v.eval_field = window.evaluate.text.field.text()
