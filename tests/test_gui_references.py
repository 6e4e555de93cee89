"""The built-in references (gpt2, cl100k, o200k) wherever a tokenizer is picked — Tokens,
Compare, Evaluate — when they are on this machine, and one accurate line when they are not."""

from __future__ import annotations

import pytest

pytest.importorskip("pytestqt")

from workbench.evaluate import references  # noqa: E402
from workbench.gui.evaluate.picker import TokenizerPicker  # noqa: E402
from workbench.gui.tokens import TokensPanel  # noqa: E402
from workbench.gui.tokens.reference_menu import ReferenceButton, missing_note  # noqa: E402

LOAD_MS = 60_000


@pytest.fixture
def nothing_offline(monkeypatch):
    monkeypatch.setattr(references, "available", lambda _name: False)


def test_the_missing_lines_name_what_really_provides_each(nothing_offline):
    gpt2 = missing_note("gpt2")
    assert "bpe-openai does not ship it" in gpt2 and "pip install bpe-openai" not in gpt2
    assert "tiktoken.get_encoding('gpt2')" in gpt2 and "vocab.json + merges.txt" in gpt2
    for name, encoding in (("cl100k", "cl100k_base"), ("o200k", "o200k_base")):
        note = missing_note(name)
        assert "pip install bpe-openai" in note and encoding in note
        assert "\n" not in note


def test_missing_references_are_greyed_with_their_line_everywhere(qtbot, nothing_offline):
    button = ReferenceButton()
    qtbot.addWidget(button)
    for name, action in button.actions_by_name.items():
        assert not action.isEnabled() and action.toolTip() == missing_note(name)
    picker = TokenizerPicker()
    qtbot.addWidget(picker)
    for name, box in picker.references.items():
        assert not box.isEnabled() and box.toolTip() == missing_note(name)


def test_an_available_reference_is_offered_and_says_so(qtbot, monkeypatch):
    monkeypatch.setattr(references, "available", lambda name: name == "o200k")
    button = ReferenceButton()
    qtbot.addWidget(button)
    assert button.actions_by_name["o200k"].isEnabled()
    assert "found offline" in button.actions_by_name["o200k"].toolTip()
    assert missing_note("o200k") == ""


needs_cl100k = pytest.mark.skipif(
    not references.available("cl100k"), reason="cl100k's ranks are not on this machine"
)


@needs_cl100k
def test_compare_adds_cl100k_from_its_menu(qtbot):
    panel = TokensPanel()
    qtbot.addWidget(panel)
    try:
        from workbench.engine.encode.tokenizer import Tokenizer

        base = Tokenizer.from_merges([(b"t", b"h"), (b"th", b"e")], "gpt2")
        panel.set_tokenizer(base, "tiny")
        panel.set_text("the weather in Zürich")
        compare = panel.compare
        compare.reference_button.actions_by_name["cl100k"].trigger()
        qtbot.waitUntil(lambda: len(compare.rows) == 2, timeout=LOAD_MS)
        assert compare.rows[1].label == "cl100k"
        assert compare.rows[1].tokenizer.vocab_size > 100_000
    finally:
        panel.shutdown()


@needs_cl100k
def test_tokens_inspects_a_reference(qtbot):
    panel = TokensPanel()
    qtbot.addWidget(panel)
    try:
        panel.reference_button.actions_by_name["cl100k"].trigger()
        qtbot.waitUntil(
            lambda: "cl100k" in panel.source.text() and "merges" in (panel.source.text()),
            timeout=LOAD_MS,
        )
        assert panel.export_button.isEnabled()
    finally:
        panel.shutdown()


def test_the_tokens_tab_fits_a_1400_pixel_window(qtbot):
    """The reference buttons and Compare's status line never push the window wider."""
    panel = TokensPanel()
    qtbot.addWidget(panel)
    try:
        panel.compare.status.setText("bold, wavy underline: " + "a long explanation " * 20)
        panel.tabs.setCurrentWidget(panel.compare)
        assert panel.minimumSizeHint().width() < 1400 - 300  # the settings column takes ~300
    finally:
        panel.shutdown()
