"""The Evaluate tab: which tokenizer is better for my data, in the window.

Pick runs (each at any k), tokenizer files and references, held-out files or pasted text and a
grouping; Evaluate runs `workbench.evaluate.run.evaluate` off the UI thread (progress, Cancel)
and shows the metrics table (sortable, the best of each column marked), the compression curves,
tokens per byte by group and the token-health lists. Clicking a token shows it in the Tokens
tab, with its merge selected in the merge list. Export writes the CLI's HTML report. Two more
result tabs work on their own threads: "Compare runs" (`gui/evaluate/compare_panel.py`, as
`bpe-workbench diff`) and "Vocabulary size" (`gui/evaluate/plan_panel.py`, as `eval --plan`).
"""

from __future__ import annotations

import threading
from pathlib import Path

from PySide6.QtCore import QModelIndex, QSortFilterProxyModel, Qt, Signal
from PySide6.QtWidgets import (
    QAbstractItemView,
    QCheckBox,
    QComboBox,
    QFileDialog,
    QHBoxLayout,
    QLabel,
    QProgressBar,
    QPushButton,
    QSplitter,
    QTableView,
    QTabWidget,
    QVBoxLayout,
    QWidget,
)

from workbench.engine.errors import CancelledError
from workbench.evaluate import report
from workbench.evaluate.run import Options, evaluate
from workbench.evaluate.specs import Candidate, resolve_all
from workbench.evaluate.texts import Doc, iter_docs
from workbench.gui.evaluate.compare_panel import ComparePanel
from workbench.gui.evaluate.models import SORT_ROLE, HealthModel, MetricsModel
from workbench.gui.evaluate.picker import TextPicker, TokenizerPicker
from workbench.gui.evaluate.plan_panel import PlanPanel
from workbench.gui.evaluate.plots import CurvesPlot, GroupBars
from workbench.gui.evaluate.runner import EvalRunner, prepare_encoders
from workbench.store import RunStore


def _sortable(model, parent: QWidget) -> tuple[QTableView, QSortFilterProxyModel]:
    proxy = QSortFilterProxyModel(parent)
    proxy.setSourceModel(model)
    proxy.setSortRole(SORT_ROLE)
    view = QTableView(parent)
    view.setModel(proxy)
    view.setSortingEnabled(True)
    # keep the given order (a health list comes sorted by what matters) until a header is clicked
    view.horizontalHeader().setSortIndicator(-1, Qt.SortOrder.AscendingOrder)
    proxy.sort(-1)
    view.setSelectionBehavior(QAbstractItemView.SelectionBehavior.SelectRows)
    view.setSelectionMode(QAbstractItemView.SelectionMode.SingleSelection)
    view.verticalHeader().setVisible(False)
    view.verticalHeader().setDefaultSectionSize(view.fontMetrics().height() + 8)
    view.horizontalHeader().setStretchLastSection(True)
    return view, proxy


class EvaluateTab(QWidget):
    """`sigShowToken(candidate, token_id)`: the user clicked a token of a health list."""

    sigShowToken = Signal(object, int)

    def __init__(self, db_path: Path | None, store: RunStore, parent: QWidget | None = None):
        super().__init__(parent)
        self.db_path = db_path
        self.store = store
        self.result: dict | None = None
        self.candidates: dict[str, Candidate] = {}
        self.tokenizers = TokenizerPicker(self)
        self.text = TextPicker(self)
        self.health_box = QCheckBox("token health", self)
        self.curves_box = QCheckBox("compression curves", self)
        self.health_box.setChecked(True)
        self.curves_box.setChecked(True)
        self.run_button = QPushButton("Evaluate", self)
        self.cancel_button = QPushButton("Cancel", self, enabled=False)
        self.export_button = QPushButton("Export HTML…", self, enabled=False)
        self.progress = QProgressBar(self)
        self.progress.setTextVisible(False)
        self.progress.setMaximumHeight(10)
        self.status = QLabel("pick tokenizers and text, then Evaluate", self)
        self.status.setTextFormat(Qt.TextFormat.PlainText)  # paths and error messages
        self.status.setWordWrap(True)
        self.metrics = MetricsModel(self)
        self.metrics_view, self.metrics_proxy = _sortable(self.metrics, self)
        self.group_choice = QComboBox(self)
        self.text_counts = QLabel(self)
        self.curves = CurvesPlot(self)
        self.findings = QLabel(self)
        self.findings.setTextFormat(Qt.TextFormat.PlainText)  # they name runs
        self.findings.setWordWrap(True)
        self.findings.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        self.bars = GroupBars(self)
        self.health = HealthModel(self)
        self.health_view, self.health_proxy = _sortable(self.health, self)
        self.health_tokenizer = QComboBox(self)
        self.health_list = QComboBox(self)
        self.results = QTabWidget(self)
        self.runner = EvalRunner(self)
        # each with its own worker thread: they read the pickers above, not the metrics
        self.compare = ComparePanel(self.text, db_path, self)
        self.plan = PlanPanel(self.tokenizers, self.text, db_path, self)
        self._layout()
        self._connect()
        self.refresh_runs()

    # ----- construction --------------------------------------------------------------------

    def _layout(self) -> None:
        options = QHBoxLayout()
        options.addWidget(self.health_box)
        options.addWidget(self.curves_box)
        options.addStretch(1)
        buttons = QHBoxLayout()
        for button in (self.run_button, self.cancel_button, self.export_button):
            buttons.addWidget(button)
        left = QWidget(self)
        side = QVBoxLayout(left)
        side.setContentsMargins(0, 0, 0, 0)
        side.addWidget(self.tokenizers, 1)
        side.addWidget(self.text, 1)
        side.addLayout(options)
        side.addLayout(buttons)
        side.addWidget(self.progress)
        side.addWidget(self.status)

        table = QWidget(self)
        top = QVBoxLayout(table)
        top.setContentsMargins(0, 0, 0, 0)
        pick = QHBoxLayout()
        pick.addWidget(QLabel("figures for", self))
        pick.addWidget(self.group_choice)
        pick.addWidget(self.text_counts, 1)
        top.addLayout(pick)
        top.addWidget(self.metrics_view)

        curves = QWidget(self)
        curves_layout = QVBoxLayout(curves)
        curves_layout.setContentsMargins(0, 0, 0, 0)
        curves_layout.addWidget(self.curves, 1)
        curves_layout.addWidget(self.findings)
        health = QWidget(self)
        health_layout = QVBoxLayout(health)
        health_layout.setContentsMargins(0, 0, 0, 0)
        choose = QHBoxLayout()
        choose.addWidget(self.health_tokenizer, 1)
        choose.addWidget(self.health_list, 1)
        health_layout.addLayout(choose)
        health_layout.addWidget(self.health_view)
        self.results.addTab(curves, "Compression curves")
        self.results.addTab(self.bars, "By group")
        self.results.addTab(health, "Token health")
        self.results.addTab(self.compare, "Compare runs")
        self.results.addTab(self.plan, "Vocabulary size")

        right = QSplitter(Qt.Orientation.Vertical, self)
        right.addWidget(table)
        right.addWidget(self.results)
        right.setStretchFactor(0, 2)
        right.setStretchFactor(1, 3)
        right.setSizes([230, 600])
        split = QSplitter(Qt.Orientation.Horizontal, self)
        split.addWidget(left)
        split.addWidget(right)
        split.setStretchFactor(0, 0)
        split.setStretchFactor(1, 1)
        split.setSizes([380, 900])
        layout = QVBoxLayout(self)
        layout.addWidget(split)

    def _connect(self) -> None:
        self.run_button.clicked.connect(self.start)
        self.cancel_button.clicked.connect(self.cancel)
        self.export_button.clicked.connect(self._export_dialog)
        self.runner.sigProgress.connect(self._on_progress)
        self.runner.sigDone.connect(self._on_done)
        self.runner.sigFailed.connect(lambda m: self._finish(f"failed: {m}"))
        self.runner.sigCancelled.connect(lambda: self._finish("cancelled"))
        self.group_choice.currentIndexChanged.connect(self._show_group)
        self.health_tokenizer.currentIndexChanged.connect(self._fill_health_lists)
        self.health_list.currentIndexChanged.connect(self._show_health)
        self.health_view.clicked.connect(self._on_health_clicked)

    # ----- the window's API ----------------------------------------------------------------

    def showEvent(self, event) -> None:  # noqa: N802 (Qt override)
        self.refresh_runs()  # runs finished since the tab was last seen
        super().showEvent(event)

    def refresh_runs(self) -> None:
        runs = self.store.list_runs()
        self.tokenizers.set_runs(runs)
        self.compare.set_runs(runs)

    def forget_run(self, _run_id: int) -> None:
        """A run was deleted: the list of runs to evaluate no longer offers it."""
        self.refresh_runs()

    def start(self) -> bool:
        """Evaluate what is picked, in the background; False when nothing to do or busy."""
        specs = self.tokenizers.specs()
        paths = self.text.path_list()
        pasted = self.text.pasted.toPlainText()
        health = self.health_box.isChecked()
        if not specs:
            self.status.setText("pick at least one tokenizer")
            return False
        if not paths and not pasted and not health:
            self.status.setText("add held-out text (files, a folder or pasted text)")
            return False
        total = len(pasted) + _size_of(paths)
        options = Options(health=health, curves=self.curves_box.isChecked(), total_chars=total)
        group_by = self.text.grouping()
        db_path = self.db_path

        def job(progress, cancel: threading.Event) -> tuple[dict, dict[str, Candidate]]:
            candidates = _python_candidates(specs, total, health, progress)
            if candidates is None:
                candidates = _loaded(specs, db_path, progress, cancel)
            docs = iter_docs(paths, group_by) if paths else iter(())
            if pasted:
                docs = _chain(docs, [Doc(pasted, "pasted text")])
            result = evaluate(candidates, docs, options, progress, cancel)
            return result, {c.name: c for c in candidates}

        if not self.runner.start(job):
            return False
        self.run_button.setEnabled(False)
        self.cancel_button.setEnabled(True)
        self.progress.setRange(0, 0)
        self.status.setText("evaluating…")
        return True

    def cancel(self) -> None:
        self.runner.cancel()
        self.status.setText("cancelling…")

    def busy(self) -> bool:
        return self.runner.busy() or self.compare.busy() or self.plan.busy()

    def shutdown(self) -> None:
        for panel in (self.runner, self.compare, self.plan):
            panel.shutdown()

    def export_html(self, path: str | Path) -> Path:
        if self.result is None:
            raise ValueError("nothing evaluated yet")
        return report.write_html(self.result, path)

    def candidate(self, name: str) -> Candidate | None:
        return self.candidates.get(name)

    # ----- results ---------------------------------------------------------------------------

    def _on_progress(self, text: str, fraction: float) -> None:
        if fraction < 0:
            self.progress.setRange(0, 0)
        else:
            self.progress.setRange(0, 1000)
            self.progress.setValue(int(fraction * 1000))
        self.status.setText(text)

    def _on_done(self, payload: tuple[dict, dict[str, Candidate]]) -> None:
        self.result, self.candidates = payload
        self._finish("done")
        result = self.result
        self.group_choice.blockSignals(True)
        self.group_choice.clear()
        if result["group_names"]:
            self.group_choice.addItem("all text")
            if len(result["group_names"]) > 1:
                self.group_choice.addItems(result["group_names"])
        self.group_choice.blockSignals(False)
        self._show_group()
        self.curves.show(result.get("curves"))
        self.findings.setText("\n".join(report.curve_findings(result)))
        self.bars.show(result)
        self.health_tokenizer.blockSignals(True)
        self.health_tokenizer.clear()
        self.health_tokenizer.addItems(list(result.get("health") or {}))
        self.health_tokenizer.blockSignals(False)
        self._fill_health_lists()
        self.export_button.setEnabled(True)

    def _finish(self, text: str) -> None:
        self.run_button.setEnabled(True)
        self.cancel_button.setEnabled(False)
        self.progress.setRange(0, 1000)
        self.progress.setValue(1000 if text == "done" else 0)
        self.status.setText(text)

    def _show_group(self) -> None:
        index = self.group_choice.currentIndex()
        group = None if index <= 0 else index - 1
        self.metrics.show(self.result, group)
        rows = (self.result or {}).get("tokenizers") or []
        figures = (
            (rows[0]["total"] if group is None else rows[0]["groups"][group]) if rows else None
        )
        self.text_counts.setText(
            f"{figures['documents']:,} documents · {figures['bytes']:,} bytes · "
            f"{figures['chars']:,} characters · {figures['words']:,} words"
            if figures
            else ""
        )
        self.metrics_view.resizeColumnsToContents()

    def _fill_health_lists(self) -> None:
        lists = self._health_lists()
        current = self.health_list.currentData()
        self.health_list.blockSignals(True)
        self.health_list.clear()
        for kind in report.HEALTH_LISTS:
            if lists.get(kind) is not None:
                title = report.list_title(kind, lists)
                self.health_list.addItem(f"{title}: {len(lists[kind]):,}", kind)
        found = self.health_list.findData(current)
        if found < 0:  # first time: the first list with something in it
            kinds = [self.health_list.itemData(i) for i in range(self.health_list.count())]
            found = next((i for i, k in enumerate(kinds) if lists.get(k)), 0)
        self.health_list.setCurrentIndex(found)
        self.health_list.blockSignals(False)
        self._show_health()

    def _health_lists(self) -> dict:
        name = self.health_tokenizer.currentText()
        return ((self.result or {}).get("health") or {}).get(name) or {}

    def _show_health(self) -> None:
        kind = self.health_list.currentData()
        self.health.set_rows(self._health_lists().get(kind) or [])
        self.health_view.resizeColumnsToContents()

    def _on_health_clicked(self, index: QModelIndex) -> None:
        row = self.health_proxy.mapToSource(index).row()
        cand = self.candidates.get(self.health_tokenizer.currentText())
        if cand is not None and 0 <= row < self.health.rowCount():
            self.sigShowToken.emit(cand, self.health.token_at(row).id)

    def _export_dialog(self) -> None:
        path, _ = QFileDialog.getSaveFileName(self, "Export the report", "evaluation.html", "HTML (*.html)")  # fmt: skip
        if path:
            self.export_html(path)
            self.status.setText(f"wrote {path}")

    # ----- the window --------------------------------------------------------------------------

    def connect_window(self, window) -> None:
        """Show clicked tokens in `window`'s Tokens tab and merge list (a MainWindow)."""
        self.sigShowToken.connect(lambda cand, tid: show_token_in_window(window, cand, tid))


def show_token_in_window(window, cand: Candidate, tid: int) -> None:
    """The Tokens tab inspecting `cand` with token `tid` shown (its text split, its details),
    and, for a run, its merge selected in the merge list (unless a run is training)."""
    panel = window.tokens.panel
    tok = cand.tokenizer
    is_run = cand.run_id is not None
    panel.set_tokenizer(tok, cand.label, window.store if is_run else None, cand.run_id)
    raw = tok.decode_bytes([tid])
    panel.set_text(raw.decode("utf-8", "replace"))
    panel.details.show_token(tid)
    window.tabs.setCurrentWidget(panel)
    rank = tok.token_rank(tid) if tid in tok.vocab else -1
    if is_run and rank >= 0 and window.mode != "training":
        window.merge_list.set_run(window.store, cand.run_id, window.store.merge_count(cand.run_id))
        window.merge_list.show_rank(rank)


def _loaded(specs: list[str], db_path, progress, cancel: threading.Event) -> list[Candidate]:
    """The candidates loaded, with their encoders ready (each compile named)."""
    candidates: list[Candidate] = []
    for spec in specs:
        progress(f"loading {spec}", -1.0)
        candidates.extend(resolve_all([spec], db_path))
        if cancel.is_set():
            raise CancelledError("evaluation cancelled")
    prepare_encoders([c.tokenizer.pattern for c in candidates], progress, cancel)
    return candidates


def _python_candidates(
    specs: list[str], size: int, health: bool, progress
) -> list[Candidate] | None:
    """On a first use, references encode small text in Python at once while their encoders
    compile in the background (`session.startup` decides, as for `bpe-workbench eval`); None:
    load them as usual (and wait, named, for their encoders)."""
    from workbench.evaluate import references
    from workbench.evaluate.specs import python_candidates
    from workbench.session import startup

    if not startup.python_encoding_pays("eval", specs, size, only_ids=not health):
        return None
    if len(set(specs)) != len(specs) or not all(map(references.has_rank_file, specs)):
        return None

    def report(event: startup.StartupEvent) -> None:
        line = event.line()
        progress(line[:1].upper() + line[1:], -1.0)

    startup.plan_encoding("eval", specs, size, report)
    return python_candidates(specs)


def _size_of(paths: list[str]) -> int:
    from workbench.engine.corpus.listing import list_files

    try:
        return sum(f.stat().st_size for f in list_files(paths))
    except Exception:  # a bad path is reported by the job itself, with its name
        return 0


def _chain(first, second):
    yield from first
    yield from second
