"""The Evaluate tab's "Vocabulary size": the planner (`workbench.evaluate.plan`) for the runs
ticked on the left (a sweep too) on the held-out text there, off the UI thread. A serving model
(width, layers, context, tied embeddings, or a parameter count) prices each prefix k; the plot
shows FLOPs per byte of text against the vocabulary size, the cheapest k of each run marked."""

from __future__ import annotations

import math
import threading

import pyqtgraph as pg
from PySide6.QtCore import Qt
from PySide6.QtWidgets import (
    QCheckBox,
    QFormLayout,
    QHBoxLayout,
    QLabel,
    QLineEdit,
    QProgressBar,
    QPushButton,
    QSpinBox,
    QVBoxLayout,
    QWidget,
)

from workbench.display import escape_controls
from workbench.engine.errors import CancelledError, ConfigError
from workbench.evaluate.plan import FORMULA, ServingModel
from workbench.evaluate.run import Options, evaluate
from workbench.evaluate.specs import resolve_all
from workbench.evaluate.texts import Doc, iter_docs
from workbench.gui.evaluate.picker import TextPicker, TokenizerPicker
from workbench.gui.evaluate.plots import PALETTE, log_ticks
from workbench.gui.evaluate.runner import (
    EvalRunner,
    prepare_encoders,
    show_finished,
    show_running,
)


class PlanPlot(pg.PlotWidget):
    """FLOPs per byte of text against the vocabulary size at k (log axis); a star at each
    tokenizer's cheapest k; references as single points."""

    def __init__(self, parent=None) -> None:
        super().__init__(parent, background="w")
        self.setLogMode(x=True, y=False)
        self.setLabel("bottom", "vocabulary size at k")
        self.setLabel("left", "per byte of text", units="FLOPs")
        self.getAxis("left").enableAutoSIPrefix(True)
        self.showGrid(x=True, y=True, alpha=0.25)
        self.legend = self.addLegend(offset=(-10, 10), labelTextColor="#222222")
        self.lines: list[pg.PlotDataItem] = []
        self.stars: list[pg.ScatterPlotItem] = []

    def show(self, plan: dict | None) -> None:
        self.clear()
        self.legend.clear()
        self.lines, self.stars = [], []
        if not plan:
            return
        sizes: list[int] = []
        for i, t in enumerate(plan["tokenizers"]):
            color = PALETTE[i % len(PALETTE)]
            points = [p for p in t["points"] if p["flops_per_byte"] is not None]
            xs = [p["vocab_size"] for p in points]
            ys = [p["flops_per_byte"] for p in points]
            sizes += xs
            if len(points) > 1:
                line = self.plot(xs, ys, pen=pg.mkPen(color, width=2), name=escape_controls(t["label"]))  # fmt: skip
                self.lines.append(line)
            best = t["best"]
            if best["flops_per_byte"] is None:
                continue
            star = pg.ScatterPlotItem(
                [math.log10(best["vocab_size"])], [best["flops_per_byte"]], symbol="star",
                size=16, brush=color, pen=pg.mkPen("#222222"),
            )  # fmt: skip
            self.addItem(star)
            self.stars.append(star)
        if sizes:
            self.getAxis("bottom").setTicks([log_ticks(min(sizes), max(sizes)), []])


class PlanPanel(QWidget):
    """The model's inputs, Plan, the plot and what it found."""

    def __init__(
        self,
        tokenizers: TokenizerPicker,
        text: TextPicker,
        db_path,
        parent: QWidget | None = None,
    ) -> None:
        super().__init__(parent)
        self.tokenizers, self.text, self.db_path = tokenizers, text, db_path
        self.result: dict | None = None
        self.width_box = _spin(self, 1, 1 << 16, 768, "model width d (d_model)")
        self.layers_box = _spin(self, 1, 4096, 12, "layers L")
        self.context_box = _spin(self, 1, 1 << 24, 1024, "context length in tokens")
        self.tied_box = QCheckBox("tied input and output embeddings", self)
        self.params_box = QLineEdit(self)
        self.params_box.setPlaceholderText("N, optional (else 12·L·d²)")
        self.params_box.setToolTip(
            "non-embedding parameters N (empty: 12·L·d²); the layers still set the attention term"
        )
        self.plan_button = QPushButton("Plan", self)
        self.cancel_button = QPushButton("Cancel", self, enabled=False)
        self.progress = QProgressBar(self)
        self.progress.setTextVisible(False)
        self.progress.setMaximumHeight(10)
        self.progress.setRange(0, 1000)
        self.status = QLabel("tick runs (or a sweep) and add held-out text on the left, then Plan", self)  # fmt: skip
        self.status.setTextFormat(Qt.TextFormat.PlainText)
        self.status.setWordWrap(True)
        self.formula = QLabel(FORMULA, self)
        self.formula.setTextFormat(Qt.TextFormat.PlainText)
        self.formula.setWordWrap(True)
        self.findings = QLabel(self)
        self.findings.setTextFormat(Qt.TextFormat.PlainText)  # it names runs
        self.findings.setWordWrap(True)
        self.findings.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        self.plot = PlanPlot(self)
        self.runner = EvalRunner(self)
        self._layout()
        self.plan_button.clicked.connect(self.start)
        self.cancel_button.clicked.connect(self.runner.cancel)
        self.runner.sigProgress.connect(lambda text, _f: self.status.setText(text))
        self.runner.sigDone.connect(self._on_done)
        self.runner.sigFailed.connect(lambda m: self._finish(f"failed: {m}"))
        self.runner.sigCancelled.connect(lambda: self._finish("cancelled"))

    def _layout(self) -> None:
        form = QFormLayout()
        row = QHBoxLayout()
        for label, box in (("d", self.width_box), ("L", self.layers_box), ("ctx", self.context_box)):  # fmt: skip
            row.addWidget(QLabel(label, self))
            row.addWidget(box)
        row.addWidget(self.tied_box)
        row.addStretch(1)
        form.addRow("model", row)
        params = QHBoxLayout()
        params.addWidget(self.params_box, 1)
        params.addWidget(self.plan_button)
        params.addWidget(self.cancel_button)
        form.addRow("parameters", params)
        layout = QVBoxLayout(self)
        layout.setContentsMargins(4, 4, 4, 4)
        layout.addLayout(form)
        layout.addWidget(self.progress)
        layout.addWidget(self.status)
        layout.addWidget(self.plot, 1)
        layout.addWidget(self.findings)
        layout.addWidget(self.formula)

    def model(self) -> ServingModel:
        """The serving model the inputs describe (ConfigError for a bad parameter count)."""
        raw = self.params_box.text().strip().replace(",", "").replace("_", "")
        params = None
        if raw:
            if not raw.isascii() or not raw.isdigit():
                raise ConfigError(f"parameters: {raw!r} is not a whole number")
            params = int(raw)
        return ServingModel(
            self.width_box.value(),
            self.layers_box.value(),
            self.context_box.value(),
            self.tied_box.isChecked(),
            params,
        )

    def busy(self) -> bool:
        return self.runner.busy()

    def shutdown(self) -> None:
        self.runner.shutdown()

    def start(self) -> bool:
        specs = self.tokenizers.specs()
        paths, pasted = self.text.path_list(), self.text.pasted.toPlainText()
        if not specs:
            self.status.setText("tick at least one run (or a sweep) on the left")
            return False
        if not paths and not pasted:
            self.status.setText("add held-out text on the left (files, a folder or pasted text)")
            return False
        try:
            model = self.model()
        except ConfigError as exc:
            self.status.setText(str(exc))
            return False
        db_path = self.db_path
        options = Options(plan=model)

        def job(progress, cancel: threading.Event) -> dict:
            candidates = []
            for spec in specs:
                progress(f"loading {spec}", -1.0)
                candidates.extend(resolve_all([spec], db_path))
                if cancel.is_set():
                    raise CancelledError("planning cancelled")
            prepare_encoders([c.tokenizer.pattern for c in candidates], progress, cancel)
            docs = iter_docs(paths) if paths else iter(())
            if pasted:
                docs = _then(docs, Doc(pasted, "pasted text"))
            return evaluate(candidates, docs, options, progress, cancel)["plan"]

        if not self.runner.start(job):
            return False
        show_running(self.plan_button, self.cancel_button, self.progress, self.status, "planning…")
        return True

    def _finish(self, text: str) -> None:
        show_finished(self.plan_button, self.cancel_button, self.progress, self.status, text)

    def _on_done(self, plan: dict) -> None:
        self.result = plan
        self._finish("done")
        self.plot.show(plan)
        self.findings.setText(findings_text(plan))


def findings_text(plan: dict) -> str:
    m = plan["model"]
    lines = [
        f"d={m['width']:,}, L={m['layers']:,}, ctx={m['context']:,}, N={m['n']:,}, "
        f"{'tied' if m['tied'] else 'untied'} embeddings; {plan['bytes']:,} bytes of text"
    ]
    for t in plan["tokenizers"]:
        best = t["best"]
        if best["flops_per_byte"] is None:
            continue
        more = " (its last merge: more may be cheaper)" if t["best_is_last"] and t["kind"] != "reference" else ""  # fmt: skip
        lines.append(
            f"{escape_controls(t['label'])}: cheapest at k = {best['k']:,} (vocabulary "
            f"{best['vocab_size']:,}): {best['flops_per_byte']:,.0f} FLOPs/byte, "
            f"{best['bytes_per_token']:.3f} bytes/token, {best['parameters']:,} parameters{more}"
        )
    if len(plan["tokenizers"]) > 1 and plan["cheapest"] is not None:
        best = next(t for t in plan["tokenizers"] if t["name"] == plan["cheapest"])
        lines.append(
            f"Cheapest of all: {escape_controls(best['label'])} at k = {best['best']['k']:,}"
        )
    return "\n".join(lines)


def _spin(parent: QWidget, low: int, high: int, value: int, tip: str) -> QSpinBox:
    box = QSpinBox(parent)
    box.setRange(low, high)
    box.setValue(value)
    box.setGroupSeparatorShown(True)
    box.setToolTip(tip)
    return box


def _then(docs, last: Doc):
    yield from docs
    yield last
