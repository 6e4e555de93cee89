"""Training settings and the Train / Pause / Resume / Stop / Step buttons.

The buttons are views of the window's QActions (which carry the keyboard shortcuts and the
enabled state), so a shortcut and a click always do the same thing. A custom pattern is
compiled as it is typed and a bad one is shown at once, before the user presses Train.
"""

from __future__ import annotations

from PySide6.QtCore import Qt, Signal
from PySide6.QtGui import QAction
from PySide6.QtWidgets import (
    QComboBox,
    QFileDialog,
    QFormLayout,
    QGridLayout,
    QGroupBox,
    QLabel,
    QLineEdit,
    QSpinBox,
    QToolButton,
    QVBoxLayout,
    QWidget,
)

from workbench.engine.config import TIE_BREAKS, TrainConfig
from workbench.engine.errors import WorkbenchError
from workbench.engine.patterns.regexes import PRESETS, compile_pattern
from workbench.gui.parity_setting import (
    parity_box,
    parity_value,
    parity_window_box,
    parity_window_value,
    set_parity,
    set_parity_window,
)
from workbench.gui.settings import WindowSettings

CUSTOM = "custom regex"
NO_BASE = "none"  # Start from: the 256 bytes (classic training)
BASE_FILE = "a tokenizer file…"  # Start from: asks for a file (then listed by its path)
REFERENCE_BASES = ("gpt2", "cl100k", "o200k")
MAX_VOCAB = 1_000_000
BYTES = 256


def parse_specials(text: str) -> tuple[str, ...]:
    """ "<|endoftext|>, <pad>" -> ("<|endoftext|>", "<pad>"); blanks dropped."""
    return tuple(part.strip() for part in text.split(",") if part.strip())


class TrainingControls(QWidget):
    """Settings fields plus buttons for the given actions; `sigPatternChanged(spec)` when the
    pattern changes to one that compiles (the corpus preview follows it)."""

    sigPatternChanged = Signal(str)

    def __init__(self, actions: list[QAction], parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.vocab = QSpinBox()
        # Any number can be typed: a spin box clamped at 257 would silently put back the old
        # value; instead a value under the minimum is kept and the minimum is named below it.
        self.vocab.setRange(1, MAX_VOCAB)
        self.vocab.setSingleStep(256)
        self.vocab.setGroupSeparatorShown(True)
        self.vocab.setToolTip("Tokens in the vocabulary: 256 bytes + merges + special tokens")
        self.vocab_error = QLabel()
        self.vocab_error.setObjectName("vocabError")
        self.vocab_error.setWordWrap(True)
        self.vocab_error.setStyleSheet("color: #e5383b")
        self.vocab_error.hide()
        self.preset = QComboBox()
        self.preset.addItems([*PRESETS, CUSTOM])
        self.regex = QLineEdit()
        self.regex.setPlaceholderText("a regex; pieces are regex.findall(pattern, text)")
        self.pattern_error = QLabel()
        self.pattern_error.setWordWrap(True)
        self.pattern_error.setStyleSheet("color: #e5383b")
        self.specials = QLineEdit()
        self.specials.setPlaceholderText("comma-separated, e.g. <|endoftext|>")
        self.min_frequency = QSpinBox()
        self.min_frequency.setRange(0, 1_000_000_000)
        self.min_frequency.setToolTip("Stop when the best pair is seen fewer times (0: no floor)")
        self.max_token_length = QSpinBox()
        self.max_token_length.setRange(0, 1_000_000)
        self.max_token_length.setSpecialValueText("no cap (bytes)")  # shown at 0
        self.max_token_length.setSuffix(" bytes")
        self.max_token_length.setToolTip(
            "No merge makes a token longer than this many bytes (no cap: 0)"
        )
        self.max_token_chars = QSpinBox()
        self.max_token_chars.setObjectName("maxTokenChars")
        self.max_token_chars.setRange(0, 1_000_000)
        self.max_token_chars.setSpecialValueText("no cap (characters)")  # shown at 0
        self.max_token_chars.setSuffix(" characters")
        self.max_token_chars.setToolTip(
            "No merge makes a token of more than this many characters (no cap: 0);\n"
            "a character whose bytes a merge cuts counts as one"
        )
        self.tie_break = QComboBox()
        self.tie_break.addItems(list(TIE_BREAKS))
        self.tie_break.setToolTip(
            "lexicographic: among equal counts the greatest (left, right) bytes win;\n"
            "hf: the pair Hugging Face's BpeTrainer would take"
        )
        self.superbpe = QSpinBox()
        self.superbpe.setObjectName("superbpeTransition")
        self.superbpe.setRange(0, MAX_VOCAB)
        self.superbpe.setSingleStep(256)
        self.superbpe.setGroupSeparatorShown(True)
        self.superbpe.setSpecialValueText("off (classic BPE)")
        self.superbpe.setToolTip(
            "SuperBPE (Liu et al., 2025): ordinary BPE up to this vocab size (the transition\n"
            "point t), then merges that may cross spaces (superwords) up to the vocab size.\n"
            "The corpus is read twice. 0: classic BPE."
        )
        self.parity = parity_box()
        self.parity_window = parity_window_box()
        self.parity.currentIndexChanged.connect(self._parity_changed)

        self.start_from = QComboBox()
        self.start_from.setObjectName("startFrom")
        self.start_from.setToolTip(
            "Extend a tokenizer: its merges replayed on the corpus, new merges learned after\n"
            "them (every old id, token and merge kept, checked when the run ends). Its pattern\n"
            "and special tokens are used; the vocab size counts its tokens."
        )
        self._fill_bases()
        self.start_from.activated.connect(self._base_chosen)

        form = QFormLayout()
        form.addRow("Vocab size", self.vocab)
        form.addRow("", self.vocab_error)
        form.addRow("Pattern", self.preset)
        form.addRow("", self.regex)
        form.addRow("", self.pattern_error)
        form.addRow("Special tokens", self.specials)
        form.addRow("Min frequency", self.min_frequency)
        form.addRow("Max token length", self.max_token_length)
        form.addRow("", self.max_token_chars)
        form.addRow("Tie-break", self.tie_break)
        form.addRow("SuperBPE from", self.superbpe)
        form.addRow("Parity by", self.parity)
        form.addRow("Parity window", self.parity_window)
        form.addRow("Start from", self.start_from)
        settings_box = QGroupBox("Settings")
        settings_box.setLayout(form)

        buttons = QGridLayout()
        self.buttons: dict[str, QToolButton] = {}
        for i, action in enumerate(actions):
            button = QToolButton()
            button.setDefaultAction(action)
            button.setToolButtonStyle(button.toolButtonStyle().ToolButtonTextOnly)
            button.setMinimumWidth(64)
            button.setObjectName(f"button_{action.objectName()}")
            buttons.addWidget(button, i // 4, i % 4)
            self.buttons[action.objectName()] = button
        run_box = QGroupBox("Run")
        run_box.setLayout(buttons)
        self.corpus_summary = QLabel("No corpus yet: drop files or folders on the window")
        self.corpus_summary.setWordWrap(True)
        self.corpus_summary.setTextFormat(Qt.TextFormat.PlainText)  # it names files, folders
        corpus_box = QGroupBox("Corpus")
        QVBoxLayout(corpus_box).addWidget(self.corpus_summary)
        keys = QLabel(
            "<small>Train Ctrl+Enter · Pause Ctrl+P · Resume Ctrl+R · Stop Ctrl+. · "
            "Step Ctrl+1 / 2 / 3 (+1 / +10 / +100)</small>"
        )
        keys.setWordWrap(True)

        layout = QVBoxLayout(self)
        layout.addWidget(settings_box)
        layout.addWidget(run_box)
        layout.addWidget(corpus_box)
        layout.addWidget(keys)
        layout.addStretch(1)

        self.preset.currentTextChanged.connect(self._pattern_edited)
        self.regex.textChanged.connect(self._pattern_edited)
        self.vocab.valueChanged.connect(self._check_vocab)
        self.specials.textChanged.connect(self._check_vocab)

    # --- vocab size ------------------------------------------------------------------------
    def min_vocab(self) -> int:
        """The 256 bytes, one merge, and the special tokens."""
        return BYTES + 1 + len(parse_specials(self.specials.text()))

    def vocab_ok(self) -> bool:
        return self.vocab.value() >= self.min_vocab()

    def _check_vocab(self, *_: object) -> None:
        low = self.min_vocab()
        if self.vocab_ok():
            self.vocab_error.hide()
            return
        specials = len(parse_specials(self.specials.text()))
        extra = f" + {specials} special token{'s' if specials != 1 else ''}" if specials else ""
        self.vocab_error.setText(
            f"The vocab size must be at least {low:,}: the 256 bytes + 1 merge{extra}."
        )
        self.vocab_error.show()

    # --- pattern ---------------------------------------------------------------------------
    def pattern_spec(self) -> str:
        """The preset name, or the custom regex as typed."""
        preset = self.preset.currentText()
        return self.regex.text() if preset == CUSTOM else preset

    def pattern_ok(self) -> bool:
        return not self.pattern_error.text()

    def _pattern_edited(self, *_: object) -> None:
        if self._show_pattern():
            self.sigPatternChanged.emit(self.pattern_spec())

    def _show_pattern(self) -> bool:
        """The regex box and the error line for the pattern chosen; whether it compiles."""
        custom = self.preset.currentText() == CUSTOM
        self.regex.setEnabled(custom)
        if not custom:
            self.regex.blockSignals(True)
            self.regex.setText(PRESETS[self.preset.currentText()])
            self.regex.blockSignals(False)
        try:
            compile_pattern(self.pattern_spec())
        except WorkbenchError as exc:
            self.pattern_error.setText(str(exc))
            self.regex.setStyleSheet("border: 1px solid #e5383b")
            return False
        self.pattern_error.clear()
        self.regex.setStyleSheet("")
        return True

    # --- start from (extending a tokenizer) ---------------------------------------------------
    def _fill_bases(self) -> None:
        """none, the references found offline (as the Evaluate tab finds them), a file…"""
        from workbench.evaluate import references

        self.start_from.addItem(NO_BASE)
        for name in REFERENCE_BASES:
            self.start_from.addItem(name)
            if not references.available(name):  # listed, greyed, with the reason
                from workbench.gui.tokens.reference_menu import missing_note

                index = self.start_from.count() - 1
                item = self.start_from.model().item(index)  # type: ignore[attr-defined]
                item.setEnabled(False)
                self.start_from.setItemData(index, missing_note(name), Qt.ItemDataRole.ToolTipRole)
        self.start_from.addItem(BASE_FILE)

    def _base_chosen(self, index: int) -> None:
        if self.start_from.itemText(index) != BASE_FILE:
            return
        path, _ = QFileDialog.getOpenFileName(
            self, "Extend a tokenizer", "", "Tokenizers (*.json *.tiktoken *.model *.txt);;All (*)"
        )
        self.set_base(path or NO_BASE)

    def set_base(self, spec: str) -> None:
        """Start from `spec` (none, a reference, or a tokenizer file's path, listed once)."""
        if self.start_from.findText(spec) < 0:
            self.start_from.insertItem(self.start_from.count() - 1, spec)
        self.start_from.setCurrentText(spec)

    def base_spec(self) -> str | None:
        """The tokenizer to extend, or None for classic training from the bytes."""
        text = self.start_from.currentText()
        return None if text in (NO_BASE, BASE_FILE) else text

    # --- values ----------------------------------------------------------------------------
    def config(self) -> TrainConfig:
        """The settings as a checked TrainConfig; raises WorkbenchError with a message."""
        return TrainConfig(
            vocab_size=self.vocab.value(),
            pattern=self.pattern_spec(),
            special_tokens=parse_specials(self.specials.text()),
            tie_break=self.tie_break.currentText(),
            min_frequency=self.min_frequency.value(),
            max_token_length=self.max_token_length.value(),
            max_token_chars=self.max_token_chars.value(),
            parity_by=parity_value(self.parity),
            parity_window=parity_window_value(self.parity, self.parity_window),
            on_bad_file="skip",  # a window run reports skipped files instead of failing
            superbpe_transition=self.superbpe.value(),
        )

    def load(self, values: WindowSettings) -> None:
        pattern_then = self.pattern_spec()
        self.vocab.setValue(values.vocab_size)
        self._check_vocab()
        if values.pattern in PRESETS:
            self.preset.setCurrentText(values.pattern)
        else:
            self.preset.setCurrentText(CUSTOM)
            self.regex.setText(values.pattern)
        self.specials.setText(values.special_tokens)
        self.min_frequency.setValue(values.min_frequency)
        self.max_token_length.setValue(values.max_token_length)
        self.max_token_chars.setValue(values.max_token_chars)
        if values.tie_break in TIE_BREAKS:
            self.tie_break.setCurrentText(values.tie_break)
        self.superbpe.setValue(values.superbpe_transition)
        set_parity(self.parity, values.parity_by)
        set_parity_window(self.parity_window, values.parity_window)
        self._parity_changed()
        self.set_base(values.start_from or NO_BASE)
        if self.pattern_spec() == pattern_then:
            # The same pattern (as when opening a run trained with it): nothing to announce.
            # Announced, it re-cut the corpus preview (~10 ms of the turn that opens a run)
            # and recounted the corpus for counts it already had.
            self._show_pattern()
        else:
            self._pattern_edited()

    def store(self, values: WindowSettings) -> None:
        values.vocab_size = self.vocab.value()
        values.pattern = self.pattern_spec()
        values.special_tokens = self.specials.text()
        values.min_frequency = self.min_frequency.value()
        values.max_token_length = self.max_token_length.value()
        values.max_token_chars = self.max_token_chars.value()
        values.tie_break = self.tie_break.currentText()
        values.superbpe_transition = self.superbpe.value()
        values.parity_by = parity_value(self.parity)
        values.parity_window = self.parity_window.value()
        values.start_from = self.base_spec() or ""

    def set_settings_enabled(self, enabled: bool) -> None:
        """Settings are locked while a run is open: the run records the settings it used."""
        widgets = (self.preset, self.regex, self.specials, self.min_frequency)
        others = (self.max_token_length, self.max_token_chars, self.tie_break, self.superbpe)
        others = (*others, self.parity)
        for widget in (*widgets, *others, self.start_from):
            widget.setEnabled(enabled)
        if enabled:
            self.regex.setEnabled(self.preset.currentText() == CUSTOM)
        self._parity_changed()

    def _parity_changed(self, *_: object) -> None:
        """The window applies only to parity-aware BPE: greyed (its value kept) otherwise."""
        self.parity_window.setEnabled(self.parity.isEnabled() and bool(parity_value(self.parity)))
