"""The Evaluate tab's "Compare runs": two tokenizers (runs or references) at any k, compared by
`workbench.evaluate.diff` off the UI thread: the first divergent rank, the overlap@k curve, the
tokens only in A and only in B, and, on the tab's held-out text, how many tokens each needs and
which tokens and merges explain the difference."""

from __future__ import annotations

import threading

import pyqtgraph as pg
from PySide6.QtCore import Qt
from PySide6.QtWidgets import (
    QAbstractItemView,
    QComboBox,
    QHBoxLayout,
    QHeaderView,
    QLabel,
    QProgressBar,
    QPushButton,
    QSpinBox,
    QSplitter,
    QTableWidget,
    QTableWidgetItem,
    QTabWidget,
    QVBoxLayout,
    QWidget,
)

from workbench.display import escape_controls
from workbench.engine.errors import CancelledError
from workbench.evaluate import references
from workbench.evaluate.diff import at_k, diff
from workbench.evaluate.specs import resolve
from workbench.gui.evaluate.picker import TextPicker
from workbench.gui.evaluate.plots import PALETTE, log_ticks
from workbench.gui.evaluate.runner import (
    EvalRunner,
    prepare_encoders,
    show_finished,
    show_running,
)
from workbench.gui.tokens.reference_menu import missing_note
from workbench.store import RunInfo

TEXT_CAP = 8 << 20  # characters of held-out text the attribution reads (it walks each token)


def shown(text: object) -> str:
    """A token or name as a table cell shows it: control and bidi characters escaped."""
    return escape_controls(str(text))


class OverlapPlot(pg.PlotWidget):
    """Overlap@k: the share of A's first k merges that are among B's first k, k on a log axis."""

    def __init__(self, parent=None) -> None:
        super().__init__(parent, background="w")
        self.setLogMode(x=True, y=False)
        self.setLabel("bottom", "k (first k merges of each)")
        self.setLabel("left", "overlap@k")
        self.showGrid(x=True, y=True, alpha=0.25)
        self.setYRange(0, 1.05)
        self.line: pg.PlotDataItem | None = None
        self.divergence: pg.InfiniteLine | None = None

    def show(self, pair: dict | None) -> None:
        self.clear()
        self.line = self.divergence = None
        if not pair or not pair["overlap"]["k"]:
            return
        ks, values = pair["overlap"]["k"], pair["overlap"]["fraction"]
        self.line = self.plot(ks, values, pen=pg.mkPen(PALETTE[0], width=2))
        rank = pair["first_divergence"]
        if rank is not None:  # merges agree on ranks 0..rank-1: k = rank + 1 is the first to differ
            self.divergence = pg.InfiniteLine(
                pos=float(_log10(rank + 1)),
                angle=90,
                pen=pg.mkPen("#888888", style=Qt.PenStyle.DashLine),
                label=f"first divergence: rank {rank:,}",
                labelOpts={"position": 0.15, "color": "#333333", "anchors": [(0, 0), (0, 0)]},
            )
            self.addItem(self.divergence)
        self.setYRange(0, 1.05)
        self.getAxis("bottom").setTicks([log_ticks(1, ks[-1]), []])


def _log10(value: float) -> float:
    import math

    return math.log10(max(1.0, value))


def _table(parent: QWidget, headers: list[str]) -> QTableWidget:
    table = QTableWidget(0, len(headers), parent)
    table.setHorizontalHeaderLabels(headers)
    table.verticalHeader().setVisible(False)
    table.setEditTriggers(QAbstractItemView.EditTrigger.NoEditTriggers)
    table.setSelectionBehavior(QAbstractItemView.SelectionBehavior.SelectRows)
    table.horizontalHeader().setSectionResizeMode(QHeaderView.ResizeMode.ResizeToContents)
    table.horizontalHeader().setStretchLastSection(True)
    return table


def _fill(table: QTableWidget, rows: list[list[object]]) -> None:
    table.setRowCount(len(rows))
    for r, cells in enumerate(rows):
        for c, value in enumerate(cells):
            text = f"{value:,.1f}" if isinstance(value, float) else (
                f"{value:,}" if isinstance(value, int) else shown(value)
            )  # fmt: skip
            item = QTableWidgetItem(text)  # plain text: a token is never read as markup
            if isinstance(value, int | float):
                item.setTextAlignment(Qt.AlignmentFlag.AlignRight | Qt.AlignmentFlag.AlignVCenter)
            table.setItem(r, c, item)


class ComparePanel(QWidget):
    """Pick A and B (a run or a reference) and k; Compare; read the results."""

    ROWS_SHOWN = 500  # per list; the JSON of `bpe-workbench diff` has them all

    def __init__(self, text: TextPicker, db_path, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.text = text
        self.db_path = db_path
        self.result: dict | None = None
        self.a = QComboBox(self)
        self.b = QComboBox(self)
        self.k = QSpinBox(self)
        self.k.setRange(0, 10_000_000)
        self.k.setSpecialValueText("whole")  # 0: each as it is
        self.k.setGroupSeparatorShown(True)
        self.k.setToolTip("compare the first k merges of each (whole: each as it is)")
        self.compare_button = QPushButton("Compare", self)
        self.cancel_button = QPushButton("Cancel", self, enabled=False)
        self.progress = QProgressBar(self)
        self.progress.setTextVisible(False)
        self.progress.setMaximumHeight(10)
        self.progress.setRange(0, 1000)
        self.status = QLabel("pick two runs, then Compare (held-out text: on the left)", self)
        self.status.setTextFormat(Qt.TextFormat.PlainText)
        self.status.setWordWrap(True)
        self.summary = QLabel(self)
        self.summary.setTextFormat(Qt.TextFormat.PlainText)  # it names runs and tokens
        self.summary.setWordWrap(True)
        self.summary.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        self.plot = OverlapPlot(self)
        self.only_a = _table(self, ["id", "rank", "token"])
        self.only_b = _table(self, ["id", "rank", "token"])
        self.credits = _table(self, ["saves", "side", "token", "rank", "made by merge"])
        self.cuts = _table(self, ["times", "A cuts", "B cuts", "tokens A saves"])
        self.lists = QTabWidget(self)
        self.runner = EvalRunner(self)
        self._layout()
        self.compare_button.clicked.connect(self.start)
        self.cancel_button.clicked.connect(self.runner.cancel)
        self.runner.sigProgress.connect(lambda text, _f: self.status.setText(text))
        self.runner.sigDone.connect(self._on_done)
        self.runner.sigFailed.connect(lambda m: self._finish(f"failed: {m}"))
        self.runner.sigCancelled.connect(lambda: self._finish("cancelled"))

    def _layout(self) -> None:
        pick = QHBoxLayout()
        for label, widget in (("A", self.a), ("B", self.b), ("k", self.k)):
            pick.addWidget(QLabel(label, self))
            pick.addWidget(widget, 2 if widget is not self.k else 0)
        pick.addWidget(self.compare_button)
        pick.addWidget(self.cancel_button)
        self.lists.addTab(self.credits, "Savings by token")
        self.lists.addTab(self.cuts, "Differing cuts")
        self.lists.addTab(self.only_a, "Only in A")
        self.lists.addTab(self.only_b, "Only in B")
        left = QWidget(self)
        left_layout = QVBoxLayout(left)
        left_layout.setContentsMargins(0, 0, 0, 0)
        left_layout.addWidget(self.plot, 1)
        left_layout.addWidget(self.summary)
        split = QSplitter(Qt.Orientation.Horizontal, self)
        split.addWidget(left)
        split.addWidget(self.lists)
        split.setSizes([450, 550])
        layout = QVBoxLayout(self)
        layout.setContentsMargins(4, 4, 4, 4)
        layout.addLayout(pick)
        layout.addWidget(self.progress)
        layout.addWidget(self.status)
        layout.addWidget(split, 1)

    def set_runs(self, runs: list[RunInfo]) -> None:
        """Offer `runs` (with merges) and the references on this machine; keep the choices."""
        for combo in (self.a, self.b):
            current = combo.currentData()
            combo.blockSignals(True)
            combo.clear()
            for run in runs:
                if run.merge_count > 0:
                    combo.addItem(f"#{run.id} {shown(run.name)} ({run.merge_count:,})", f"run:{run.id}")  # fmt: skip
            for name in references.REFERENCES:
                if not missing_note(name):
                    combo.addItem(name, name)
            found = combo.findData(current)
            combo.setCurrentIndex(found if found >= 0 else -1)
            combo.blockSignals(False)
        if self.a.currentIndex() < 0 and self.a.count():
            self.a.setCurrentIndex(0)
        if self.b.currentIndex() < 0 and self.b.count():
            self.b.setCurrentIndex(min(1, self.b.count() - 1))

    def choose(self, a: str, b: str, k: int = 0) -> None:
        """Pick A, B (specs as listed: `run:1`, `gpt2`) and k: what a user does, for tests."""
        self.a.setCurrentIndex(self.a.findData(a))
        self.b.setCurrentIndex(self.b.findData(b))
        self.k.setValue(k)

    def busy(self) -> bool:
        return self.runner.busy()

    def shutdown(self) -> None:
        self.runner.shutdown()

    def start(self) -> bool:
        spec_a, spec_b = self.a.currentData(), self.b.currentData()
        if spec_a is None or spec_b is None:
            self.status.setText(
                "pick two tokenizers (a run trained to some merges, or a reference)"
            )
            return False
        if spec_a == spec_b:
            self.status.setText("pick two different tokenizers")
            return False
        k = self.k.value() or None
        paths, pasted, db_path = self.text.path_list(), self.text.pasted.toPlainText(), self.db_path

        def job(progress, cancel: threading.Event) -> dict:
            progress("loading the two tokenizers", -1.0)
            cands = [at_k(resolve(spec, db_path, option="compare"), k) for spec in (spec_a, spec_b)]
            prepare_encoders([c.tokenizer.pattern for c in cands], progress, cancel)
            texts = held_out(paths, pasted, cancel)
            progress("comparing" + (" and encoding the held-out text with both" if texts else ""), -1.0)  # fmt: skip
            return diff(cands, texts or None, cancelled=cancel.is_set)

        if not self.runner.start(job):
            return False
        show_running(
            self.compare_button, self.cancel_button, self.progress, self.status, "comparing…"
        )
        return True

    def _finish(self, text: str) -> None:
        show_finished(self.compare_button, self.cancel_button, self.progress, self.status, text)

    def _on_done(self, result: dict) -> None:
        self.result = result
        self._finish("done")
        (pair,) = result["pairs"]
        self.plot.show(pair)
        self.summary.setText(summary_text(pair))
        n = self.ROWS_SHOWN
        _fill(self.only_a, [[r["id"], r["rank"], r["text"]] for r in pair["only_in_a"][:n]])
        _fill(self.only_b, [[r["id"], r["rank"], r["text"]] for r in pair["only_in_b"][:n]])
        self.lists.setTabText(2, f"Only in A ({len(pair['only_in_a']):,})")
        self.lists.setTabText(3, f"Only in B ({len(pair['only_in_b']):,})")
        t = pair["text"] or {}
        credits = [
            [r["saved"], side, r["text"], r["rank"] if r["merge"] else "—", r["merge"] or "special"]
            for side in ("A", "B")
            for r in t.get(f"credits_{side.lower()}", [])
        ]
        for side in ("A", "B"):
            order = t.get(f"merge_order_{side.lower()}", 0)
            if order:
                credits.append([float(order), side, "(merge order)", "—", "the other has every token"])  # fmt: skip
        credits.sort(key=lambda row: -row[0])
        _fill(self.credits, credits[:n])
        _fill(self.cuts, [[c["count"], "|".join(c["a"]), "|".join(c["b"]), c["saved_by_a"]]
                          for c in t.get("cuts", [])[:n]])  # fmt: skip


def summary_text(pair: dict) -> str:
    """What the comparison found, in a few lines (names and tokens escaped by the caller's
    plain-text label; control characters escaped here)."""
    a, b = pair["a"], pair["b"]
    lines = [
        f"A: {shown(a['label'])}: {a['merges']:,} merges, vocabulary {a['vocab_size']:,}",
        f"B: {shown(b['label'])}: {b['merges']:,} merges, vocabulary {b['vocab_size']:,}",
    ]
    rank, n = pair["first_divergence"], pair["compared_merges"]
    if rank is None:
        lines.append(f"The first {n:,} merges are the same.")
    else:
        m = pair["divergent_merges"]
        lines.append(f"First divergent rank: {rank:,} (A: {shown(m['a'])}, B: {shown(m['b'])})")
    if pair["overlap_at_end"] is not None:
        lines.append(f"Overlap at k = {n:,}: {pair['overlap_at_end']:.1%}")
    if not pair["same_pattern"]:
        lines.append("Their pre-tokenizer patterns differ.")
    t = pair["text"]
    if t:
        diff = t["difference"]
        verdict = (
            "the same count"
            if not diff
            else f"{'A' if diff > 0 else 'B'} needs {abs(diff):,} fewer tokens"
        )
        lines.append(
            f"Held-out text ({t['bytes']:,} bytes): A {t['tokens_a']:,} tokens, "
            f"B {t['tokens_b']:,}: {verdict}. In {t['segments_differing']:,} stretches cut "
            f"differently A saves {t['saved_by_a']:,} tokens and B {t['saved_by_b']:,}."
        )
    else:
        lines.append("Add held-out text on the left to see which tokens explain the difference.")
    return "\n".join(lines)


def held_out(paths: list[str], pasted: str, cancel: threading.Event) -> list[str]:
    """The tab's held-out text as documents, up to TEXT_CAP characters (read in the worker)."""
    from workbench.evaluate.texts import iter_docs

    texts, size = [], 0
    if pasted:
        texts.append(pasted)
        size += len(pasted)
    for doc in iter_docs(paths) if paths else ():
        if size >= TEXT_CAP:
            break
        if cancel.is_set():
            raise CancelledError("comparison cancelled")
        texts.append(doc.text)
        size += len(doc.text)
    return texts
