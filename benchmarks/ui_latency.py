"""How long can the UI thread go without running? Gaps between 10 ms timer ticks during a run.

Opens the real window (offscreen unless QT_QPA_PLATFORM says otherwise) on a temporary database,
points it at ~25 MB of the running Python's standard-library sources (no download), trains at
full speed and records the time between ticks of a 10 ms QTimer on the UI thread. A tick that
comes late means the UI thread was busy or starved of the GIL for that long.

    python benchmarks/ui_latency.py                 # 25 MB, vocab 32768
    python benchmarks/ui_latency.py --mb 5 --vocab 8000

Prints p50 / p99 / max of the gaps, for counting and training separately.
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


def summary(label: str, gaps: list[float]) -> str:
    if not gaps:
        return f"{label}: no ticks"
    ms = np.array(gaps) * 1000
    return (
        f"{label}: {len(ms)} ticks, p50 {np.percentile(ms, 50):.1f} ms, "
        f"p99 {np.percentile(ms, 99):.1f} ms, max {ms.max():.1f} ms"
    )


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--mb", type=float, default=25.0)
    parser.add_argument("--vocab", type=int, default=32768)
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

    gaps: dict[str, list[float]] = {"counting": [], "training": []}
    last = [time.perf_counter()]
    started = [0.0]

    def tick() -> None:
        now = time.perf_counter()
        stage = window.status.stage.text()
        if window.mode == "training":
            key = "training" if stage == "Training" else "counting"
            gaps[key].append(now - last[0])
        last[0] = now

    def begin() -> None:
        window.load_corpus(files)
        window.controls.vocab.setValue(args.vocab)
        started[0] = time.perf_counter()
        window.train()

    def watch() -> None:
        if window.mode == "finished" or (window.mode == "idle" and started[0]):
            elapsed = time.perf_counter() - started[0]
            print(
                f"{window.merges_done:,} merges in {elapsed:.1f} s ({window.status.stage.text()})"
            )
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
    print(summary("counting", gaps["counting"]))
    print(summary("training", gaps["training"]))
    print(summary("whole run", gaps["counting"] + gaps["training"]))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
