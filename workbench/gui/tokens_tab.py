"""Wires issue 6's Tokens panel into the window: which tokenizer it inspects, and jumps back.

When a run pauses, finishes or stops, its merges are read and turned into a `Tokenizer` on a
background lane (a run of 50k merges takes a noticeable moment), then handed to the panel. A
stored run that is opened gets its tokenizer only once something needs it (`show_run(...,
when_shown=True)`): the tab shown, or `need()` (a replay): a build of 200k merges holds the GIL
in long C calls that would stretch the turns in which its charts and merge list first paint.
The build opens its own store connection, so it never shares the window's.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from html import escape
from pathlib import Path

from PySide6.QtCore import QEvent, QObject

from workbench.engine.encode.tokenizer import Tokenizer
from workbench.gui.gc_pause import collector_paused
from workbench.gui.paint_turns import TurnJob
from workbench.gui.tokens import TokensPanel
from workbench.gui.tokens.jobs import JobLane
from workbench.store import RunInfo, RunStore
from workbench.store.errors import StoreError
from workbench.store.tokenizer_of_run import stored_tokenizer


class RunTokenizers:
    """The tokenizers of stored runs, each built once for every lane that asks at the same time.

    Opening a run of 200k merges asks for its tokenizer twice at once (the Tokens tab and
    teaching's sample): two builds of ~1.3 s of Python each, and every background thread that
    runs Python takes the GIL in turns with the UI thread, stretching its turns. The second
    asker waits for the first build instead, and later asks get the built one while the run is
    unchanged (its merge count and last update are part of the key). A `Tokenizer` may be used
    from several threads (its caches are per thread). The newest `keep` are kept."""

    def __init__(self, keep: int = 2) -> None:
        self.keep = keep
        self.builds = 0  # how many were built (the tests count them)
        self._lock = threading.Lock()
        self._built: OrderedDict[tuple, Tokenizer] = OrderedDict()
        self._building: dict[tuple, threading.Event] = {}

    def get(self, db_path: Path, run_id: int) -> tuple[Tokenizer, RunInfo]:
        store = RunStore(db_path)
        try:
            run = store.get_run(run_id)
            key = (str(db_path), run.id, run.created, run.updated, run.merge_count)
            while True:
                with self._lock:
                    tok = self._built.get(key)
                    if tok is not None:
                        self._built.move_to_end(key)
                        return tok, run
                    waiting = self._building.get(key)
                    if waiting is None:
                        self._building[key] = threading.Event()
                        break
                waiting.wait()  # built (or failed: then this thread tries) meanwhile
            try:
                with collector_paused():  # no full collections walking the build meanwhile
                    tok = stored_tokenizer(store, run)  # an extension run: its base's first
            finally:
                with self._lock:
                    self._building.pop(key).set()
            with self._lock:
                self.builds += 1
                self._built[key] = tok
                while len(self._built) > self.keep:
                    self._built.popitem(last=False)
            return tok, run
        finally:
            store.close()


RUN_TOKENIZERS = RunTokenizers()


def tokenizer_of_run(db_path: Path, run_id: int) -> tuple[Tokenizer, str, int]:
    """The tokenizer a stored run made so far (its pattern and specials from its settings),
    shared with every other asker meanwhile (`RunTokenizers`)."""
    tok, run = RUN_TOKENIZERS.get(db_path, run_id)
    return tok, f"run {run.id} “{run.name}”", run_id


class TokensTab(QObject):
    """Owns the panel's feed; `panel` goes into the window's tabs."""

    def __init__(self, db_path: Path, store: RunStore, parent: QObject | None = None) -> None:
        super().__init__(parent)
        self.db_path = db_path
        self.store = store
        self.panel = TokensPanel()
        self.lane = JobLane(self)
        self.lane.sigResult.connect(self._on_tokenizer)
        # Taking a tokenizer (~5-7 ms: the panel's views, its scrubber, its details) waits for a
        # turn of its own: it arrived in the turn the tab's first paint or the scrubber's chart
        # took, and together they made 24-28 ms of the UI thread's CPU while a run opened.
        self._arrived: tuple[Tokenizer, str, int] | None = None
        self._take_job = TurnJob(self._take_tokenizer, self)
        self._need_job = TurnJob(self.need, self)
        self.lane.sigError.connect(lambda message: self.panel.source.setText(escape(message)))
        # The run whose tokenizer is built when the tab is next shown, and its name.
        self.pending: tuple[int, str] | None = None
        self._shown_then: object = None  # the panel's tokenizer when the build was put off
        self.panel.installEventFilter(self)

    def show_run(self, run_id: int | None, name: str = "", when_shown: bool = False) -> None:
        """Inspect run `run_id` as it is in the store now (None: leave the panel as it is);
        with `when_shown`, only once the tab is shown or `need()` is called."""
        if run_id is None:
            return
        self.pending = (run_id, name)
        self._shown_then = self.panel.base_tokenizer
        if not when_shown or self.panel.isVisible():
            self.need()

    def need(self) -> None:
        """Build the tokenizer of the run put off by `show_run(..., when_shown=True)`, if any:
        not if the panel was given another since (a file, the Evaluate tab's candidate)."""
        if not self._announce():
            return
        (run_id, _name), self.pending = self.pending, None
        db_path = self.db_path
        self.lane.submit(lambda: tokenizer_of_run(db_path, run_id))

    def _announce(self) -> bool:
        """Say that the pending run's tokenizer is being built; False if there is none to
        build (none pending, or the panel was given another tokenizer since)."""
        if self.pending is None:
            return False
        if self.panel.base_tokenizer is not self._shown_then:
            self.pending = None
            return False
        run_id, name = self.pending
        run = f"run {run_id} “{name}”" if name else f"run {run_id}"
        self.panel.source.setText(escape(f"Building the tokenizer for {run}…"))
        return True

    def eventFilter(self, watched: QObject, event: QEvent) -> bool:  # noqa: N802  (Qt's name)
        if watched is self.panel and event.type() == QEvent.Type.Show and self._announce():
            # In a turn after the tab's first paint: started in the same turn, the build's
            # Python (1-2 s at 200k merges) took the GIL in turns with that paint (~20 ms).
            self._need_job.request()
        return False

    def forget_run(self, run_id: int) -> None:
        """Run `run_id` was deleted: the panel and its Compare let it go."""
        if self.pending is not None and self.pending[0] == run_id:
            self.pending = None
        if self._arrived is not None and self._arrived[2] == run_id:
            self._arrived = None
        self.panel.forget_run(run_id)

    def set_corpus_paths(self, paths: list[Path]) -> None:
        self.panel.set_corpus_paths(paths)

    def _on_tokenizer(self, result: tuple[Tokenizer, str, int]) -> None:
        self._arrived = result
        self._take_job.request()

    def _take_tokenizer(self) -> None:
        if self._arrived is None:
            return
        (tok, label, run_id), self._arrived = self._arrived, None
        try:
            self.panel.set_tokenizer(tok, label, self.store, run_id)
        except StoreError:  # the run was deleted while its tokenizer was being built
            self.panel.source.setText(f"run {run_id} was deleted")

    def shutdown(self) -> None:
        """Wait for background jobs (at close only: nothing may outlive the window)."""
        self.lane.shutdown()
        self.panel.shutdown()
