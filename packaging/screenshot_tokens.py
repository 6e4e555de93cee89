"""Screenshot of the Tokens panel with the comparison open (this run vs GPT-2), for the README.

Run under a real X server so fonts and widgets look as a person sees them:

    xvfb-run -a -s "-screen 0 1600x1000x24" python packaging/screenshot_tokens.py [--corpora DIR]

It trains a small tokenizer on a shared corpus, opens GPT-2's vocab.json + merges.txt beside it,
shows a sample text with emoji and CJK, and saves `resources/screenshots/tokens.png`.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

from PySide6.QtWidgets import QApplication

ROOT = Path(__file__).resolve().parents[1]
CORPORA = ROOT.parent / "shared" / "corpora"
OUT = ROOT / "resources" / "screenshots" / "tokens.png"

SAMPLE = (
    "Byte-level BPE starts from the 256 bytes and merges the most frequent pair, again and "
    "again, until the vocabulary is full.\n"
    'So "the" soon becomes one token, while a rare word like antidisestablishmentarianism '
    "stays in pieces.\n"
    "Emoji and other scripts cut inside characters: 😀👍🏽 中文字 שלום [x] — naïve café.\r\n"
    "    def count_pairs(ids):  # code and numbers: 1234567890\n"
)


def wait(app: QApplication, panel, seconds: float = 60.0) -> None:
    """Let the panel's threads and timers finish (loading GPT-2 takes a few seconds)."""
    deadline = time.monotonic() + seconds
    idle_since = None
    while time.monotonic() < deadline:
        app.processEvents()
        if panel.busy() or panel.compare.busy():
            idle_since = None
        elif idle_since is None:
            idle_since = time.monotonic()
        elif time.monotonic() - idle_since > 0.8:
            return
        time.sleep(0.02)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--corpora", type=Path, default=CORPORA, help="the shared corpora folder")
    parser.add_argument("--out", type=Path, default=OUT)
    args = parser.parse_args()
    corpora, out = args.corpora, args.out
    app = QApplication(sys.argv[:1])
    from workbench.engine.encode.tokenizer import Tokenizer

    from workbench.engine.config import TrainConfig
    from workbench.gui.tokens import TokensPanel
    from workbench.session.counting import count_documents
    from workbench.session.run import RunSession

    corpus = (corpora / "taylorswift.txt").read_text(encoding="utf-8")
    config = TrainConfig(vocab_size=2000)
    session = RunSession.start(count_documents([corpus], config), config)
    session.advance()
    tok = Tokenizer.from_merges(session.merges(), config.pattern_string)

    panel = TokensPanel()
    panel.setWindowTitle("BPE Workbench — Tokens")
    panel.resize(1500, 920)
    panel.show()
    panel.set_tokenizer(tok, "this run: taylorswift.txt, vocab 2,000")
    panel.set_text(SAMPLE)
    panel.view.ids_box.setChecked(True)
    panel.compare.add_file(corpora / "gpt2_vocab.json")
    panel.tabs.setCurrentWidget(panel.compare)
    wait(app, panel)
    enc = panel.view.encoded
    if enc is not None:
        index = int(len(enc) * 0.1)
        panel.details.show_token(int(enc.ids[index]))
        for i in range(len(enc)):  # a merged token with a long tree reads best
            if tok.token_rank(int(enc.ids[i])) > 400 and enc.byte_end[i] - enc.byte_start[i] > 4:
                panel.details.show_token(int(enc.ids[i]))
                break
    wait(app, panel, 5)
    out.parent.mkdir(parents=True, exist_ok=True)
    ok = panel.grab().save(str(out))
    panel.shutdown()
    print(f"{'saved' if ok else 'FAILED to save'} {out}")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
