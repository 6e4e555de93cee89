"""The window's menus and actions: Train/Pause/… as shortcuts and buttons, File, Help,
and which of them are enabled (rendered from the window's state).
"""

from __future__ import annotations

from PySide6.QtCore import Qt
from PySide6.QtGui import QAction, QKeySequence
from PySide6.QtWidgets import (
    QMenu,
    QMessageBox,
    QWhatsThis,
)

from workbench.gui.help import GuideDialog, about_html
from workbench.gui.window_state import Actions

# action name -> (text, shortcut, tooltip)
ACTIONS = {
    "train": ("Train", "Ctrl+Return", "Start a new run with these settings"),
    "pause": ("Pause", "Ctrl+P", "Pause after the current batch"),
    "resume": ("Resume", "Ctrl+R", "Continue the run (to a larger vocab size too)"),
    "stop": ("Stop", "Ctrl+.", "End the run; every merge so far is kept"),
    "step1": ("+1", "Ctrl+1", "Make one more merge"),
    "step10": ("+10", "Ctrl+2", "Make ten more merges"),
    "step100": ("+100", "Ctrl+3", "Make a hundred more merges"),
}
STEPS = {"step1": 1, "step10": 10, "step100": 100}


class MenusAndActions:
    """Mixed into `MainWindow`: builds its actions and menus and keeps them enabled as
    `self.state` says."""

    def _make_actions(self) -> dict[str, QAction]:
        actions = {}
        for name, (text, shortcut, tip) in ACTIONS.items():
            action = QAction(text, self)
            action.setObjectName(name)
            action.setShortcut(QKeySequence(shortcut))
            action.setShortcutContext(Qt.ShortcutContext.WindowShortcut)
            action.setToolTip(f"{tip} ({shortcut})")
            action.setWhatsThis(tip)
            self.addAction(action)
            actions[name] = action
        actions["train"].triggered.connect(self.train)
        actions["pause"].triggered.connect(self.pause)
        actions["resume"].triggered.connect(self.resume)
        actions["stop"].triggered.connect(self.stop)
        for name, n in STEPS.items():
            actions[name].triggered.connect(lambda _checked=False, n=n: self.step(n))
        return actions

    def _make_menus(self) -> None:
        file_menu = self.menuBar().addMenu("&File")
        file_menu.addAction("Open files…", QKeySequence.StandardKey.Open, self.open_files)
        file_menu.addAction("Open folder…", QKeySequence("Ctrl+Shift+O"), self.open_folder)
        file_menu.addAction("Demo corpus", self.load_demo)
        self.recent_menu = QMenu("Recent corpora", self)
        file_menu.addMenu(self.recent_menu)
        file_menu.addSeparator()
        self.export_action = file_menu.addAction(
            "Export tokenizer…", QKeySequence("Ctrl+E"), self.export_tokenizer
        )
        self.export_action.setObjectName("export")
        self.export_action.setToolTip(
            "Write the open run's tokenizer (Hugging Face, GPT-2, tiktoken, minbpe) and check"
            " that each file reads back the same (Ctrl+E)"
        )
        file_menu.addSeparator()
        file_menu.addAction("Quit", QKeySequence.StandardKey.Quit, self.close)
        train_menu = self.menuBar().addMenu("&Train")
        for action in self.actions_by_name.values():
            train_menu.addAction(action)
        train_menu.addSeparator()
        self.sweep_action = train_menu.addAction(
            "Train a sweep of vocabulary sizes…", QKeySequence("Ctrl+Shift+T"), self.ask_sweep
        )
        self._make_help_menu()
        self._fill_recent()

    def _make_help_menu(self) -> None:
        help_menu = self.menuBar().addMenu("&Help")
        help_menu.addAction(
            "Guide", QKeySequence(QKeySequence.StandardKey.HelpContents), self.guide
        )
        whats_this = QWhatsThis.createAction(self)
        whats_this.setText("What's this?")
        help_menu.addAction(whats_this)
        help_menu.addSeparator()
        help_menu.addAction("About BPE Workbench", self.about)
        self.guide_dialog: GuideDialog | None = None

    def guide(self) -> GuideDialog:
        """Show the illustrated guide (F1)."""
        if self.guide_dialog is None:
            self.guide_dialog = GuideDialog(self, self.charts.graphics)
        self.guide_dialog.show()
        self.guide_dialog.raise_()
        self.guide_dialog.activateWindow()
        return self.guide_dialog

    def about(self) -> None:
        QMessageBox.about(self, "About BPE Workbench", about_html())

    def _actions(self) -> Actions:
        ok = self.controls.pattern_ok() and self.controls.vocab_ok()
        return self.state.actions(self.controls.vocab.value(), ok, self.teacher.running)

    def _update_actions(self) -> None:
        """Render the state's actions: every button and shortcut follows `self.state`."""
        a = self.actions_by_name
        enabled = self._actions()
        a["train"].setEnabled(enabled.train)
        a["pause"].setEnabled(enabled.pause)
        a["resume"].setEnabled(enabled.resume)
        a["resume"].setToolTip(f"{enabled.resume_tip} ({ACTIONS['resume'][1]})")
        a["stop"].setEnabled(enabled.stop)
        for name in STEPS:
            a[name].setEnabled(enabled.step)
        self.export_action.setEnabled(enabled.export)
        self._offer_replay()
        self.controls.set_settings_enabled(enabled.settings)
