"""Measure the Tokens view's re-render of 100 KB: `python benchmarks/tokens_view.py`.

Prints, per run, the time from the request to the view showing the new split (encode in the
worker, visible blocks coloured, counts, strip) and when the whole document is coloured.
Uses GPT-2's files from $BPE_WORKBENCH_CORPORA (default ../shared/corpora) (a 50k vocabulary) on taylorswift.txt.
"""

from __future__ import annotations

import os
import sys
import time

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")

from _paths import corpora  # noqa: E402

CORPORA = corpora()


def main(runs: int = 5) -> int:
    from PySide6.QtWidgets import QApplication

    app = QApplication.instance() or QApplication(sys.argv)
    from workbench.engine.formats import load
    from workbench.gui.tokens.encoded import TokenTable
    from workbench.gui.tokens.tokens_view import TokensView

    tok = load(CORPORA / "gpt2_vocab.json")
    text = (CORPORA / "taylorswift.txt").read_text(encoding="utf-8")[:100_000]
    view = TokensView()
    view.resize(1000, 700)
    view.show()
    view.set_tokenizer(tok, TokenTable(tok))
    tok.encode("warm up")
    for i in range(runs):
        done: list[float] = []
        view.sigEncoded.connect(lambda _e, d=done: d.append(time.perf_counter()))
        view.set_text(text[: 100_000 - 1] + str(i))
        view.refresh()  # measure from the request, without the debounce pause
        while not done:
            app.processEvents()
        while view.highlighter.pending():
            app.processEvents()
        whole = time.perf_counter()
        view.sigEncoded.disconnect()
        enc = view.encoded
        print(
            f"run {i}: {len(enc):,} tokens; shown in {view.last_render_ms:.0f} ms "
            f"(encode {enc.seconds * 1000:.0f} ms in the worker); whole document coloured "
            f"after {(whole - done[0]) * 1000 + view.last_render_ms:.0f} ms"
        )
    view.shutdown()
    return 0


if __name__ == "__main__":
    sys.exit(main())
