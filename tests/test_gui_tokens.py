"""Tokens view: spans, colours on the right UTF-16 units, the strip, counts, threads (issue 6)."""

from __future__ import annotations

import numpy as np
import pytest
from _bpe_helpers import trained
from PySide6.QtGui import QColor

from workbench.engine.config import TrainConfig
from workbench.engine.encode.tokenizer import Tokenizer
from workbench.gui.tokens.colors import token_color
from workbench.gui.tokens.encoded import TokenTable, encode_text
from workbench.gui.tokens.strip import build_strip
from workbench.gui.tokens.tokens_view import TokensView, from_display, to_display

TRAIN = [
    "the cat sat on the mat. the dog ate the hat! 😀😀 中文中文 naïve café\r\n" * 20,
    "low lower lowest newer wider 12345 12345 👍🏽 e\u0301e\u0301 tab\there\n" * 20,
]
# Emoji (astral: 2 UTF-16 units), skin tone modifier, CJK, combining marks, CRLF, lone CR, tab.
TRICKY = [
    "the cat 😀 sat\r\non 中文 the mat",
    "naïve e\u0301 café 👍🏽👍🏽 low\rlower\r\n\r\n  end  ",
    "😀中😀 x\u0301\u0302 \t\t12345678\r\n",
    "",
    "a",
]


@pytest.fixture(scope="module")
def small_tok() -> Tokenizer:
    config = TrainConfig(vocab_size=330)
    result = trained(TRAIN, config)
    return Tokenizer.from_merges(result.merges(), config.pattern_string)


@pytest.fixture
def view(qtbot, small_tok):
    widget = TokensView()
    qtbot.addWidget(widget)
    widget.resize(800, 600)
    widget.set_tokenizer(small_tok, TokenTable(small_tok))
    yield widget
    widget.shutdown()
    assert not widget.busy(), "a worker outlived the test"


def u16(text: str, index: int) -> int:
    return len(text[:index].encode("utf-16-le")) // 2


@pytest.mark.parametrize("text", TRICKY)
def test_encoded_spans_are_the_encoders(small_tok, text):
    enc = encode_text(TokenTable(small_tok), text)
    spans = small_tok.encode_with_spans(text)
    assert enc.ids.tolist() == [s.id for s in spans]
    assert enc.byte_start.tolist() == [s.byte_start for s in spans]
    assert enc.char_start.tolist() == [s.char_start for s in spans]
    assert enc.char_end.tolist() == [s.char_end for s in spans]
    assert enc.splits_char.tolist() == [s.splits_char for s in spans]
    assert enc.u16_start.tolist() == [u16(text, s.char_start) for s in spans]
    assert enc.u16_end.tolist() == [u16(text, s.char_end) for s in spans]


def test_tricky_text_really_splits_characters(small_tok):
    enc = encode_text(TokenTable(small_tok), TRICKY[2])
    assert enc.splits_char.any(), "the test text should exercise partial-character tokens"


def _expected_colours(tok: Tokenizer, text: str) -> list[QColor | None]:
    """Per UTF-16 unit, the background the encoder's spans call for: tokens sharing a character
    or a grapheme cluster are one group, painted in the group's first token's colour; computed
    from encode_with_spans and `regex`'s `\\X` (CR LF counted as two clusters)."""
    import regex

    starts = {m.start() for m in regex.finditer(r"\X", text)} | {len(text)}
    starts |= {m.start() + 1 for m in regex.finditer(r"\r\n", text)}
    boundaries = {0}
    total = 0
    for i, ch in enumerate(text):
        total += len(ch.encode())
        if i + 1 in starts:
            boundaries.add(total)
    colours: list[QColor | None] = [None] * u16(text, len(text))
    group, first = -1, 0
    for span in tok.encode_with_spans(text):
        if span.byte_start in boundaries:
            group, first = group + 1, span.id
        colour = token_color(first, bool(group & 1))
        for unit in range(u16(text, span.char_start), u16(text, span.char_end)):
            colours[unit] = colour
    return colours


def _painted_colours(widget: TokensView) -> list[QColor | None]:
    doc = widget.editor.document()
    colours: list[QColor | None] = [None] * (doc.characterCount() - 1)
    block = doc.firstBlock()
    while block.isValid():
        for fr in block.layout().formats():
            for unit in range(fr.start, fr.start + fr.length):
                if block.position() + unit < len(colours):
                    colours[block.position() + unit] = fr.format.background().color()
        block = block.next()
    return colours


@pytest.mark.parametrize("text", [t for t in TRICKY if t])
def test_colours_land_on_the_encoders_spans(view, small_tok, qtbot, text):
    view.set_text(text)
    qtbot.waitUntil(lambda: view.encoded is not None and view.encoded.text == text)
    view.highlighter.finish()
    painted = _painted_colours(view)
    expected = _expected_colours(small_tok, text)
    assert len(painted) == len(expected)
    for unit, (want, got) in enumerate(zip(expected, painted, strict=True)):
        if to_display(text)[min(unit, len(text) - 1)] == "\n" and got is None:
            continue  # a block separator carries no format
        if text.encode("utf-16-le")[2 * unit : 2 * unit + 2] == "\n".encode("utf-16-le"):
            continue
        assert got is not None and want is not None, f"unit {unit} of {text!r} is uncoloured"
        assert got.name() == want.name(), f"unit {unit} of {text!r}"


def test_display_keeps_carriage_returns(view):
    text = "a\r\nb\rc\u2028d😀\n"
    assert from_display(to_display(text).replace("\n", "\u2029")) == text
    view.set_text(text)
    assert view.text() == text


def test_strip_groups_split_characters(small_tok):
    enc = encode_text(TokenTable(small_tok), "x🦀中 y")  # 🦀 is not in TRAIN: bytes
    strip = build_strip(enc, TokenTable(small_tok).bytes_of, True, True, True)
    assert "\ufffd" not in strip.text
    plain = strip.text.translate(dict.fromkeys((0x2066, 0x2068, 0x2069)))  # bidi isolates
    assert "🦀[F0" in plain and "|" in plain
    assert "·" in plain  # whitespace glyph
    # every token is reachable from the strip (hover works on every chip)
    assert sorted(set(strip.chip_token)) == list(range(len(enc)))


def test_strip_is_cut_for_long_texts(small_tok):
    enc = encode_text(TokenTable(small_tok), "the cat " * 2000)
    strip = build_strip(enc, TokenTable(small_tok).bytes_of, False, False, False, limit=100)
    assert strip.truncated and "more tokens" in strip.text


def test_counts_and_toggles(view, qtbot):
    view.set_text("the cat sat on the mat")
    qtbot.waitUntil(lambda: view.encoded is not None and len(view.encoded) > 0)
    enc = view.encoded
    assert f"{len(enc):,} tokens" in view.counts.text()
    assert "22 chars" in view.counts.text() and "bytes/token" in view.counts.text()
    assert enc.n_words == 6
    view.ids_box.setChecked(True)
    assert str(int(enc.ids[0])) in view.strip_edit.toPlainText()
    view.glyphs_box.setChecked(True)
    assert "·" in view.strip_edit.toPlainText()


def test_an_empty_text_says_no_text_not_zeros(view, qtbot):
    view.set_text("the cat")
    qtbot.waitUntil(lambda: "tokens" in view.counts.text())
    view.set_text("")
    qtbot.waitUntil(lambda: view.encoded is not None and not view.encoded.text)
    assert view.counts.text() == "no text"


def test_a_long_strip_is_coloured_in_slices_to_the_end(view, qtbot):
    view.set_text("the cat sat on the mat\n" * 1500)
    qtbot.waitUntil(lambda: view.encoded is not None and len(view.encoded) > 1000, timeout=10_000)
    strip = view.strip_highlighter
    # The strip is laid out in a turn after the text's colours (`paint_turns`), then coloured.
    qtbot.waitUntil(lambda: not view.strip_pending() and not strip.pending(), timeout=10_000)
    doc = view.strip_edit.document()
    assert doc.blockCount() > 100
    for number in (0, doc.blockCount() // 2, doc.blockCount() - 2):
        assert doc.findBlockByNumber(number).layout().formats(), f"block {number} uncoloured"


def test_hover_finds_the_token_under_the_mouse(view, qtbot):
    view.set_text("the cat 😀 sat")
    qtbot.waitUntil(lambda: view.encoded is not None and len(view.encoded) > 0)
    enc = view.encoded
    position = u16(enc.text, enc.text.index("sat")) + 1
    cursor = view.editor.textCursor()
    cursor.setPosition(position)
    point = view.editor.cursorRect(cursor).center()
    index = view._index_under(view.editor.viewport(), point)
    assert index is not None and enc.text[enc.char_start[index] : enc.char_end[index]].endswith(
        "sat"
    )


def test_long_text_renders_off_the_ui_thread(view, qtbot, small_tok):
    text = ("The quick brown fox 😀 jumps over the lazy dog; 中文 naïve café.\n" * 1600)[:100_000]
    # Generous waits: a loaded machine (or a cold kernel cache) is slow, never wrong.
    with qtbot.waitSignal(view.sigEncoded, timeout=60_000) as blocker:
        view.set_text(text)
    enc = blocker.args[0]
    assert enc.text == text and len(enc) == len(small_tok.encode(text))
    # The time it took is measured by benchmarks/tokens_view.py, not asserted here.
    qtbot.waitUntil(lambda: not view.highlighter.pending(), timeout=30_000)


def test_typing_fast_shows_only_the_latest_text(view, qtbot):
    base = "word " * 1000  # long enough for the thread path
    for i in range(5):
        view.set_text(base + str(i))
    qtbot.waitUntil(
        lambda: view.encoded is not None and view.encoded.text.endswith("4"), timeout=10_000
    )
    view.shutdown()
    assert not view.busy()


def test_encoded_token_lookup(small_tok):
    enc = encode_text(TokenTable(small_tok), "ab😀c")
    assert enc.token_at_u16(0) == 0
    assert enc.token_at_u16(u16("ab😀c", 3)) == len(enc) - 1
    assert enc.token_at_u16(99) is None
    first, last = enc.group_range(len(enc) - 1)
    assert first <= len(enc) - 1 < last
    assert np.all(np.diff(enc.group) >= 0)


@pytest.mark.parametrize("specials", [(), ("<|endoftext|>", "<|pad|>")])
def test_token_table_holds_every_token_and_special(small_tok, monkeypatch, specials):
    """The table's bytes (copied a slice at a time when specials join them) are the
    tokenizer's vocabulary and its specials, and their lengths."""
    from workbench.gui.tokens import encoded as encoded_module

    monkeypatch.setattr(encoded_module, "COPY_SLICE", 7)  # several slices
    tok = Tokenizer.from_merges(small_tok.merge_bytes, small_tok.pattern, special_tokens=specials)
    table = TokenTable(tok)
    expected = dict(tok.vocab)
    expected.update((tid, name.encode()) for name, tid in tok.special_tokens.items())
    assert table.bytes_of == expected
    assert len(expected) == len(tok.vocab) + len(specials)
    assert [int(n) for n in table.lengths] == [
        len(expected.get(i, b"")) for i in range(len(table.lengths))
    ]
    assert tok.vocab == dict(small_tok.vocab)  # the tokenizer's own dict untouched
