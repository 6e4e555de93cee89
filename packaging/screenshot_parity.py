"""Screenshot of a parity-aware run part-way: the per-group compression curves below the four
charts, the worst group named.

    python packaging/screenshot_parity.py          # -> resources/screenshots/parity.png
    python packaging/screenshot_parity.py --out /tmp/p.png --vocab 3256 --at 0.6

The corpus: a folder per language of the man pages under /usr/share/man/{ja,ko,ru,de,zh_CN}
(decompressed) and tinyshakespeare as `en`, trained with "Parity by: folder". Needs Xvfb, as
`screenshot.py` does; settings and the run database are temporary.
"""

from __future__ import annotations

import argparse
import gzip
import os
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "packaging"))
sys.path.insert(0, str(ROOT / "benchmarks"))

from screenshot import SIZE, start_xvfb  # noqa: E402

DEFAULT_OUT = ROOT / "resources" / "screenshots" / "parity.png"
LANGS = ("ja", "ko", "ru", "de", "zh_CN")


def make_corpus(folder: Path) -> None:
    from _paths import corpora

    for lang in LANGS:
        (folder / lang).mkdir(parents=True)
        for page in sorted(Path("/usr/share/man", lang).rglob("*.gz")):
            text = gzip.decompress(page.read_bytes()).decode("utf-8", "replace")
            (folder / lang / f"{page.stem}.txt").write_text(text, "utf-8")
    (folder / "en").mkdir()
    (folder / "en" / "shakespeare.txt").write_bytes(
        (corpora() / "tinyshakespeare.txt").read_bytes()
    )


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT)
    parser.add_argument("--vocab", type=int, default=256 + 3000)
    parser.add_argument("--at", type=float, default=0.6, help="fraction of the run to shoot at")
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
    pg.setConfigOptions(antialias=True)
    tmp = Path(tempfile.mkdtemp(prefix="bpe-parity-shot-"))
    make_corpus(tmp / "corpus")
    window = MainWindow(QSettings(str(tmp / "s.ini"), QSettings.Format.IniFormat), tmp / "runs.db")
    window.sigClosed.connect(app.quit)
    window.resize(*SIZE)
    window.move(0, 0)
    window.show()
    window.controls.vocab.setValue(vocab)
    window.controls.parity.setCurrentIndex(window.controls.parity.findData("folder"))
    window.load_corpus([tmp / "corpus"])
    target = int((vocab - 256) * at)
    state = {"shot": False}

    def start() -> None:
        if window.corpus_panel.cancel.isEnabled():
            QTimer.singleShot(100, start)  # the corpus is being counted: wait
            return
        window.train()
        QTimer.singleShot(50, watch)

    def watch() -> None:
        if window.mode != "training" and not state["shot"]:
            print(f"screenshot: the run ended at {window.merges_done} merges before {target}")
            window.close()
            return
        if window.merges_done < target:
            QTimer.singleShot(50, watch)
            return
        window.charts.settle()
        QTimer.singleShot(300, grab)

    def grab() -> None:
        picture = window.screen().grabWindow(window.winId())
        out.parent.mkdir(parents=True, exist_ok=True)
        picture.save(str(out))
        state["shot"] = True
        title = window.charts.groups.plot.titleLabel.text
        print(f"screenshot: {out} at {window.merges_done:,} merges; chart title: {title}")
        window.close()

    QTimer.singleShot(200, start)
    app.exec()
    return 0 if state["shot"] else 1


if __name__ == "__main__":
    raise SystemExit(main())
