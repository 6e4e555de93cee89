"""Timing helpers shared by `bpe-workbench bench` and the scripts in `benchmarks/`.

Wall time is measured around a whole process (start-up and imports included) and peak memory
is the process's max RSS from `wait4`, so every peer pays the same overheads.
"""

from __future__ import annotations

import statistics
import subprocess
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

from workbench.engine.errors import WorkbenchError


@dataclass
class Measurement:
    name: str
    seconds: list[float]
    peak_mb: float

    @property
    def median(self) -> float:
        return statistics.median(self.seconds)


# Runs a command and prints "seconds max-RSS-KB". A spawned child's high-water RSS starts at the
# size of the process that spawned it (fork copies it; vfork shares it until exec), so the
# measuring is done by this small process, not by the benchmark, whose Numba and Qt imports
# would otherwise be charged to every trainer.
_RUNNER = """
import os, sys, time
start = time.perf_counter()
devnull = [(os.POSIX_SPAWN_OPEN, 1, os.devnull, os.O_WRONLY, 0)]
pid = os.posix_spawn(sys.argv[1], sys.argv[1:], dict(os.environ), file_actions=devnull)
_, status, usage = os.wait4(pid, 0)
seconds = time.perf_counter() - start
print(seconds, usage.ru_maxrss, os.waitstatus_to_exitcode(status))
"""


def run_measured(argv: list[str]) -> tuple[float, float]:
    """(wall seconds, peak RSS in MB) of one child process; raises if it fails."""
    proc = subprocess.run(
        [sys.executable, "-c", _RUNNER, *argv], capture_output=True, text=True, check=False
    )
    try:
        seconds, peak_kb, code = proc.stdout.split()[-3:]
    except ValueError:
        raise BenchError(
            f"{_name(argv)} could not be measured: {_last_line(proc.stderr)}"
        ) from None
    if int(code) != 0:
        raise BenchError(f"{_name(argv)} failed (exit {code}): {_last_line(proc.stderr)}")
    return float(seconds), int(peak_kb) / 1024


class BenchError(WorkbenchError):
    """A measured process that failed: the corpus it was given, usually (one line: the last
    line of its stderr, which for the workbench is its own one-line message)."""


def _name(argv: list[str]) -> str:
    return " ".join(Path(a).name if i == 0 else a for i, a in enumerate(argv[:4]))


def _last_line(stderr: str) -> str:
    lines = [line for line in stderr.strip().splitlines() if line.strip()]
    return lines[-1].strip().removeprefix("bpe-workbench: ") if lines else "(no message)"


def median_rate(encode: Callable[[str], Sequence[int]], text: str, runs: int = 3):
    """(median MB/s over `runs` whole-text calls of `encode`, the result of the last one)."""
    size = len(text.encode("utf-8")) / 1e6
    times = []
    result: Sequence[int] = []
    for _ in range(runs):
        del result  # free the previous run's list first: it would only add memory pressure
        start = time.perf_counter()
        result = encode(text)
        times.append(time.perf_counter() - start)
    return size / statistics.median(times), result
