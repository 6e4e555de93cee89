"""The window's side of the worker's answers: stages, the run started, each batch, idle
(paused, stopped, finished), failures and the kernel warm-up's progress.
"""

from __future__ import annotations

import contextlib
from dataclasses import replace

from PySide6.QtCore import QTimer

from workbench.engine.events import MergeBatch
from workbench.gui.app import freeze_long_lived
from workbench.gui.window_state import grown_name
from workbench.gui.worker import IdleState
from workbench.session.states import StopReason
from workbench.store import StoreError


class WorkerAnswers:
    """Mixed into `MainWindow`: the slots the worker's and warmer's signals reach."""

    def _on_stage(self, text: str) -> None:
        self.status.stage.setText(text)
        if text.startswith("Training"):
            self.meter.start(self.merges_done)

    def _on_run_started(self, run_id: int) -> None:
        self.corpus_panel.set_counting(False)
        if self.sweep is not None:
            index, total = self.sweep
            self.status.stage.setText(f"Sweep: run {index} of {total}")
        run_id_or_none = run_id if run_id >= 0 else None
        name = ""
        if run_id_or_none is not None:
            with contextlib.suppress(StoreError):  # deleted already: the next answer says so
                name = self.store.get_run(run_id_or_none).name
        self.state = self.state.started(run_id_or_none, name)
        self.merge_list.set_run(self.store, self.run_id, 0)
        self.runs.refresh()

    def _on_base(self, base: tuple) -> None:
        """An extension run's base, before its run starts: the merge list names its tokens
        and numbers the new merges after its merges; the progress counts the merges to make
        from the base's size, not from the 256 bytes."""
        _spec, vocab, merges, size = base
        self.merge_list.model.set_start_tokens(vocab, merges)
        self.charts.set_extension(merges)  # the charts count the new merges: their axes say so
        self.extension_base_size = size
        self.target_merges = max(self.controls.vocab.value() - size, 0)

    def _on_batch(self, batch: MergeBatch) -> None:
        """Per batch: append to buffers and counters only; timers do the drawing."""
        self.charts.add_batch(batch)
        self.merges_done = batch.end_rank
        self.merge_list.model.note_total(batch.end_rank)
        self.meter.note(batch.end_rank)

    def _on_idle(self, state: IdleState) -> None:
        # The worker thaws the objects frozen for its run when the run stops (so a cycle among
        # them can be collected later); the next full collection would then walk all of them
        # (~100 ms with the GIL held, seen while a run was opened right after). Freezing again
        # here keeps that walk short; a cycle waits for the next run's thaw.
        freeze_long_lived()
        self.meter.stop()
        self.corpus_panel.set_counting(False)
        sweep, self.sweep = self.sweep, None
        interrupted = (
            StopReason.PAUSED,
            StopReason.STOPPED,
            StopReason.INTERRUPTED,
            StopReason.DELETED,
        )
        if sweep is not None and sweep[0] < sweep[1] and state.reason not in interrupted:
            self.sweep = sweep  # more runs of the sweep follow
            self.charts.pause_clock()
            self.status.stage.setText(f"Sweep: run {sweep[0]} of {sweep[1]} done")
            self.runs.refresh()
            return
        self.state = self.state.after_idle(
            state.reason, state.merges, state.vocab_size, state.can_continue
        )
        self._follow_size()
        teaching = self.teacher.running and self.mode == "paused"
        if not teaching:
            # A pause stops the merges/s clock, so it does not read as a slow stretch; teaching's
            # pauses between ticks are its pace, so its rate (over the charts' sliding window)
            # spans them: a tick's few merges alone take a millisecond and draw no point.
            self.charts.pause_clock()
        if teaching:
            stage = f"Teaching: {state.merges:,} of {self.target_merges:,} merges"
        else:
            stage = self.state.status_line()
        if state.extension:  # an extension run ended: its check's result
            stage = f"{state.extension} — {stage}"  # first: the line is elided at its end
            self.statusBar().showMessage(state.extension, 15000)
        if sweep is not None:
            ended = "finished" if sweep[0] == sweep[1] else f"ended at run {sweep[0]}"
            stage = f"Sweep of {sweep[1]} runs {ended} — {stage}"
        self.status.stage.setText(stage)
        self.merge_list.model.note_total(state.merges)
        self.merge_list.poke()
        if self.merge_list.model.highlight_from is not None:
            self.merge_list.select_rank(state.merges - 1)  # the newest of the merges just made
        self._show_teaching_sample(every_tick=teaching)
        if not teaching:
            self.charts.fit_to_data()  # the axes' growing room is for merges not coming now
        if teaching:
            self.teacher.worker_idle(self.state.can_grow and state.merges < self.target_merges)
        else:
            self.teacher.stop()
            # In a turn of their own: the run's end already repaints the charts and the list.
            QTimer.singleShot(0, self, lambda: self._after_run_end(state.merges))
        self._update_actions()
        if self._closing:
            self._shutdown()

    def _after_run_end(self, merges: int) -> None:
        """The Runs tab's list and the Tokens tab's tokenizer after a run ended."""
        if self._closing:
            return
        self.runs.refresh()
        if merges and self.run_id is not None:
            self.tokens.show_run(self.run_id, self.state.name)

    def _follow_size(self) -> None:
        """A continued run whose name the workbench gave ("corpus · 32,000") takes its new
        size ("corpus · 48,000"); a name the user chose stays."""
        run_id = self.state.run_id
        if run_id is None:
            return
        try:  # the name now, not when the run started: the user may have renamed it since
            name = grown_name(self.store.get_run(run_id).name, self.state.vocab_size)
            if name is None:
                return
            self.store.rename(run_id, name)
        except StoreError:
            return
        self.state = replace(self.state, name=name)

    def _on_failed(self, message: str) -> None:
        self.teacher.stop()
        self.sweep = None
        self.corpus_panel.set_counting(False)
        if self.mode == "training":
            self.meter.stop()
        self.state = self.state.failed(message)
        self.status.stage.setText(message)
        self.statusBar().showMessage(message, 10000)
        self._update_actions()

    def _on_warm_progress(self, done: int, total: int, stage: str, compiling: bool) -> None:
        """The truth about a first start: what is compiling, k of n (not "Reading the corpus")."""
        if not compiling or done >= total or not self._before_any_run():
            return
        self.status.stage.setText(stage)  # session.startup's words: which stage, k of n, about

    def _on_warm(self, seconds: float) -> None:
        self.warm_thread.quit()
        freeze_long_lived()  # the kernels just loaded live as long as the app
        if self._before_any_run():
            # The stage label, not showMessage: a temporary message hides the stage for seconds.
            how = "prepared (first use)" if self.warmer.compiled else "loaded"
            self.status.stage.setText(f"Trainer ready (fast kernels {how} in {seconds:.1f} s)")
