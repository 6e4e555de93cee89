"""Screenshots of the Evaluate tab's "Compare runs" and "Vocabulary size", for the README.

    xvfb-run -a -s "-screen 0 1600x1000x24" python packaging/screenshot_compare_plan.py

Trains a sweep of tinyshakespeare's first 1 MB at vocab 1,000 / 2,000 / 4,000 and one run of
vocab 4,000 on Taylor Swift's page plus corpus.en into a temporary run store; compares the
Shakespeare run at 4,000 with the other one on the held-out rest of tinyshakespeare
(`resources/screenshots/evaluate-compare.png`), then plans the vocabulary size of the sweep for
a small model (d 256, 4 layers, context 512, tied) on the same text
(`resources/screenshots/evaluate-plan.png`).
"""

from __future__ import annotations

import sys
import tempfile
import time
from pathlib import Path

from PySide6.QtWidgets import QApplication

ROOT = Path(__file__).resolve().parents[1]
CORPORA = ROOT.parent / "shared" / "corpora"
SHOTS = ROOT / "resources" / "screenshots"


def _train(work: Path, db: Path) -> None:
    from workbench.cli import main as cli

    text = (CORPORA / "tinyshakespeare.txt").read_text("utf-8")
    cut = text.rfind("\n\n", 0, 1_000_000)
    for name in ("train", "held-out", "other"):
        (work / name).mkdir()
    (work / "train" / "shakespeare-train.txt").write_text(text[:cut], "utf-8")
    (work / "held-out" / "shakespeare-held-out.txt").write_text(text[cut:], "utf-8")
    for name in ("taylorswift.txt", "corpus.en"):
        (work / "other" / name).write_text((CORPORA / name).read_text("utf-8"), "utf-8")
    code = cli(["train", str(work / "train"), "--vocab-size", "1000,2000,4000", "--out-dir",
                str(work / "out"), "--db", str(db), "--quiet", "--name", "shakespeare"])  # fmt: skip
    assert code == 0
    code = cli(["train", str(work / "other"), "--vocab-size", "4000", "--out-dir",
                str(work / "out-other"), "--db", str(db), "--quiet", "--name", "swift+en"])  # fmt: skip
    assert code == 0


def _wait(app: QApplication, busy) -> None:
    deadline = time.monotonic() + 600
    while busy() and time.monotonic() < deadline:
        app.processEvents()
        time.sleep(0.02)
    for _ in range(20):
        app.processEvents()
        time.sleep(0.05)


def main() -> int:
    work = Path(tempfile.mkdtemp(prefix="bpe-compare-shot-"))
    db = work / "runs.db"
    _train(work, db)
    app = QApplication(sys.argv)
    from workbench.gui.evaluate_tab import EvaluateTab
    from workbench.store import RunStore

    store = RunStore(db)
    tab = EvaluateTab(db, store)
    tab.setWindowTitle("BPE Workbench — Evaluate")
    tab.resize(1500, 940)
    tab.show()
    tab.text.add_path(work / "held-out")
    runs = store.list_runs()
    shakespeare = next(r.id for r in runs if r.merge_count == 4000 - 256 and "shakespeare" in r.name)  # fmt: skip
    other = next(r.id for r in runs if r.name == "swift+en")
    tab.results.setCurrentWidget(tab.compare)
    tab.compare.choose(f"run:{shakespeare}", f"run:{other}")
    tab.compare.start()
    _wait(app, tab.busy)
    print("compare:", tab.compare.status.text())
    SHOTS.mkdir(parents=True, exist_ok=True)
    ok = tab.grab().save(str(SHOTS / "evaluate-compare.png"))

    tab.tokenizers.pick_sweep(tab.tokenizers.sweeps.itemData(1))
    tab.results.setCurrentWidget(tab.plan)
    tab.plan.width_box.setValue(256)
    tab.plan.layers_box.setValue(4)
    tab.plan.context_box.setValue(512)
    tab.plan.tied_box.setChecked(True)
    tab.plan.start()
    _wait(app, tab.busy)
    print("plan:", tab.plan.status.text())
    ok = tab.grab().save(str(SHOTS / "evaluate-plan.png")) and ok
    tab.shutdown()
    store.close()
    print("saved both screenshots" if ok else "could not save a screenshot")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
