"""What a jump to the last row of a sorted merge list costs the UI thread, with and without the
background page reader (merge_pages.py).

Writes a run of synthetic merges to a temporary database, sorts the list by token and by length,
asks for the last row's token and waits (sleeping, as an idle event loop does) for its page.

    python benchmarks/merge_pages.py              # 200,000 merges
    python benchmarks/merge_pages.py --merges 50000
"""

from __future__ import annotations

import argparse
import os
import tempfile
import time
from pathlib import Path

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")

from PySide6.QtCore import Qt  # noqa: E402
from PySide6.QtWidgets import QApplication  # noqa: E402

from workbench.gui.merge_table import LENGTH, TOKEN, MergeTableModel  # noqa: E402
from workbench.store import RunStore  # noqa: E402
from workbench.store.synthetic import synthetic_batches  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--merges", type=int, default=200_000)
    n = parser.parse_args().merges
    app = QApplication([])
    with tempfile.TemporaryDirectory() as folder:
        store = RunStore(Path(folder) / "runs.db")
        run_id = store.create_run("synthetic")
        with store.writer(run_id) as writer:
            for batch in synthetic_batches(n, batch_size=10_000, seed=1):
                writer.write(batch)
        for background in (False, True):
            for column, name in ((TOKEN, "token"), (LENGTH, "length")):
                model = MergeTableModel()
                if background:
                    model.read_in_background()
                model.set_run(store, run_id, n)
                model.sort(column, Qt.SortOrder.AscendingOrder)
                start = time.perf_counter()
                shown = model.data(model.index(n - 1, TOKEN))
                ui_ms = (time.perf_counter() - start) * 1000
                while model.pages_pending():
                    app.processEvents()
                    time.sleep(0.002)
                arrived_ms = (time.perf_counter() - start) * 1000
                print(
                    f"{'background' if background else 'at once':>10}  sort by {name:<6}  "
                    f"UI thread {ui_ms:7.1f} ms (shows {shown!r})  row ready after "
                    f"{arrived_ms:6.0f} ms"
                )
                model.shutdown()
        store.close()


if __name__ == "__main__":
    main()
