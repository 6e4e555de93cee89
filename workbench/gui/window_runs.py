"""The window's stored runs: opening one from the Runs tab, letting a deleted one go,
exporting a run's tokenizer, and going to a merge the Tokens tab points at.
"""

from __future__ import annotations

from pathlib import Path

from workbench.engine.errors import WorkbenchError
from workbench.gui.paint_turns import TURNS
from workbench.gui.settings import WindowSettings
from workbench.gui.tokens.export_dialog import ExportDialog
from workbench.gui.tokens_tab import tokenizer_of_run as stored_tokenizer
from workbench.store import StoreError


class StoredRuns:
    """Mixed into `MainWindow`: browsing, deleting and exporting stored runs."""

    def open_run(self, run_id: int) -> None:
        """Browse a stored run: its merges and charts, without retraining."""
        if self.mode == "training":
            self.statusBar().showMessage("Pause or stop training before opening a run", 5000)
            return
        try:
            run = self.store.get_run(run_id)
        except StoreError as exc:
            self.statusBar().showMessage(str(exc), 8000)
            self.runs.refresh()
            return
        if self.mode == "paused":
            self.stop()
        self._release_run()
        self.teacher.stop()
        self.state = self.state.opened(
            run.id,
            run.name,
            run.merge_count,
            run.vocab_size,
            run.stop_reason,
            bool(run.corpus.get("fingerprint")),
        )
        form = run_form(run.settings, run.vocab_size)
        if form is not None:  # the panel shows the run's settings: Train repeats it
            self.controls.load(form)
        self.merges_done = run.merge_count
        self.target_merges = run.merge_count
        self.tabs.setCurrentIndex(0)  # first: the list's paint is held only when it shows
        self.merge_list.set_run(self.store, run_id, run.merge_count)
        # Its rows paint in a turn of their own, not with this one's and the charts' reset;
        # then the charts' merges are read (`history.load`'s `after`).
        self.merge_list.paint_rows_later()
        base = run.settings.get("extends")  # an extension run: numbered after its base
        base = base if isinstance(base, dict) else {}
        merges, first_new = base.get("merges"), base.get("first_new_id")
        merges = merges if type(merges) is int and merges > 0 else 0
        first_new = first_new if type(first_new) is int and first_new > 0 else 0
        self.merge_list.model.set_start_tokens(None, merges, first_new)
        self.extension_base_size = 0
        capped = _caps_note(run.settings)
        # An extension run's base is loaded again meanwhile (`_stored_base`): until it comes,
        # its tokens are named as base tokens, never as the bytes their ids would be.
        self.opened_base = (merges, first_new) if base else None
        spec = base.get("spec")
        extending = f", extending {Path(spec).name}" if type(spec) is str and spec else ""
        caption = f"Stored run {run.id} “{run.name}”{extending}{capped}"
        self.history.load(self.store, run, caption, after=self.merge_list.settled)
        if self.opened_base is not None:
            self.charts.set_extension(merges)
        # The run's tokenizer (~1 s of Python at 200k merges, in long GIL holds) is built once
        # the Tokens tab is shown, and for teaching once the charts have the run: a build
        # meanwhile stretched the turns in which the charts and the merge list first paint.
        self.tokens.show_run(run_id, run.name, when_shown=True)
        if self.teaching.isVisible():
            self.teaching.newest.setText(
                f"Run {run.id} “{run.name}”: its sample is cut once its merges are read…"
            )
        self.status.stage.setText(self.state.status_line())
        self._update_actions()
        TURNS.spent()  # this turn was a costly job: the list's paint waits for the next

    def _run_loaded(self, run_id: int) -> None:
        """The charts have the opened run: teaching's sample is cut with its merges (the last
        merge, and why; its tokenizer built in the background)."""
        if run_id != self.run_id or not self.teaching.isVisible():
            return
        if self.warmer.encoder.is_set():
            self.teaching.newest.setText(
                f"Building the tokenizer for run {run_id} “{self.state.name}”…"
            )
        self._show_teaching_sample()

    def _stored_base(self, run_id: int, vocab: object) -> None:
        """The base of the opened extension run, loaded again: the merge list names its tokens
        (or, when it cannot be loaded, the status says why and they stay "base tokens")."""
        opened = getattr(self, "opened_base", None)
        if run_id != self.run_id or opened is None:
            return  # another run was opened or trained meanwhile
        if isinstance(vocab, dict):
            self.merge_list.model.set_start_tokens(vocab, *opened)
            return
        self.statusBar().showMessage(
            f"The base of run {run_id} cannot be loaded, so its tokens are shown as"
            f" “(base token)”: {vocab}",
            15000,
        )

    def _run_deleted(self, run_id: int) -> None:
        """The Runs tab deleted a run; if it is the one shown, let it go everywhere."""
        self.tokens.forget_run(run_id)
        self.evaluate.forget_run(run_id)
        if run_id != self.run_id:
            return
        self._release_run()
        self.state = self.state.deleted(run_id)
        self.history.cancel()
        self.merge_list.set_run(None, None)
        self.merges_done = 0
        self.charts.reset(self.corpus_bytes, f"Run {run_id} was deleted")
        self.status.clear()
        self.status.stage.setText(self.state.status_line())
        self._update_actions()

    def export_tokenizer(self, run_id: int | None = None) -> ExportDialog | None:
        """File ▸ Export tokenizer… (the open run) or the Runs tab's Export (the chosen run).

        The tokenizer is built from the store in the dialog's own thread, so a run of 100k
        merges opens the dialog at once."""
        if not isinstance(run_id, int) or isinstance(run_id, bool):  # the menu's triggered(bool)
            run_id = self.run_id
        if run_id is None:
            self.statusBar().showMessage(
                "No run to export: train one, or open one in the Runs tab", 8000
            )
            return None
        try:
            run = self.store.get_run(run_id)
        except StoreError as exc:
            self.statusBar().showMessage(str(exc), 8000)
            return None
        db_path = self.db_path
        # The check's text: what the Tokens tab shows, else the start of the corpus (4 KB).
        sample = self.tokens.panel.view.text() or self.teaching.sample_text()
        sample = sample[:4000]
        self.export_dialogs = [d for d in self.export_dialogs if d.isVisible() or d.busy()]
        dialog = ExportDialog(
            lambda: stored_tokenizer(db_path, run_id)[0],
            sample,
            str(Path.home() / "bpe-exports" / f"run-{run.id}"),
            parent=self,
            title=f"run {run.id} “{run.name}” ({run.merge_count:,} merges)",
        )
        self.export_dialogs.append(dialog)
        dialog.show()
        dialog.raise_()
        dialog.activateWindow()
        return dialog

    def jump_to_rank(self, rank: int) -> None:
        """Show merge `rank` in the merge list (the Tokens tab asks for this on a click)."""
        self.tabs.setCurrentIndex(0)
        self.merge_list.show_rank(rank)


def run_form(settings: dict, vocab_size: int) -> WindowSettings | None:
    """The Settings panel's fields as a stored run used them; None when the panel cannot show
    them (a crafted or newer database's settings, a special token holding the panel's comma)."""
    from workbench.session.run import stored_config  # noqa: PLC0415 -- only on opening a run

    try:
        config = stored_config(settings, vocab_size)
    except (WorkbenchError, ValueError, TypeError):
        return None
    if any("," in token for token in config.special_tokens):
        return None
    base = settings.get("extends")
    spec = base.get("spec") if isinstance(base, dict) else None
    return WindowSettings(
        vocab_size=config.vocab_size,
        pattern=config.pattern,
        special_tokens=", ".join(config.special_tokens),
        min_frequency=config.min_frequency,
        max_token_length=config.max_token_length,
        max_token_chars=config.max_token_chars,
        tie_break=config.tie_break,
        superbpe_transition=config.superbpe_transition,
        parity_by=config.parity_by,
        parity_window=config.parity_window,
        start_from=spec if type(spec) is str else "",
    )


def _caps_note(settings: dict) -> str:
    """ " · tokens up to 16 bytes, 8 characters" for a run with caps (absent from runs stored
    before the settings; a crafted database's other types are no cap)."""
    caps = [
        f"{cap:,} {unit}"
        for key, unit in (("max_token_length", "bytes"), ("max_token_chars", "characters"))
        if type(cap := settings.get(key)) is int and cap > 0
    ]
    return f" · tokens up to {', '.join(caps)}" if caps else ""
