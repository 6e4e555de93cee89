"""Token details, ties, scrubber, compare, export, drill-down, share, and the assembled panel."""

from __future__ import annotations

import re
import threading
from pathlib import Path

import pytest
from _bpe_helpers import trained

from workbench.engine.config import TrainConfig
from workbench.engine.encode.tokenizer import Tokenizer
from workbench.engine.pretokenize.counting import count_texts
from workbench.engine.train.trainer import BpeTrainer
from workbench.gui.tokens import TokensPanel
from workbench.gui.tokens.compare import CompareView
from workbench.gui.tokens.drilldown import DrillDown, find_token
from workbench.gui.tokens.export_dialog import ExportDialog
from workbench.gui.tokens.scrubber import compression_curve
from workbench.gui.tokens.token_details import TokenDetails, ties_text
from workbench.store import RunStore

TRAIN = ["the cat sat on the mat. the dog ate the hat! 😀 中文 naïve\r\n" * 30]
CONFIG = TrainConfig(vocab_size=300)


@pytest.fixture(scope="module")
def tok() -> Tokenizer:
    result = trained(TRAIN, CONFIG)
    return Tokenizer.from_merges(result.merges(), CONFIG.pattern_string)


@pytest.fixture
def stored_run(tmp_path):
    store = RunStore(tmp_path / "runs.db")
    run_id = store.create_run("cats", settings=CONFIG)
    with store.writer(run_id) as writer:
        for batch in BpeTrainer(count_texts(TRAIN, CONFIG), CONFIG).batches():
            writer.write(batch)
        writer.set_state("done", stop_reason="vocab size reached")
    yield store, run_id
    store.close()


@pytest.fixture
def panel(qtbot):
    widget = TokensPanel()
    qtbot.addWidget(widget)
    widget.resize(1200, 800)
    yield widget
    widget.shutdown()
    assert not widget.busy(), "a worker outlived the test"


def merged_id(tok: Tokenizer, text: str) -> int:
    return next(t for t in tok.encode(text) if tok.token_rank(t) >= 0)


def test_details_show_every_field_and_jump(qtbot, qtmodeltester, tok):
    details = TokenDetails()
    qtbot.addWidget(details)
    details.set_source(tok)
    tid = merged_id(tok, " the")
    details.show_token(tid)
    raw = tok.vocab[tid]
    assert details.labels["id"].text() == str(tid)
    assert details.labels["bytes"].text() == raw.hex(" ").upper()
    assert details.labels["GPT-2 form"].text() == raw.decode().replace(" ", "Ġ")
    assert details.tree_model.rowCount() == 1
    root = details.tree_model.item(0)
    assert root.rowCount() == 2  # its two parts
    qtmodeltester.check(details.tree_model)
    with qtbot.waitSignal(details.sigJumpToRank) as blocker:
        details.jump_button.click()
    assert blocker.args == [tok.token_rank(tid)]


def test_details_from_store_show_count_and_ties(qtbot, tok, stored_run):
    store, run_id = stored_run
    run_tok = Tokenizer.from_merges(store.merges_as_pairs(run_id), CONFIG.pattern_string)
    details = TokenDetails()
    qtbot.addWidget(details)
    details.set_source(run_tok, store, run_id)
    tid = merged_id(run_tok, " the")
    details.show_token(tid)
    merge = store.merge_by_id(run_id, tid)
    assert details.labels["pair count"].text() == f"{merge.count:,}"
    assert details.labels["ties"].text() == ties_text(merge.ties, "lexicographic")


def test_ties_text():
    assert ties_text(0, "hf") == "no tie (rule: hf)"
    assert ties_text(3, "lexicographic") == "3 other pairs tied on this count; rule: lexicographic"


def test_compression_curve_rises(tok):
    ks, values = compression_curve(tok, "the cat sat on the mat", points=5)
    assert ks[0] == 0 and ks[-1] == len(tok.merges)
    assert values[0] == 1.0 and values[-1] > 1.0


def test_scrubber_recuts_with_a_prefix(panel, qtbot, tok):
    panel.set_tokenizer(tok, "cats")
    panel.set_text("the cat sat on the mat")
    qtbot.waitUntil(lambda: panel.view.encoded is not None and len(panel.view.encoded) > 0)
    full = len(panel.view.encoded)
    with qtbot.waitSignal(panel.view.sigEncoded, timeout=5000):
        panel.scrubber.set_rank(0)
    assert len(panel.view.tokenizer.merges) == 0
    assert len(panel.view.encoded) == len(b"the cat sat on the mat") > full
    assert "k = 0 merges" in panel.scrubber.label.text()


def test_replay_cuts_off_the_ui_thread_and_keeps_only_the_newest_k(panel, qtbot, tok, monkeypatch):
    panel.set_tokenizer(tok, "cats")
    panel.set_text("the cat sat on the mat")
    qtbot.waitUntil(lambda: not panel.busy(), timeout=5000)
    threads: list[bool] = []
    cut_at: list[int] = []
    real_prefix = Tokenizer.prefix

    def prefix(self: Tokenizer, k: int) -> Tokenizer:
        threads.append(threading.current_thread() is threading.main_thread())
        cut_at.append(k)
        return real_prefix(self, k)

    monkeypatch.setattr(Tokenizer, "prefix", prefix)
    for k in range(1, 8):  # as a playing replay asks, faster than a cut takes
        panel.show_rank(k)
    assert panel.scrubber.slider.value() == 7  # the slider follows at once, the cut later
    qtbot.waitUntil(lambda: not panel.busy(), timeout=5000)
    assert threads and not any(threads)  # the prefix's tables were never built on the UI thread
    assert cut_at[0] == 1 and cut_at[-1] == 7 and len(cut_at) < 7  # 2..6 coalesced away
    assert len(panel.view.tokenizer.merges) == 7
    assert panel.view.encoded is not None
    assert len(panel.view.encoded) == len(tok.prefix(7).encode("the cat sat on the mat"))


def test_compare_counts_and_differences(qtbot, qtmodeltester, tok):
    view = CompareView()
    qtbot.addWidget(view)
    view.set_primary("full", tok)
    view.add_tokenizer("k=5", tok.prefix(5))
    text = "the cat sat on the mat 😀"
    view.set_text(text)
    qtbot.waitUntil(lambda: all(r.encoded is not None for r in view.rows), timeout=5000)
    assert [len(r.encoded) for r in view.rows] == [
        len(tok.encode(text)),
        len(tok.prefix(5).encode(text)),
    ]
    # A prefix cuts finer: every edge of the full split is also its edge, not the reverse.
    assert not view.rows[0].differs.any() and view.rows[1].differs.any()
    assert view.model.data(view.model.index(0, 1)) == f"{len(tok.encode(text)):,}"
    qtmodeltester.check(view.model)
    view.shutdown()


def test_compare_with_gpt2_files(qtbot, tok, corpora):
    view = CompareView()
    qtbot.addWidget(view)
    view.set_primary("cats", tok)
    view.set_text("Hello world, the cat sat.")
    view.add_file(corpora / "gpt2_vocab.json")
    qtbot.waitUntil(
        lambda: len(view.rows) == 2 and view.rows[1].encoded is not None, timeout=60_000
    )
    assert len(view.rows[1].encoded) < len(view.rows[0].encoded)
    view.shutdown()


def test_export_dialog_round_trips(qtbot, tok, tmp_path):
    dialog = ExportDialog(tok, "the cat sat 😀", str(tmp_path))
    qtbot.addWidget(dialog)
    for box in dialog.boxes.values():
        box.setChecked(True)
    with qtbot.waitSignal(dialog.sigFinished, timeout=60_000):
        dialog.start()
    by_fmt = {r.fmt: r for r in dialog.results}
    assert by_fmt["hf"].ok and by_fmt["gpt2"].ok, dialog.log.toPlainText()
    assert "round trip OK" in dialog.log.toPlainText()
    assert (tmp_path / "hf" / "tokenizer.json").is_file()
    dialog.shutdown()


def test_drilldown_counts_per_file(qtbot, qtmodeltester, tok, tmp_path):
    (tmp_path / "a.txt").write_text("the cat\nno match here? the the\n", encoding="utf-8")
    (tmp_path / "b.txt").write_text("xyz\n", encoding="utf-8")
    tid = merged_id(tok, " the")
    expected = sum(
        tok.encode(line).count(tid) for line in ["the cat\n", "no match here? the the\n"]
    )
    result = find_token(tok, tid, [tmp_path])
    assert result.total == expected > 0
    assert [c for _, c, _ in result.per_file] == [expected, 0]
    assert "«" in result.contexts[0]
    widget = DrillDown()
    qtbot.addWidget(widget)
    widget.set_corpus_paths([tmp_path])
    widget.show_token(tok, tid)
    qtbot.waitUntil(lambda: widget.result is not None, timeout=10_000)
    assert widget.model.rowCount() == 2
    qtmodeltester.check(widget.model)
    widget.shutdown()


def test_drilldown_reads_compressed_and_jsonl_corpora_as_text(tok, tmp_path):
    import gzip
    import json

    with gzip.open(tmp_path / "a.txt.gz", "wt", encoding="utf-8") as handle:
        handle.write("the cat\nthe dog\n")
    (tmp_path / "b.jsonl").write_text(json.dumps({"text": "see the hat"}) + "\n", "utf-8")
    (tmp_path / "c.txt").write_bytes(b"\0\0binary")
    tid = merged_id(tok, " the")
    result = find_token(tok, tid, [tmp_path])
    expected = [tok.encode(line).count(tid) for line in ("the cat\n", "the dog\n")]
    counts = {Path(p).name: c for p, c, _ in result.per_file}
    assert counts["a.txt.gz"] == sum(expected)
    assert counts["b.jsonl"] == tok.encode("see the hat").count(tid) > 0
    assert counts["c.txt"] == 0 and any("c.txt: not read" in c for c in result.contexts)


def test_share_writes_html_with_encode_ids_and_png(panel, qtbot, tok, tmp_path):
    panel.set_tokenizer(tok, "cats")
    text = "the cat 😀 中文\r\nsat"
    panel.set_text(text)
    qtbot.waitUntil(lambda: panel.view.encoded is not None and len(panel.view.encoded) > 0)
    html_path, png_path = panel.share(tmp_path / "split.html")
    html = html_path.read_text(encoding="utf-8")
    ids = re.search(r"data-all-ids='([^']*)'", html).group(1).split()
    assert list(map(int, ids)) == tok.encode(text)
    spans = [int(i) for group in re.findall(r'data-ids="([^"]*)"', html) for i in group.split()]
    assert spans == tok.encode(text)
    assert png_path.stat().st_size > 1000


def test_panel_opens_a_tokenizer_file_and_jumps(panel, qtbot, tok, tmp_path):
    from workbench.engine import formats

    formats.export(tok, "hf", tmp_path)
    panel.open_tokenizer_file(tmp_path / "tokenizer.json")
    qtbot.waitUntil(lambda: panel._base is not None, timeout=10_000)
    assert panel._base.encode("the cat") == tok.encode("the cat")
    tid = merged_id(tok, " the")
    panel.details.show_token(tid)
    with qtbot.waitSignal(panel.sigJumpToRank) as blocker:
        panel.details.jump_button.click()
    assert blocker.args == [tok.token_rank(tid)]


def test_panel_compare_tab_encodes_when_shown(panel, qtbot, tok):
    panel.set_tokenizer(tok, "cats")
    panel.set_text("the cat sat")
    qtbot.waitUntil(lambda: panel.view.encoded is not None and len(panel.view.encoded) > 0)
    panel.compare.add_tokenizer("bytes", tok.prefix(0))
    panel.tabs.setCurrentWidget(panel.compare)
    qtbot.waitUntil(
        lambda: all(
            r.encoded is not None and r.encoded.text == "the cat sat" for r in panel.compare.rows
        ),
        timeout=5000,
    )
    assert len(panel.compare.rows[1].encoded) == len("the cat sat")


def test_merge_tree_of_a_very_deep_token_is_bounded():
    from workbench.gui.merge_tree import DEPTH_LIMIT, NODE_LIMIT
    from workbench.gui.tokens.token_details import build_tree_item

    chain = Tokenizer.from_merges([(b"a" * i, b"a") for i in range(1, 400)], CONFIG.pattern_string)
    deepest = chain.encode("a" * 400)
    assert len(deepest) == 1
    root = build_tree_item(chain, deepest[0])

    def walk(item, depth=0):
        yield depth, item.text()
        for row in range(item.rowCount()):
            yield from walk(item.child(row), depth + 1)

    nodes = list(walk(root))
    assert max(d for d, _ in nodes) == DEPTH_LIMIT + 1  # cut, and said so, at the limit
    assert any("not shown" in text for d, text in nodes if d == DEPTH_LIMIT + 1)
    assert len(nodes) <= 2 * NODE_LIMIT
