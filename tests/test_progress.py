"""Progress bars (`workbench/progress.py`): tqdm bars in the units of the work, a total fixed
before the bar is shown, finalized at the end, silent without a terminal; the CLI draws them
on a terminal (a pty here) for train and eval and not with --quiet."""

from __future__ import annotations

import io
import os
import pty
import re
import subprocess
import sys
from pathlib import Path
from types import SimpleNamespace

from workbench.progress import ProgressBars

ROOT = Path(__file__).resolve().parents[1]


def _bars(stream: io.StringIO) -> ProgressBars:
    return ProgressBars(stream=stream, enabled=True)


def _final_lines(text: str) -> list[str]:
    """What stays on screen: the last redraw of each line (tqdm redraws with \\r)."""
    return [line.rsplit("\r", 1)[-1] for line in text.split("\n") if line.strip("\r")]


def test_silent_when_stderr_is_not_a_terminal():
    stream = io.StringIO()  # isatty() is False
    bars = ProgressBars(stream=stream)
    assert not bars.enabled
    bars.bytes("count", 100)(50, 100)
    bars.close()
    assert stream.getvalue() == ""
    assert not ProgressBars(quiet=True, enabled=None).enabled


def test_bytes_in_megabytes_with_a_fixed_total_and_a_final_line():
    stream = io.StringIO()
    bars = _bars(stream)
    progress = bars.bytes("pre-tokenize", 3_000_000)
    for done, moving_total in (
        (1_000_000, 1_000_000),
        (2_000_000, 2_500_000),
        (3_000_000, 3_000_000),
    ):
        progress(done, moving_total)  # the engine's total grows while it lists: not shown
    bars.close()
    (line,) = _final_lines(stream.getvalue())
    assert line.startswith("pre-tokenize: 100%") and "3.00M/3.00MB" in line and "B/s" in line
    assert all("/3.00MB" in part for part in stream.getvalue().split("\r") if "/" in part)


def test_merges_bar_counts_merged_tokens_and_a_counter_without_total():
    stream = io.StringIO()
    with _bars(stream) as bars:
        listener = bars.merges("merge", 44, specials=1)
        listener(SimpleNamespace(vocab_size=256 + 1 + 20))
        listener(SimpleNamespace(vocab_size=256 + 1 + 44))
        step = bars.fractions(None)
        step("compression curve of run 1", -1.0)
        step("compression curve of run 1", -1.0)
    merge_line, curve_line = _final_lines(stream.getvalue())
    assert merge_line.startswith("merge: 100%") and "44/44" in merge_line and "merges" in merge_line
    assert curve_line.startswith("compression curve of run 1: 2 steps")  # no made-up total


def test_the_work_outgrowing_its_total_raises_the_total():
    stream = io.StringIO()
    with _bars(stream) as bars:
        bars.show("count", 150, 100, {"unit": "B"})
    assert "150/150" in _final_lines(stream.getvalue())[0]


def _on_a_terminal(*args: str) -> tuple[int, str]:
    """Run the CLI with stderr on a pseudo-terminal; (exit status, what the terminal got)."""
    main_fd, child_fd = pty.openpty()
    proc = subprocess.Popen(
        [sys.executable, "-m", "workbench", *args],
        cwd=ROOT,
        env={**os.environ, "PYTHONPATH": str(ROOT), "COLUMNS": "120"},
        stdout=subprocess.DEVNULL,
        stderr=child_fd,
    )
    os.close(child_fd)
    chunks = []
    while True:
        try:
            data = os.read(main_fd, 65536)
        except OSError:  # the child closed the terminal
            break
        if not data:
            break
        chunks.append(data)
    os.close(main_fd)
    return proc.wait(timeout=600), b"".join(chunks).decode("utf-8", "replace")


def test_train_and_eval_draw_bars_on_a_terminal(tmp_path, corpora):
    db = tmp_path / "runs.db"
    args = ["train", str(corpora / "tinystories_sample.txt"), "--vocab-size", "400", "--out-dir",
            str(tmp_path / "tok"), "--db", str(db)]  # fmt: skip
    code, screen = _on_a_terminal(*args)
    assert code == 0, screen
    assert re.search(r"pre-tokenize: 100%.*[kM]B/s", screen), screen
    assert re.search(r"merge: 100%.*/\d+ merges", screen), screen
    code, screen = _on_a_terminal(*args, "--quiet")
    assert code == 0 and "merge:" not in screen and "%" not in screen
    code, screen = _on_a_terminal(
        "eval", "--db", str(db), "--tokenizer", "run:1", str(corpora / "german.txt")
    )
    assert code == 0, screen
    assert re.search(r"encoding with run 1.*B", screen), screen


def test_a_parity_aware_count_draws_its_bar_on_a_terminal(tmp_path):
    root = tmp_path / "corpus"
    lines = {"en": "the quick brown fox {} jumps\n", "ru": "съешь же ещё этих {} булок\n"}
    for lang, line in lines.items():
        (root / lang).mkdir(parents=True)
        (root / lang / "a.txt").write_text("".join(line.format(i) for i in range(60)))
    total = sum(f.stat().st_size for f in root.rglob("*.txt"))
    code, screen = _on_a_terminal(
        "train", str(root), "--parity-by", "folder", "--vocab-size", "300",
        "--out-dir", str(tmp_path / "tok"), "--no-db",
    )  # fmt: skip
    assert code == 0, screen
    shown = f"{total / 1000:.2f}k"  # tqdm's bytes, scaled by 1000
    assert re.search(rf"pre-tokenize: 100%.*{shown}/{shown}B.*B/s", screen), screen
