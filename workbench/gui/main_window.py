"""The workbench window: corpus, training controls, live charts, merge list and run history.

The window owns two threads: the training worker (counting, training, the store writer) and a
short-lived one that compiles the Numba kernels at start. It never waits on either: it sends
requests as queued signals and reacts to the answers. Closing the window while training hides
it, asks the worker to stop at its next batch and close its run, and closes for real when the
threads have finished, so no merge is lost and no QThread outlives its window.
"""

from __future__ import annotations

import contextlib
import threading
import time
from dataclasses import replace
from pathlib import Path

from PySide6.QtCore import QSettings, Qt, QThread, QTimer, Signal
from PySide6.QtGui import QAction, QCloseEvent, QDragEnterEvent, QDropEvent, QIcon, QKeySequence
from PySide6.QtWidgets import (
    QFileDialog,
    QMainWindow,
    QMenu,
    QMessageBox,
    QSplitter,
    QTabWidget,
    QVBoxLayout,
    QWhatsThis,
    QWidget,
)

from workbench.engine.config import TrainConfig
from workbench.engine.errors import WorkbenchError
from workbench.engine.events import MergeBatch
from workbench.engine.patterns.regexes import PRESETS
from workbench.gui import settings as settings_io
from workbench.gui import whats_this, window_session
from workbench.gui.charts import ChartsPanel
from workbench.gui.controls import TrainingControls, parse_specials
from workbench.gui.corpus_panel import CorpusPanel
from workbench.gui.elided_label import plain_tip
from workbench.gui.evaluate_tab import EvaluateTab
from workbench.gui.help import GuideDialog, about_html
from workbench.gui.history_loader import HistoryLoader
from workbench.gui.merge_list import MergeListPanel
from workbench.gui.replay import ReplayBar
from workbench.gui.resources import demo_corpus, icon_path
from workbench.gui.run_history import RunHistoryPanel
from workbench.gui.status import RateMeter, TrainingStatus
from workbench.gui.teaching import TeachingDriver, TeachingPanel, corpus_paragraphs, first_long
from workbench.gui.tokens.export_dialog import ExportDialog
from workbench.gui.tokens_tab import TokensTab
from workbench.gui.tokens_tab import tokenizer_of_run as stored_tokenizer
from workbench.gui.window_state import Actions, WindowState, grown_name
from workbench.gui.worker import CorpusReport, IdleState, KernelWarmer, TrainWorker
from workbench.session.states import StopReason
from workbench.store import RunStore, StoreError
from workbench.store.tokenizer_of_run import tokenizer_of_run

STATUS_MS = 250
RECOUNT_DELAY_MS = 600
STEP_TARGET = 2**31 - 1  # Step goes past the vocab size the run was started with
SAMPLE_COST_FACTOR = 4  # between ticks, rebuild the sample's tokenizer after 4x its cost
REPLAY_CUT_SECONDS = 0.5  # a playing replay repaints the Tokens text at most this often

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


class MainWindow(QMainWindow):
    """`MainWindow(settings=QSettings(path, IniFormat), db_path=tmp/"runs.db")` in tests.

    `sigClosed` fires when the window has really closed (threads finished): a hidden window
    does not count as the last window closed, so the app quits on this signal instead.
    """

    sigClosed = Signal()

    def __init__(
        self,
        settings: QSettings | None = None,
        db_path: Path | None = None,
        start_threads: bool = True,
    ) -> None:
        super().__init__()
        self.setWindowTitle("BPE Workbench")
        self.setWindowIcon(QIcon(str(icon_path())))
        self.setAcceptDrops(True)
        self.qsettings = settings if settings is not None else QSettings()
        self.values = settings_io.load(self.qsettings)
        if db_path is None:
            from workbench.store import default_db_path

            db_path = default_db_path()
        self.db_path = db_path
        self.store = RunStore(db_path)
        self.export_dialogs: list[ExportDialog] = []
        # The open run as the window shows it; actions and status lines follow from it.
        self.state = WindowState()
        self.sweep: tuple[int, int] | None = None  # (run i, of n) while a sweep trains
        self.corpus_bytes = 0
        self.merges_done = 0
        self.corpus_paths: list[Path] = []
        self.meter = RateMeter()
        self._closing = False
        self.closed = False

        self.actions_by_name = self._make_actions()
        self.controls = TrainingControls(list(self.actions_by_name.values()))
        self.corpus_panel = CorpusPanel()
        self.charts = ChartsPanel()
        self.teaching = TeachingPanel()
        self.replay = ReplayBar()
        self.teacher = TeachingDriver(self.teaching, self)
        self._sample_built = (0.0, 0.0)  # when the teaching sample was last cut, and its cost
        self.merge_list = MergeListPanel()
        self.runs = RunHistoryPanel(self.store)
        self.history = HistoryLoader(self.charts, self)
        self.tokens = TokensTab(db_path, self.store, self)
        self.evaluate = EvaluateTab(db_path, self.store)
        self._layout()
        self.status = TrainingStatus(self.statusBar())
        self._make_menus()
        whats_this.fill(self)  # Shift+F1 then a click explains any control

        self.warm_event = threading.Event()
        self.train_thread = QThread(self)
        self.train_thread.setObjectName("train-worker")
        self.counting_event = threading.Event()
        self.worker = TrainWorker(db_path, self.warm_event, self.counting_event)
        self.worker.moveToThread(self.train_thread)
        self.warm_thread = QThread(self)
        self.warm_thread.setObjectName("kernel-warm-up")
        preset = self.controls.pattern_spec()  # a custom regex has no scanner to compile
        self.warmer = KernelWarmer(
            self.warm_event, self.counting_event, preset if preset in PRESETS else "gpt2"
        )
        self.warmer.moveToThread(self.warm_thread)
        self._connect()

        self.status_timer = QTimer(self)
        self.status_timer.setInterval(STATUS_MS)
        self.status_timer.timeout.connect(self._tick)
        self.status_timer.start()
        self.recount_timer = QTimer(self)
        self.recount_timer.setSingleShot(True)
        self.recount_timer.setInterval(RECOUNT_DELAY_MS)
        self.recount_timer.timeout.connect(self.analyze)

        self.controls.load(self.values)
        if not self.values.geometry.isEmpty():
            self.restoreGeometry(self.values.geometry)
        if not self.values.window_state.isEmpty():
            self.restoreState(self.values.window_state)
        self.runs.refresh()
        if start_threads:
            self.start_threads()
        paths = [Path(p) for p in self.values.corpus]
        if paths and all(p.exists() for p in paths):
            self.load_corpus(paths)
        else:
            self.load_demo()
        window_session.restore(self)
        self._update_actions()

    @property
    def mode(self) -> str:
        """ "idle", "training", "paused" or "finished" (the state's phase)."""
        return self.state.phase.value

    @property
    def run_id(self) -> int | None:
        return self.state.run_id

    @property
    def can_continue(self) -> bool:
        return self.state.can_grow

    # --- construction ----------------------------------------------------------------------
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

    def _layout(self) -> None:
        charts = QWidget()
        charts_layout = QVBoxLayout(charts)
        charts_layout.setContentsMargins(0, 0, 0, 0)
        charts_layout.setSpacing(2)
        charts_layout.addWidget(self.replay)
        charts_layout.addWidget(self.charts, 1)
        watch = QSplitter(Qt.Orientation.Vertical)
        watch.addWidget(charts)
        watch.addWidget(self.teaching)
        watch.setStretchFactor(0, 4)
        watch.setStretchFactor(1, 1)
        watch.setSizes([600, 170])
        train_split = QSplitter()
        train_split.addWidget(watch)
        train_split.addWidget(self.merge_list)
        # Room for the merge list's columns with a 12-character token at the default width.
        train_split.setStretchFactor(0, 1)
        train_split.setStretchFactor(1, 1)
        train_split.setSizes([500, 620])
        self.tabs = QTabWidget()
        self.tabs.addTab(train_split, "Training")
        self.tabs.addTab(self.corpus_panel, "Corpus")
        self.tabs.addTab(self.runs, "Runs")
        self.tabs.addTab(self.tokens.panel, "Tokens")
        self.tabs.addTab(self.evaluate, "Evaluate")
        main = QSplitter()
        main.addWidget(self.controls)
        main.addWidget(self.tabs)
        main.setStretchFactor(1, 1)
        main.setSizes([280, 1100])
        self.setCentralWidget(main)
        self.resize(1400, 860)

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

    def _connect(self) -> None:
        w = self.worker
        w.sigStage.connect(self._on_stage)
        w.sigProgress.connect(self.corpus_panel.set_progress)
        w.sigCorpus.connect(self._on_corpus)
        w.sigRunStarted.connect(self._on_run_started)
        w.sigSweepStep.connect(self._on_sweep_step)
        w.sigBatch.connect(self._on_batch)
        w.sigIdle.connect(self._on_idle)
        w.sigFailed.connect(self._on_failed)
        w.sigShutDown.connect(self.train_thread.quit)
        self.train_thread.finished.connect(self._thread_finished)
        self.warm_thread.started.connect(self.warmer.run)
        self.warmer.sigWarm.connect(self._on_warm)
        self.warmer.sigProgress.connect(self._on_warm_progress)
        self.warmer.sigEncoderReady.connect(self._show_teaching_sample)
        self.warmer.sigFailed.connect(self._on_failed)
        self.warm_thread.finished.connect(self._thread_finished)
        self.controls.sigPatternChanged.connect(self._pattern_changed)
        self.controls.specials.textChanged.connect(self._pattern_changed)
        self.controls.regex.textChanged.connect(lambda _text: self._update_actions())
        self.controls.preset.currentTextChanged.connect(lambda _text: self._update_actions())
        self.controls.vocab.valueChanged.connect(lambda _value: self._update_actions())
        self.controls.specials.textChanged.connect(lambda _text: self._update_actions())
        self.teacher.sigStep.connect(self._teach_step)
        self.corpus_panel.sigOpenFiles.connect(self.open_files)
        self.corpus_panel.sigOpenFolder.connect(self.open_folder)
        self.corpus_panel.sigCancel.connect(self.worker.cancel_flag.set)
        self.runs.sigOpenRun.connect(self.open_run)
        self.runs.sigDeleted.connect(self._run_deleted)
        self.runs.sigExportRun.connect(self.export_tokenizer)
        self.tokens.panel.sigJumpToRank.connect(self.jump_to_rank)
        self.replay.sigRank.connect(self._replay_at)
        self.evaluate.connect_window(self)

    def start_threads(self) -> None:
        self.train_thread.start()
        self.warm_thread.start()

    # --- corpus ----------------------------------------------------------------------------
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
        paths = [Path(p) for p in paths]
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
        pool = corpus_paragraphs(self.corpus_paths)
        self.teaching.set_sample(first_long(pool))
        self.teaching.set_pool(pool)
        self._pattern_changed()
        self.analyze()

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

    # --- training requests -----------------------------------------------------------------
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
        self.charts.reset(0, f"This run: {corpus}")
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
        self.worker.sigTrainRequested.emit(tuple(str(p) for p in self.corpus_paths), config)
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
        return 256 + len(parse_specials(self.controls.specials.text()))

    # --- worker answers --------------------------------------------------------------------
    def _on_stage(self, text: str) -> None:
        self.status.stage.setText(text)
        if text.startswith("Training"):
            self.meter.start(self.merges_done)

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

    def _on_batch(self, batch: MergeBatch) -> None:
        """Per batch: append to buffers and counters only; timers do the drawing."""
        self.charts.add_batch(batch)
        self.merges_done = batch.end_rank
        self.merge_list.model.note_total(batch.end_rank)
        self.meter.note(batch.end_rank)

    def _on_idle(self, state: IdleState) -> None:
        self.meter.stop()
        self.charts.pause_clock()
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
            self.status.stage.setText(f"Sweep: run {sweep[0]} of {sweep[1]} done")
            self.runs.refresh()
            return
        self.state = self.state.after_idle(
            state.reason, state.merges, state.vocab_size, state.can_continue
        )
        self._follow_size()
        teaching = self.teacher.running and self.mode == "paused"
        if teaching:
            stage = f"Teaching: {state.merges:,} of {self.target_merges:,} merges"
        else:
            stage = self.state.status_line()
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
            self.runs.refresh()
            if state.merges:
                self.tokens.show_run(self.run_id)
        self._update_actions()
        if self._closing:
            self._shutdown()

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

    def _show_teaching_sample(self, every_tick: bool = False) -> None:
        """Cut the teaching sample with the merges so far (the run's, read from the store).

        Building the tokenizer costs O(merges) (~0.1 s at 10k): between teaching ticks it is
        rebuilt only when the last build is a few of its own durations old, so a fast tick
        rate on a long run never stalls the window.
        """
        if self.run_id is None or not self.teaching.isVisible():
            return
        if not self.warmer.encoder.is_set():  # compiling it here would freeze the window
            self.teaching.newest.setText("The sample is cut once the encoder is ready.")
            return
        now = time.perf_counter()
        last_at, cost = self._sample_built
        if every_tick and now - last_at < SAMPLE_COST_FACTOR * cost:
            return
        try:
            tok = tokenizer_of_run(self.store, self.run_id)
        except (StoreError, WorkbenchError):
            return
        self._sample_built = (now, time.perf_counter() - now)
        last = tok.merges[-1:]
        vocab = tok.vocab
        self.teaching.show_tokenizer(tok, (vocab[last[0][0]], vocab[last[0][1]]) if last else None)
        self._explain_newest(len(tok.merges))

    def _explain_newest(self, n: int) -> None:
        """Teaching's "why": the newest merge's count, ties and rule, and the next merge."""
        if self.run_id is None or n <= 0:
            self.teaching.explain(None, None, "")
            return
        try:
            around = self.store.merges(self.run_id, after_rank=n - 2, limit=2)
            rule = str(self.store.get_run(self.run_id).settings.get("tie_break", "lexicographic"))
        except StoreError:
            return
        newest = next((m for m in around if m.rank == n - 1), None)
        following = next((m for m in around if m.rank == n), None)
        self.teaching.explain(newest, following, rule)

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
        if self._before_any_run():
            # The stage label, not showMessage: a temporary message hides the stage for seconds.
            how = "prepared (first use)" if self.warmer.compiled else "loaded"
            self.status.stage.setText(f"Trainer ready (fast kernels {how} in {seconds:.1f} s)")

    # --- history ---------------------------------------------------------------------------
    def open_run(self, run_id: int) -> None:
        """Browse a stored run: its merges and charts, without retraining."""
        if self.mode == "training":
            self.statusBar().showMessage("Pause or stop training before opening a run", 5000)
            return
        try:
            run = self.store.get_run(run_id)
        except StoreError as exc:
            self.statusBar().showMessage(str(exc), 8000)
            self.runs.refresh()
            return
        if self.mode == "paused":
            self.stop()
        self._release_run()
        self.teacher.stop()
        self.state = self.state.opened(
            run.id,
            run.name,
            run.merge_count,
            run.vocab_size,
            run.stop_reason,
            bool(run.corpus.get("fingerprint")),
        )
        self.merges_done = run.merge_count
        self.target_merges = run.merge_count
        self.merge_list.set_run(self.store, run_id, run.merge_count)
        self.history.load(self.store, run)
        self.charts.caption.setText(f"Stored run {run.id} “{run.name}”")
        self.tokens.show_run(run_id)
        self.status.stage.setText(self.state.status_line())
        self._update_actions()
        self.tabs.setCurrentIndex(0)

    def _run_deleted(self, run_id: int) -> None:
        """The Runs tab deleted a run; if it is the one shown, let it go everywhere."""
        self.tokens.forget_run(run_id)
        self.evaluate.forget_run(run_id)
        if run_id != self.run_id:
            return
        self._release_run()
        self.state = self.state.deleted(run_id)
        self.history.cancel()
        self.merge_list.set_run(None, None)
        self.merges_done = 0
        self.charts.reset(self.corpus_bytes, f"Run {run_id} was deleted")
        self.status.clear()
        self.status.stage.setText(self.state.status_line())
        self._update_actions()

    def export_tokenizer(self, run_id: int | None = None) -> ExportDialog | None:
        """File ▸ Export tokenizer… (the open run) or the Runs tab's Export (the chosen run).

        The tokenizer is built from the store in the dialog's own thread, so a run of 100k
        merges opens the dialog at once."""
        if not isinstance(run_id, int) or isinstance(run_id, bool):  # the menu's triggered(bool)
            run_id = self.run_id
        if run_id is None:
            self.statusBar().showMessage(
                "No run to export: train one, or open one in the Runs tab", 8000
            )
            return None
        try:
            run = self.store.get_run(run_id)
        except StoreError as exc:
            self.statusBar().showMessage(str(exc), 8000)
            return None
        db_path = self.db_path
        # The check's text: what the Tokens tab shows, else the start of the corpus (4 KB).
        sample = self.tokens.panel.view.text() or self.teaching.sample_text()
        sample = sample[:4000]
        self.export_dialogs = [d for d in self.export_dialogs if d.isVisible() or d.busy()]
        dialog = ExportDialog(
            lambda: stored_tokenizer(db_path, run_id)[0],
            sample,
            str(Path.home() / "bpe-exports" / f"run-{run.id}"),
            parent=self,
            title=f"run {run.id} “{run.name}” ({run.merge_count:,} merges)",
        )
        self.export_dialogs.append(dialog)
        dialog.show()
        dialog.raise_()
        dialog.activateWindow()
        return dialog

    def jump_to_rank(self, rank: int) -> None:
        """Show merge `rank` in the merge list (the Tokens tab asks for this on a click)."""
        self.tabs.setCurrentIndex(0)
        self.merge_list.show_rank(rank)

    # --- timers ----------------------------------------------------------------------------
    def _tick(self) -> None:
        running = self.mode == "training"
        if running or self.merges_done:
            self.status.show(
                self.merges_done, getattr(self, "target_merges", 0), self.meter, running
            )
        self.merge_list.poke()

    # --- replay ----------------------------------------------------------------------------
    _replay_cut_at = 0.0  # when a playing replay last asked for a re-cut of the Tokens text

    def _replay_at(self, k: int) -> None:
        """The timeline shows the run after its first k merges, in every view of it."""
        total = self.replay.clock.total
        at = None if k >= total else k
        self.charts.show_replay(at)
        self.merge_list.show_replay(at)
        panel = self.tokens.panel
        if panel.run_id is None or panel.run_id != self.run_id:
            return
        # The panel cuts in the background, the newest k next; painting a cut still takes this
        # thread ~30 ms (the highlighter and the strip), so a playing replay repaints the text
        # a few times a second; at rest (a seek, the end), at once.
        now = time.perf_counter()
        if self.replay.playing and now - self._replay_cut_at < REPLAY_CUT_SECONDS:
            return
        self._replay_cut_at = now
        panel.show_rank(k)

    def _end_replay(self) -> None:
        """Training or another run: the timeline starts over at the whole run."""
        if self.replay.clock.k < self.replay.clock.total:
            self._replay_at(self.replay.clock.total)
        self.replay.set_total(0)

    def _offer_replay(self) -> None:
        """A run at rest (paused, finished, opened) can be replayed over all its merges."""
        total = self.merges_done if self.mode in ("paused", "finished") else 0
        if total != self.replay.clock.total:
            if self.replay.clock.k < self.replay.clock.total:
                self._replay_at(self.replay.clock.total)
            self.replay.set_total(total)

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

    # --- closing ---------------------------------------------------------------------------
    def threads_running(self) -> bool:
        return self.train_thread.isRunning() or self.warm_thread.isRunning()

    def closeEvent(self, event: QCloseEvent) -> None:
        """Close only when both threads have finished; until then hide and wind them down."""
        if not self._closing:
            self._closing = True
            self.controls.store(self.values)
            self.values.geometry = self.saveGeometry()
            self.values.window_state = self.saveState()
            window_session.remember(self)
            settings_io.save(self.qsettings, self.values)
        if self.threads_running():
            event.ignore()
            self.hide()
            # A first start's compile goes on in detached helpers (the next start loads it);
            # only the waiting stops.
            self.warmer.cancel.set()
            self.worker.request_interrupt()
            self._shutdown()
            return
        self.status_timer.stop()
        self.history.cancel()
        self.tokens.shutdown()
        for dialog in self.export_dialogs:
            dialog.shutdown()
        self.evaluate.shutdown()
        self.merge_list.shutdown()
        self.store.close()
        self.closed = True
        event.accept()
        self.sigClosed.emit()

    def _shutdown(self) -> None:
        """Queue the worker's last request: close the run and let the thread quit."""
        if not getattr(self, "_shutdown_sent", False) and self.train_thread.isRunning():
            self._shutdown_sent = True
            self.worker.sigShutdownRequested.emit()

    def _thread_finished(self) -> None:
        if self._closing and not self.threads_running():
            self.close()


def _size(n_bytes: int) -> str:
    """1_234_567 -> "1.2 MB"; 5_300 -> "5.3 KB"; 12 -> "12 bytes"."""
    if n_bytes >= 1e6:
        return f"{n_bytes / 1e6:,.1f} MB"
    return f"{n_bytes / 1e3:,.1f} KB" if n_bytes >= 1e3 else f"{n_bytes} bytes"
