"""Screenshot of the Evaluate tab: a sweep of four runs of one corpus and GPT-2, for the README.

    xvfb-run -a -s "-screen 0 1600x1000x24" python packaging/screenshot_evaluate.py

Trains a sweep of tinyshakespeare's first 1 MB at vocab 1,000 / 2,000 / 4,000 / 8,000 (one
`train --vocab-size 1000,2000,4000,8000`) into a temporary run store, puts GPT-2's files from the shared corpora where tiktoken's cache keeps them (a temporary
folder: nothing downloaded), evaluates on the held-out rest of tinyshakespeare plus two other
texts grouped by file, and saves `resources/screenshots/evaluate.png`.
"""

from __future__ import annotations

import os
import sys
import tempfile
import time
from pathlib import Path

from PySide6.QtWidgets import QApplication

ROOT = Path(__file__).resolve().parents[1]
CORPORA = ROOT.parent / "shared" / "corpora"
OUT = ROOT / "resources" / "screenshots" / "evaluate.png"
SIZES = (1000, 2000, 4000, 8000)


def main() -> int:
    from workbench.cli import main as cli
    from workbench.evaluate.references import seed_gpt2_cache

    work = Path(tempfile.mkdtemp(prefix="bpe-eval-shot-"))
    text = (CORPORA / "tinyshakespeare.txt").read_text("utf-8")
    cut = text.rfind("\n\n", 0, 1_000_000)
    (work / "train").mkdir()
    (work / "held-out").mkdir()
    (work / "train" / "shakespeare-train.txt").write_text(text[:cut], "utf-8")
    (work / "held-out" / "shakespeare-held-out.txt").write_text(text[cut:], "utf-8")
    for name in ("taylorswift.txt", "german.txt"):
        (work / "held-out" / name).write_text((CORPORA / name).read_text("utf-8"), "utf-8")
    db = work / "runs.db"
    sizes = ",".join(str(size) for size in SIZES)  # one sweep: counted once, four runs
    code = cli(["train", str(work / "train"), "--vocab-size", sizes, "--out", str(work / "out"),
                "--db", str(db), "--quiet", "--name", "shakespeare"])  # fmt: skip
    assert code == 0
    cache = work / "tiktoken-cache"
    cache.mkdir()
    seed_gpt2_cache(CORPORA / "gpt2_vocab.json", CORPORA / "gpt2_merges.txt", cache)
    os.environ["TIKTOKEN_CACHE_DIR"] = str(cache)

    app = QApplication(sys.argv)
    from workbench.gui.evaluate_tab import EvaluateTab
    from workbench.store import RunStore

    store = RunStore(db)
    tab = EvaluateTab(db, store)
    tab.setWindowTitle("BPE Workbench — Evaluate")
    tab.resize(1500, 940)
    tab.show()
    sweep = tab.tokenizers.sweeps.itemData(1)
    tab.tokenizers.pick_sweep(sweep)
    tab.tokenizers.references["gpt2"].setChecked(True)
    tab.text.add_path(work / "held-out")
    tab.text.group_by.setCurrentText("file")
    tab.start()
    deadline = time.monotonic() + 600
    while tab.busy() and time.monotonic() < deadline:
        app.processEvents()
        time.sleep(0.02)
    app.processEvents()
    tab.health_tokenizer.setCurrentIndex(0)
    for _ in range(20):
        app.processEvents()
        time.sleep(0.05)
    print(tab.status.text())
    OUT.parent.mkdir(parents=True, exist_ok=True)
    ok = tab.grab().save(str(OUT))
    tab.shutdown()
    store.close()
    print(f"saved {OUT}" if ok else "could not save the screenshot")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
