"""The Settings box's "Parity by" choice: classic BPE, or parity-aware BPE over groups from a
record's `lang` field, the corpus's folders, or each document's script."""

from __future__ import annotations

from PySide6.QtWidgets import QComboBox

from workbench.engine.config import PARITY_BY

OFF = "off (classic BPE)"
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
