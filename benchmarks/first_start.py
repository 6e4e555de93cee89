"""Hand-run benchmark: the first start, from an empty Numba cache, against a warm start.

Run `python benchmarks/first_start.py [corpus] [--vocab-size 500] [--runs 1]`. Each run is a whole
`bpe-workbench train CORPUS --vocab-size N --no-db` process, first with a fresh, empty
`NUMBA_CACHE_DIR` (a small corpus starts at once: `regex` counts it and the Python trainer makes
its merges while a helper process compiles; see `session/first_start.py`), then again after a
whole warm-up has filled that cache (every kernel loads).
It prints wall seconds and CPU seconds (user + system of the child): on a shared machine the CPU
figure is the steadier one, since compiling is single-threaded work that others' load only
stretches in wall time. Also `--warm-up` times `workbench.engine.warmup.warm_up` cold, stage by
stage, as the window sees it.
"""

from __future__ import annotations

import argparse
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from _paths import corpora  # noqa: E402
from _processes import wait_for_processes_with  # noqa: E402

WARM_UP = """
import sys, time
from workbench.engine.warmup import warm_up
last = [time.perf_counter()]
def progress(done, total, stage):
    now = time.perf_counter()
    print(f"  {done} of {total} {stage:28s} {now - last[0]:6.2f} s", flush=True)
    last[0] = now
warm_up(sys.argv[1], progress)
"""


WINDOW = """
import json, os, sys, time
launched = float(os.environ["FIRST_START_LAUNCHED"])
def at() -> float:
    return round(time.time() - launched, 1)
from PySide6.QtCore import QTimer
from PySide6.QtWidgets import QApplication
from workbench.gui.app import configure_application
from workbench.gui.main_window import MainWindow
configure_application()
app = QApplication(sys.argv[:1])
window = MainWindow()
events = []
said = lambda what: events.append((at(), what))
window.warmer.sigProgress.connect(lambda done, total, line, compiling: said(line))
window.warmer.sigWarm.connect(lambda seconds: said(f"trainer ready ({seconds:.1f} s in the warmer)"))
window.warmer.sigEncoderReady.connect(lambda: said("encoder ready"))
seen = []
def look() -> None:
    text = window.status.stage.text()
    if not seen or seen[-1][1] != text:
        seen.append((at(), text))
    # A warm start may be ready before the signal above was connected: read the event too.
    if window.warmer.encoder.is_set() and window.mode != "training":
        poll.stop()  # (sigEncoderReady may have come before it was connected, on a warm start)
        QTimer.singleShot(500, window.close)
poll = QTimer(); poll.timeout.connect(look); poll.start(100)
window.sigClosed.connect(app.quit)
window.show()
said("window shown")
if os.environ.get("FIRST_START_TRAIN"):  # a person pressing Train at once, as the demo asks
    QTimer.singleShot(500, lambda: (said("Train pressed"), window.actions_by_name["train"].trigger()))
QTimer.singleShot(int(os.environ.get("FIRST_START_LIMIT", "300")) * 1000, window.close)
app.exec()
print(json.dumps({"events": events, "status": seen}))
"""


def window_start(home: Path, train: bool) -> dict:
    """The window launched as a new user (empty HOME and caches, NUMBA_CACHE_DIR unset), until
    its warmer has the encoder ready: when each kernel stage was ready, seconds from launch."""
    import json

    env = {k: v for k, v in os.environ.items() if k != "NUMBA_CACHE_DIR"}
    env.update(
        HOME=str(home),
        XDG_CACHE_HOME=str(home / ".cache"),
        XDG_CONFIG_HOME=str(home / ".config"),
        XDG_DATA_HOME=str(home / ".local/share"),
        FIRST_START_LAUNCHED=repr(time.time()),
        QT_QPA_PLATFORM=os.environ.get("QT_QPA_PLATFORM", "offscreen"),
        PYTHONPATH=str(Path(__file__).resolve().parents[1]),
    )
    if train:
        env["FIRST_START_TRAIN"] = "1"
    proc = subprocess.run(
        [sys.executable, "-c", WINDOW], env=env, capture_output=True, text=True, check=False
    )
    lines = [line for line in proc.stdout.splitlines() if line.startswith("{")]
    if proc.returncode != 0 or not lines:
        sys.exit(f"the window failed: {proc.stderr.strip()[-800:]}")
    return json.loads(lines[-1])


def run(argv: list[str], cache: str) -> tuple[float, float, str]:
    """(wall seconds, child CPU seconds, stdout) of one process with NUMBA_CACHE_DIR=cache."""
    env = dict(os.environ, NUMBA_CACHE_DIR=cache)
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    proc = subprocess.run(argv, env=env, capture_output=True, text=True, check=False)
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if proc.returncode != 0:
        sys.exit(f"{argv[:3]} failed: {proc.stderr.strip()[-800:]}")
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return wall, cpu, proc.stdout


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("corpus", nargs="?", type=Path, default=corpora() / "corpus.en")
    parser.add_argument("--vocab-size", type=int, default=500)
    parser.add_argument("--pattern", default="gpt2")
    parser.add_argument("--runs", type=int, default=1)
    parser.add_argument("--warm-up", action="store_true", help="time warm_up() cold instead")
    parser.add_argument(
        "--window",
        action="store_true",
        help="launch the window as a new user, cold then warm: when are its kernels ready",
    )
    parser.add_argument("--train", action="store_true", help="with --window: press Train at once")
    args = parser.parse_args()
    with open("/proc/loadavg") as f:
        print(f"load average before: {f.read().split()[0]} (2 cores here; >2 means shared)")
    if args.window:
        with tempfile.TemporaryDirectory(prefix="first-start-home-") as home:
            for label in ("cold", "warm"):
                found = window_start(Path(home), args.train)
                print(f"{label}:")
                for seconds, what in found["events"]:
                    print(f"  {seconds:6.1f} s  {what}")
                print("  status line as shown:")
                for seconds, text in found["status"]:
                    print(f"  {seconds:6.1f} s  {text}")
                if label == "cold":
                    _wait_for_helpers(Path(home))
        return
    for _ in range(args.runs):
        with tempfile.TemporaryDirectory() as cache, tempfile.TemporaryDirectory() as out:
            if args.warm_up:
                argv = [sys.executable, "-c", WARM_UP, args.pattern]
                wall, cpu, stdout = run(argv, cache)
                print(stdout, end="")
                print(f"warm_up cold: {wall:6.2f} s wall {cpu:6.2f} s CPU")
                continue
            argv = [
                sys.executable, "-m", "workbench", "train", str(args.corpus),
                "--vocab-size", str(args.vocab_size), "--pattern", args.pattern,
                "--no-db", "--out", out,
            ]  # fmt: skip
            # cold: a first start (a small corpus trains at once while a helper compiles);
            # then the cache is filled by a whole warm-up (not timed) and the run timed again.
            for label in ("cold", "warm"):
                if label == "warm":
                    run([sys.executable, "-c", WARM_UP, args.pattern], cache)
                wall, cpu, stdout = run(argv, cache)
                stages = [line for line in stdout.splitlines() if line.startswith("time ")]
                print(f"{label}: {wall:6.2f} s wall {cpu:6.2f} s CPU | " + " | ".join(stages))


def _wait_for_helpers(home: Path, limit: float = 600) -> None:
    """Detached helpers may still compile into the user cache after the window closed."""
    wait_for_processes_with(f"HOME={home}", limit)


if __name__ == "__main__":
    main()
