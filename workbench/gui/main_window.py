"""The workbench window: corpus, training controls, live charts, merge list and run history.

The window owns two threads: the training worker (counting, training, the store writer) and a
short-lived one that compiles the Numba kernels at start. It never waits on either: it sends
requests as queued signals and reacts to the answers. Closing the window while training hides
it, asks the worker to stop at its next batch and close its run, and closes for real when the
threads have finished, so no merge is lost and no QThread outlives its window.
"""

from __future__ import annotations

import threading
import time
from pathlib import Path

from PySide6.QtCore import QSettings, Qt, QThread, QTimer, Signal
from PySide6.QtGui import QCloseEvent, QIcon
from PySide6.QtWidgets import (
    QMainWindow,
    QSplitter,
    QTabWidget,
    QVBoxLayout,
    QWidget,
)

from workbench.engine.patterns.regexes import PRESETS
from workbench.gui import settings as settings_io
from workbench.gui import whats_this, window_session
from workbench.gui.app import freeze_long_lived
from workbench.gui.charts import ChartsPanel
from workbench.gui.controls import TrainingControls
from workbench.gui.corpus_panel import CorpusPanel
from workbench.gui.evaluate_tab import EvaluateTab
from workbench.gui.history_loader import HistoryLoader
from workbench.gui.merge_list import MergeListPanel
from workbench.gui.paint_turns import TURNS
from workbench.gui.replay import ReplayBar
from workbench.gui.resources import icon_path
from workbench.gui.run_history import RunHistoryPanel
from workbench.gui.status import RateMeter, TrainingStatus
from workbench.gui.teaching import TeachingDriver, TeachingPanel
from workbench.gui.thread_priority import lower_current_thread
from workbench.gui.tokens.export_dialog import ExportDialog
from workbench.gui.tokens.jobs import JobLane
from workbench.gui.tokens_tab import TokensTab
from workbench.gui.window_corpus import CorpusHandling
from workbench.gui.window_menus import MenusAndActions
from workbench.gui.window_runs import StoredRuns
from workbench.gui.window_state import WindowState
from workbench.gui.window_teaching_replay import TeachingAndReplay
from workbench.gui.window_training import TrainingRequests
from workbench.gui.window_worker_answers import WorkerAnswers
from workbench.gui.worker import KernelWarmer, TrainWorker
from workbench.store import RunStore

STATUS_MS = 250
LIST_AFTER_CHARTS_S = 0.05  # the merge list moves this long after the charts' redraw
RECOUNT_DELAY_MS = 600


class MainWindow(
    MenusAndActions,
    CorpusHandling,
    TrainingRequests,
    WorkerAnswers,
    TeachingAndReplay,
    StoredRuns,
    QMainWindow,
):
    """`MainWindow(settings=QSettings(path, IniFormat), db_path=tmp/"runs.db")` in tests.

    The window's areas live in their own modules, mixed in here: menus and actions
    (`window_menus`), the corpus (`window_corpus`), training requests (`window_training`), the
    worker's answers (`window_worker_answers`), teaching and replay (`window_teaching_replay`)
    and stored runs (`window_runs`); this class builds the parts, wires them and closes.

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
        self.sample_lane = JobLane(self)  # builds the sample's tokenizer and cuts the sample
        self.sample_lane.sigResult.connect(self._on_sample_tokenizer)
        self.replay_lane = JobLane(self)  # cuts teaching's sample at a replay's merge k
        self.replay_lane.sigResult.connect(self._on_replay_cut)
        self.corpus_sample_lane = JobLane(self, encodes=False)  # teaching's corpus sample
        self.corpus_sample_lane.sigResult.connect(self._on_corpus_sample)
        self.merge_list = MergeListPanel()
        self.runs = RunHistoryPanel(self.store)
        self.history = HistoryLoader(self.charts, self)
        self.history.sigBase.connect(self._stored_base)  # an opened extension run's base
        self.history.sigLoaded.connect(self._run_loaded)  # then teaching's sample of it
        self.tokens = TokensTab(db_path, self.store, self)
        self.evaluate = EvaluateTab(db_path, self.store)
        self._layout()
        self.status = TrainingStatus(self.statusBar())
        self._make_menus()
        whats_this.fill(self)  # Shift+F1 then a click explains any control

        self.warm_event = threading.Event()
        self.train_thread = QThread(self)
        self.train_thread.setObjectName("train-worker")
        # Both run at a lower priority, as does what they start (the counter's threads).
        self.train_thread.started.connect(lower_current_thread, Qt.ConnectionType.DirectConnection)
        self.counting_event = threading.Event()
        self.worker = TrainWorker(db_path, self.warm_event, self.counting_event)
        self.worker.moveToThread(self.train_thread)
        self.warm_thread = QThread(self)
        self.warm_thread.setObjectName("kernel-warm-up")
        self.warm_thread.started.connect(lower_current_thread, Qt.ConnectionType.DirectConnection)
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
        freeze_long_lived()

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

    def _connect(self) -> None:
        w = self.worker
        w.sigStage.connect(self._on_stage)
        w.sigProgress.connect(self.corpus_panel.set_progress)
        w.sigCorpus.connect(self._on_corpus)
        w.sigRunStarted.connect(self._on_run_started)
        w.sigSweepStep.connect(self._on_sweep_step)
        w.sigBatch.connect(self._on_batch)
        w.sigBase.connect(self._on_base)
        w.sigIdle.connect(self._on_idle)
        w.sigFailed.connect(self._on_failed)
        w.sigShutDown.connect(self.train_thread.quit)
        self.train_thread.finished.connect(self._thread_finished)
        self.warm_thread.started.connect(self.warmer.run)
        self.warmer.sigWarm.connect(self._on_warm)
        self.warmer.sigProgress.connect(self._on_warm_progress)
        self.warmer.sigEncoderReady.connect(self._show_teaching_sample)
        self.warmer.sigEncoderReady.connect(freeze_long_lived)  # the encoder's kernels too
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
        # The charts and the merge list paint in turns of their own (Qt paints everything
        # waiting in one turn): the list waits after a charts redraw, the charts after the
        # list painted.
        self.charts.sigRedrawn.connect(
            lambda: self.merge_list.hold_paint(int(LIST_AFTER_CHARTS_S * 1000))
        )
        self.charts.defer_redraw = TURNS.wait  # see paint_turns: the list's paint is one
        self.evaluate.connect_window(self)

    def start_threads(self) -> None:
        self.train_thread.start()
        self.warm_thread.start()

    # --- corpus ----------------------------------------------------------------------------
    # --- timers ----------------------------------------------------------------------------
    def _tick(self) -> None:
        running = self.mode == "training"
        if running or self.merges_done:
            self.status.show(
                self.merges_done, getattr(self, "target_merges", 0), self.meter, running
            )
        # The window paints all it has to in one turn: the merge list's scroll (~5-10 ms) in
        # the turn of the charts' redraw (~10-15 ms) made one long pause, so it waits a little.
        if time.perf_counter() - self.charts.drawn_at < LIST_AFTER_CHARTS_S:
            QTimer.singleShot(
                int(LIST_AFTER_CHARTS_S * 1000), self.merge_list, self.merge_list.poke
            )
        else:
            self.merge_list.poke()

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
        self.history.shutdown()
        self.sample_lane.shutdown()
        self.replay_lane.shutdown()
        self.corpus_sample_lane.shutdown()
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
