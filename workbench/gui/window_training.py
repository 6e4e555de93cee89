"""The window's training requests: Train, a sweep, Pause, Resume, Stop, +N and teaching's
paced steps, each sent to the worker as a queued signal (the window never waits).
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

from workbench.engine.errors import WorkbenchError
from workbench.gui.controls import parse_specials

STEP_TARGET = 2**31 - 1  # Step goes past the vocab size the run was started with


class TrainingRequests:
    """Mixed into `MainWindow`: turns the training actions into worker requests."""

    def train(self) -> None:
        if self.mode == "training" or not self.corpus_paths:
            return
        try:
            config = self.controls.config()
        except WorkbenchError as exc:
            self._on_failed(str(exc))
            return
        self.history.cancel()
        corpus = (self.controls.corpus_summary.text().splitlines() or ["the corpus"])[0]
        base = self.controls.base_spec()
        caption = f"This run: {corpus}" + (f", extending {Path(base).name}" if base else "")
        self.charts.reset(0, caption)
        self.meter.reset()
        self.merges_done = 0
        self._release_run()
        self.state = self.state.new_run()
        self.merge_list.set_run(None, None)
        self.merge_list.clear_search()  # the last run's search would hide the new run's merges
        self.merge_list.follow.setChecked(True)
        self.target_merges = config.merged_token_target
        self._begin_training()
        self.corpus_panel.set_counting(True)
        self.worker.arm()
        paths = tuple(str(p) for p in self.corpus_paths)
        self.merge_list.model.set_start_tokens(None)  # an extension's base arrives with its run
        self.extension_base_size = 0
        if base:  # the worker loads the base and counts with its pattern and specials
            self.worker.sigExtendRequested.emit(paths, config, base)
        else:
            self.worker.sigTrainRequested.emit(paths, config)
        if self._teaching_paced():
            # The trainer's first batch is one merge: pausing now stops the run right after
            # it, and the teaching driver takes it from there, a few merges per tick.
            self.teacher.start()
            self.worker.request_pause()
        self._update_actions()

    def ask_sweep(self) -> None:
        """Ask for the sizes (a dialog), then train the sweep."""
        from PySide6.QtWidgets import QInputDialog

        vocab = self.controls.vocab.value()
        suggested = ",".join(str(max(257, vocab * k // 4)) for k in (1, 2, 3, 4))
        text, ok = QInputDialog.getText(
            self,
            "Train a sweep",
            "Vocabulary sizes, separated by commas (one run each, the corpus counted once):",
            text=suggested,
        )
        if ok:
            self.train_sweep(text)

    def train_sweep(self, sizes_text: str) -> None:
        """Train one run per size in `sizes_text` ("1000,2000,4000"), as one action."""
        from workbench.session.sweep import parse_vocab_sizes

        if self.mode == "training" or not self.corpus_paths:
            return
        try:
            sizes = parse_vocab_sizes(sizes_text)
            config = self.controls.config()
            plan = [replace(config, vocab_size=size) for size in sizes]  # each checked now
        except WorkbenchError as exc:
            self._on_failed(str(exc).replace("--vocab-size", "sweep"))
            return
        if self.controls.base_spec():  # a sweep of extensions is not built: say so, not ignore
            self._on_failed("a sweep trains from the bytes: set Start from to none first")
            return
        self.history.cancel()
        self._release_run()
        self.state = self.state.new_run()
        self.merge_list.clear_search()
        self.sweep = (0, len(plan))
        self._begin_training()
        self.corpus_panel.set_counting(True)
        self.worker.arm()
        self.worker.sigSweepRequested.emit(tuple(str(p) for p in self.corpus_paths), config, sizes)
        self._update_actions()

    def _on_sweep_step(self, index: int, total: int) -> None:
        """Run `index` of a sweep starts: fresh charts and list for it."""
        self.sweep = (index, total)
        self.charts.reset(self.corpus_bytes)
        self.meter.reset()
        self.merges_done = 0
        self.target_merges = 0

    def pause(self) -> None:
        if self.teacher.running:
            self.teacher.stop()
            self.status.stage.setText(self.state.status_line())
        if self.mode == "training":
            self.worker.request_pause()
        self._update_actions()

    def resume(self) -> None:
        if self._actions().resume:
            vocab = self.controls.vocab.value()
            self.target_merges = max(self.target_merges, vocab - self._base_vocab())
            self.merge_list.model.set_highlight(None)
            self.merge_list.follow.setChecked(True)
            if self._teaching_paced():
                self.teacher.start()
                self.teacher.worker_idle(True)
                self._update_actions()
                return
            self._continue(vocab, None)

    def step(self, n: int) -> None:
        if self.state.can_grow:
            self.target_merges = max(self.target_merges, self.merges_done + n)
            # Tint what this step makes, so the new merges stand out in the list.
            self.merge_list.model.set_highlight(self.merges_done)
            self._continue(STEP_TARGET, n)

    def _teaching_paced(self) -> bool:
        return self.teaching.teaching and not self.teaching.full_speed.isChecked()

    def _teach_step(self, n: int | None) -> None:
        """A teaching tick: `n` more merges towards the vocab size (None: all the rest)."""
        if not self.state.can_grow:
            return
        if n is None:
            self.resume()
            return
        n = min(n, self.target_merges - self.merges_done)
        if n <= 0:
            self.teacher.stop()
            self._update_actions()
            return
        self.merge_list.model.set_highlight(self.merges_done)
        self._continue(self.controls.vocab.value(), n)

    def stop(self) -> None:
        """Stop: a training run stops at its next batch (the worker answers), a paused one
        is finished where it stands. Either can still grow later, as a stopped run opened
        from the Runs tab can (its corpus is replayed first)."""
        teaching = self.teacher.running
        self.teacher.stop()
        if self.mode == "training":
            self.worker.request_stop()
        elif self.mode == "paused":
            self.worker.sigFinishRequested.emit()
            self.state = self.state.stopped()
            self.status.stage.setText(self.state.status_line())
            self.runs.refresh()
        elif teaching:
            self.status.stage.setText(self.state.status_line())
        self._update_actions()

    def _release_run(self) -> None:
        """Let the worker end the session it holds (the run stays as it is in the store)."""
        if self.state.live:
            self.worker.sigFinishRequested.emit()
        self.state = self.state.released()

    def _continue(self, target: int, max_merges: int | None) -> None:
        live = self.state.live
        run_id = self.state.run_id
        self._begin_training()
        self.worker.arm()
        if not live and run_id is not None:  # stopped or opened: replay the corpus, go on
            self.worker.sigResumeStoredRequested.emit(run_id, target, max_merges)
        else:
            self.worker.sigContinueRequested.emit(target, max_merges)
        self._update_actions()

    def _begin_training(self) -> None:
        self.state = self.state.training()
        self._end_replay()
        # A recount still pending from an edit is moot (a run counts the corpus itself, or
        # goes on with the counts it has); fired after a quick run, it would put "Corpus
        # read" over the run's "Done" line.
        self.recount_timer.stop()

    def _before_any_run(self) -> bool:
        """No run started or opened yet: only then do the first start's warm-up lines take the
        status (a quick run in Python may have ended before the kernels were ready, and its
        "Done: ..." or "Paused" must stay)."""
        return self.mode == "idle" and self.run_id is None and not self.merges_done

    def _base_vocab(self) -> int:
        """The tokens a run starts with: an extension's base (its specials counted), else the
        256 bytes and the special tokens."""
        if getattr(self, "extension_base_size", 0):
            return self.extension_base_size
        return 256 + len(parse_specials(self.controls.specials.text()))
