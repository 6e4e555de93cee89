"""Screenshot of the window in the middle of a training run, for the README.

Starts the real app window on an X server (its own Xvfb when there is no DISPLAY), trains on
the demo corpus, selects a merge so the merge tree shows, and saves the window as the X server
draws it once the run is part-way:

    python packaging/screenshot.py                       # -> resources/screenshots/window.png
    python packaging/screenshot.py --out /tmp/w.png --vocab 20000 --at 0.5

Needs Xvfb (`apt-get install xvfb`) and the libraries Qt's xcb plugin loads (libxcb-cursor0,
libxkbcommon-x11-0, ...). Settings and the run database are temporary: your own are untouched.
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
DEFAULT_OUT = ROOT / "resources" / "screenshots" / "window.png"
SIZE = (1400, 900)  # the window's default size: what a new user sees


def start_xvfb() -> subprocess.Popen | None:
    """Start Xvfb on a free display unless one is already set; returns the process to end."""
    if os.environ.get("DISPLAY"):
        return None
    if shutil.which("Xvfb") is None:
        sys.exit("screenshot: no DISPLAY and no Xvfb (apt-get install xvfb)")
    for number in range(90, 110):
        if not Path(f"/tmp/.X11-unix/X{number}").exists():
            break
    display = f":{number}"
    process = subprocess.Popen(
        ["Xvfb", display, "-screen", "0", f"{SIZE[0]}x{SIZE[1]}x24", "-nolisten", "tcp"],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    for _ in range(50):
        if Path(f"/tmp/.X11-unix/X{number}").exists():
            break
        time.sleep(0.1)
    os.environ["DISPLAY"] = display
    return process


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT)
    parser.add_argument("--vocab", type=int, default=32768)
    parser.add_argument("--at", type=float, default=0.25, help="fraction of the run to shoot at")
    args = parser.parse_args()

    xvfb = start_xvfb()
    os.environ["QT_QPA_PLATFORM"] = "xcb"
    try:
        return shoot(args.out, args.vocab, args.at)
    finally:
        if xvfb is not None:
            xvfb.terminate()
            xvfb.wait(5)


def shoot(out: Path, vocab: int, at: float) -> int:
    import pyqtgraph as pg
    from PySide6.QtCore import QSettings, QTimer
    from PySide6.QtWidgets import QApplication

    from workbench.gui.app import configure_application
    from workbench.gui.main_window import MainWindow

    configure_application()
    app = QApplication([])
    pg.setConfigOptions(antialias=False)
    tmp = Path(tempfile.mkdtemp(prefix="bpe-shot-"))
    window = MainWindow(QSettings(str(tmp / "s.ini"), QSettings.Format.IniFormat), tmp / "runs.db")
    window.sigClosed.connect(app.quit)
    window.resize(*SIZE)
    window.move(0, 0)
    window.show()
    window.controls.vocab.setValue(vocab)
    target = int((vocab - 256) * at)
    state = {"shot": False}

    def start() -> None:
        if not window.warm_event.is_set() or window.corpus_panel.cancel.isEnabled():
            QTimer.singleShot(100, start)  # kernels compiling or corpus counting: wait
            return
        window.train()
        QTimer.singleShot(20, watch)

    def watch() -> None:
        if window.mode != "training" and not state["shot"]:
            print(f"screenshot: the run ended at {window.merges_done} merges before {target}")
            window.close()
            return
        if window.merges_done < target:
            QTimer.singleShot(20, watch)
            return
        arrange()

    def arrange() -> None:
        panel = window.merge_list
        panel.search.setText("ing")
        panel.apply_search()
        if panel.model.rowCount():
            panel.follow.setChecked(False)  # as a click on the row does
            panel.view.selectRow(min(3, panel.model.rowCount() - 1))
        # The live charts redraw on a timer and let their axes trail a fast run (a few moves
        # per frame); a still picture has no later frame, so draw now with every axis caught
        # up before placing the hover point. Grab soon after: the demo run lasts about a
        # second, and waiting longer shoots a finished run rather than one in progress.
        window.charts.settle()
        x = window.charts.data.n * 0.3
        pos = window.charts.count_plot.vb.mapViewToScene(pg.Point(x, 2))
        window.charts._on_mouse_moved(pos)  # show the hover line as a user would see it
        QTimer.singleShot(100, grab)

    def grab() -> None:
        screen = window.screen()
        picture = screen.grabWindow(window.winId())
        out.parent.mkdir(parents=True, exist_ok=True)
        picture.save(str(out))
        state["shot"] = True
        if window.mode != "training":
            print(f"screenshot: warning, the run was no longer training ({window.mode})")
        print(
            f"screenshot: {out} at {window.merges_done:,} merges ({picture.width()}x"
            f"{picture.height()})"
        )
        window.close()

    QTimer.singleShot(200, start)
    app.exec()
    return 0 if state["shot"] else 1


if __name__ == "__main__":
    raise SystemExit(main())
