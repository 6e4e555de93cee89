"""The export dialog: pick formats and a folder; write, read back, and say whether it round-trips.

The work (`roundtrip.export_and_check`) runs in a `JobLane` thread: loading a 50k vocabulary
back through a library takes seconds, and the window must not wait.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from pathlib import Path

from PySide6.QtWidgets import (
    QCheckBox,
    QDialog,
    QDialogButtonBox,
    QFileDialog,
    QHBoxLayout,
    QLineEdit,
    QPlainTextEdit,
    QProgressBar,
    QPushButton,
    QVBoxLayout,
    QWidget,
)

from workbench.engine.encode.tokenizer import Tokenizer
from workbench.engine.formats import FORMATS
from workbench.gui.tokens.jobs import JobLane
from workbench.gui.tokens.roundtrip import CheckResult, export_and_check

FORMAT_HELP = {
    "hf": "tokenizer.json for Hugging Face tokenizers / transformers",
    "gpt2": "vocab.json + merges.txt, the GPT-2 files",
    "tiktoken": "a .tiktoken file of base64 tokens and ranks, for tiktoken",
    "minbpe": "a minbpe .model file (Karpathy's minbpe)",
}

TokenizerSource = Tokenizer | Callable[[], Tokenizer]


class ExportDialog(QDialog):
    """`results` holds the last run's `CheckResult`s; `sigFinished` is the lane's result.

    `tok` may be a function that builds the tokenizer (a stored run's, read from the store): it
    is then called in the export's own thread, so opening the dialog never waits for it."""

    def __init__(
        self,
        tok: TokenizerSource,
        sample: str = "",
        folder: str = "",
        parent: QWidget | None = None,
        title: str = "",
    ) -> None:
        super().__init__(parent)
        self.setWindowTitle(f"Export {title}" if title else "Export tokenizer")
        self._tok = tok
        self._sample = sample
        self.results: list[CheckResult] = []
        self.boxes = {fmt: QCheckBox(fmt, self) for fmt in FORMATS}
        for fmt, box in self.boxes.items():
            box.setToolTip(FORMAT_HELP.get(fmt, fmt))
            box.setWhatsThis(FORMAT_HELP.get(fmt, fmt))
        for fmt in ("hf", "gpt2"):
            self.boxes[fmt].setChecked(True)
        self.folder = QLineEdit(folder, self)
        self.folder.setPlaceholderText("output folder")
        browse = QPushButton("Browse…", self)
        browse.clicked.connect(self._browse)
        self.export_button = QPushButton("Export and check", self)
        self.export_button.clicked.connect(self.start)
        self.export_button.setToolTip(
            "Write each chosen format into its own subfolder, read it back (and with the owning"
            " library when installed) and check the ids and the round trip"
        )
        self.log = QPlainTextEdit(self, readOnly=True)
        self.busy_bar = QProgressBar(self)  # moves while the export works or waits
        self.busy_bar.setRange(0, 0)
        self.busy_bar.setTextVisible(False)
        self.busy_bar.hide()
        self.close_buttons = QDialogButtonBox(QDialogButtonBox.StandardButton.Close, self)
        self.close_buttons.rejected.connect(self.reject)
        row = QHBoxLayout()
        for box in self.boxes.values():
            row.addWidget(box)
        folder_row = QHBoxLayout()
        folder_row.addWidget(self.folder, 1)
        folder_row.addWidget(browse)
        layout = QVBoxLayout(self)
        layout.addLayout(row)
        layout.addLayout(folder_row)
        layout.addWidget(self.export_button)
        layout.addWidget(self.busy_bar)
        layout.addWidget(self.log, 1)
        layout.addWidget(self.close_buttons)
        self._lane = JobLane(self)
        self._lane.sigResult.connect(self._on_done)
        self._lane.sigError.connect(lambda m: self._finish([f"export failed: {m}"]))
        self._lane.sigWaiting.connect(self._on_waiting)
        self.sigFinished = self._lane.sigResult
        self.resize(640, 360)

    def selected_formats(self) -> list[str]:
        return [fmt for fmt, box in self.boxes.items() if box.isChecked()]

    def start(self) -> None:
        folder = self.folder.text().strip()
        fmts = self.selected_formats()
        if not folder or not fmts:
            self.log.setPlainText("choose at least one format and a folder")
            return
        self.export_button.setEnabled(False)
        self.busy_bar.show()
        self.log.setPlainText("writing and checking…")
        source, sample, out = self._tok, self._sample, Path(folder)
        # A stored run's tokenizer is built in the job's thread, once: its pattern names the
        # encoder the check waits for (compiled on a first use), said in the log meanwhile.
        built = functools.cache(lambda: source if isinstance(source, Tokenizer) else source())

        def job() -> list[CheckResult]:
            return [export_and_check(built(), f, out, sample) for f in fmts]

        self._lane.submit(job, patterns=lambda: (built().pattern,))

    def busy(self) -> bool:
        return self._lane.busy()

    def shutdown(self) -> None:
        self._lane.shutdown()

    def done(self, result: int) -> None:  # closing the dialog waits for a running export
        self.shutdown()
        super().done(result)

    def _on_done(self, results: list[CheckResult]) -> None:
        self.results = results
        self._finish([line for r in results for line in r.lines])

    def _on_waiting(self, line: str) -> None:
        self.log.setPlainText(f"{line}; then writing and checking")

    def _finish(self, lines: list[str]) -> None:
        self.log.setPlainText("\n".join(lines))
        self.busy_bar.hide()
        self.export_button.setEnabled(True)

    def _browse(self) -> None:
        folder = QFileDialog.getExistingDirectory(self, "Export to folder", self.folder.text())
        if folder:
            self.folder.setText(folder)
