"""Where the wall time of a long gap between UI ticks goes (`ui_latency.py --why-gaps`).

Linux only. Two sources, joined after the run:

- In the window's process, at every tick (on the UI thread): the UI thread's CPU clock, its
  scheduler statistics (`/proc/self/task/<tid>/schedstat`: nanoseconds on a core, and
  nanoseconds runnable but waiting for one), its context switches and page faults
  (`getrusage(RUSAGE_THREAD)`), every other thread's nanoseconds on a core, and the machine's
  busy time (`/proc/stat`). A gap over `over` seconds keeps the differences.
- A sampler *process* (this file run as a script, so it needs no GIL of the window's) reads the
  UI thread's state and kernel wait channel every half millisecond: running or runnable, asleep
  in the event loop's poll, asleep on a futex (waiting for the GIL, or another lock), or asleep
  elsewhere (page fault, file I/O).

So a gap's wall time splits into: on a core (the UI thread's own work, Python or C++), (a)
runnable without a core, (b) asleep on a futex (the GIL, another thread running Python), (c)
asleep elsewhere (a major page fault, I/O), and (d) asleep in the event loop's poll (the timer
had not fired yet: the timer itself, or the loop's own idle wait).
"""

from __future__ import annotations

import collections
import os
import pickle
import resource
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

TASKS = "/proc/self/task"
CLK_TCK = os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 100

# Kernel wait channels of a thread asleep in the event loop (poll/select/epoll).
LOOP_CHANNELS = ("poll", "select", "ep_poll")


def classify(state: str, channel: str) -> str:
    """A sample's category: 'run' (running or runnable), 'loop', 'futex' or 'other'."""
    if state == "R":
        return "run"
    if any(word in channel for word in LOOP_CHANNELS):
        return "loop"
    if "futex" in channel:
        return "futex"
    return "other"


def _read(fd: int) -> str:
    return os.pread(fd, 4096, 0).decode(errors="replace")


def _state(stat: str) -> str:
    return stat[stat.rindex(")") + 2]


def sample(pid: int, tid: int, out: str, interval: float = 0.0005) -> None:
    """The sampler process: (time, category, channel) of thread `tid` every `interval` s, until
    SIGTERM; then pickled to `out`."""
    stop = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    base = f"/proc/{pid}/task/{tid}"
    stat_fd, chan_fd = os.open(f"{base}/stat", os.O_RDONLY), os.open(f"{base}/wchan", os.O_RDONLY)
    samples: list[tuple[float, str, str]] = []
    while not stop.is_set():
        try:
            now = time.perf_counter()
            state, channel = _state(_read(stat_fd)), _read(chan_fd)
        except (OSError, ValueError):
            break  # the thread ended
        samples.append((now, classify(state, channel), channel))
        time.sleep(interval)
    Path(out).write_bytes(pickle.dumps(samples))


class GapWhy:
    """Per-tick snapshots on the UI thread; the gaps over `over` seconds, explained."""

    def __init__(self, over: float = 0.025) -> None:
        self.over = over
        self.tid = threading.get_native_id()
        self._fds: dict[int, int] = {}
        self._last = self._snapshot()
        self.gaps: dict[str, list[dict]] = collections.defaultdict(list)
        self._out = Path(f"/tmp/gap-why-{os.getpid()}.pkl")
        self._sampler = subprocess.Popen(
            [sys.executable, __file__, str(os.getpid()), str(self.tid), str(self._out)]
        )
        self._sampler_cpu = 0.0

    def _schedstat(self, tid: int) -> tuple[int, int] | None:
        fd = self._fds.get(tid)
        try:
            if fd is None:
                fd = self._fds[tid] = os.open(f"{TASKS}/{tid}/schedstat", os.O_RDONLY)
            run, wait, _ = _read(fd).split()
        except (OSError, ValueError):
            return None
        return int(run), int(wait)

    def _snapshot(self) -> dict:
        usage = resource.getrusage(resource.RUSAGE_THREAD)
        threads = {}
        for name in os.listdir(TASKS):
            tid = int(name)
            stat = self._schedstat(tid)
            if stat is not None:
                threads[tid] = stat[0]
        with open("/proc/stat") as f:
            cpu = f.readline().split()[1:]
        busy = sum(int(x) for i, x in enumerate(cpu) if i not in (3, 4))  # not idle, iowait
        return {
            "t": time.perf_counter(),
            "cpu": time.thread_time(),
            "sched": self._schedstat(self.tid) or (0, 0),
            "vol": usage.ru_nvcsw,
            "invol": usage.ru_nivcsw,
            "minflt": usage.ru_minflt,
            "majflt": usage.ru_majflt,
            "threads": threads,
            "busy": busy / CLK_TCK,
        }

    def tick(self, phase: str | None) -> None:
        now = self._snapshot()
        last, self._last = self._last, now
        gap = now["t"] - last["t"]
        if phase is None or gap <= self.over:
            return
        others = {
            tid: (ns - last["threads"][tid]) / 1e9
            for tid, ns in now["threads"].items()
            if tid != self.tid and tid in last["threads"] and ns > last["threads"][tid]
        }
        self.gaps[phase].append(
            {
                "t0": last["t"],
                "t1": now["t"],
                "gap": gap,
                "cpu": now["cpu"] - last["cpu"],
                "oncore": (now["sched"][0] - last["sched"][0]) / 1e9,
                "runq": (now["sched"][1] - last["sched"][1]) / 1e9,
                "vol": now["vol"] - last["vol"],
                "invol": now["invol"] - last["invol"],
                "minflt": now["minflt"] - last["minflt"],
                "majflt": now["majflt"] - last["majflt"],
                "others": {self._name(tid): s for tid, s in others.items()},
                "busy": now["busy"] - last["busy"],
            }
        )

    def _name(self, tid: int) -> str:
        """The thread's Python name (else its kernel name and id) and its nice value."""
        try:
            with open(f"{TASKS}/{tid}/stat") as f:
                stat = f.read()
            nice = " n" + stat[stat.rindex(")") + 2 :].split()[16]
            comm = stat[stat.index("(") + 1 : stat.rindex(")")]
        except (OSError, ValueError, IndexError):
            nice, comm = "", "?"
        for thread in threading.enumerate():
            if thread.native_id == tid:
                return thread.name + nice
        return f"{comm}#{tid}{nice}"

    def report(self, phases: tuple[str, ...]) -> None:
        self._sampler.send_signal(signal.SIGTERM)
        _, status, usage = os.wait4(self._sampler.pid, 0)
        self._sampler.returncode = os.waitstatus_to_exitcode(status)
        print(f"gap sampler: {usage.ru_utime + usage.ru_stime:.2f} s of CPU")
        samples = pickle.loads(self._out.read_bytes())
        self._out.unlink()
        for table_over in (self.over, 0.033):
            self._table(phases, samples, table_over)
        self._worst(phases, samples)

    def _table(self, phases: tuple[str, ...], samples: list, table_over: float) -> None:
        print(
            f"why the gaps over {table_over * 1000:.0f} ms (ms summed over those gaps; sampler:"
            f" {len(samples)} samples of the UI thread's state):"
        )
        print(
            "  phase: gaps | wall | on core (UI CPU) | (a) runnable, no core | (b) futex (GIL)"
            " | (c) other sleep | (d) loop poll | vol/invol switches | minflt/majflt"
            " | machine busy cores"
        )
        for name in phases:
            self._phase_row(name, [g for g in self.gaps[name] if g["gap"] > table_over], samples)

    def _worst(self, phases: tuple[str, ...], samples: list) -> None:
        for name in phases:
            worst = sorted(self.gaps[name], key=lambda g: -g["gap"])[:3]
            for g in worst:
                others = sorted(g["others"].items(), key=lambda kv: -kv[1])[:4]
                ran = ", ".join(f"{n} {s * 1000:.1f}" for n, s in others)
                where = collections.Counter(
                    c.strip() for t, k, c in samples if g["t0"] <= t <= g["t1"] and k != "run"
                )
                print(
                    f"  {name}: gap {g['gap'] * 1000:.1f} ms, UI CPU {g['cpu'] * 1000:.1f},"
                    f" on core {g['oncore'] * 1000:.1f}, runq {g['runq'] * 1000:.1f},"
                    f" vol/invol {g['vol']}/{g['invol']}, flt {g['minflt']}/{g['majflt']};"
                    f" others ran (ms): {ran}; asleep at: {dict(where.most_common(4))}"
                )

    @staticmethod
    def _phase_row(name: str, gaps: list[dict], samples: list) -> None:
        if not gaps:
            print(f"  {name}: no gap over the threshold")
            return
        asleep = collections.Counter()
        for g in gaps:
            inside = [k for t, k, _ in samples if g["t0"] <= t <= g["t1"]]
            sleeping = [k for k in inside if k != "run"]
            # The sampler's share of sleep samples by kind, scaled to the gap's sleeping time
            # (wall minus the kernel's on-core and runnable time).
            slept = max(g["gap"] - g["oncore"] - g["runq"], 0.0)
            for kind, n in collections.Counter(sleeping).items():
                asleep[kind] += slept * n / len(sleeping)
            if not sleeping:
                asleep["other"] += slept
        wall = sum(g["gap"] for g in gaps)
        others: collections.Counter[str] = collections.Counter()
        for g in gaps:
            for thread, seconds in g["others"].items():
                others[thread.split("#")[0]] += seconds
        busy = sum(g["busy"] for g in gaps) / wall

        def ms(x: float) -> str:
            return f"{x * 1000:.0f}"

        print(
            f"  {name}: {len(gaps)} | {ms(wall)} | {ms(sum(g['oncore'] for g in gaps))}"
            f" ({ms(sum(g['cpu'] for g in gaps))}) | {ms(sum(g['runq'] for g in gaps))}"
            f" | {ms(asleep['futex'])} | {ms(asleep['other'])} | {ms(asleep['loop'])}"
            f" | {sum(g['vol'] for g in gaps)}/{sum(g['invol'] for g in gaps)}"
            f" | {sum(g['minflt'] for g in gaps)}/{sum(g['majflt'] for g in gaps)}"
            f" | {busy:.2f}"
        )
        ran = ", ".join(f"{n} {s * 1000:.0f}" for n, s in others.most_common(4))
        print(f"      other threads on a core meanwhile (ms): {ran}")


if __name__ == "__main__":
    sample(int(sys.argv[1]), int(sys.argv[2]), sys.argv[3])
