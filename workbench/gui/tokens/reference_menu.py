"""The built-in references (gpt2, cl100k, o200k) wherever a tokenizer is picked: a button with
a menu of them, each disabled with one accurate line when its ranks are not on this machine.

Nothing is downloaded: `workbench.evaluate.references` finds the ranks in the bpe-openai wheel
or tiktoken's cache. Loading one (cl100k: ~0.5 s) is the caller's background job.
"""

from __future__ import annotations

from PySide6.QtCore import Signal
from PySide6.QtWidgets import QMenu, QToolButton, QWidget

from workbench.evaluate import references

_TIKTOKEN_NAMES = {"gpt2": "gpt2", "cl100k": "cl100k_base", "o200k": "o200k_base"}

DESCRIPTIONS = {
    "gpt2": "GPT-2's tokenizer (50,257 tokens)",
    "cl100k": "GPT-4's cl100k_base (100,277 tokens)",
    "o200k": "GPT-4o's o200k_base (200,019 tokens)",
}


def missing_note(name: str) -> str:
    """Why reference `name` cannot be loaded here, in one line ("" when it can)."""
    if references.available(name):
        return ""
    fill = (
        f"run python -c \"import tiktoken; tiktoken.get_encoding('{_TIKTOKEN_NAMES[name]}')\""
        " once online to fill tiktoken's cache"
    )
    if references.REFERENCES[name].wheel_file:
        return f"{name} is not on this machine: pip install bpe-openai (it ships it), or {fill}"
    # bpe-openai ships cl100k and o200k only: GPT-2 comes from tiktoken's cache or its files.
    return (
        f"{name} is not on this machine (bpe-openai does not ship it): {fill}, or open GPT-2's"
        " vocab.json + merges.txt as a tokenizer file"
    )


class ReferenceButton(QToolButton):
    """ "Reference ▾": `sigChosen(name)` when one that is on this machine is picked."""

    sigChosen = Signal(str)

    def __init__(self, text: str = "Add reference", parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setText(text)
        self.setPopupMode(QToolButton.ToolButtonPopupMode.InstantPopup)
        menu = QMenu(self)
        menu.setToolTipsVisible(True)
        self.actions_by_name = {}
        for name in references.REFERENCES:
            note = missing_note(name)
            action = menu.addAction(f"{name} — {DESCRIPTIONS.get(name, name)}")
            action.setEnabled(not note)
            action.setToolTip(note or f"{DESCRIPTIONS.get(name, name)}, found offline")
            action.triggered.connect(lambda _checked=False, name=name: self.sigChosen.emit(name))
            self.actions_by_name[name] = action
        self.setMenu(menu)
        tip = "OpenAI's tokenizers, for comparison (read from this machine, never downloaded)"
        self.setToolTip(tip)
        self.setWhatsThis(
            f"{tip}. A greyed entry is not on this machine; hover it to read how to get it."
        )
