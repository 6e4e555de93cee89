"""What to evaluate: runs (each at any k), tokenizer files and references; held-out text as
files/folders or pasted; the grouping. `specs()` and `text_source()` turn the choices into what
the Qt-free evaluation takes."""

from __future__ import annotations

from pathlib import Path

from PySide6.QtCore import Qt
from PySide6.QtWidgets import (
    QAbstractItemView,
    QCheckBox,
    QComboBox,
    QFileDialog,
    QGroupBox,
    QHBoxLayout,
    QHeaderView,
    QLineEdit,
    QListWidget,
    QPlainTextEdit,
    QPushButton,
    QSpinBox,
    QTableWidget,
    QTableWidgetItem,
    QVBoxLayout,
    QWidget,
)

from workbench.evaluate import references
from workbench.evaluate.specs import sweep_of
from workbench.gui.tokens.reference_menu import DESCRIPTIONS, missing_note
from workbench.store import RunInfo

RUN_ID_ROLE = Qt.ItemDataRole.UserRole + 1


class TokenizerPicker(QGroupBox):
    """Runs (tick, and choose k), tokenizer files, and the references that are on this machine."""

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__("Tokenizers", parent)
        self.runs = QTableWidget(0, 3, self)
        self.runs.setHorizontalHeaderLabels(["run", "merges", "k (first k merges)"])
        self.runs.verticalHeader().setVisible(False)
        self.runs.setSelectionMode(QAbstractItemView.SelectionMode.NoSelection)
        header = self.runs.horizontalHeader()
        header.setSectionResizeMode(0, QHeaderView.ResizeMode.Stretch)
        header.setSectionResizeMode(1, QHeaderView.ResizeMode.ResizeToContents)
        header.setSectionResizeMode(2, QHeaderView.ResizeMode.ResizeToContents)
        self._sweep_runs: dict[str, list[int]] = {}  # sweep id -> its run ids, in order
        self.sweeps = QComboBox(self)
        self.sweeps.setToolTip("tick every run of a sweep (train --vocab-size A,B,C)")
        self.sweeps.activated.connect(self._sweep_chosen)
        self.references = {name: QCheckBox(name, self) for name in references.REFERENCES}
        for name, box in self.references.items():
            note = missing_note(name)
            box.setEnabled(not note)
            box.setToolTip(note or f"{DESCRIPTIONS.get(name, name)}, found offline")
        self.files = QListWidget(self)
        self.files.setMaximumHeight(60)
        self.add_file_button = QPushButton("Add tokenizer file…", self)
        self.add_file_button.clicked.connect(self._add_file_dialog)
        refs = QHBoxLayout()
        for box in self.references.values():
            refs.addWidget(box)
        refs.addStretch(1)
        layout = QVBoxLayout(self)
        layout.addWidget(self.runs, 1)
        layout.addWidget(self.sweeps)
        layout.addLayout(refs)
        layout.addWidget(self.files)
        layout.addWidget(self.add_file_button)

    def set_runs(self, runs: list[RunInfo]) -> None:
        """List `runs` (newest first), keeping the ticks and k of runs already listed."""
        kept = {run_id: (ticked, k) for run_id, ticked, k in self._rows()}
        self._sweep_runs = {}
        for run in sorted(runs, key=lambda r: r.id):
            sweep = sweep_of(run)
            if sweep is not None and run.merge_count > 0:
                self._sweep_runs.setdefault(sweep, []).append(run.id)
        self.sweeps.clear()
        self.sweeps.addItem("tick a sweep…" if self._sweep_runs else "no sweeps stored", None)
        for sweep, ids in self._sweep_runs.items():
            self.sweeps.addItem(f"sweep {sweep}: {len(ids)} runs", sweep)
        self.runs.setRowCount(0)
        for run in runs:
            if run.merge_count <= 0:
                continue
            row = self.runs.rowCount()
            self.runs.insertRow(row)
            item = QTableWidgetItem(f"#{run.id} {run.name}")
            item.setData(RUN_ID_ROLE, run.id)
            item.setFlags(Qt.ItemFlag.ItemIsUserCheckable | Qt.ItemFlag.ItemIsEnabled)
            ticked, k = kept.get(run.id, (False, run.merge_count))
            item.setCheckState(Qt.CheckState.Checked if ticked else Qt.CheckState.Unchecked)
            self.runs.setItem(row, 0, item)
            merges = QTableWidgetItem(f"{run.merge_count:,}")
            merges.setFlags(Qt.ItemFlag.ItemIsEnabled)
            self.runs.setItem(row, 1, merges)
            spin = QSpinBox(self.runs)
            spin.setRange(0, run.merge_count)
            spin.setValue(min(k, run.merge_count))
            spin.setGroupSeparatorShown(True)
            self.runs.setCellWidget(row, 2, spin)

    def pick_sweep(self, sweep_id: str) -> None:
        """Tick every run of sweep `sweep_id`, each at its full size."""
        for run_id in self._sweep_runs.get(sweep_id, []):
            self.pick_run(run_id)

    def _sweep_chosen(self, index: int) -> None:
        sweep = self.sweeps.itemData(index)
        if sweep is not None:
            self.pick_sweep(sweep)
        self.sweeps.setCurrentIndex(0)

    def _rows(self) -> list[tuple[int, bool, int]]:
        rows = []
        for row in range(self.runs.rowCount()):
            item = self.runs.item(row, 0)
            spin = self.runs.cellWidget(row, 2)
            ticked = item.checkState() == Qt.CheckState.Checked
            rows.append((int(item.data(RUN_ID_ROLE)), ticked, spin.value()))
        return rows

    def pick_run(self, run_id: int, k: int | None = None) -> None:
        """Tick run `run_id` (and set its k): what a user does by hand, for tests and sweeps."""
        for row in range(self.runs.rowCount()):
            item = self.runs.item(row, 0)
            if int(item.data(RUN_ID_ROLE)) == run_id:
                item.setCheckState(Qt.CheckState.Checked)
                spin = self.runs.cellWidget(row, 2)
                if k is not None:
                    spin.setValue(k)

    def add_file(self, path: str | Path) -> None:
        if str(path) not in [self.files.item(i).text() for i in range(self.files.count())]:
            self.files.addItem(str(path))  # twice would evaluate it twice

    def _add_file_dialog(self) -> None:
        path, _ = QFileDialog.getOpenFileName(
            self, "Add a tokenizer file", "", "Tokenizers (*.json *.txt *.tiktoken *.model)"
        )
        if path:
            self.add_file(path)

    def restore(self, specs: list[str]) -> None:
        """Tick again what `specs()` gave before a restart: runs still stored (at their k),
        files still there, references on this machine; the rest is dropped quietly."""
        for spec in specs:
            if spec.startswith("run:"):
                run_part, _, k = spec[4:].partition("@")
                if run_part.isdigit() and (not k or k.isdigit()):
                    self.pick_run(int(run_part), int(k) if k else None)
            elif spec in self.references:
                box = self.references[spec]
                box.setChecked(box.isEnabled())
            elif Path(spec).is_file():
                self.add_file(spec)

    def specs(self) -> list[str]:
        """`run:ID` / `run:ID@k`, file paths and reference names, in the order shown."""
        out = []
        for row in range(self.runs.rowCount()):
            item = self.runs.item(row, 0)
            if item.checkState() != Qt.CheckState.Checked:
                continue
            run_id = int(item.data(RUN_ID_ROLE))
            k = self.runs.cellWidget(row, 2).value()
            merges = self.runs.cellWidget(row, 2).maximum()
            out.append(f"run:{run_id}" if k == merges else f"run:{run_id}@{k}")
        out += [self.files.item(i).text() for i in range(self.files.count())]
        out += [name for name, box in self.references.items() if box.isChecked()]
        return out


class TextPicker(QGroupBox):
    """Held-out text: files and folders the corpus readers take, or pasted text; a grouping."""

    GROUPINGS = ("none", "file", "folder", "field")

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__("Held-out text", parent)
        self.paths = QListWidget(self)
        self.paths.setMaximumHeight(70)
        self.add_files = QPushButton("Add files…", self)
        self.add_folder = QPushButton("Add folder…", self)
        self.clear_paths = QPushButton("Clear", self)
        self.pasted = QPlainTextEdit(self)
        self.pasted.setPlaceholderText("…or paste text here")
        self.pasted.setMaximumHeight(70)
        self.group_by = QComboBox(self)
        self.group_by.addItems(self.GROUPINGS)
        self.field = QLineEdit("lang", self)
        self.field.setPlaceholderText("JSONL field")
        self.field.setEnabled(False)
        self.group_by.currentTextChanged.connect(lambda t: self.field.setEnabled(t == "field"))
        self.add_files.clicked.connect(self._files_dialog)
        self.add_folder.clicked.connect(self._folder_dialog)
        self.clear_paths.clicked.connect(self.paths.clear)
        buttons = QHBoxLayout()
        for button in (self.add_files, self.add_folder, self.clear_paths):
            buttons.addWidget(button)
        grouping = QHBoxLayout()
        grouping.addWidget(self.group_by)
        grouping.addWidget(self.field, 1)
        layout = QVBoxLayout(self)
        layout.addWidget(self.paths)
        layout.addLayout(buttons)
        layout.addWidget(self.pasted)
        layout.addLayout(grouping)

    def add_path(self, path: str | Path) -> None:
        if str(path) not in self.path_list():  # twice would count its text twice
            self.paths.addItem(str(path))

    def restore(self, paths: list[str], pasted: str, group: str, field: str) -> None:
        """Put back the held-out text chosen before a restart (paths still there)."""
        for path in paths:
            if Path(path).exists():
                self.add_path(path)
        self.pasted.setPlainText(pasted)
        if group in self.GROUPINGS:
            self.group_by.setCurrentText(group)
        self.field.setText(field)

    def path_list(self) -> list[str]:
        return [self.paths.item(i).text() for i in range(self.paths.count())]

    def grouping(self) -> str | None:
        choice = self.group_by.currentText()
        if choice == "none":
            return None
        return f"field:{self.field.text().strip()}" if choice == "field" else choice

    def _files_dialog(self) -> None:
        paths, _ = QFileDialog.getOpenFileNames(self, "Held-out text files")
        for path in paths:
            self.add_path(path)

    def _folder_dialog(self) -> None:
        path = QFileDialog.getExistingDirectory(self, "Held-out text folder")
        if path:
            self.add_path(path)
