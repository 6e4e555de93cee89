"""The Settings box's "Parity by" choice: classic BPE, or parity-aware BPE over groups from a
record's `lang` field, the corpus's folders, or each document's script; and its "Parity window"
(the paper's moving-window variant, W merges; 0 for the greedy rule)."""

from __future__ import annotations

from PySide6.QtWidgets import QComboBox, QSpinBox

from workbench.engine.config import PARITY_BY

OFF = "off (classic BPE)"
GREEDY = "off (greedy rule)"  # the window box at 0
MAX_WINDOW = 1_000_000  # merges; the window is a deque of chosen groups, W entries
_LABELS = {
    "lang": "language field (lang)",
    "folder": "folder",
    "script": "script guess",
}


def parity_box() -> QComboBox:
    box = QComboBox()
    box.addItem(OFF, "")
    for value in PARITY_BY:
        box.addItem(_LABELS[value], value)
    box.setObjectName("parityBy")
    box.setToolTip(
        "Parity-aware BPE (Foroutan et al., 2025): the documents in groups (languages), every"
        " 10th line of each held out;\neach merge is the most frequent pair of the group whose"
        " held-out lines compress worst.\nlang: a JSONL record's lang field (else the script);"
        " folder: the first folder under the corpus;\nscript: each document's dominant script."
        " Ties break lexicographically only."
    )
    return box


def parity_value(box: QComboBox) -> str:
    return str(box.currentData() or "")


def set_parity(box: QComboBox, value: str) -> None:
    """Select `value` (a stored setting: anything unknown means off)."""
    index = box.findData(value if value in PARITY_BY else "")
    box.setCurrentIndex(max(index, 0))


def parity_window_box() -> QSpinBox:
    box = QSpinBox()
    box.setObjectName("parityWindow")
    box.setRange(0, MAX_WINDOW)
    box.setSingleStep(50)
    box.setSpecialValueText(GREEDY)  # shown at 0
    box.setSuffix(" merges")
    box.setToolTip(
        "Parity-aware BPE's moving-window variant (the paper's W; it used 100): a group chosen"
        " more than 2/groups of the last W merges\ngives way to the next worst group."
        " 0: the greedy rule (always the worst group). Only with Parity by."
    )
    return box


def parity_window_value(by: QComboBox, window: QSpinBox) -> int:
    """The window in force: none without parity-aware BPE (the setting is kept, not used)."""
    return window.value() if parity_value(by) else 0


def set_parity_window(window: QSpinBox, value: int) -> None:
    """Show a stored window (anything negative or over the range means the greedy rule)."""
    window.setValue(value if 0 <= value <= MAX_WINDOW else 0)
