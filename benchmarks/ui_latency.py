"""How long can the UI thread go without running? Gaps between 10 ms timer ticks during a run.

Opens the real window (offscreen unless QT_QPA_PLATFORM says otherwise) on a temporary database,
points it at ~25 MB of the running Python's standard-library sources (no download), trains at
full speed and records the time between ticks of a 10 ms QTimer on the UI thread. A tick that
comes late means the UI thread was busy or starved of the GIL for that long. After the run it
replays the finished run over a text in the Tokens tab (`--replay-speed` merges a second, the
Tokens text re-cut at each step), then opens a stored run of `--load-merges` merges (200,000 by
default: a synthetic run written into the database before the window opens; 0 opens the run just
trained again) and waits until its charts, merge list and teaching's sample have it (loading a
run; the Tokens tab, not shown, builds its tokenizer only when it is), then shows the Tokens tab
and waits for that tokenizer too. With a synthetic run it then opens a second one of as many
merges and shows the Tokens tab in the next turn, as a person would (opening a second run: the
first run's tokenizer, and what the tab built from it, are replaced). It names the thread on
which each tokenizer the Tokens tab held was freed. `--phases load` runs only those two phases,
on a fresh window with a Tokens text.

    python benchmarks/ui_latency.py                 # 25 MB, vocab 32768
    python benchmarks/ui_latency.py --mb 5 --vocab 8000
    python benchmarks/ui_latency.py --profile-over 15   # what the slow turns were doing
    python benchmarks/ui_latency.py --phases load       # only loading stored runs (~1 min)
    python benchmarks/ui_latency.py --repeat 10         # ten fresh runs: each phase's worst

Prints p50 / p99 / max of the gaps for each phase: counting, training, replay, loading a run,
opening a second run;
and, for each phase, the CPU time the UI thread itself spent between two ticks
(`time.thread_time`: p99 and max). A gap much longer than that CPU time was spent waiting: for the GIL held
by a background thread, or for a core on a loaded machine.

`--profile-over MS` also samples the UI thread's Python stack every millisecond (from a thread
of its own) and, for each phase, names the functions found most often in the turns whose
UI-thread CPU exceeded MS, and the CPU time of those turns by Qt event (receiver, its parent,
event type: a queued signal is a MetaCall, a QTimer's slot a Timer event, painting Paint). Both
cost the UI thread time (the sampler takes the GIL), so a profiled run's figures are not the
ones to quote; `--no-stacks` keeps the events' times and leaves the sampler out.

Each phase also gets the longest GIL wait not explained by the UI thread: a probe thread sleeps
1 ms at a time and times how late it wakes; the UI thread's CPU time in the same span (read
through its CPU clock) is taken off, and what is left is how long some other thread held the
GIL (or, on a loaded machine, how long the probe waited for a core). Unlike the wall gaps it
does not depend on the UI thread's own work, so it names the worker-thread calls to split.
`--no-gil-probe` leaves the probe out (it takes the GIL a thousand times a second).

`--why-gaps` (Linux) splits each gap over 25 ms into the UI thread's time on a core, runnable
without one, asleep on a futex (the GIL), asleep elsewhere and asleep in the event loop's poll,
with its context switches, page faults and the other threads' CPU (`_gap_why.py`).
`--switch-interval MS` runs with another GIL switch interval than the window's.
"""

from __future__ import annotations

import argparse
import collections
import contextlib
import os
import re
import statistics
import subprocess
import sys
import sysconfig
import tempfile
import threading
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")


def corpus_files(megabytes: float) -> list[Path]:
    """Standard-library .py files in path order until their sizes reach `megabytes`."""
    stdlib = Path(sysconfig.get_paths()["stdlib"])
    budget = int(megabytes * 1e6)
    files, total = [], 0
    for path in sorted(stdlib.rglob("*.py")):
        if "site-packages" in path.parts or total >= budget:
            continue
        files.append(path)
        total += path.stat().st_size
    return files


def write_synthetic_run(db: Path, merges: int, seed: int = 3) -> int | None:
    """A finished run of `merges` plausible merges (`workbench.store.synthetic`, from `seed`) in
    `db`, its id (None for 0 merges: no run)."""
    if merges <= 0:
        return None
    from workbench.store import RunStore
    from workbench.store.synthetic import synthetic_batches

    with RunStore(db) as store:
        name = f"synthetic {seed} · {merges:,}"
        run_id = store.create_run(name, settings={"vocab_size": 256 + merges})
        with store.writer(run_id) as writer:
            for batch in synthetic_batches(merges, batch_size=20_000, seed=seed):
                writer.write(batch)
            writer.set_state("done", "reached vocabulary size")
    return run_id


class Frees:
    """Where each tokenizer the Tokens tab was given is freed (thread and phase), by
    `weakref.finalize` on it and on its shared tables (`_core`), whose containers of 200k entries
    are the costly part of the free: the callback runs in the thread that drops the last
    reference, just before the object's contents are freed there."""

    def __init__(self, phase: Callable[[], str | None]) -> None:
        self.phase = phase
        self.seen: list[str] = []

    def watch(self, result: object) -> None:
        import weakref

        tok, label = result[0], result[1]
        for what, obj in (("tokenizer", tok), ("its tables", tok._core)):
            weakref.finalize(obj, self._freed, f"{label}: {what}")

    def _freed(self, what: str) -> None:
        thread = threading.current_thread().name
        self.seen.append(f"{what} freed on {thread} (phase: {self.phase()})")

    def report(self) -> None:
        print("freed while the window ran:" if self.seen else "no tokenizer freed meanwhile")
        for line in self.seen:
            print(f"  {line}")


class GilProbe:
    """A thread that sleeps `interval` at a time and records, per phase (`phase()`, read at
    each wake), the longest lateness of a wake minus the UI thread's CPU time over the same
    span: the longest time the GIL (or a core) was held by a thread other than the UI's.

    A wake later than `blame_over` seconds also names the likely holder: of the other threads
    with Python frames, the one whose CPU clock advanced most in the span, at the line where
    it stands now (just after the long call, since it gave the GIL up there)."""

    def __init__(
        self,
        ui_thread: int,
        phase: Callable[[], str | None],
        interval: float = 0.001,
        blame_over: float = 0.008,
    ):
        self.ui_thread = ui_thread
        self.clock = time.pthread_getcpuclockid(ui_thread)
        self.phase, self.interval, self.blame_over = phase, interval, blame_over
        self.longest: dict[str, float] = collections.defaultdict(float)
        self.blamed: dict[str, list[tuple[float, str]]] = collections.defaultdict(list)
        self._clocks: dict[int, int] = {}
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="gil-probe", daemon=True)
        self._thread.start()

    def _cpu_times(self) -> dict[int, float]:
        times = {}
        for ident, clock in list(self._clocks.items()):
            try:
                times[ident] = time.clock_gettime(clock)
            except OSError:  # the thread ended
                del self._clocks[ident]
        return times

    def _refresh_threads(self) -> None:
        mine = threading.get_ident()
        for ident in sys._current_frames():
            if ident not in self._clocks and ident not in (mine, self.ui_thread):
                with contextlib.suppress(OSError):
                    self._clocks[ident] = time.pthread_getcpuclockid(ident)

    def _run(self) -> None:
        turns = 0
        while not self._stop.is_set():
            turns += 1
            if turns % 50 == 1:
                self._refresh_threads()
            before = self._cpu_times()
            started, ui_started = time.perf_counter(), time.clock_gettime(self.clock)
            time.sleep(self.interval)
            late = time.perf_counter() - started - self.interval
            other = late - (time.clock_gettime(self.clock) - ui_started)
            key = self.phase()
            if key is None:
                continue
            self.longest[key] = max(self.longest[key], other)
            if other > self.blame_over:
                self.blamed[key].append((other, self._holder(before)))

    def _holder(self, before: dict[int, float]) -> str:
        after = self._cpu_times()
        spent = {i: after[i] - before[i] for i in after if i in before}
        if not spent:
            return "?"
        ident = max(spent, key=spent.__getitem__)
        frame = sys._current_frames().get(ident)
        where = []
        while frame is not None and len(where) < 3:
            path = frame.f_code.co_filename
            if "workbench" in path or not where:
                where.append(f"{path.split('/')[-1]}:{frame.f_lineno} {frame.f_code.co_name}")
            frame = frame.f_back
        return f"(cpu {spent[ident] * 1000:.0f} ms) " + " < ".join(where)

    def stop(self) -> None:
        self._stop.set()
        self._thread.join()

    def report(self, phases: tuple[str, ...]) -> None:
        self.stop()
        held = ", ".join(f"{name} {self.longest[name] * 1000:.1f}" for name in phases)
        print(f"longest GIL hold by another thread (probe; ms): {held}")
        for name in phases:
            for other, holder in sorted(self.blamed[name], reverse=True)[:4]:
                print(f"  {name}: {other * 1000:.1f} ms, likely {holder}")


def gil_probe(args: argparse.Namespace, phase: Callable[[], str | None]) -> GilProbe | None:
    """A `GilProbe` on the calling (UI) thread, unless `--no-gil-probe`."""
    return None if args.no_gil_probe else GilProbe(threading.get_ident(), phase)


def summary(label: str, gaps: list[float], cpu: list[float]) -> str:
    if not gaps:
        return f"{label}: no ticks"
    ms = np.array(gaps) * 1000
    return (
        f"{label}: {len(ms)} ticks, p50 {np.percentile(ms, 50):.1f} ms, "
        f"p99 {np.percentile(ms, 99):.1f} ms, max {ms.max():.1f} ms"
        f" (UI-thread CPU between ticks: p99 {np.percentile(cpu, 99) * 1000:.1f} ms,"
        f" max {max(cpu) * 1000:.1f} ms)"
    )


class StackSampler:
    """Samples one thread's Python stack every `interval` seconds (a daemon thread of its own).

    `take(since, until)` returns the samples taken in that span (and forgets older ones); a
    sample is a tuple of "file:function" names, innermost first, of the frames in this project,
    pyqtgraph or Qt's Python side. A UI thread inside Qt's C++ (painting, layout) shows as the
    Python frame that called into it, often `main` (the event loop)."""

    KEEP = ("workbench", "pyqtgraph", "benchmarks")

    def __init__(self, thread_id: int, interval: float = 0.001) -> None:
        self.thread_id, self.interval = thread_id, interval
        self.samples: collections.deque[tuple[float, tuple[str, ...]]] = collections.deque()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="stack-sampler", daemon=True)
        self._thread.start()

    def _run(self) -> None:
        while not self._stop.wait(self.interval):
            frame = sys._current_frames().get(self.thread_id)
            names = []
            while frame is not None and len(names) < 40:
                code = frame.f_code
                path = code.co_filename
                if any(part in path for part in self.KEEP):
                    short = path.split("site-packages/")[-1].split("wt-window2/")[-1]
                    names.append(f"{short}:{code.co_name}")
                frame = frame.f_back
            self.samples.append((time.perf_counter(), tuple(names)))

    def take(self, since: float, until: float) -> list[tuple[str, ...]]:
        out = []
        while self.samples and self.samples[0][0] <= until:
            at, names = self.samples.popleft()
            if at >= since:
                out.append(names)
        return out

    def stop(self) -> None:
        self._stop.set()
        self._thread.join()


def timed_application(base: type) -> object:
    """A QApplication that adds up the UI thread's CPU time per event, by the receiver's class
    (and its parent's) and the event's type: each event's own time, the events it sent in turn
    subtracted, in `app.spent` (seconds). A queued signal shows as a MetaCall to its receiver,
    a QTimer's slot as a Timer event to the QTimer, painting as Paint/UpdateRequest events."""

    class TimedApplication(base):  # type: ignore[misc, valid-type]
        def __init__(self) -> None:
            super().__init__([])
            self.spent: collections.Counter[str] = collections.Counter()
            self._nested: list[float] = []  # time spent by the events inside each open one
            self.ui_thread = threading.get_ident()

        def notify(self, receiver: object, event: object) -> bool:
            if threading.get_ident() != self.ui_thread:  # a worker's own events: not ours
                return super().notify(receiver, event)
            # Named before it runs: an event may delete its receiver (a finished animation).
            parent = receiver.parent() if hasattr(receiver, "parent") else None
            owner = type(parent).__name__ if parent is not None else "-"
            kind = getattr(event.type(), "name", str(event.type()))
            label = f"{type(receiver).__name__} in {owner}: {kind}"
            started = time.thread_time()
            self._nested.append(0.0)
            try:
                return super().notify(receiver, event)
            finally:
                spent = time.thread_time() - started
                inner = self._nested.pop()
                if self._nested:
                    self._nested[-1] += spent
                self.spent[label] += spent - inner

    return TimedApplication()


def profile_report(label: str, turns: list[list[tuple[str, ...]]], top: int = 14) -> str:
    """The functions most often on the UI thread's stack during a phase's slow turns
    (inclusive: a function counts when it is anywhere on the stack), and the innermost ones."""
    if not turns:
        return f"{label}: no slow turns"
    inclusive: collections.Counter[str] = collections.Counter()
    innermost: collections.Counter[str] = collections.Counter()
    total = 0
    for samples in turns:
        for names in samples:
            total += 1
            inclusive.update(set(names))
            innermost[names[0] if names else "(no Python frame)"] += 1
    lines = [f"{label}: {len(turns)} slow turns, {total} samples"]
    lines += [f"   {n / total:5.0%} {name}" for name, n in inclusive.most_common(top)]
    lines.append("  innermost:")
    lines += [f"   {n / total:5.0%} {name}" for name, n in innermost.most_common(top)]
    return "\n".join(lines)


class TurnLog:
    """Each phase's gaps between ticks and the UI thread's CPU time in them; with a profile
    threshold (ms), the stack samples of the turns whose CPU time exceeded it."""

    def __init__(
        self, phases: tuple[str, ...], profile_over_ms: float, stacks: bool = True
    ) -> None:
        self.phases = phases
        self.gaps: dict[str, list[float]] = {name: [] for name in phases}
        self.cpu: dict[str, list[float]] = {name: [] for name in phases}
        self.profile_over = profile_over_ms / 1000
        self.profiling = profile_over_ms > 0
        sample = self.profiling and stacks
        self.sampler = StackSampler(threading.get_ident()) if sample else None
        self.slow: dict[str, list[list[tuple[str, ...]]]] = collections.defaultdict(list)
        # The application's CPU time by event since the last tick (`timed_application`).
        self.events: collections.Counter[str] | None = None
        self.slow_events: dict[str, collections.Counter[str]] = collections.defaultdict(
            collections.Counter
        )
        self.worst: dict[str, list] = collections.defaultdict(list)

    def add(self, phase: str, since: float, now: float, cpu: float) -> None:
        self.gaps.setdefault(phase, []).append(now - since)
        self.cpu.setdefault(phase, []).append(cpu)
        if self.profiling:
            samples = self.sampler.take(since, now) if self.sampler is not None else []
            if cpu > self.profile_over:
                self.slow[phase].append(samples)
                if self.events is not None:
                    self.slow_events[phase].update(self.events)
                    self.worst[phase].append((cpu, self.events.most_common(6)))
        if self.events is not None:
            self.events.clear()

    def report(self, probe: GilProbe | None = None) -> None:
        for name in self.phases:
            print(summary(name, self.gaps[name], self.cpu[name]))
        if probe is not None:
            probe.report(self.phases)
        if self.profiling:
            if self.sampler is not None:
                self.sampler.stop()
            for name in self.phases:
                if self.sampler is not None:
                    print(profile_report(name, self.slow[name]))
                spent = self.slow_events[name]
                total = sum(spent.values()) or 1.0
                print(f"  {name}: UI-thread CPU of slow turns by event (own time, not nested)")
                for label, seconds in spent.most_common(16):
                    print(f"   {seconds / total:5.0%} {seconds * 1000:8.1f} ms {label}")
                print(f"  {name}: the slowest turns' costliest events")
                for cpu, top in sorted(self.worst[name], key=lambda t: -t[0])[:6]:
                    parts = "; ".join(f"{label} {s * 1000:.1f}" for label, s in top)
                    print(f"   {cpu * 1000:6.1f} ms: {parts}")


def parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--mb", type=float, default=25.0)
    parser.add_argument("--vocab", type=int, default=32768)
    parser.add_argument("--replay-speed", type=int, default=1000, help="merges a second")
    parser.add_argument(
        "--replay-seconds", type=float, default=8.0, help="how long the replay phase plays"
    )
    parser.add_argument(
        "--text-chars", type=int, default=20_000, help="Tokens-tab text re-cut while replaying"
    )
    parser.add_argument(
        "--load-merges",
        type=int,
        default=200_000,
        metavar="N",
        help="the stored run opened last: a synthetic one of N merges (0: the run just trained)",
    )
    parser.add_argument(
        "--phases",
        choices=("all", "load"),
        default="all",
        help="all: counting, training, replay and loading a run; load: only opening the"
        " synthetic stored run (needs --load-merges above 0)",
    )
    parser.add_argument("--no-gil-probe", action="store_true", help="leave the GIL probe out")
    parser.add_argument(
        "--switch-interval",
        type=float,
        default=0.0,
        metavar="MS",
        help="the interpreter's GIL switch interval for this run (sys.setswitchinterval; 0: the"
        " window's own)",
    )
    parser.add_argument(
        "--why-gaps",
        action="store_true",
        help="Linux: split each gap over 25 ms into the UI thread's time on a core, runnable"
        " without one, asleep on a futex (the GIL), asleep elsewhere, asleep in the event loop"
        " (benchmarks/_gap_why.py; a sampler process reads the thread's state every 0.5 ms)",
    )
    parser.add_argument(
        "--no-stacks",
        action="store_true",
        help="with --profile-over: time the events only, without the stack sampler (whose GIL"
        " requests inflate the UI thread's figures)",
    )
    parser.add_argument(
        "--profile-over",
        type=float,
        default=0.0,
        metavar="MS",
        help="sample the UI thread's stack; report turns over MS of UI-thread CPU",
    )
    parser.add_argument(
        "--repeat",
        type=int,
        default=1,
        metavar="N",
        help="run N times, each in a fresh process, and print each phase's largest gap in every"
        " run and over all of them (the largest gap is one tick: it moves from run to run)",
    )
    args = parser.parse_args()
    if args.repeat < 1:
        parser.error("--repeat takes 1 or more runs")
    if args.phases == "load" and args.load_merges <= 0:
        parser.error("--phases load opens the synthetic run: give --load-merges above 0")
    return args


class Driver:
    """Takes the window through the phases (`watch`, every 200 ms) and logs each 10 ms tick's
    gap under the phase it belongs to (`tick`)."""

    def __init__(
        self,
        args: argparse.Namespace,
        window: object,
        log: TurnLog,
        stored: tuple[int | None, int | None],
    ):
        self.args, self.window, self.log = args, window, log
        self.stored, self.second = stored
        self.files = corpus_files(args.mb)
        # Summed here, before the window runs: 1,462 stat calls are not the window's work.
        self.size = sum(f.stat().st_size for f in self.files)
        self.text = "".join(
            f.read_text(encoding="utf-8", errors="replace") for f in self.files[:40]
        )[: args.text_chars]
        self.last, self.last_cpu = time.perf_counter(), time.thread_time()
        self.last_key: str | None = None
        self.started = 0.0
        self.replay_until = 0.0
        self.phase = ""  # set by the later phases; training phases follow the window's mode
        self.why = None  # a `_gap_why.GapWhy` with --why-gaps

    def tick(self) -> None:
        window, log = self.window, self.log
        now, now_cpu = time.perf_counter(), time.thread_time()
        key = None
        if self.phase:
            key = self.phase
        elif window.mode == "training":
            key = "training" if window.status.stage.text() == "Training" else "counting"
        # A gap belongs to the phase it ends in or, when that is none, the one it began in:
        # the handling of the run's end (the worker's idle answer) falls between the two.
        gap_key = key if key is not None else self.last_key
        if self.why is not None:
            self.why.tick(gap_key)
        if gap_key is not None:
            log.add(gap_key, self.last, now, now_cpu - self.last_cpu)
        elif log.events is not None:
            log.events.clear()  # a turn of no phase: its events are no phase's either
        self.last, self.last_cpu, self.last_key = now, now_cpu, key

    def probe_key(self) -> str | None:
        """The phase a tick last saw; a probe wake while the window closes counts for none."""
        return None if self.phase == "closing" else self.last_key

    def wait_warm(self) -> None:
        """Let the kernels warm up first, so the numbers are about training, not compiling.
        Loading alone also waits for the encoder (teaching cuts its sample only then), as it
        is ready by the time the full benchmark opens the run."""
        from PySide6.QtCore import QTimer

        window = self.window
        encoder = self.args.phases == "all" or window.warmer.encoder.is_set()
        if window.warm_event.is_set() and encoder:
            self.begin()
        else:
            QTimer.singleShot(100, self.wait_warm)

    def begin(self) -> None:
        from PySide6.QtCore import QTimer

        window = self.window
        if self.args.phases == "load":
            window.tokens.panel.set_text(self.text)  # the Tokens tab holds a text, as after replay
            self.open_stored()
            return
        print(
            f"corpus: {len(self.files)} files, {self.size / 1e6:.1f} MB; vocab {self.args.vocab}",
            flush=True,
        )
        # Opening a corpus and pressing Train are two of a person's actions, so two turns.
        # The window counts an opened corpus at once: counting from here.
        window.load_corpus(self.files)
        window.controls.vocab.setValue(self.args.vocab)
        self.phase = "counting"
        QTimer.singleShot(300, self.start_training)

    def start_training(self) -> None:
        self.started = time.perf_counter()
        self.phase = ""  # from now on the window's own mode and stage say which phase it is
        self.window.train()

    def open_stored(self) -> None:
        self.phase = "loading a run"
        self.window.open_run(self.stored if self.stored is not None else self.window.run_id)

    def loading(self) -> bool:
        """The opened run still on its way to a view: the charts (and the merge list, whose
        first rows paint before the charts' merges are read), the Tokens tab's or teaching's
        tokenizer."""
        window = self.window
        return (
            window.history.loading
            or window.tokens.lane.busy()
            or window.tokens.panel.busy()
            or window.sample_lane.busy()
        )

    def watch(self) -> None:
        window = self.window
        if not self.phase and (
            window.mode == "finished" or (window.mode == "idle" and self.started)
        ):
            elapsed = time.perf_counter() - self.started
            print(
                f"{window.merges_done:,} merges in {elapsed:.1f} s ({window.status.stage.text()})",
                flush=True,
            )
            self.phase = "waiting"
            window.tokens.panel.set_text(self.text)
        elif self.phase == "waiting":
            panel = window.tokens.panel
            if panel.run_id == window.run_id and not panel.busy() and window.replay.clock.total:
                self.phase = "replay"
                window.replay.clock.speed = float(self.args.replay_speed)  # any, not the menu's
                window.replay.seek(0)
                window.replay.play()
                self.replay_until = time.perf_counter() + self.args.replay_seconds
        elif self.phase == "replay" and (
            not window.replay.playing or time.perf_counter() > self.replay_until
        ):
            print(f"replayed to merge {window.replay.k:,}", flush=True)
            window.replay.stop()
            self.open_stored()
        elif self.phase == "loading a run" and not self.loading():
            if window.tabs.currentWidget() is not window.tokens.panel:
                window.tabs.setCurrentWidget(window.tokens.panel)  # its tokenizer is built now
            elif self.second is not None and window.tokens.panel.run_id == self.stored:
                self.open_second()
            elif self.second is None:
                self.close()
        elif self.phase == "opening a second run" and not self.loading():
            self.close()

    def open_second(self) -> None:
        """Open the second synthetic run; show the Tokens tab in a turn of its own (a click)."""
        from PySide6.QtCore import QTimer

        window = self.window
        self.phase = "opening a second run"
        window.open_run(self.second)
        QTimer.singleShot(0, lambda: window.tabs.setCurrentWidget(window.tokens.panel))

    def close(self) -> None:
        # Closing is no phase of its own: its gaps are not counted (and the run's end is not
        # seen a second time while the window winds down).
        self.phase = "closing"
        self.window.close()


_PHASE_LINE = re.compile(r"^(?P<phase>[a-z ]+): \d+ ticks, .* max (?P<max>[\d.]+) ms \(UI-thread")


def repeat(runs: int) -> int:
    """This script `runs` times (the other options passed on), each in a fresh process; then
    per phase the largest gap of each run and the largest of all."""
    # argparse keeps an option's last value: the trailing "--repeat 1" overrides the caller's.
    child = [sys.executable, __file__, *sys.argv[1:], "--repeat", "1"]
    maxima: dict[str, list[float]] = collections.defaultdict(list)
    for run in range(1, runs + 1):
        done = subprocess.run(child, capture_output=True, text=True, check=False)
        if done.returncode != 0:
            print(f"run {run} failed (exit {done.returncode}):\n{done.stderr[-2000:]}")
            return 1
        found = {
            match["phase"]: float(match["max"])
            for match in map(_PHASE_LINE.match, done.stdout.splitlines())
            if match
        }
        for phase, gap in found.items():
            maxima[phase].append(gap)
        print(f"run {run}: " + " · ".join(f"{p} {g:.1f}" for p, g in found.items()), flush=True)
    print(f"largest gap between ticks over {runs} runs (ms):")
    for phase, values in maxima.items():
        over = sum(v > 33 for v in values)
        print(
            f"  {phase}: worst {max(values):.1f}, median {statistics.median(values):.1f};"
            f" over 33 ms in {over} of {len(values)} runs"
        )
    return 0


def main() -> int:
    args = parse_args()
    if args.repeat > 1:
        return repeat(args.repeat)

    from PySide6.QtCore import QSettings, QTimer
    from PySide6.QtWidgets import QApplication

    from workbench.gui.app import configure_application
    from workbench.gui.main_window import MainWindow

    configure_application()
    if args.switch_interval > 0:
        sys.setswitchinterval(args.switch_interval / 1000)
    print(f"GIL switch interval: {sys.getswitchinterval() * 1000:g} ms")
    phases: tuple[str, ...] = ("counting", "training", "replay", "loading a run")
    if args.phases == "load":
        phases = ("loading a run",)
    if args.load_merges > 0:
        phases += ("opening a second run",)
    log = TurnLog(phases, args.profile_over, stacks=not args.no_stacks)
    app = timed_application(QApplication) if args.profile_over > 0 else QApplication([])
    log.events = getattr(app, "spent", None)
    tmp = Path(tempfile.mkdtemp(prefix="bpe-bench-"))
    db = tmp / "runs.db"
    stored = write_synthetic_run(db, args.load_merges), write_synthetic_run(db, args.load_merges, 4)
    window = MainWindow(QSettings(str(tmp / "s.ini"), QSettings.Format.IniFormat), tmp / "runs.db")
    window.sigClosed.connect(app.quit)
    window.show()
    driver = Driver(args, window, log, stored)
    if args.why_gaps:
        from _gap_why import GapWhy  # beside this script

        driver.why = GapWhy()
    ticker = QTimer()
    ticker.setInterval(10)
    ticker.timeout.connect(driver.tick)
    ticker.start()
    watcher = QTimer()
    watcher.setInterval(200)
    watcher.timeout.connect(driver.watch)
    watcher.start()
    QTimer.singleShot(100, driver.wait_warm)
    probe = gil_probe(args, driver.probe_key)
    frees = Frees(lambda: driver.phase)
    window.tokens.lane.sigResult.connect(frees.watch)
    app.exec()
    log.report(probe)
    if driver.why is not None:
        print(f"tick timer: {ticker.timerType().name}")
        driver.why.report(phases)
    frees.report()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
