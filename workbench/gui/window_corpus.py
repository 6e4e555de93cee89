"""The window's corpus: opening files, folders, the demo and recent corpora (dialogs, drops),
and counting it again when the pattern changes.
"""

from __future__ import annotations

from pathlib import Path

from PySide6.QtGui import QDragEnterEvent, QDropEvent
from PySide6.QtWidgets import (
    QFileDialog,
)

from workbench.engine.config import TrainConfig
from workbench.engine.errors import WorkbenchError
from workbench.gui.controls import parse_specials
from workbench.gui.elided_label import plain_tip
from workbench.gui.resources import demo_corpus
from workbench.gui.teaching import corpus_paragraphs, first_long
from workbench.gui.worker import CorpusReport


class CorpusHandling:
    """Mixed into `MainWindow`: what the window does when the corpus changes."""

    def load_demo(self) -> None:
        files = demo_corpus()
        size = sum(f.stat().st_size for f in files)
        title = (
            f"Demo corpus: about_bpe.txt + {len(files) - 1} Python standard-library modules"
            f" ({size / 1e6:.1f} MB)"
        )
        self.values.corpus = []
        self._set_corpus(files, title)

    def load_corpus(self, paths: list[Path]) -> None:
        """Open files and/or folders as the corpus (dialogs, drops and Recent come here)."""
        if self.mode == "training":
            self.statusBar().showMessage("Stop or pause training before changing the corpus", 5000)
            return
        # Already Paths as a rule: Path(path) parses it again (~6 us each, 1,500 files ~9 ms).
        paths = [p if isinstance(p, Path) else Path(p) for p in paths]
        self.values.remember_corpus([str(p) for p in paths])
        self._fill_recent()
        names = ", ".join(p.name or str(p) for p in paths[:3])
        more = f" and {len(paths) - 3} more" if len(paths) > 3 else ""
        self._set_corpus(paths, f"Corpus: {names}{more}")

    def _set_corpus(self, paths: list[Path], title: str) -> None:
        self._leave_previous_run()
        self.corpus_paths = list(paths)
        self.corpus_panel.set_paths(self.corpus_paths, title)
        self.controls.corpus_summary.setText(title)
        self.tokens.set_corpus_paths(self.corpus_paths)
        self.controls.setToolTip(plain_tip(title))
        # Teaching's sample is the start of the corpus; finding it lists every file (90 ms for
        # 1,500 files), so a background lane reads it.
        chosen = tuple(self.corpus_paths)
        self.corpus_sample_lane.submit(lambda: (chosen, corpus_paragraphs(list(chosen))))
        self._pattern_changed()
        self.analyze()

    def _on_corpus_sample(self, result: tuple[tuple[Path, ...], list[str]]) -> None:
        paths, pool = result
        if list(paths) != self.corpus_paths:
            return  # another corpus was opened meanwhile
        self.teaching.set_sample(first_long(pool))
        self.teaching.set_pool(pool)

    def _leave_previous_run(self) -> None:
        """A new corpus: the last run's merges and charts are not this corpus's, so clear them
        (the run stays in the Runs tab) and say so."""
        if self.run_id is None and not self.merges_done:
            return
        self._release_run()
        self.teacher.stop()
        self.history.cancel()
        self.charts.reset(0, "New corpus: no run on it yet — press Train (earlier runs: Runs tab)")
        self.merge_list.set_run(None, None)
        self.state = self.state.cleared("New corpus loaded: press Train to start a run on it")
        self.merges_done = 0
        self.status.clear()
        self.status.stage.setText(self.state.status_line())

    def counting_config(self) -> TrainConfig | None:
        """A config good enough to count with (vocab size does not matter for counting)."""
        if not self.controls.pattern_ok():
            return None
        specials = parse_specials(self.controls.specials.text())
        try:
            return TrainConfig(
                vocab_size=max(self.controls.vocab.value(), 256 + len(specials)),
                pattern=self.controls.pattern_spec(),
                special_tokens=specials,
                on_bad_file="skip",
            )
        except WorkbenchError:
            return None

    def analyze(self) -> None:
        config = self.counting_config()
        if config is None or not self.corpus_paths or self.mode == "training":
            return
        self.corpus_panel.set_counting(True)
        self.worker.cancel_flag.clear()
        self.worker.sigAnalyzeRequested.emit(tuple(str(p) for p in self.corpus_paths), config)

    def _pattern_changed(self, *_: object) -> None:
        if not self.controls.pattern_ok():
            return
        specials = parse_specials(self.controls.specials.text())
        self.corpus_panel.update_preview(self.controls.pattern_spec(), specials)
        self.recount_timer.start()

    def open_files(self) -> None:
        from workbench.engine.corpus.readers import corpus_file_filter  # Parquet, Arrow, .zst, ...

        files, _ = QFileDialog.getOpenFileNames(self, "Open corpus files", "", corpus_file_filter())
        if files:
            self.load_corpus([Path(f) for f in files])

    def open_folder(self) -> None:
        folder = QFileDialog.getExistingDirectory(self, "Open corpus folder")
        if folder:
            self.load_corpus([Path(folder)])

    def _fill_recent(self) -> None:
        self.recent_menu.clear()
        for paths in self.values.recent:
            label = ", ".join(Path(p).name or p for p in paths[:3])
            action = self.recent_menu.addAction(label or "(empty)")
            action.triggered.connect(
                lambda _checked=False, paths=paths: self.load_corpus([Path(p) for p in paths])
            )
        self.recent_menu.setEnabled(bool(self.values.recent))

    def dragEnterEvent(self, event: QDragEnterEvent) -> None:
        urls = event.mimeData().urls()
        if urls and all(url.isLocalFile() for url in urls):
            event.acceptProposedAction()

    def dropEvent(self, event: QDropEvent) -> None:
        paths = [Path(url.toLocalFile()) for url in event.mimeData().urls() if url.isLocalFile()]
        if paths:
            event.acceptProposedAction()
            self.load_corpus(paths)

    def _on_corpus(self, report: CorpusReport) -> None:
        self.corpus_panel.show_report(report)
        # Training: the worker's next stage ("Training") follows; a run open at rest keeps its
        # own line (the Corpus tab has the report).
        if self.mode == "idle":
            self.status.stage.setText(
                f"Corpus read: {_size(report.bytes)}, {report.documents:,} documents,"
                f" {report.unique_pieces:,} distinct pre-tokens in {report.seconds:.1f} s"
            )
        elif self.mode in ("paused", "finished") and not self.teacher.running:
            self.status.stage.setText(self.state.status_line())  # back from "Reading…"
        self.controls.corpus_summary.setText(
            f"{self.corpus_panel.title.text()}\n{_size(report.bytes)} · "
            f"{report.documents:,} documents · {report.pieces:,} pre-tokens "
            f"({report.unique_pieces:,} unique)"
            + (f" · {len(report.skipped)} files skipped" if report.skipped else "")
        )
        self.charts.set_corpus_bytes(report.bytes)
        self.corpus_bytes = report.bytes


def _size(n_bytes: int) -> str:
    """1_234_567 -> "1.2 MB"; 5_300 -> "5.3 KB"; 12 -> "12 bytes"."""
    if n_bytes >= 1e6:
        return f"{n_bytes / 1e6:,.1f} MB"
    return f"{n_bytes / 1e3:,.1f} KB" if n_bytes >= 1e3 else f"{n_bytes} bytes"
