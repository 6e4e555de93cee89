"""The training worker: a QObject living in its own QThread that drives the engine's generator.

The window talks to it only through signals. Requests (`sigAnalyzeRequested`, ...) are queued
into the worker thread and run there one at a time; answers (`sigBatch`, `sigIdle`, ...) are
queued back to the window. A request never interrupts another: a running training loop is cut
short by the thread-safe pause/stop flags, which it checks between batches, after which the next
queued request runs. Pausing keeps the trainer, so Resume and Step continue exactly where it
stopped; every batch is written to the store before it is announced, so stopping (or closing
the window) never loses a merge the window has shown.

The run store writer is created here, in the worker thread, on its own connection.
"""

from __future__ import annotations

import gc
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from PySide6.QtCore import QObject, Signal, Slot

from workbench.engine.config import TrainConfig
from workbench.engine.errors import WorkbenchError

WARM_POLL_SECONDS = 0.1
TOP_PIECES = 30


class Cancelled(Exception):
    """A stop request arrived while a stage had no natural batch boundary to stop at."""


@dataclass(frozen=True)
class CorpusReport:
    """What the corpus panel shows: the engine's statistics and the most frequent pre-tokens."""

    paths: tuple[str, ...]
    documents: int
    bytes: int
    pieces: int
    unique_pieces: int
    files: int
    skipped: tuple[str, ...]
    seconds: float
    top: tuple[tuple[bytes, int], ...] = field(default_factory=tuple)


@dataclass(frozen=True)
class IdleState:
    """Why the training loop returned: `reason` is `paused`, `stepped`, `stopped`, or a
    trainer stop reason (`vocab_size`, `no_pairs`, `min_frequency`)."""

    reason: str
    merges: int
    vocab_size: int
    can_continue: bool


def _corpus_key(paths: tuple[str, ...], config: TrainConfig) -> tuple[Any, ...]:
    """Only these settings change the pre-token counts; the rest only change training."""
    return (paths, config.pattern_string, config.special_tokens, config.on_bad_file)


class TrainWorker(QObject):
    """Counts a corpus and trains on it, in the thread it was moved to."""

    # requests, queued into the worker thread
    sigAnalyzeRequested = Signal(object, object)  # paths tuple, TrainConfig
    sigTrainRequested = Signal(object, object)  # paths tuple, TrainConfig
    sigContinueRequested = Signal(object, object)  # target vocab size or None, max merges or None
    sigFinishRequested = Signal()
    sigShutdownRequested = Signal()

    # answers, queued back to the window
    sigStage = Signal(str)
    sigProgress = Signal(int, int)
    sigCorpus = Signal(object)  # CorpusReport
    sigRunStarted = Signal(int)  # run id in the store (-1 without a store)
    sigBatch = Signal(object)  # MergeBatch
    sigIdle = Signal(object)  # IdleState
    sigFailed = Signal(str)
    sigShutDown = Signal()

    def __init__(self, db_path: Path | None, warm: threading.Event) -> None:
        super().__init__()
        self.db_path = db_path
        self.warm = warm
        self.pause_flag = threading.Event()
        self.stop_flag = threading.Event()
        self.cancel_flag = threading.Event()
        self._corpus: tuple[tuple[Any, ...], Any] | None = None
        self._report: CorpusReport | None = None
        self._trainer: Any = None
        self._config: TrainConfig | None = None
        self._store: Any = None
        self._writer: Any = None
        self.run_id = -1
        self._training_seconds = 0.0
        self._last_reason: str | None = None
        self.sigAnalyzeRequested.connect(self.analyze)
        self.sigTrainRequested.connect(self.train)
        self.sigContinueRequested.connect(self.continue_training)
        self.sigFinishRequested.connect(self.finish)
        self.sigShutdownRequested.connect(self.shutdown)

    # --- flags: called from the window's thread -------------------------------------------
    def request_pause(self) -> None:
        self.pause_flag.set()

    def arm(self) -> None:
        """Clear pause/stop before sending a new request, from the window's thread, so a Pause
        pressed while the request is still queued (or counting) is kept, not cleared."""
        self.pause_flag.clear()
        self.stop_flag.clear()
        self.cancel_flag.clear()

    def request_stop(self) -> None:
        """Stop whatever runs: a training loop at its next batch, counting at its next check."""
        self.stop_flag.set()
        self.cancel_flag.set()

    # --- requests: run in the worker thread ------------------------------------------------
    @Slot(object, object)
    def analyze(self, paths: tuple[str, ...], config: TrainConfig) -> None:
        try:
            self._count(paths, config)
        except Cancelled:
            self.sigStage.emit("Counting cancelled")
        except WorkbenchError as exc:
            self.sigFailed.emit(str(exc))

    @Slot(object, object)
    def train(self, paths: tuple[str, ...], config: TrainConfig) -> None:
        """Start a new run: count (or reuse the counts), open a store run, train to the target."""
        from workbench.engine.trainer import BpeTrainer

        self._close_run("done")
        try:
            result = self._count(paths, config)
            self._wait_for_kernels()
            self._trainer = BpeTrainer(result.words, config)
            self._config = config
            self._open_run(paths, config, result)
        except Cancelled:
            self._trainer = None
            self.sigStage.emit("Stopped")
            self.sigIdle.emit(IdleState("stopped", 0, 0, False))
            return
        except WorkbenchError as exc:
            self._trainer = None
            self.sigFailed.emit(str(exc))
            return
        self.sigRunStarted.emit(self.run_id)
        self._run(config.vocab_size, None)

    @Slot(object, object)
    def continue_training(self, target: int | None, max_merges: int | None) -> None:
        """Resume after a pause, step N merges, or grow a finished run to a larger target."""
        if self._trainer is None:
            self.sigFailed.emit("no run to continue: press Train first")
            return
        self._run(target, max_merges)

    @Slot()
    def finish(self) -> None:
        """Close the current run in the store (Stop after a pause, or a new corpus)."""
        self._close_run("done")
        self._trainer = None

    @Slot()
    def shutdown(self) -> None:
        """Last request before the thread quits: close the run so nothing is left half-open."""
        self._close_run("interrupted" if self._trainer is not None else "done")
        self._trainer = None
        if self._store is not None:
            self._store.close()
            self._store = None
        self.sigShutDown.emit()

    # --- stages ----------------------------------------------------------------------------
    def _count(self, paths: tuple[str, ...], config: TrainConfig) -> Any:
        from workbench.engine.pretokenize import count_corpus

        key = _corpus_key(paths, config)
        if self._corpus is not None and self._corpus[0] == key:
            self.sigCorpus.emit(self._report)  # a new run's charts need the corpus size too
            return self._corpus[1]
        self.sigStage.emit("Reading the corpus")
        try:
            result = count_corpus(
                [Path(p) for p in paths],
                config,
                progress=self.sigProgress.emit,
                cancel=self.cancel_flag.is_set,
            )
        except WorkbenchError as exc:
            if type(exc).__name__ == "CancelledError":
                raise Cancelled from None
            raise
        self._corpus = (key, result)
        s = result.stats
        self._report = CorpusReport(
            paths=paths,
            documents=s.documents,
            bytes=s.bytes,
            pieces=s.pieces,
            unique_pieces=s.unique_pieces,
            files=s.files,
            skipped=tuple(s.skipped),
            seconds=s.seconds,
            top=tuple(result.words.most_common(TOP_PIECES)),
        )
        self.sigCorpus.emit(self._report)
        return result

    def _wait_for_kernels(self) -> None:
        """Wait here (never in the window) for the background compile, still obeying Stop."""
        if self.warm.is_set():
            return
        self.sigStage.emit("Compiling the trainer… (first start only)")
        while not self.warm.wait(WARM_POLL_SECONDS):
            if self.stop_flag.is_set():
                raise Cancelled

    def _open_run(self, paths: tuple[str, ...], config: TrainConfig, result: Any) -> None:
        self.run_id = -1
        self._writer = None
        if self.db_path is None:
            return
        from workbench.engine.corpus import corpus_record
        from workbench.store import RunStore

        if self._store is None:
            self._store = RunStore(self.db_path)
        stats = result.stats
        name = f"{Path(paths[0]).name}{' +' + str(len(paths) - 1) if len(paths) > 1 else ''}"
        self.run_id = self._store.create_run(
            f"{name} · {config.vocab_size}",
            settings=config,
            corpus=corpus_record(paths, result.files),
            stats={
                k: getattr(stats, k)
                for k in ("documents", "bytes", "pieces", "unique_pieces", "files", "seconds")
            },
        )
        self._writer = self._store.writer(self.run_id)
        self._writer.write_top_pieces(result.words.most_common(TOP_PIECES))
        self._training_seconds = 0.0
        self._last_reason = None

    def _run(self, target: int | None, max_merges: int | None) -> None:
        """The loop: write, announce, then check the flags; one batch is ~50 ms of kernel."""
        trainer = self._trainer
        self.sigStage.emit("Training")
        self._set_state("running")
        started = time.perf_counter()
        # Each batch makes thousands of objects that live on (merge tuples, store rows), so the
        # cyclic GC runs full collections during training, and a full collection walks every
        # object of the process (Qt wrappers, pyqtgraph, Numba's compiler state: ~200k) while
        # holding the GIL: 60-80 ms in which neither this thread nor the window runs. Freezing
        # moves what exists now out of the collector's sight for the run (reference counting
        # still frees them as usual; only a cycle among them waits); thawing afterwards lets
        # the next collection see everything again, so nothing leaks.
        gc.freeze()
        try:
            for batch in trainer.batches(target_vocab_size=target, max_merges=max_merges):
                if self._writer is not None:
                    self._writer.write(batch)
                self.sigBatch.emit(batch)
                if self.pause_flag.is_set() or self.stop_flag.is_set():
                    break
        except Exception as exc:  # a kernel or store failure: report it, keep the window alive
            self._close_run("failed", error=str(exc))
            self._trainer = None
            self.sigFailed.emit(f"training failed: {exc}")
            return
        finally:
            gc.unfreeze()
        reason = trainer.stop_reason
        if reason is None:
            if self.stop_flag.is_set():
                reason = "stopped"
            elif self.pause_flag.is_set():
                reason = "paused"
            else:
                reason = "stepped" if max_merges is not None else "vocab_size"
        self._training_seconds += time.perf_counter() - started
        self._last_reason = reason
        state = "paused" if reason in ("paused", "stepped") else "done"
        self._set_state(state, reason, {"training": round(self._training_seconds, 3)})
        can_continue = reason not in ("no_pairs", "min_frequency")
        self.sigIdle.emit(IdleState(reason, trainer.n_merges, trainer.vocab_size, can_continue))

    # --- store -----------------------------------------------------------------------------
    def _set_state(
        self, state: str, reason: str | None = None, timings: dict[str, float] | None = None
    ) -> None:
        if self._writer is not None:
            self._writer.set_state(state, stop_reason=reason, timings=timings)

    def _close_run(self, state: str, error: str | None = None) -> None:
        """Leave the run in a final state; a paused run keeps its stop reason."""
        if self._writer is None:
            return
        try:
            reason = self._last_reason
            if state == "done" and reason in (None, "paused", "stepped"):
                reason = "stopped"
            self._writer.set_state(state, stop_reason=reason, error=error)
        finally:
            self._writer.close()
            self._writer = None


class KernelWarmer(QObject):
    """Compiles (first start) or loads (later starts) the Numba kernels in its own thread.

    Separate from the training worker so a cold compile and counting the demo corpus overlap;
    the worker waits on `done` only when training actually needs the kernels.
    """

    sigWarm = Signal(float)  # seconds it took
    sigFailed = Signal(str)

    def __init__(self, done: threading.Event) -> None:
        super().__init__()
        # Not `self.event`: that name is QObject.event(), which Qt calls on every event.
        self.done = done

    @Slot()
    def run(self) -> None:
        from workbench.engine.trainer import warm_up

        started = time.perf_counter()
        try:
            warm_up()
        except Exception as exc:  # the trainer then compiles lazily on first use
            self.sigFailed.emit(f"could not precompile the trainer: {exc}")
        finally:
            self.done.set()
        self.sigWarm.emit(time.perf_counter() - started)
