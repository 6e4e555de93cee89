"""The training worker: Qt plumbing around a `RunSession`, in its own QThread.

The window talks to it only through signals. Requests (`sigTrainRequested`, ...) are queued
into the worker thread and run there one at a time; answers (`sigBatch`, `sigIdle`, ...) are
queued back to the window. A running training loop is cut short by the thread-safe flags, which
the session checks between batches; then the next queued request runs. Everything about the
run itself (counting into the store, states, ending exactly once) is the session's.
"""

from __future__ import annotations

import gc
import threading
import time
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from PySide6.QtCore import QObject, Signal, Slot

from workbench.engine.config import TrainConfig
from workbench.engine.errors import CancelledError, WorkbenchError
from workbench.session.run import Counted, RunDeleted, RunSession
from workbench.session.states import StopReason

WARM_POLL_SECONDS = 0.1
TOP_PIECES = 30  # shown in the corpus panel


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
    """Why the training loop returned (`reason.words` for people), and where the run is."""

    reason: StopReason
    merges: int
    vocab_size: int
    can_continue: bool
    extension: str = ""  # an extension run that ended: its check's one line


_NOW = threading.Event()
_NOW.set()
TRAINING_IN_PYTHON = "Training (in Python until the fast kernels are ready: first start only)"


def _corpus_key(paths: tuple[str, ...], config: TrainConfig) -> tuple[Any, ...]:
    """Only these settings change the pre-token counts; the rest only change training."""
    superbpe = bool(config.superbpe_transition)  # SuperBPE counts stage 2 as well
    key = (paths, config.pattern_string, config.special_tokens, config.on_bad_file, superbpe)
    return (*key, config.parity_by)  # parity-aware counts each group apart


class TrainWorker(QObject):
    """Counts a corpus and trains on it, in the thread it was moved to."""

    # requests, queued into the worker thread
    sigAnalyzeRequested = Signal(object, object)  # paths tuple, TrainConfig
    sigTrainRequested = Signal(object, object)  # paths tuple, TrainConfig
    sigExtendRequested = Signal(object, object, str)  # paths tuple, TrainConfig, base spec
    sigContinueRequested = Signal(object, object)  # target vocab size or None, max merges or None
    sigResumeStoredRequested = Signal(int, object, object)  # run id, target vocab, max merges
    sigSweepRequested = Signal(object, object, object)  # paths tuple, TrainConfig, vocab sizes
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
    sigSweepStep = Signal(int, int)  # run i of n of a sweep is starting
    sigBase = Signal(object)  # an extension run's base: (spec, vocab, merges, vocab size)

    def __init__(
        self,
        db_path: Path | None,
        warm: threading.Event,
        counting_ready: threading.Event | None = None,
    ) -> None:
        super().__init__()
        self.db_path = db_path
        self.warm = warm
        # Set when the pre-tokenizer's kernels are ready (always, when nobody warms them).
        self.counting_ready = counting_ready or warm
        self.pause_flag = threading.Event()
        self.stop_flag = threading.Event()
        self.cancel_flag = threading.Event()
        self.interrupt_flag = threading.Event()  # the window is closing
        self._corpus: tuple[tuple[Any, ...], Any] | None = None
        self._stage_two: Any = None  # SuperBPE's stage-2 count of the corpus counted last
        self._groups: Any = None  # a parity-aware count's groups (with `_corpus`)
        self._report: CorpusReport | None = None
        self.session: RunSession | None = None
        self._stage_words = "Training"  # what the status says while this run trains
        self._trainer: Any = None  # the trainer that run is on
        self.run_id = -1
        self.sigAnalyzeRequested.connect(self.analyze)
        self.sigTrainRequested.connect(self.train)
        self.sigExtendRequested.connect(self.extend)
        self.sigContinueRequested.connect(self.continue_training)
        self.sigResumeStoredRequested.connect(self.resume_stored)
        self.sigSweepRequested.connect(self.sweep)
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

    def request_interrupt(self) -> None:
        """The window is closing: a running loop ends its run as interrupted."""
        self.interrupt_flag.set()
        self.request_stop()

    def _should_stop(self) -> StopReason | None:
        if self.interrupt_flag.is_set():
            return StopReason.INTERRUPTED
        if self.stop_flag.is_set():
            return StopReason.STOPPED
        if self.pause_flag.is_set():
            return StopReason.PAUSED
        return None

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
        self._end_session()
        result = self._prepare(paths, config, quick=True)
        if result is None:
            return
        # First start: a small run trains in Python while the kernels compile (in a helper
        # process), then moves to them; otherwise the kernels are ready here.
        ready = None if self.warm.is_set() else self.warm.is_set
        if ready is not None:
            # Said now: the Python trainer's set-up takes seconds on a busy machine, and the
            # warm-up's countdown from before Train was pressed must not stay on the status.
            self.sigStage.emit(TRAINING_IN_PYTHON)
        try:
            self.session = RunSession.start(
                Counted(result, paths, self._stage_two, parity=self._groups),
                config,
                self.db_path,
                listeners=[self.sigBatch.emit, self._on_batch_stage],
                kernels_ready=ready,
            )
        except WorkbenchError as exc:
            self.sigFailed.emit(str(exc))
            return
        self._announce_run()
        self._run(config.vocab_size, None)

    @Slot(object, object, str)
    def extend(self, paths: tuple[str, ...], config: TrainConfig, spec: str) -> None:
        """Start a run that extends the tokenizer `spec`: load it, count the corpus with its
        pattern and specials, train from its vocabulary (`session.extension`)."""
        from workbench.session.extension import extension_config, load_base

        self._end_session()
        self.sigStage.emit(f"Loading the tokenizer to extend ({spec})")
        try:
            base = load_base(spec, self.db_path)
            config = extension_config(base.tokenizer, config)
        except WorkbenchError as exc:
            self.sigFailed.emit(str(exc))
            return
        result = self._prepare(paths, config)  # its kernels, never the Python trainer
        if result is None:
            return
        try:
            self.session = RunSession.start(
                Counted(result, paths),
                config,
                self.db_path,
                listeners=[self.sigBatch.emit, self._on_batch_stage],
                extends=base,
            )
        except WorkbenchError as exc:
            self.sigFailed.emit(str(exc))
            return
        tok = base.tokenizer  # its vocabulary built here, not in the window's thread
        self.sigBase.emit((base.spec, tok.vocab, len(tok.merges), tok.vocab_size))
        self._announce_run()
        self._run(config.vocab_size, None)

    @Slot(object, object, object)
    def sweep(self, paths: tuple[str, ...], config: TrainConfig, sizes: list[int]) -> None:
        """Train one run per vocab size on one count of the corpus, each tagged with the
        sweep. A pause or stop ends the sweep after the run it interrupts."""
        from workbench.session.sweep import plan_sweep

        self._end_session()
        try:
            steps = plan_sweep(config, sizes, [config.pattern])
        except WorkbenchError as exc:
            self.sigFailed.emit(str(exc))
            return
        result = self._prepare(paths, config)
        if result is None:
            return
        for step in steps:
            self._end_session()
            self.sigSweepStep.emit(step.index, step.of)
            try:
                self.session = RunSession.start(
                    Counted(result, paths, self._stage_two, parity=self._groups),
                    step.config,
                    self.db_path,
                    listeners=[self.sigBatch.emit],
                    sweep=step.tag,
                )
            except WorkbenchError as exc:
                self.sigFailed.emit(str(exc))
                return
            self._announce_run()
            reason = self._run(step.config.vocab_size, None)
            if reason is None or reason in (
                StopReason.PAUSED,
                StopReason.STOPPED,
                StopReason.INTERRUPTED,
            ):
                return

    @Slot(object, object)
    def continue_training(self, target: int | None, max_merges: int | None) -> None:
        """Resume after a pause, step N merges, or grow a finished run to a larger target."""
        if self.session is None or not self.session.can_continue:
            self.sigFailed.emit("no run to continue: press Train first")
            return
        self._run(target, max_merges)

    @Slot(int, object, object)
    def resume_stored(self, run_id: int, target: int | None, max_merges: int | None) -> None:
        """Continue a stored run (after a restart): recount its corpus, replay its merges
        (checked against the store), then train on."""
        from workbench.engine.pretokenize.counting import count_corpus
        from workbench.session.counting import count_paths

        self._end_session()
        if self.db_path is None:
            self.sigFailed.emit("runs are not being recorded, so none can be continued")
            return

        def count(paths, config, max_bytes=None):
            self.sigStage.emit(f"Reading run {run_id}'s corpus to continue it")
            if max_bytes is not None:  # SuperBPE's stage 2, within its bound while counting
                return count_corpus(
                    paths,
                    config,
                    progress=self.sigProgress.emit,
                    cancel=self.cancel_flag.is_set,
                    max_bytes=max_bytes,
                )
            # One count a call: a SuperBPE run's resume asks for each stage's by itself.
            counted = count_paths(
                paths,
                replace(config, superbpe_transition=0),
                progress=self.sigProgress.emit,
                cancel=self.cancel_flag.is_set,
            )
            return counted if config.parity_by else counted.result  # (the groups)

        try:
            self._wait_for_kernels()
            self.session = RunSession.resume(
                self.db_path, run_id, count, target, listeners=[self.sigBatch.emit]
            )
        except (Cancelled, CancelledError):
            self.sigStage.emit("Stopped")
            self.sigIdle.emit(IdleState(StopReason.STOPPED, 0, 0, False))
            return
        except WorkbenchError as exc:
            self.sigFailed.emit(f"cannot continue run {run_id}: {exc}")
            return
        self._announce_run()
        self._run(target, max_merges)

    @Slot()
    def finish(self) -> None:
        """Stop pressed outside a loop (paused or finished), or a new corpus: end the run."""
        if self.session is not None:
            self.session.stop()
            self.session = None

    @Slot()
    def shutdown(self) -> None:
        """Last request before the thread quits: a finished run stays done, one left paused
        or running is recorded as interrupted."""
        self._end_session()
        self.sigShutDown.emit()

    # --- stages ----------------------------------------------------------------------------
    def _prepare(self, paths: tuple[str, ...], config: TrainConfig, quick: bool = False) -> Any:
        """The corpus counted and the kernels ready, or None (said to the window) when it was
        stopped or could not be read. `quick`: on a first start, a run the Python trainer can
        start (`starting_trainer`) does not wait for the trainer's kernels."""
        from workbench.engine.train.starting import python_can_start

        try:
            result = self._count(paths, config)
            # Warm (the kernels cached, loading in about a second): wait for them, never Python.
            quick = quick and not self.warm.is_set() and _first_use(config)
            # SuperBPE's stages run on the kernels only (no Python trainer for stage 2); a
            # quick parity-aware run trains in Python throughout (`session.run._parity_trainer`).
            python = quick and (bool(config.parity_by) or python_can_start(result.words, config))
            if config.superbpe_transition or not python:
                self._wait_for_kernels()
        except Cancelled:
            self.sigStage.emit("Stopped")
            self.sigIdle.emit(IdleState(StopReason.STOPPED, 0, 0, False))
            return None
        except WorkbenchError as exc:
            self.sigFailed.emit(str(exc))
            return None
        return result

    def _announce_run(self) -> None:
        """Tell the window which stored run the new session writes (-1: not recorded)."""
        self.run_id = self.session.run_id if self.session.run_id is not None else -1
        self.sigRunStarted.emit(self.run_id)

    def _end_session(self) -> None:
        if self.session is not None:
            self.session.end()
            self.session = None

    def _count(self, paths: tuple[str, ...], config: TrainConfig) -> Any:
        from workbench.session.counting import count_paths
        from workbench.session.startup import small_corpus

        key = _corpus_key(paths, config)
        if self._corpus is not None and self._corpus[0] == key:
            self.sigCorpus.emit(self._report)  # a new run's charts need the corpus size too
            return self._corpus[1]
        if not self.counting_ready.is_set() and _first_use(config) and small_corpus(paths):
            # First start: `regex` counts a small corpus before the scanner would compile.
            config = replace(config, pretokenizer="regex")
        self._wait_for(self.counting_ready if config.pretokenizer == "auto" else _NOW)
        if config.superbpe_transition:
            self.sigStage.emit(_superbpe_reading_words(paths, config))
        else:
            self.sigStage.emit("Reading the corpus")
        try:
            # The session's counting, as the API and the CLI count (memory limits included).
            counted = count_paths(
                paths, config, progress=self.sigProgress.emit, cancel=self.cancel_flag.is_set
            )
        except CancelledError:
            raise Cancelled from None
        result, self._stage_two = counted.result, counted.stage_two
        self._groups = counted.parity
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
        self._wait_for(self.warm)

    def _wait_for(self, ready: threading.Event) -> None:
        """Wait here (never in the window) for the background compile, still obeying Stop.
        The window shows the warm-up's own progress meanwhile ("2 of 3")."""
        if ready.is_set():
            return
        from workbench.session.startup import wait_words

        # Warm starts wait about a second to load: no "first use" word then (it was a lie).
        self.sigStage.emit(wait_words())
        while not ready.wait(WARM_POLL_SECONDS):
            if self.stop_flag.is_set() or self.cancel_flag.is_set():
                raise Cancelled

    def _training_words(self) -> str:
        # The trainer of the run `_run` drives (the window may drop `self.session` meanwhile).
        trainer = self._trainer
        if getattr(trainer, "in_python", False):
            return TRAINING_IN_PYTHON
        if getattr(trainer, "starting_stage_two", False):
            return "Training: starting SuperBPE's stage 2 (encoding the corpus's stage-2 pieces)"
        if getattr(trainer, "stage", 1) == 2:
            return "Training (SuperBPE stage 2: merges may cross spaces)"
        return "Training"

    def _on_batch_stage(self, batch: Any) -> None:
        """Say "Training" again once a first start's run has moved to the fast kernels."""
        words = self._training_words()
        if words != self._stage_words:
            self._stage_words = words
            self.sigStage.emit(words)

    def _run(self, target: int | None, max_merges: int | None) -> StopReason | None:
        """The loop: the session writes each batch to the store, then announces it."""
        session = self.session
        self._trainer = session.trainer
        self._stage_words = self._training_words()
        self.sigStage.emit(self._stage_words)
        # Each batch makes thousands of objects that live on (merge tuples, store rows), so the
        # cyclic GC runs full collections during training, and a full collection walks every
        # object of the process (Qt wrappers, pyqtgraph, Numba's compiler state: ~200k) while
        # holding the GIL: 60-80 ms in which neither this thread nor the window runs. Freezing
        # moves what exists now out of the collector's sight for the run (reference counting
        # still frees them as usual; only a cycle among them waits); thawing afterwards lets
        # the next collection see everything again, so nothing leaks.
        gc.freeze()
        try:
            reason = session.advance(target, max_merges, should_stop=self._should_stop)
        except RunDeleted:
            self.session = None
            self.sigFailed.emit(f"run {self.run_id} was deleted while it trained")
            self.sigIdle.emit(IdleState(StopReason.DELETED, 0, 0, False))
            return None
        except Exception as exc:  # a kernel or store failure: report it, keep the window alive
            self.session = None
            self.sigFailed.emit(f"training failed: {exc}")
            return None
        finally:
            gc.unfreeze()
        trainer = session.trainer
        extension = ""
        if session.extends and reason not in (StopReason.PAUSED, StopReason.STEPPED):
            try:  # kept in the run's stats; shown in the status and the run info
                extension = session.check_extension().summary()
            except WorkbenchError as exc:
                extension = f"Extension check not made: {exc}"
        if session.ended:
            self.session = None
        self.sigIdle.emit(
            IdleState(reason, trainer.n_merges, trainer.vocab_size, session.can_continue, extension)
        )
        return reason


class KernelWarmer(QObject):
    """The window's start-up, in its own thread: a thin Qt wrapper over `session.startup` (the
    one owner of start-up, with the CLI's and the API's policy, locks and per-user cache) that
    turns its events into signals.

    Separate from the training worker so the window stays live and says what it waits for.
    `counting` is set once the pre-tokenizer is cached (counting a large corpus waits for it,
    so a first start's compile is never counted as corpus time; a small one is counted with
    `regex` meanwhile), `done` once the trainer's kernels are loaded (a small run trains in
    Python until then). On a first start they compile in detached helper processes, so this
    process keeps the GIL free for the window, counting and the Python trainer, and a compile
    the window started finishes even if it is closed; later starts only load them here. The
    encoder follows last, for the Tokens tab and the teaching sample.
    """

    sigWarm = Signal(float)  # seconds it took
    sigFailed = Signal(str)
    # stages done, of total, the line to show ("Preparing the gpt2 pre-tokenizer (first use)
    # — 1 of 3, about 15 s"), compiling (False: a warm start loading from the cache)
    sigProgress = Signal(int, int, str, bool)
    sigEncoderReady = Signal()

    def __init__(
        self, done: threading.Event, counting: threading.Event, pattern: str = "gpt2"
    ) -> None:
        super().__init__()
        # Not `self.event`: that name is QObject.event(), which Qt calls on every event.
        self.done = done
        self.counting = counting
        self.pattern = pattern
        # Set once encoding compiles nothing: the window's thread must never compile it.
        self.encoder = threading.Event()
        self.compiled = False  # this start compiled something (the first start)
        # Set by the closing window: stop waiting (the helpers finish on their own).
        self.cancel = threading.Event()

    @Slot()
    def run(self) -> None:
        from workbench.engine import warmup
        from workbench.session import startup

        started = time.perf_counter()
        if startup.missing(startup.needs("encode", [self.pattern])):
            warmup.hold_encoder()  # encoding jobs wait for the helper's encoder
        try:
            # nice: the window trains in Python and stays responsive while the helpers work;
            # the encoder follows in the helper that compiles the scanner (it reuses its kernels).
            compiled = startup.ensure(
                "train", [self.pattern], self._report, self.cancel, self._stage_ready, nice=True,
                then="encode",
            )  # fmt: skip
            self.compiled = bool(compiled)
            if not compiled:
                self.sigProgress.emit(0, 1, "Loading the fast kernels", False)
            self.counting.set()
            warmup.warm_up(self.pattern, helper=False, only=("pretokenizer", "index", "merges"))
        except CancelledError:
            return  # the app is closing (events set below; the encoder stays held)
        except Exception as exc:  # the kernels then compile lazily on first use
            self.sigFailed.emit(f"could not prepare the fast kernels: {exc}")
        finally:
            self.counting.set()
            self.done.set()
            self.sigWarm.emit(time.perf_counter() - started)
        # The encoder, for the Tokens tab; if this fails, the tab compiles it on first use.
        try:
            startup.ensure("encode", [self.pattern], self._report, self.cancel, nice=True)
            warmup.warm_up(self.pattern, helper=False, only=("encoder",))
        except CancelledError:
            return
        except Exception:  # noqa: BLE001 -- it compiles on first use instead
            pass
        warmup.release_encoder()
        self.encoder.set()
        self.sigEncoderReady.emit()

    def _report(self, event: Any) -> None:
        # The trainer's waits only: the last event ("ready") is said by sigWarm, and the
        # encoder's is named by the tab that waits for it (a line here would outlive it).
        if event.need is not None and event.job == "train":
            self.sigProgress.emit(event.done, event.total, _sentence(event.line()), True)

    def _stage_ready(self, need: Any) -> None:
        if need.stage == "pretokenizer":
            self.counting.set()  # the worker's counting loads it from the cache


def _superbpe_reading_words(paths: tuple[str, ...], config: TrainConfig) -> str:
    """What the window says while a SuperBPE run reads its corpus: its first use with the
    scanner on a corpus `regex` would not count sooner compiles the stage-2 counter first."""
    from workbench.engine.warmup import stage_two_ready
    from workbench.session.counting import stage_two_compiles

    words = "Reading the corpus twice (SuperBPE: stage 1, then stage 2"
    first_compile = stage_two_ready() is False and not stage_two_compiles(paths)
    if config.pretokenizer == "auto" and first_compile:
        return words + "; first SuperBPE run: compiling the stage-2 counter, about 15 s)"
    return words + ")"


def _first_use(config: TrainConfig) -> bool:
    """Whether a run with `config` would wait for a compile (`session.startup` knows): only then
    may it start in Python and say "first start only"; on a warm start the warmer is only
    loading the cached kernels (about a second), and the run waits for that instead."""
    from workbench.session import startup

    return bool(startup.missing(startup.needs("train", [config.pattern_string])))


def _sentence(line: str) -> str:
    """startup's lines start in lower case (they follow "bpe-workbench: "); a label does not."""
    return line[:1].upper() + line[1:]
