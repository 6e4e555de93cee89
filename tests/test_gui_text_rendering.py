"""Text as the Tokens tab draws it: glyphs the fonts have, right-to-left text that cannot
reorder the bytes pane, clusters (flags, ZWJ families) kept whole, and a pasted CR kept."""

from __future__ import annotations

import pytest

pytest.importorskip("pytestqt")

from gui_fixtures import no_qthread_left  # noqa: E402, F401  (autouse fixture)
from PySide6.QtCore import QMimeData  # noqa: E402
from PySide6.QtGui import QFont, QFontDatabase, QRawFont, QTextCursor  # noqa: E402

from workbench import display  # noqa: E402
from workbench.engine.encode.tokenizer import Tokenizer
from workbench.engine.patterns.regexes import resolve
from workbench.gui.tokens.encoded import TokenTable, cluster_starts, encode_text  # noqa: E402
from workbench.gui.tokens.tokens_view import TokensView  # noqa: E402
from workbench.render import render_html, render_image, token_groups  # noqa: E402
from workbench.token_html import TokenGroup  # noqa: E402

FLAG = "🇫🇷"
FAMILY = "👨\u200d👩\u200d👧"
HEBREW = "שלום"


@pytest.fixture(scope="module")
def tok() -> Tokenizer:
    # Byte-level with a few English merges: Hebrew, flags and emoji stay cut into bytes.
    pairs = [(b"t", b"h"), (b"th", b"e"), (b" ", b"the"), (b"l", b"o")]
    return Tokenizer.from_merges(pairs, resolve("gpt2"))


@pytest.fixture
def view(qtbot, tok):
    widget = TokensView()
    qtbot.addWidget(widget)
    widget.resize(900, 600)
    widget.show()
    widget.set_tokenizer(tok, TokenTable(tok))
    yield widget
    widget.shutdown()


COMMON_FONTS = ("DejaVu Sans Mono", "DejaVu Sans", "Noto Sans Mono", "Liberation Mono")


def test_every_whitespace_glyph_is_in_a_common_font(qapp):
    """Qt falls back font by font per character, so a glyph no installed font has is drawn as
    an empty box (DejaVu has no `␍`): each display glyph must be in a common font."""
    installed = [f for f in COMMON_FONTS if f in QFontDatabase.families()]
    if not installed:
        pytest.skip("none of the common fonts is installed")
    raws = [QRawFont.fromFont(QFont(family)) for family in installed]
    for glyph in display.GLYPHS.values():
        assert any(raw.supportsCharacter(ord(glyph)) for raw in raws), glyph
    assert display.readable(b"a\r\n") == "a⇤⏎"
    assert display.show_whitespace("a b\r\n", keep=" ") == "a b⇤⏎"


def test_one_colour_rule_for_every_view():
    from workbench.gui.tokens.colors import color_hex, token_color

    for tid in (0, 32, 300, 50_000):
        for alternate in (False, True):
            assert color_hex(tid, alternate) == display.token_hex(tid, alternate)
            assert token_color(tid, alternate).getRgb()[:3] == display.token_rgb(tid, alternate)
    page = render_html(Tokenizer.from_merges([], resolve("gpt2")), "ab")
    assert display.token_hex(ord("a")) in page


def test_flags_and_zwj_families_are_one_group(tok):
    text = f"a {FLAG} {FAMILY} b"
    starts = cluster_starts(text)
    flag_at = text.index(FLAG)
    assert starts[flag_at] and not starts[flag_at + 1]
    enc = encode_text(TokenTable(tok), text)
    flag_tokens = [i for i in range(len(enc)) if enc.char_start[i] in (flag_at, flag_at + 1)]
    assert len(flag_tokens) > 1 and len({int(enc.group[i]) for i in flag_tokens}) == 1
    assert all(enc.splits_cluster[i] for i in flag_tokens)
    groups = token_groups(tok, text)
    assert FLAG in [g.text for g in groups] and FAMILY in [g.text for g in groups]


def test_the_editor_paints_a_cluster_in_one_format(view, qtbot):
    text = f"x{FLAG}y{FAMILY}"
    view.set_text(text)
    qtbot.waitUntil(lambda: view.encoded is not None and len(view.encoded) > 0)
    view.highlighter.finish()
    block = view.editor.document().firstBlock()
    cuts = {r.start for r in block.layout().formats()} | {
        r.start + r.length for r in block.layout().formats()
    }
    # UTF-16 offsets inside the flag (1..5) and the family (6..14) must not be format edges.
    flag_inside = set(range(2, 5))
    family_inside = set(range(7, 7 + len(FAMILY.encode("utf-16-le")) // 2 - 1))
    assert not cuts & (flag_inside | family_inside), sorted(cuts)


def _x_of(edit, position: int) -> int:
    cursor = QTextCursor(edit.document())
    cursor.setPosition(position)
    return edit.cursorRect(cursor).x()


def test_the_bytes_pane_stays_left_to_right_with_hebrew(view, qtbot):
    view.bytes_box.setChecked(True)
    view.set_text(f"{HEBREW} [x]")
    qtbot.waitUntil(lambda: view.encoded is not None and len(view.encoded) > 0)
    strip = view.strip_edit
    text = strip.toPlainText()
    # Every "[" is drawn left of its "]", and chips run left to right in text order.
    opens = [i for i, c in enumerate(text) if c == "["]
    assert opens
    for start in opens:
        end = text.index("]", start)
        assert _x_of(strip, start) < _x_of(strip, end), text
    chips = [_x_of(strip, s) for s in view._strip.chip_start]
    assert chips == sorted(chips)


def test_pasting_crlf_keeps_the_cr_and_says_so(view, qtbot):
    mime = QMimeData()
    mime.setText("one\r\ntwo\r\n")
    view.editor.insertFromMimeData(mime)
    assert view.text() == "one\r\ntwo\r\n"
    assert view.paste_note.isVisible() and "2 carriage returns" in view.paste_note.text()
    assert display.CR in view.editor.toPlainText()


ARABIC = "مرحبا بالعالم"  # letters that join; each is its own token with no merges


def _ink(image) -> set[tuple[int, int]]:
    """The dark (text) pixels of a rendering, whatever the token backgrounds behind them."""
    ink = set()
    for y in range(image.height()):
        for x in range(image.width()):
            c = image.pixelColor(x, y)
            if max(c.red(), c.green(), c.blue()) < 110:
                ink.add((x, y))
    return ink


def test_png_joins_arabic_letters_across_token_boundaries():
    tok = Tokenizer.from_merges([], r"\S+|\s+")
    by_token = token_groups(tok, ARABIC)
    assert len(by_token) == len(ARABIC)  # one box per letter: shaping must cross them
    whole = [TokenGroup((1,), ARABIC, 0, len(ARABIC), ("",))]
    cut, reference = _ink(render_image(by_token, 300)), _ink(render_image(whole, 300))
    assert reference
    # Joined forms differ from isolated ones in most of their pixels; a few may differ at the
    # token boxes' rounded edges only.
    assert len(cut ^ reference) <= 0.05 * len(reference)
