"""How long can the UI thread go without running? Gaps between 10 ms timer ticks during a run.

Opens the real window (offscreen unless QT_QPA_PLATFORM says otherwise) on a temporary database,
points it at ~25 MB of the running Python's standard-library sources (no download), trains at
full speed and records the time between ticks of a 10 ms QTimer on the UI thread. A tick that
comes late means the UI thread was busy or starved of the GIL for that long. After the run it
replays the finished run over a text in the Tokens tab (`--replay-speed` merges a second, the
Tokens text re-cut at each step), then opens the run again from the store (loading a run).

    python benchmarks/ui_latency.py                 # 25 MB, vocab 32768
    python benchmarks/ui_latency.py --mb 5 --vocab 8000

Prints p50 / p99 / max of the gaps for each phase: counting, training, replay, loading a run;
and, for each phase, the most CPU time the UI thread itself spent between two ticks
(`time.thread_time`). A gap much longer than that CPU time was spent waiting: for the GIL held
by a background thread, or for a core on a loaded machine.
"""

from __future__ import annotations

import argparse
import os
import sysconfig
import tempfile
import time
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


def summary(label: str, gaps: list[float], cpu: list[float]) -> str:
    if not gaps:
        return f"{label}: no ticks"
    ms = np.array(gaps) * 1000
    return (
        f"{label}: {len(ms)} ticks, p50 {np.percentile(ms, 50):.1f} ms, "
        f"p99 {np.percentile(ms, 99):.1f} ms, max {ms.max():.1f} ms"
        f" (UI-thread CPU between ticks: max {max(cpu) * 1000:.1f} ms)"
    )


def main() -> int:
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
    args = parser.parse_args()

    from PySide6.QtCore import QSettings, QTimer
    from PySide6.QtWidgets import QApplication

    from workbench.gui.app import configure_application
    from workbench.gui.main_window import MainWindow

    configure_application()
    app = QApplication([])
    tmp = Path(tempfile.mkdtemp(prefix="bpe-bench-"))
    window = MainWindow(QSettings(str(tmp / "s.ini"), QSettings.Format.IniFormat), tmp / "runs.db")
    window.sigClosed.connect(app.quit)
    window.show()
    files = corpus_files(args.mb)
    size = sum(f.stat().st_size for f in files)
    print(f"corpus: {len(files)} files, {size / 1e6:.1f} MB; vocab {args.vocab}", flush=True)

    phases = ("counting", "training", "replay", "loading a run")
    gaps: dict[str, list[float]] = {name: [] for name in phases}
    cpu: dict[str, list[float]] = {name: [] for name in phases}
    last = [time.perf_counter()]
    last_cpu = [time.thread_time()]
    last_key: list[str | None] = [None]
    started = [0.0]
    phase = [""]  # set by the later phases; training phases follow the window's mode

    def tick() -> None:
        now, now_cpu = time.perf_counter(), time.thread_time()
        stage = window.status.stage.text()
        key = None
        if phase[0]:
            key = phase[0]
        elif window.mode == "training":
            key = "training" if stage == "Training" else "counting"
        # A gap belongs to the phase it ends in or, when that is none, the one it began in:
        # the handling of the run's end (the worker's idle answer) falls between the two.
        gap_key = key if key is not None else last_key[0]
        if gap_key is not None:
            gaps.setdefault(gap_key, []).append(now - last[0])
            cpu.setdefault(gap_key, []).append(now_cpu - last_cpu[0])
        last[0], last_cpu[0], last_key[0] = now, now_cpu, key

    def begin() -> None:
        window.load_corpus(files)
        window.controls.vocab.setValue(args.vocab)
        started[0] = time.perf_counter()
        window.train()

    text = "".join(f.read_text(encoding="utf-8", errors="replace") for f in files[:40])
    replay_until = [0.0]

    def watch() -> None:
        if not phase[0] and (window.mode == "finished" or (window.mode == "idle" and started[0])):
            elapsed = time.perf_counter() - started[0]
            print(
                f"{window.merges_done:,} merges in {elapsed:.1f} s ({window.status.stage.text()})",
                flush=True,
            )
            phase[0] = "waiting"
            window.tokens.panel.set_text(text[: args.text_chars])
        elif phase[0] == "waiting":
            panel = window.tokens.panel
            if panel.run_id == window.run_id and not panel.busy() and window.replay.clock.total:
                phase[0] = "replay"
                window.replay.clock.speed = float(
                    args.replay_speed
                )  # any speed, not only the menu's
                window.replay.seek(0)
                window.replay.play()
                replay_until[0] = time.perf_counter() + args.replay_seconds
        elif phase[0] == "replay" and (
            not window.replay.playing or time.perf_counter() > replay_until[0]
        ):
            print(f"replayed to merge {window.replay.k:,}", flush=True)
            window.replay.stop()
            phase[0] = "loading a run"
            window.open_run(window.run_id)
        elif phase[0] == "loading a run" and not (
            window.history.loading or window.tokens.lane.busy() or window.tokens.panel.busy()
        ):
            # Closing is no phase of its own: its gaps are not counted (and the run's end is not
            # seen a second time while the window winds down).
            phase[0] = "closing"
            window.close()

    ticker = QTimer()
    ticker.setInterval(10)
    ticker.timeout.connect(tick)
    ticker.start()
    watcher = QTimer()
    watcher.setInterval(200)
    watcher.timeout.connect(watch)
    watcher.start()

    # Let the kernels warm up first, so the numbers are about training, not compiling.
    def wait_warm() -> None:
        if window.warm_event.is_set():
            begin()
        else:
            QTimer.singleShot(100, wait_warm)

    QTimer.singleShot(100, wait_warm)
    app.exec()
    for name in phases:
        print(summary(name, gaps[name], cpu[name]))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
