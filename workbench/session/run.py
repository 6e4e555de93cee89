"""`RunSession`: one training run from counted corpus to tokenizer, the only owner of its life.

    session = RunSession.start(counted, TrainConfig(vocab_size=8000), store_path=db)
    session.advance()                       # to the vocab size; batches go to the store first,
    session.advance(target_vocab_size=9000) # then to every listener; grow a finished run
    session.end()                           # done / interrupted / failed, exactly once

The CLI, the public API, the window's worker and `runs continue` all drive this class, so a
run is counted, named, recorded, stopped and ended the same way wherever it starts. Nothing
here knows Qt. The store is optional (`store_path=None` trains without recording).

States: a session is `running` inside `advance`, `paused` after a pause or a step, `done` when
the merge loop reached its end (vocab size, no pairs, minimum frequency) or a person stopped it.
`end()` makes it final: `done` stays `done`, a run left paused or running becomes `interrupted`.
A batch is written to the store before any listener sees it, so what was shown was kept.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import asdict, dataclass, field, fields, replace
from pathlib import Path
from typing import Any

from workbench.engine.config import TrainConfig
from workbench.engine.corpus.identity import corpus_record, fingerprint
from workbench.engine.corpus.listing import list_files
from workbench.engine.errors import CorpusError, WorkbenchError
from workbench.engine.events import MergeBatch
from workbench.engine.pretokenize.results import CorpusStats, PretokenizeResult
from workbench.session import memory
from workbench.session.states import RunState, StopReason

TOP_PIECES = 200  # most frequent pre-tokens kept with a run (the corpus panel shows them)

BatchListener = Callable[[MergeBatch], None]
# Asked between batches: None to go on, or why to return (PAUSED, STOPPED, INTERRUPTED).
StopCheck = Callable[[], StopReason | None]


class RunDeleted(WorkbenchError):
    """The run was deleted from the store while this session still trained it."""


class RunLost(WorkbenchError):
    """The run's end could not be recorded: its database was deleted, replaced or made
    read-only, or the run deleted, while it trained."""


@dataclass
class Counted:
    """A counted corpus: the word table, its statistics, the files read and the paths given
    (empty for documents passed as strings)."""

    result: PretokenizeResult
    paths: tuple[str, ...] = ()
    # SuperBPE runs: the corpus counted again for stage 2 (`pretokenize.stage_two.CappedPieces`)
    # and the seconds that took.
    stage_two: Any = None
    stage_two_seconds: float = 0.0
    # Parity-aware runs: each group's word tables (`engine.train.parity.GroupWords`).
    parity: Any = None

    @property
    def stats(self) -> CorpusStats:
        return self.result.stats


def run_name(paths: Sequence[str], vocab_size: int) -> str:
    """`corpus.txt · 8,000`, `docs +2 · 8,000` for three paths, `texts · 8,000` for strings."""
    if not paths:
        head = "texts"
    else:
        head = Path(paths[0]).name or str(paths[0])
        if len(paths) > 1:
            head += f" +{len(paths) - 1}"
    return f"{head} · {vocab_size:,}"


def stored_config(settings: dict, vocab_size: int) -> TrainConfig:
    """A stored run's settings as a TrainConfig, with a new vocab size."""
    known = {f.name for f in fields(TrainConfig)}
    values = {k: v for k, v in settings.items() if k in known}
    specials = values.get("special_tokens") or ()
    if not isinstance(specials, list | tuple) or not all(isinstance(t, str) for t in specials):
        raise ValueError("special_tokens is not a list of strings")
    values["special_tokens"] = tuple(specials)
    values["vocab_size"] = vocab_size
    return TrainConfig(**values)


def _replay(trainer: Any, n: int) -> None:
    """Make `n` merges again (a SuperBPE trainer hands stage 1's and stage 2's in separate
    steps), or as many as the trainer can."""
    while trainer.n_merges < n:
        made = len(trainer.step(n - trainer.n_merges))
        if made == 0 and trainer.stop_reason is not None:
            return


def _parity_replay(
    counted: Counted, config: TrainConfig, paths: Sequence[str], n: int
) -> tuple[Any, Any, Counted]:
    """A parity-aware run's trainer with its `n` stored merges made again, its log of each
    group's held-out tokens rebuilt from them (the stored one is checked against it), and the
    corpus counted in groups."""
    from workbench.session.parity import ParityLog, count_parity_paths

    if counted.parity is None:  # a caller's count that knows nothing of groups
        counted = count_parity_paths(paths, config)
    trainer = _parity_trainer(counted, config, count_ties=True)
    log = ParityLog(counted)
    while trainer.n_merges < n:
        batch = trainer.step(n - trainer.n_merges)
        log.add(batch)
        if len(batch) == 0:
            break
    return trainer, log, counted


def _superbpe_trainer(counted: Counted, config: TrainConfig, count_ties: bool) -> Any:
    from workbench.engine.train.stages import SuperBpeTrainer
    from workbench.engine.train.trainer import TIE_LIMIT

    if counted.stage_two is None:
        raise WorkbenchError("a SuperBPE run needs its corpus counted for stage 2 as well")
    tie_limit = TIE_LIMIT if count_ties else 0
    return SuperBpeTrainer(counted.result.words, counted.stage_two.words, config, tie_limit)


def _extending_trainer(counted: Counted, config: TrainConfig, base: Any, count_ties: bool) -> Any:
    from workbench.engine.extending import ExtendingTrainer
    from workbench.engine.train.trainer import TIE_LIMIT

    return ExtendingTrainer(
        base, counted.result.words, config, tie_limit=TIE_LIMIT if count_ties else 0
    )


def _sweep_tag(sweep: dict | None) -> dict[str, Any]:
    return {"sweep": sweep} if sweep else {}


def _stage_two_stats(counted: Counted) -> dict[str, Any]:
    """What a SuperBPE run's stage-2 count held and what the memory bound left out."""
    two = counted.stage_two
    if two is None:
        return {}
    return {
        "superbpe": {
            "unique_pieces": len(two.words),  # kept (the bound leaves out what it must)
            "bytes": two.total_bytes,
            "dropped_pieces": two.dropped_pieces,
            "dropped_bytes": two.dropped_bytes,
            # how it was counted, so continuing the run counts it again alike
            "max_distinct_bytes": two.max_distinct_bytes,
            "counted_by": two.counted_by,
        }
    }


def _recount_stage_two(
    count: Callable[..., Any], paths: Sequence[str], config: TrainConfig, stats: Any, where: str
) -> Any:
    """A stored SuperBPE run's stage 2 counted again as the run counted it: by the same counter
    within the same bound, held while counting (`count(paths, config, max_bytes=...)`), so a
    run whose bound filled replays its merges exactly. A run stored before these were recorded
    is counted with today's bound by the counter its settings choose."""
    from workbench.engine.pretokenize import stage_two as two

    recorded = stats.get("superbpe") if isinstance(stats, dict) else None
    recorded = recorded if isinstance(recorded, dict) else {}
    bound = recorded.get("max_distinct_bytes") or two.MAX_DISTINCT_BYTES
    if type(bound) is not int or bound < 0:  # a crafted database
        raise WorkbenchError(f"{where}: its stored SuperBPE bound cannot be used ({bound!r})")
    if recorded.get("counted_by") == "regex":  # counted by `regex` (a small corpus, at first use)
        config = replace(config, pretokenizer="regex")
    got = count(paths, two.stage2_config(config), max_bytes=bound)
    result = got.result if isinstance(got, Counted) else got
    return replace(two.bounded(result, bound), counted_by=two.counted_by(config))


def _parity_trainer(
    counted: Counted,
    config: TrainConfig,
    count_ties: bool,
    kernels_ready: Callable[[], bool] | None = None,
) -> Any:
    """The kernel trainer; on a first start whose kernels are still compiling elsewhere, the
    Python one (the same merges: `tests/test_parity.py`) for the whole run."""
    if counted.parity is None:
        raise WorkbenchError("a parity-aware run needs its corpus counted in groups")
    ties = 100 if count_ties else 0
    if kernels_ready is not None and not kernels_ready():
        from workbench.engine.train.parity import ParityTrainer

        return ParityTrainer(counted.parity, config, ties)
    from workbench.engine.train.parity_kernels import KernelParityTrainer

    return KernelParityTrainer(counted.parity, config, ties)


@dataclass
class RunSession:
    """A trainer, the store run it writes to (if any), and where the run stands."""

    trainer: Any  # engine.trainer.BpeTrainer (imported lazily: it loads Numba)
    config: TrainConfig
    counted: Counted
    run_id: int | None = None
    state: RunState = RunState.PAUSED
    stop_reason: StopReason | None = None
    timings: dict[str, float] = field(default_factory=dict)
    listeners: list[BatchListener] = field(default_factory=list)
    ended: bool = False  # end() was called: the run is final and nothing more is written
    # Why the run's final state could not be recorded (the database deleted, replaced, made
    # read-only or full), or None; leaving the session then raises it (see __exit__).
    lost: str | None = None
    _writer: Any = None
    _stats: dict[str, Any] = field(default_factory=dict)  # the run's stored statistics
    _parity: Any = None  # session.parity.ParityLog of a parity-aware run
    _check: tuple[int, Any] | None = None  # an extension run's check: (merges made, check)

    # -- opening ---------------------------------------------------------------------------

    @classmethod
    def start(
        cls,
        counted: Counted,
        config: TrainConfig,
        store_path: str | Path | None = None,
        name: str | None = None,
        listeners: Iterable[BatchListener] = (),
        sweep: dict[str, Any] | None = None,
        kernels_ready: Callable[[], bool] | None = None,
        count_ties: bool = True,
        extends: Any = None,
    ) -> RunSession:
        """Index the corpus for training and open a new run in the store (when given).
        `sweep` tags the run as one of a sweep (`{"id": ..., "index": i, "of": n}`).
        `kernels_ready`: the trainer's kernels are compiling elsewhere (a first start), so a
        small run may start in Python and move to them when this says so.
        `count_ties=False` leaves every batch's `ties` at 0: counting them is a sixth of the
        merge loop, wasted when nothing records or shows them (`train --no-db`).
        `extends`: a `session.extension.Base`, the tokenizer this run extends (the corpus
        counted with `extension_config`'s config); the run starts from its vocabulary, its
        batches carry the extended tokenizer's ids and `end` checks the extension."""
        from workbench.engine.train.starting import trainer_for  # Numba loads here

        started = time.perf_counter()
        with memory.stage("indexing the corpus for training"):
            if extends is not None:
                trainer = _extending_trainer(counted, config, extends.tokenizer, count_ties)
            elif config.superbpe_transition:
                trainer = _superbpe_trainer(counted, config, count_ties)
            elif config.parity_by:
                trainer = _parity_trainer(counted, config, count_ties, kernels_ready)
            else:
                trainer = trainer_for(counted.result.words, config, kernels_ready, count_ties)
        session = cls(trainer, config, counted, listeners=list(listeners))
        if config.parity_by:
            from workbench.session.parity import ParityLog

            session._parity = ParityLog(counted)
        session.timings = {"pretokenize": round(counted.stats.seconds, 3)}
        if counted.stage_two is not None:
            session.timings["pretokenize_stage2"] = round(counted.stage_two_seconds, 3)
        session.timings["index"] = round(time.perf_counter() - started, 3)
        if store_path is not None:
            from workbench.store.tokenizer_of_run import EXTENDS

            extra = {EXTENDS: extends.record()} if extends is not None else {}
            session._open_new_run(Path(store_path), name, {**_sweep_tag(sweep), **extra})
        return session

    def _open_new_run(self, store_path: Path, name: str | None, extra: dict) -> None:
        from workbench.store import RunStore

        counted = self.counted
        corpus = corpus_record(counted.paths, counted.result.files) if counted.paths else {}
        self._stats = {**asdict(counted.stats), **_stage_two_stats(counted)}
        with memory.stage("recording the run"), RunStore(store_path) as store:
            self.run_id = store.create_run(
                name or run_name(counted.paths, self.config.vocab_size),
                settings={**asdict(self.config), **extra},
                corpus=corpus,
                stats=self._parity.stats() if self._parity else self._stats,
            )
            self._writer = store.writer(self.run_id)
        self._writer.write_top_pieces(counted.result.words.most_common(TOP_PIECES))
        self._writer.set_state(RunState.PAUSED, timings=self.timings)

    @classmethod
    def resume(
        cls,
        store_path: str | Path,
        run_id: int,
        count: Callable[..., PretokenizeResult | Counted],
        vocab_size: int | None = None,
        listeners: Iterable[BatchListener] = (),
    ) -> RunSession:
        """Rebuild a stored run's trainer so it can train on (`runs continue`, the window
        after a restart). The trainer's state is not stored: the same corpus with the same
        settings replays the same merges (the trainer is deterministic), which is checked
        against the store before anything new is written. `count(paths, config)` counts the
        corpus (the caller's progress and cancel ride along); for a parity-aware run it gives
        the `Counted` of `count_paths` (the groups), else it is counted here without them.
        A SuperBPE run's stage 2 is asked for as `count(paths, config, max_bytes=bound)`: the
        corpus counted within its memory bound while counting (`count_corpus`'s `max_bytes`),
        as a new run counts it."""
        from workbench.engine.train.trainer import BpeTrainer
        from workbench.store import RunStore
        from workbench.store.tokenizer_of_run import base_of_run

        # Opening the store marks runs whose process died as interrupted, so a run still
        # running or paused here belongs to a live process.
        with RunStore(store_path) as store:
            run = store.get_run(run_id)
            if run.state in (RunState.RUNNING, RunState.PAUSED):
                raise WorkbenchError(f"run {run_id} is being trained right now")
            base = base_of_run(run, store.path)  # an extension run's, loaded and checked again
            stored = store.merges_as_pairs(run_id, base.vocab if base is not None else None)
        paths = run.corpus.get("paths")
        recorded = run.corpus.get("fingerprint")
        if not isinstance(paths, list) or not all(isinstance(p, str) for p in paths):
            paths = None  # a crafted record: as good as none
        if not paths or not recorded:
            raise WorkbenchError(
                f"run {run_id} did not record its corpus files, so it cannot be continued"
            )
        try:
            files = list_files(paths)
        except CorpusError as exc:
            raise WorkbenchError(
                f"run {run_id}: its corpus is not there any more ({exc})"
            ) from None
        if fingerprint(files) != recorded:
            raise WorkbenchError(
                f"run {run_id}: its corpus changed since it was trained (files, sizes or times"
                " differ); train a new run on it instead"
            )
        specials = len(run.settings.get("special_tokens") or ())
        if vocab_size is not None and vocab_size <= max(
            256 + len(stored) + specials, run.vocab_size
        ):
            raise WorkbenchError(
                f"run {run_id} already has {run.vocab_size:,} tokens; ask for more"
            )
        target = vocab_size if vocab_size is not None else run.settings.get("vocab_size", 0)
        try:  # the database may be crafted: settings of other types than this app writes
            config = stored_config(run.settings, max(int(target), run.vocab_size))
        except (TypeError, ValueError, WorkbenchError) as exc:  # WorkbenchError: ConfigError
            raise WorkbenchError(
                f"{store_path}: run {run_id}: its stored settings cannot be used ({exc})"
            ) from None
        got = count(paths, config)
        counted = got if isinstance(got, Counted) else Counted(got, tuple(paths))
        result = counted.result
        stage_two = None
        log = None
        if config.parity_by:
            trainer, log, counted = _parity_replay(counted, config, paths, len(stored))
        elif base is not None:
            from workbench.engine.extending import ExtendingTrainer

            trainer: Any = ExtendingTrainer(base, result.words, config)
        elif config.superbpe_transition:  # the corpus once more, for stage 2
            from workbench.engine.train.stages import SuperBpeTrainer

            where = f"{store_path}: run {run_id}"
            stage_two = _recount_stage_two(count, paths, config, run.stats, where)
            trainer = SuperBpeTrainer(result.words, stage_two.words, config)
        else:
            trainer = BpeTrainer(result.words, config)
        if log is None:
            _replay(trainer, len(stored))
        if trainer.merge_pairs() != stored or (log is not None and not log.matches(run.stats)):
            raise WorkbenchError(
                f"run {run_id}: replaying its corpus did not give the stored merges"
            )
        counted = replace(counted, stage_two=stage_two) if stage_two is not None else counted
        session = cls(trainer, config, counted, run_id=run_id)
        session._parity = log
        session.listeners = list(listeners)
        session.timings = dict(run.timings)
        session._stats = dict(run.stats)  # what a SuperBPE run adds to them keeps the rest
        with RunStore(store_path) as store:
            session._writer = store.writer(run_id)
        session._writer.set_state(RunState.PAUSED)
        return session

    # -- training --------------------------------------------------------------------------

    @property
    def can_continue(self) -> bool:
        """More merges can be made: not ended, and the merge loop not exhausted."""
        return not self.ended and (self.stop_reason is None or self.stop_reason.can_continue)

    def advance(
        self,
        target_vocab_size: int | None = None,
        max_merges: int | None = None,
        should_stop: StopCheck | None = None,
        batch_seconds: float | None = 0.05,
    ) -> StopReason:
        """Merge to `target_vocab_size` (default: the config's), or `max_merges` more, or until
        `should_stop()` names a reason between batches. Returns why it returned.

        A KeyboardInterrupt ends the run as interrupted and goes on up; any other error ends
        it as failed and goes on up. A run deleted meanwhile ends the session (RunDeleted)."""
        if self.ended:
            raise WorkbenchError("this run has ended; continue it from the store instead")
        self._set(RunState.RUNNING)
        started = time.perf_counter()
        reason: StopReason | None = None
        try:
            for batch in self.trainer.batches(target_vocab_size, max_merges, batch_seconds):
                if self._writer is not None:
                    self._write(batch)
                for listener in self.listeners:
                    listener(batch)
                reason = should_stop() if should_stop is not None else None
                if reason is not None:
                    break
        except RunDeleted:
            raise
        except KeyboardInterrupt:
            self._add_time("merge", started)
            self.end(RunState.INTERRUPTED, StopReason.INTERRUPTED)
            raise
        except MemoryError:
            self._add_time("merge", started)
            release = getattr(self.trainer, "release", None)
            if release is not None:  # the run is over: its arrays go first, since marking it
                release()  # failed needs memory too (SQLite maps its log's shared memory)
            message = self._out_of_memory()
            self.end(RunState.FAILED, error=message)
            raise memory.OutOfMemory(message) from None
        except BaseException as exc:
            self._add_time("merge", started)
            self.end(RunState.FAILED, error=str(exc) or type(exc).__name__)
            raise
        self._add_time("merge", started)
        return self._settle(reason, stepped=max_merges is not None)

    def _settle(self, reason: StopReason | None, stepped: bool) -> StopReason:
        """The state after the merges `advance` made: the reason given between batches, else
        the trainer's, else a step's or the vocabulary size's."""
        if reason is None:
            if self.trainer.stop_reason is not None:
                reason = StopReason(self.trainer.stop_reason)
            elif stepped:
                reason = StopReason.STEPPED
            else:
                reason = StopReason.VOCAB_SIZE
        self.stop_reason = reason
        if self._parity is not None and self._writer is not None:  # the curves up to here
            self._to_store(self._writer.set_stats, self._parity.stats())
        if reason is StopReason.INTERRUPTED:
            self.end(RunState.INTERRUPTED, reason)
        elif reason is StopReason.STOPPED:
            self.end(RunState.DONE, reason)
        elif reason in (StopReason.PAUSED, StopReason.STEPPED):
            self._set(RunState.PAUSED, reason)
        else:
            self._set(RunState.DONE, reason)
        return reason

    def _out_of_memory(self) -> str:
        """`out of memory while merging (after 1,200 merges, kept in run 3)`."""
        if self._writer is None:
            return "out of memory while merging"
        kept = self._writer.next_rank
        return f"out of memory while merging (after {kept:,} merges, kept in run {self.run_id})"

    def _write(self, batch: MergeBatch) -> None:
        self._to_store(self._writer.write, batch)
        if self._parity is not None and self._parity.add(batch):
            self._to_store(self._writer.set_stats, self._parity.stats())
        if (
            batch.stage_start is not None
            and self._stats.get("superbpe", {}).get("transition_rank") is None
        ):  # SuperBPE's stage 2 began: the window's charts mark it
            self._stats.setdefault("superbpe", {})["transition_rank"] = batch.stage_start
            self._to_store(self._writer.set_stats, self._stats)

    def _to_store(self, call: Callable[..., None], *args: Any, **kwargs: Any) -> None:
        """One writer call; a run deleted meanwhile ends the session (RunDeleted)."""
        from workbench.store.errors import RunNotFound

        try:
            call(*args, **kwargs)
        except RunNotFound:
            self._writer.close()
            self._writer = None
            self.state, self.stop_reason, self.ended = RunState.FAILED, StopReason.DELETED, True
            self.lost = f"run {self.run_id} was deleted while it trained"
            raise RunDeleted(self.lost) from None

    def _add_time(self, stage: str, started: float) -> None:
        self.timings[stage] = round(self.timings.get(stage, 0.0) + time.perf_counter() - started, 3)

    def _set(self, state: RunState, reason: StopReason | None = None) -> None:
        self.state = state
        if self._writer is not None:
            self._to_store(self._writer.set_state, state, stop_reason=reason, timings=self.timings)

    # -- ending ----------------------------------------------------------------------------

    def end(
        self,
        state: RunState | None = None,
        reason: StopReason | None = None,
        error: str | None = None,
    ) -> None:
        """Make the run final, once: `done` stays done, paused or running becomes interrupted
        (unless `state` says otherwise). Safe to call again."""
        if self.ended:
            return
        self.ended = True
        if state is None:
            state = RunState.DONE if self.state is RunState.DONE else RunState.INTERRUPTED
        if reason is None:
            reason = self.stop_reason
        if state is RunState.DONE:  # not on Ctrl-C or a failure: no one waits for it then
            self.check_extension()
        self.state = state
        self.stop_reason = reason
        writer, self._writer = self._writer, None
        if writer is None:
            return
        try:
            if self._parity is not None:  # the curves to the last merge written
                writer.set_stats(self._parity.stats())
            writer.set_state(state, stop_reason=reason, error=error, timings=self.timings)
        except WorkbenchError as exc:  # deleted meanwhile, or the file gone: nothing to mark
            self.lost = str(exc)
        finally:
            writer.close()

    @property
    def extends(self) -> bool:
        """This run extends a tokenizer (its trainer started from the base's vocabulary)."""
        return hasattr(self.trainer, "extension")

    def check_extension(self) -> Any:
        """An extension run's check (`evaluate.extension_check.ExtensionCheck`) of the merges
        made so far, kept in the run's stats (`stats["extension"]`); None for other runs. Made
        once, when the run ends, or earlier by a caller that wants it before (the CLI)."""
        if not self.extends:
            return None
        from workbench.evaluate.extension_check import check_extension
        from workbench.session.extension import check_stats

        made = self.trainer.n_merges
        if self._check is None or self._check[0] != made:
            check = check_extension(self.trainer.extension(), self.counted.result.words)
            self._check = (made, check)
            self._stats["extension"] = check_stats(check)
            if self._writer is not None:
                self._to_store(self._writer.set_stats, self._stats)
        return self._check[1]

    def stop(self) -> None:
        """A person's Stop: the run is finished where it stands."""
        # A run the merge loop finished keeps its reason; one paused or not started is stopped.
        self.end(RunState.DONE, None if self.state is RunState.DONE else StopReason.STOPPED)

    # -- results ---------------------------------------------------------------------------

    def merges(self) -> list[tuple[bytes, bytes]]:
        return self.trainer.merge_pairs()

    def tokenizer(self):
        """The tokenizer of the merges made so far (`engine.tokenizer.Tokenizer`)."""
        from workbench.engine.encode.tokenizer import Tokenizer

        trainer = self.trainer
        if self.extends:  # the base's ids and merges first
            return trainer.tokenizer()
        return Tokenizer.from_trainer(
            trainer.vocab,
            trainer.merges,
            trainer.merge_ids,
            self.config.encoding_pattern,
            list(self.config.special_tokens),
        )

    def release_trainer(self) -> None:
        """Free the merge loop's memory when this process will make no more merges for the run
        (the command line, before it writes the files): the merges stay, `advance` then fails.
        The Python trainer of a first start holds little and keeps it."""
        release = getattr(self.trainer, "release", None)
        if release is not None:
            release()

    def export(self, formats: Sequence[str], out: str | Path) -> list[Path]:
        """Write the tokenizer in each format into folder `out`; records the time taken."""
        from workbench.engine.formats.outputs import write_formats_atomically

        started = time.perf_counter()
        # all formats staged, then renamed into place together (a full disk replaces nothing)
        with memory.stage("writing the tokenizer files"):
            written = write_formats_atomically(self.tokenizer(), formats, out)
        self._add_time("export", started)
        return written

    def __enter__(self) -> RunSession:
        return self

    def __exit__(self, exc_type: object, exc: BaseException | None, tb: object) -> None:
        if isinstance(exc, KeyboardInterrupt):
            self.end(RunState.INTERRUPTED, StopReason.INTERRUPTED)
        elif exc is not None:
            self.end(RunState.FAILED, error=str(exc) or type(exc).__name__)
        else:
            self.end()
            if self.lost is not None:  # never report a run the store no longer holds
                raise RunLost(self.lost)
