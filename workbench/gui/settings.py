"""Window settings that survive a restart, read from QSettings with explicit types.

QSettings hands back strings from INI files and `None` for lists of one on some platforms, so
every value is read with `type=` and lists are stored as JSON text. Tests pass their own
QSettings (an INI file in `tmp_path`) so they never touch the user's settings.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field

from PySide6.QtCore import QByteArray, QSettings

MAX_RECENT = 8


@dataclass
class WindowSettings:
    """What the controls and the corpus panel show at start."""

    vocab_size: int = 2000
    pattern: str = "gpt2"
    special_tokens: str = ""  # comma-separated, as typed
    min_frequency: int = 0
    tie_break: str = "lexicographic"
    corpus: list[str] = field(default_factory=list)  # empty: the demo corpus
    recent: list[list[str]] = field(default_factory=list)
    geometry: QByteArray = field(default_factory=QByteArray)
    window_state: QByteArray = field(default_factory=QByteArray)

    def remember_corpus(self, paths: list[str]) -> None:
        """Make `paths` the current corpus and move it to the top of the recent list."""
        self.corpus = list(paths)
        self.recent = [paths, *[r for r in self.recent if r != paths]][:MAX_RECENT]


def _json_list(settings: QSettings, key: str) -> list:
    text = settings.value(key, "", type=str)
    try:
        value = json.loads(text) if text else []
    except ValueError:
        return []  # a hand-edited or corrupt value: start afresh rather than fail to open
    return value if isinstance(value, list) else []


def load(settings: QSettings) -> WindowSettings:
    d = WindowSettings()
    recent = [r for r in _json_list(settings, "corpus/recent") if isinstance(r, list)]
    return WindowSettings(
        vocab_size=settings.value("train/vocab_size", d.vocab_size, type=int),
        pattern=settings.value("train/pattern", d.pattern, type=str),
        special_tokens=settings.value("train/special_tokens", d.special_tokens, type=str),
        min_frequency=settings.value("train/min_frequency", d.min_frequency, type=int),
        tie_break=settings.value("train/tie_break", d.tie_break, type=str),
        corpus=[str(p) for p in _json_list(settings, "corpus/current")],
        recent=[[str(p) for p in r] for r in recent][:MAX_RECENT],
        geometry=settings.value("window/geometry", QByteArray(), type=QByteArray),
        window_state=settings.value("window/state", QByteArray(), type=QByteArray),
    )


def save(settings: QSettings, values: WindowSettings) -> None:
    settings.setValue("train/vocab_size", values.vocab_size)
    settings.setValue("train/pattern", values.pattern)
    settings.setValue("train/special_tokens", values.special_tokens)
    settings.setValue("train/min_frequency", values.min_frequency)
    settings.setValue("train/tie_break", values.tie_break)
    settings.setValue("corpus/current", json.dumps(values.corpus))
    settings.setValue("corpus/recent", json.dumps(values.recent))
    settings.setValue("window/geometry", values.geometry)
    settings.setValue("window/state", values.window_state)
    settings.sync()
