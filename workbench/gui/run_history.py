"""Run history: every stored run, to open (browse merges and charts without retraining),
rename or delete.

The list is small (one row per run), so it is read whole on refresh; the merges of an opened
run are what the lazy merge list is for.
"""

from __future__ import annotations

from pathlib import Path

from PySide6.QtCore import QModelIndex, QPersistentModelIndex, QPoint, Qt, Signal
from PySide6.QtWidgets import (
    QAbstractItemView,
    QHBoxLayout,
    QHeaderView,
    QInputDialog,
    QLabel,
    QMenu,
    QMessageBox,
    QPushButton,
    QTableView,
    QVBoxLayout,
    QWidget,
)

from workbench.gui.elided_label import plain_tip
from workbench.gui.table_model import ListTableModel
from workbench.session.states import RunState, describe, run_state_words
from workbench.store import RunInfo, RunStore, StoreError

_HEADERS = ("id", "name", "state", "merges", "vocab", "pattern", "created")
_INDEX = QModelIndex | QPersistentModelIndex


class RunHistoryModel(ListTableModel):
    """Stored runs, newest first."""

    headers = _HEADERS

    def set_runs(self, runs: list[RunInfo]) -> None:
        self.set_rows(runs)

    def run_at(self, row: int) -> RunInfo:
        return self.rows[row]

    def data(self, index: _INDEX, role: int = Qt.ItemDataRole.DisplayRole) -> object:
        if not index.isValid():
            return None
        run = self.rows[index.row()]
        if role == Qt.ItemDataRole.DisplayRole:
            pattern = str(run.settings.get("pattern", ""))
            pattern = pattern if len(pattern) < 24 else pattern[:21] + "…"
            transition = run.settings.get("superbpe_transition")
            if isinstance(transition, int) and not isinstance(transition, bool) and transition > 0:
                pattern += f" · SuperBPE t={transition:,}"
            base = run.settings.get("extends")
            if isinstance(base, dict) and isinstance(base.get("spec"), str):
                pattern += f" · extends {Path(base['spec']).name}"
            values = (
                str(run.id),
                run.name,
                run_state_words(run.state, run.stop_reason),
                f"{run.merge_count:,}",
                f"{run.vocab_size:,}",
                pattern,
                run.created[:19].replace("T", " "),
            )
            return values[index.column()]
        if role == Qt.ItemDataRole.ToolTipRole and run.error:
            return plain_tip(run.error)
        if role == Qt.ItemDataRole.ToolTipRole:
            return _extension_tip(run)
        if role == Qt.ItemDataRole.UserRole:
            return run.id
        return None


def _extension_tip(run: RunInfo) -> str | None:
    """An extension run's base and check, as a tooltip (None for other runs)."""
    base = run.settings.get("extends")
    if not isinstance(base, dict):
        return None
    lines = [f"Extends {base.get('spec')}"]
    check = run.stats.get("extension")
    if isinstance(check, dict) and isinstance(check.get("lines"), list):
        lines += [str(check.get("summary", "")), *(str(line) for line in check["lines"])]
    else:
        lines.append("Extension check: made when the run ends")
    return plain_tip("\n".join(lines))


class RunHistoryPanel(QWidget):
    """The runs tab; `sigOpenRun(run_id)` when the user opens one."""

    sigOpenRun = Signal(int)
    sigDeleted = Signal(int)
    sigExportRun = Signal(int)

    def __init__(self, store: RunStore | None, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.store = store
        self.model = RunHistoryModel(self)
        self.view = QTableView()
        self.view.setModel(self.model)
        self.view.setSelectionBehavior(QAbstractItemView.SelectionBehavior.SelectRows)
        self.view.setSelectionMode(QAbstractItemView.SelectionMode.SingleSelection)
        self.view.verticalHeader().hide()
        self.view.horizontalHeader().setSectionResizeMode(1, QHeaderView.ResizeMode.Stretch)
        # One row per run: fitting the state's words ("finished (reached vocabulary size)")
        # costs nothing, and a cut state says nothing.
        self.view.horizontalHeader().setSectionResizeMode(
            2, QHeaderView.ResizeMode.ResizeToContents
        )
        self.view.doubleClicked.connect(lambda _index: self.open_selected())
        self.message = QLabel()
        self.message.setTextFormat(Qt.TextFormat.PlainText)  # errors quote run names
        buttons = QHBoxLayout()
        self.buttons: dict[str, QPushButton] = {}
        for text, slot, tip in (
            ("Open", self.open_selected, "Show the run's merges and charts (double-click)"),
            (
                "Export…",
                self.export_selected,
                "Write the run's tokenizer in one or more formats and check they read back",
            ),
            ("Rename…", self.rename_selected, "Give the run a name of your own"),
            ("Delete", self.delete_selected, "Delete the run and its merges from the store"),
            ("Refresh", self.refresh, "Read the list of runs again"),
        ):
            button = QPushButton(text)
            name = text.rstrip("…").lower()
            button.setObjectName(f"runs_{name}")
            button.setToolTip(tip)
            button.setWhatsThis(tip)
            # clicked(bool) would land in the slots' optional arguments: drop it.
            button.clicked.connect(lambda _checked=False, slot=slot: slot())
            buttons.addWidget(button)
            self.buttons[name] = button
        self.view.setContextMenuPolicy(Qt.ContextMenuPolicy.CustomContextMenu)
        self.view.customContextMenuRequested.connect(self._context_menu)
        self.view.setWhatsThis(
            "Every run you trained, newest first. Double-click to open one; right-click to"
            " export, rename or delete it."
        )
        buttons.addStretch(1)
        buttons.addWidget(self.message)
        layout = QVBoxLayout(self)
        layout.addLayout(buttons)
        layout.addWidget(self.view, 1)

    def refresh(self) -> None:
        if self.store is not None:
            self.model.set_runs(self.store.list_runs())

    def selected_run(self) -> RunInfo | None:
        rows = self.view.selectionModel().selectedRows()
        return self.model.run_at(rows[0].row()) if rows else None

    def select_run(self, run_id: int) -> None:
        for row in range(self.model.rowCount()):
            if self.model.run_at(row).id == run_id:
                self.view.selectRow(row)
                return

    def context_menu(self) -> QMenu:
        """The actions for the selected run (right-click on a row)."""
        menu = QMenu(self)
        for name, slot in (
            ("Open", self.open_selected),
            ("Export…", self.export_selected),
            ("Rename…", self.rename_selected),
            ("Delete", self.delete_selected),
        ):
            action = menu.addAction(name)
            action.triggered.connect(lambda _checked=False, slot=slot: slot())
        return menu

    def _context_menu(self, pos: QPoint) -> None:
        index = self.view.indexAt(pos)
        if not index.isValid():
            return
        self.view.selectRow(index.row())
        self.context_menu().exec(self.view.viewport().mapToGlobal(pos))

    def export_selected(self) -> None:
        run = self.selected_run()
        if run is not None:
            self.sigExportRun.emit(run.id)

    def open_selected(self) -> None:
        run = self.selected_run()
        if run is not None:
            self.sigOpenRun.emit(run.id)

    def rename_selected(self, name: str | None = None) -> None:
        """Rename the selected run; `name` skips the dialog (tests, scripts)."""
        run = self.selected_run()
        if run is None or self.store is None:
            return
        if not isinstance(name, str):
            name, ok = QInputDialog.getText(self, "Rename run", "Name:", text=run.name)
            if not ok or not name.strip():
                return
        self.store.rename(run.id, name.strip())
        self.refresh()
        self.select_run(run.id)

    def delete_selected(self, confirm: bool = True) -> None:
        run = self.selected_run()
        if run is None or self.store is None:
            return
        try:
            run = self.store.get_run(run.id)  # the list may be older than the run's state
        except StoreError as exc:
            self.message.setText(str(exc))
            self.refresh()
            return
        if run.state in (RunState.RUNNING, RunState.PAUSED):
            # Refused before asking: a question answered Yes, then refused, helps nobody.
            self.message.setText(f"run {run.id} is {describe(run.state)}: stop it before deleting")
            return
        if confirm:
            answer = QMessageBox.question(
                self,
                "Delete run",
                f"Delete run {run.id} “{run.name}” and its {run.merge_count:,} merges?",
            )
            if answer != QMessageBox.StandardButton.Yes:
                return
        try:
            self.store.delete(run.id)
        except StoreError as exc:
            self.message.setText(str(exc))
            return
        self.message.setText(f"deleted run {run.id}")
        self.refresh()
        self.sigDeleted.emit(run.id)
