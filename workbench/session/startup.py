"""The one owner of start-up: which kernels a job needs, which are ready, and the first-use policy.

Every path that runs the engine asks here first: the API (`workbench.train`, `load`), each
command (train, count, encode, eval, render, runs continue, bench, prepare) and the window.

    needs = startup.needs("eval", ["o200k", "cl100k"])   # [Need("encoder", "o200k"), ...]
    startup.ensure("eval", ["o200k"], report=print_line)   # compiles what is missing, or nothing
    start = startup.plan_training(paths, config, report)   # a small first run starts at once

Kernels compile in detached helper processes (`engine.warmup.start_detached`): each stage under
a lock file in the kernel cache, so two commands never compile the same stage twice, and a
compile a command started finishes even after the command has ended: the next command loads
it. `report` receives a `StartupEvent` per stage being waited for ("preparing the o200k
encoder (first use) — 2 of 3, about 20 s"), and nothing at all when every kernel is cached:
no "first use" word on a warm start. Qt-free; the engine's `warmup` holds the mechanics.
"""

from __future__ import annotations

import dataclasses
import logging
import os
import subprocess
import threading
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

from workbench._cache_dir import kernel_cache_dir
from workbench.engine.config import TrainConfig
from workbench.engine.patterns.regexes import NO_SPLIT

LOG = logging.getLogger("workbench")

# The stages each job runs (engine.warmup names them). The scanner's stage only where the
# pattern has one (a preset); `prepare` and `bench` need them all.
JOB_STAGES: dict[str, tuple[str, ...]] = {
    "train": ("pretokenizer", "index", "merges"),
    "continue": ("index", "merges"),
    "count": ("pretokenizer",),
    "encode": ("encoder",),
    "eval": ("encoder",),
    "render": ("encoder",),
    "bench": ("pretokenizer", "index", "merges", "encoder"),
    "prepare": ("pretokenizer", "index", "merges", "encoder"),
}
# CPU seconds a stage takes to compile on the reference machine (2 cores; `compile.log` in the
# cache after `bpe-workbench prepare`: 5 and 7 for the trainer, 12-24 per preset for the
# pre-tokenizer, 23 for gpt2's encoder since its block loop: `benchmarks/compile_costs.py
# --stages encoder`): only for "about N s"; a busy machine takes longer.
STAGE_SECONDS = {"pretokenizer": 15.0, "index": 5.0, "merges": 7.0, "encoder": 22.0}
# o200k's scanner rules compile the longest (`benchmarks/compile_costs.py`: its window step
# alone is 15-25 CPU s; its encoder 35), so its stages are estimated on their own.
PRESET_STAGE_SECONDS = {("pretokenizer", "o200k"): 24.0, ("encoder", "o200k"): 34.0}
# Stages that do not depend on the pattern: listed once however many presets a job uses.
SHARED_STAGES = ("index", "merges")
# Corpora up to this size start training at once on a first use: `regex` counts them (a few
# MB a second) sooner than the scanner would compile, and the Python trainer makes the first
# merges while the kernels compile in the background.
QUICK_COUNT_BYTES = 8 << 20
# Corpora up to this size (and over QUICK_COUNT_BYTES) are counted with `regex` on a first use
# while the trainer compiles, the scanner after it: `regex` counts a preset at about 6 MB a CPU
# second, so 30 MB take 5 CPU s against the gpt2 scanner's 15 CPU s of compiling (24-38 for
# o200k) before it counts at all; past this size the scanner is sooner.
REGEX_COUNT_BYTES = 64 << 20
# Text up to this size is encoded at once by the pure-Python encoder when a job's encoders are
# not compiled (it does about 3 MB a CPU second on o200k; the encoder compiles in 15-30).
QUICK_ENCODE_BYTES = 16 << 20
# What the Python encoder can stand in for: the reference rank files.
PYTHON_ENCODABLE = ("gpt2", "cl100k", "o200k")
POLL_SECONDS = 0.2
# Under this many seconds left, or past the estimate, a wait says "any moment now": never
# "about 0 s" or a negative figure.
ANY_MOMENT = 1.0
# Reports that keep their lines (a log, a file, a pipe) get a countdown line at most this often;
# a window's label and a terminal's line are rewritten at every second instead.
TICK_EVERY_SECONDS = 10.0

Report = Callable[["StartupEvent"], None]
Clock = Callable[[], float]


@dataclass(frozen=True)
class Need:
    """One stage of kernels for one pattern (a preset name, or a custom pattern string)."""

    stage: str
    pattern: str

    @property
    def label(self) -> str:
        """What a user is told is being prepared: "the o200k encoder"."""
        from workbench.engine.patterns.regexes import preset_name, resolve

        name = preset_name(resolve(self.pattern))
        which = f"{name} " if name is not None else "custom-pattern "
        return {
            "pretokenizer": f"the {which}pre-tokenizer",
            "index": "the trainer's pair index",
            "merges": "the trainer's merge loop",
            "encoder": f"the {which}encoder",
        }[self.stage]


@dataclass(frozen=True)
class StartupEvent:
    """A wait being named: `done` stages of `total` ready, `need` next, about `seconds_left`."""

    job: str
    need: Need | None  # None: the last event, everything is ready
    done: int
    total: int
    seconds_left: float
    note: str = ""  # set: the stages compile in the background while the work goes on
    background: tuple[Need, ...] = ()
    tick: bool = False  # the same stage as the last event, its figure counted down

    def line(self) -> str:
        if self.need is None:
            return f"fast kernels ready for {self.job} ({self.total} compiled)"
        if self.note:
            names = ", ".join(need.label for need in self.background or (self.need,))
            return (
                f"preparing {names} in the background (first use, {about(self.seconds_left)}); "
                f"{self.note}"
            )
        return (
            f"preparing {self.need.label} (first use) — {self.done + 1} of {self.total}, "
            f"{about(self.seconds_left)}"
        )


def about(seconds: float) -> str:
    """ "about 12 s"; "any moment now" under a second or past the estimate (never 0 or less)."""
    if not seconds >= ANY_MOMENT:  # also NaN
        return "any moment now"
    return f"about {round(seconds)} s"


class Countdown:
    """The figure a waiting person sees: counts down with the clock within a stage, never below
    zero ("any moment now" past it), and at each new stage re-estimated from what is left,
    stretched by how far behind the plan the wait is (a busy machine compiles slower)."""

    def __init__(self, planned: float, clock: Clock) -> None:
        self.clock = clock
        self.started = clock()
        self.planned = planned  # seconds the whole wait was estimated at
        self.base = planned  # the figure at the start of the current stage
        self.at = self.started

    def new_stage(self, remaining_estimate: float) -> float:
        now = self.clock()
        on_plan = self.planned - remaining_estimate  # seconds the plan expected to be gone
        elapsed = now - self.started
        slowness = min(4.0, max(1.0, elapsed / on_plan)) if on_plan > 0 else 1.0
        self.base, self.at = remaining_estimate * slowness, now
        return self.base

    def left(self) -> float:
        return max(0.0, self.base - (self.clock() - self.at))


def needs(job: str, patterns: Iterable[str] = ("gpt2",)) -> list[Need]:
    """The stages a job runs with these patterns, in the order it runs them."""
    from workbench.engine.warmup import stages

    wanted = JOB_STAGES[job]
    found: list[Need] = []
    for pattern in patterns or ("gpt2",):
        for stage in stages(pattern):
            if stage not in wanted:
                continue
            need = Need(stage, "gpt2" if stage in SHARED_STAGES else pattern)
            if need not in found:
                found.append(need)
    return sorted(found, key=lambda need: wanted.index(need.stage))


def missing(wanted: Iterable[Need]) -> list[Need]:
    """The needs not compiled (in this process or the cache); unknown counts as ready."""
    from workbench.engine.warmup import is_ready

    return [need for need in wanted if is_ready(need.stage, need.pattern) is False]


def lock_folder() -> Path:
    return kernel_cache_dir() / "locks"


def log_file() -> Path:
    """Where the helper processes write (they outlive the command, so not its terminal)."""
    return kernel_cache_dir() / "compile.log"


def estimate(wanted: Sequence[Need]) -> float:
    """About how many seconds `wanted` take to compile one after another."""
    from workbench.engine.patterns.regexes import preset_name, resolve

    def seconds(need: Need) -> float:
        preset = preset_name(resolve(need.pattern))
        return PRESET_STAGE_SECONDS.get((need.stage, preset or ""), STAGE_SECONDS[need.stage])

    return sum(map(seconds, wanted))


class Background:
    """Stages compiling in detached helpers; `ready()` once all are cached and unlocked."""

    def __init__(
        self, wanted: Sequence[Need], nice: bool = True, afterwards: Sequence[Need] = ()
    ) -> None:
        """`nice`: the helpers run at a lower priority (the caller works meanwhile); False
        when the caller only waits for them. `afterwards`: stages one helper compiles after
        `wanted`, lowered, for a later command (`ready()` does not wait for them)."""
        self.needs = list(wanted)
        self.helpers = _start_helpers(self.needs, nice, afterwards)
        self._ready = not self.needs

    def ready(self) -> bool:
        if not self._ready:
            self._ready = all(_settled(need) for need in self.needs)
        return self._ready

    def seconds_left(self, remaining: Sequence[Need]) -> float:
        """About how long `remaining` takes, its helpers compiling side by side."""
        return estimate(remaining) / max(1, min(len(self.helpers), os.cpu_count() or 1))

    def helpers_ended(self) -> bool:
        return all(proc.poll() is not None for proc in self.helpers)


def start_background(job: str, patterns: Iterable[str] = ("gpt2",)) -> Background:
    """Compile what `job` misses in detached helpers and return at once (never waits)."""
    return Background(missing(needs(job, patterns)))


def ensure(
    job: str,
    patterns: Iterable[str] = ("gpt2",),
    report: Report | None = None,
    cancel: threading.Event | None = None,
    on_ready: Callable[[Need], None] | None = None,
    nice: bool = False,
    then: str | None = None,
) -> list[Need]:
    """Make every kernel `job` needs ready, compiling what is missing (returns it: empty on any
    start after the first, and then `report` is never called). `on_ready(need)` as each missing
    stage is cached (the window starts counting once the scanner is). `cancel` set: stop waiting
    with CancelledError (a closing window); the detached helpers finish their compile anyway,
    so the next start loads it. `nice`: the helpers at a lower priority (the window, whose
    person works meanwhile); by default not, since the caller only waits for them. `then`: a
    job whose missing stages the helpers compile next, lowered, without waiting for them (the
    window's encoder after the trainer: no core idles between the two waits)."""
    todo = missing(needs(job, patterns))
    if not todo:
        return []
    later = [need for need in missing(needs(then, patterns)) if need not in todo] if then else []
    background = Background(todo, nice, later)
    _wait_through(job, todo, background, report, cancel, on_ready)
    if report is not None:
        report(StartupEvent(job, None, len(todo), len(todo), 0.0))
    return todo


def _wait_through(
    job: str,
    todo: Sequence[Need],
    background: Background,
    report: Report | None,
    cancel: threading.Event | None = None,
    on_ready: Callable[[Need], None] | None = None,
) -> None:
    """Wait for each of `todo` in turn, reporting each stage and, while it compiles, its figure
    counting down (a `tick` event each time the shown figure changes)."""
    countdown = Countdown(background.seconds_left(todo), _clock)
    total = len(todo)
    for done, need in enumerate(todo):
        if _settled(need):  # compiled meanwhile beside the stage before: nothing to wait for
            if on_ready is not None:
                on_ready(need)
            continue
        first = StartupEvent(
            job, need, done, total, countdown.new_stage(background.seconds_left(todo[done:]))
        )
        shown = [first.line()]

        def tick(need: Need = need, done: int = done, shown: list[str] = shown) -> None:
            event = StartupEvent(job, need, done, total, countdown.left(), tick=True)
            if report is not None and event.line() != shown[0]:
                shown[0] = event.line()
                report(event)

        if report is not None:
            report(first)
        _wait_for(need, background, cancel, tick)
        if on_ready is not None:
            on_ready(need)


def prepare(
    patterns: Iterable[str], report: Report | None = None, jobs: Sequence[str] = ("prepare",)
) -> list[Need]:
    """`bpe-workbench prepare`: everything the presets need, compiled now."""
    todo: list[Need] = []
    for job in jobs:
        todo += [need for need in needs(job, patterns) if need not in todo]
    todo = missing(todo)
    background = Background(todo, nice=False)  # someone waits for it
    _wait_through("prepare", todo, background, report)
    return todo


# --- training: the one first-use policy --------------------------------------------------------


@dataclass
class TrainingStart:
    """How a training run starts: the config to count with (`regex` while the scanner is not
    compiled: the same pieces) and `kernels_ready` for `RunSession.start` (None: the Numba
    trainer from the first merge)."""

    count_config: TrainConfig
    kernels_ready: Callable[[], bool] | None = None
    waited: list[Need] = dataclasses.field(default_factory=list)


def plan_training(
    paths: Iterable[str | os.PathLike] | None,
    config: TrainConfig,
    report: Report | None = None,
    scanner_path: bool = True,
) -> TrainingStart:
    """Start a run without waiting where that is cheap and exact: a small corpus on disk
    (`paths`; None: documents in memory) in LEX mode is counted with `regex` and trained in
    Python while helpers compile; anything else waits for the kernels here, each wait named
    through `report`. Nothing is reported when every kernel is ready."""
    job = "train" if scanner_path and config.pretokenizer == "auto" else "continue"
    if config.superbpe_transition:  # stage 2 needs the trainer's kernels and the encoder's
        waited = ensure(job, [config.pattern_string], report)
        return TrainingStart(config, waited=waited + ensure("encode", [NO_SPLIT], report))
    wanted = needs(job, [config.pattern_string])
    todo = missing(wanted)
    if not todo:
        return TrainingStart(config)
    size = corpus_bytes(paths) if paths is not None else None
    if config.tie_break == "hf" or size is None or size > REGEX_COUNT_BYTES:
        return TrainingStart(config, waited=ensure(job, [config.pattern_string], report))
    if size > QUICK_COUNT_BYTES:
        return _count_while_trainer_compiles(job, config, todo, report)
    background = Background(todo)
    scanner_missing = any(need.stage == "pretokenizer" for need in todo)
    trainer_missing = any(need.stage in SHARED_STAGES for need in todo)
    if report is not None:
        note = "training starts at once in Python and moves to the fast kernels when ready"
        if config.parity_by:  # the parity-aware trainer is Python throughout
            note = "parity-aware training starts at once in Python (first start only)"
        left = background.seconds_left(todo)
        report(StartupEvent(job, todo[0], 0, len(todo), left, note, tuple(todo)))
    count_config = dataclasses.replace(config, pretokenizer="regex") if scanner_missing else config
    return TrainingStart(count_config, background.ready if trainer_missing else None, todo)


def _count_while_trainer_compiles(
    job: str, config: TrainConfig, todo: list[Need], report: Report | None
) -> TrainingStart:
    """A mid-sized corpus on a first use: `regex` counts it (the same pieces) on every core
    while one helper compiles the trainer at the normal priority, then the scanner lowered for
    the next run; the merges start in Python and move to the kernels when they are ready."""
    scanner = [need for need in todo if need.stage == "pretokenizer"]
    trainer = [need for need in todo if need.stage in SHARED_STAGES]
    background = Background(trainer, nice=False, afterwards=scanner)
    if report is not None:
        note = "counting with regex meanwhile (the same pieces)"
        if trainer:
            note += "; training starts in Python and moves to the fast kernels when ready"
        if scanner and trainer:
            note += f"; {scanner[0].label} compiles after them, for the next run"
        shown = trainer or scanner
        left = estimate(shown)  # one helper, the stages one after another
        report(StartupEvent(job, shown[0], 0, len(shown), left, note, tuple(shown)))
    count_config = dataclasses.replace(config, pretokenizer="regex") if scanner else config
    return TrainingStart(count_config, background.ready if trainer else None, todo)


# --- encoding: the same policy for the encoder -------------------------------------------------


def python_encoding_pays(
    job: str, specs: Sequence[str], text_bytes: int, only_ids: bool = True
) -> list[Need]:
    """The encoders `job` misses, when it should encode `text_bytes` of text with the pure-Python
    encoder now instead of waiting for them: every tokenizer in `specs` is a reference (a rank
    file), the text is small, and the job needs only ids (`only_ids`; token health reads the
    tokenizer's tables). Empty: wait with `ensure` as usual (or nothing is missing)."""
    if not only_ids or text_bytes > QUICK_ENCODE_BYTES or not specs:
        return []
    if any(spec not in PYTHON_ENCODABLE for spec in specs):
        return []
    return missing(needs(job, specs))


def plan_encoding(
    job: str,
    specs: Sequence[str],
    text_bytes: int,
    report: Report | None = None,
    only_ids: bool = True,
) -> Background | None:
    """Encode in Python now where `python_encoding_pays`: the missing encoders then compile in
    detached helpers (kept for the next run), the wait is named through `report`, and their
    Background is returned. None: wait with `ensure` as usual. The same ids either way
    (`engine.python_encoder`)."""
    todo = python_encoding_pays(job, specs, text_bytes, only_ids)
    if not todo:
        return None
    background = Background(todo)
    if report is not None:
        note = "encoding starts at once in Python (the same ids, slower on large text)"
        left = background.seconds_left(todo)
        report(StartupEvent(job, todo[0], 0, len(todo), left, note, tuple(todo)))
    return background


def corpus_bytes(paths: Iterable[str | os.PathLike]) -> int | None:
    """The listed size of the corpus under `paths`; None when it cannot be listed (counting
    then reports why, in its own words)."""
    from workbench.engine.corpus.listing import list_corpus
    from workbench.engine.errors import WorkbenchError

    try:
        return sum(list_corpus(paths).sizes)
    except (WorkbenchError, OSError, ValueError):
        return None


def small_corpus(paths: Iterable[str | os.PathLike]) -> bool:
    """Whether `regex` counts this corpus sooner than the scanner would compile."""
    size = corpus_bytes(paths)
    return size is not None and size <= QUICK_COUNT_BYTES


def wait_words(job: str = "train", pattern: str = "gpt2") -> str:
    """The window's words while a job waits for its kernels: "first use" only when compiling."""
    if missing(needs(job, [pattern])):
        return "Preparing the fast kernels (first use)"
    return "Loading the fast kernels"


# --- ways to report --------------------------------------------------------------------------


def to_stream(stream, quiet: bool = False) -> Report | None:
    """A report printing each event's line (the command line: stderr). On a terminal the line
    is rewritten in place as its figure counts down; elsewhere (a log file, a pipe) a line per
    stage and a countdown line at most every `TICK_EVERY_SECONDS`."""
    if quiet:
        return None
    if _is_terminal(stream):

        def rewrite(event: StartupEvent) -> None:
            end = "\n" if event.need is None else ""
            print(f"\r\x1b[Kbpe-workbench: {event.line()}", end=end, file=stream, flush=True)

        return rewrite

    def report(event: StartupEvent) -> None:
        print(f"bpe-workbench: {event.line()}", file=stream, flush=True)

    return seldom(report)


def to_log(logger: logging.Logger = LOG) -> Report:
    """A report through `logging` (the Python API): INFO per stage, so `logging.basicConfig(
    level="INFO")` shows it, and a countdown line at most every `TICK_EVERY_SECONDS`; the
    API's progress display shows the same lines."""

    def report(event: StartupEvent) -> None:
        logger.info("%s", event.line())

    return seldom(report)


def seldom(report: Report, every: float = TICK_EVERY_SECONDS, clock: Clock | None = None) -> Report:
    """`report` for outputs that keep every line: each stage, and its countdown at most every
    `every` seconds (and once when it reaches "any moment now")."""
    clock = clock or _clock
    last = {"at": float("-inf"), "line": ""}

    def throttled(event: StartupEvent) -> None:
        now = clock()
        line = event.line()
        late = line.endswith("any moment now") and not last["line"].endswith("any moment now")
        if event.tick and not late and now - last["at"] < every:
            return
        last["at"], last["line"] = now, line
        report(event)

    return throttled


def _is_terminal(stream) -> bool:
    try:
        return bool(stream.isatty())
    except (AttributeError, ValueError):
        return False


# --- waiting --------------------------------------------------------------------------------


def _start_helpers(
    todo: Sequence[Need], nice: bool = True, afterwards: Sequence[Need] = ()
) -> list[subprocess.Popen]:
    """As many detached helpers as there are cores (at most), the work shared between them by
    estimated seconds, each going through its share in the job's order. Presets share no
    compiled code (each preset's kernels are compiled whole), so any split works; the trainer's
    two stages stay together. Each stage is under its own lock, so the helpers of several
    commands never compile one twice. `afterwards` (stages nobody waits for now) follow, lowered,
    in the helper compiling their pattern's pre-tokenizer (an encoder then loads the scanner's
    kernels from the cache instead of compiling its own copy), else in the lightest."""
    from workbench.engine.warmup import start_detached

    if not todo:
        later = [(need.stage, need.pattern) for need in afterwards]
        proc = start_detached([], log_file(), nice, afterwards=later) if later else None
        return [proc] if proc is not None else []

    units: list[list[Need]] = []
    for need in todo:
        if need.stage in SHARED_STAGES and units and units[-1][0].stage in SHARED_STAGES:
            units[-1].append(need)
        else:
            units.append([need])
    shares: list[list[Need]] = [[] for _ in range(min(len(units), os.cpu_count() or 2))]
    for unit in sorted(units, key=estimate, reverse=True):  # longest first, to the lightest
        min(shares, key=estimate).extend(unit)
    for share in shares:
        share.sort(key=todo.index)
    host = _host_of(shares, afterwards)
    helpers = []
    for share in shares:
        work = [(need.stage, need.pattern) for need in share]
        if share is host:
            later = [(need.stage, need.pattern) for need in afterwards]
            proc = start_detached(work, log_file(), nice, afterwards=later)
        else:
            proc = start_detached(work, log_file(), nice)
        if proc is not None:
            helpers.append(proc)
    return helpers


def _host_of(shares: list[list[Need]], afterwards: Sequence[Need]) -> list[Need] | None:
    """The share `afterwards` follow in: the one compiling their pattern's pre-tokenizer, else
    the lightest; None when there is nothing to follow."""
    if not afterwards or not shares:
        return None
    patterns = {need.pattern for need in afterwards}
    for share in shares:
        if any(need.stage == "pretokenizer" and need.pattern in patterns for need in share):
            return share
    return min(shares, key=estimate)


def _settled(need: Need) -> bool:
    """Compiled and cached, and no process holds its lock (it may still be writing)."""
    from workbench.engine.warmup import is_ready, stage_lock

    with stage_lock(lock_folder(), need.stage, need.pattern, wait=False) as free:
        if not free:
            return False
    return is_ready(need.stage, need.pattern) is not False


def _clock() -> float:
    """The clock every countdown reads (tests replace it)."""
    return time.monotonic()


def _sleep(seconds: float, cancel: threading.Event | None) -> None:
    if cancel is not None:
        cancel.wait(seconds)
    else:
        time.sleep(seconds)


def _wait_for(
    need: Need,
    background: Background,
    cancel: threading.Event | None = None,
    tick: Callable[[], None] | None = None,
) -> None:
    """Wait until the helpers have cached `need`, calling `tick` at each look; if they ended
    without it (no helper could start, or it failed), compile it here, under its lock."""
    from workbench.engine.errors import CancelledError
    from workbench.engine.warmup import compile_stage

    while not _settled(need):
        if cancel is not None and cancel.is_set():
            raise CancelledError(f"stopped waiting for {need.label}")
        if background.helpers_ended() and not _settled(need):
            compile_stage(need.stage, need.pattern, lock_folder())
            return
        _sleep(POLL_SECONDS, cancel)
        if tick is not None:
            tick()
