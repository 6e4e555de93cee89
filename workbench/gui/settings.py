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
MAX_KEPT_TEXT = 100_000  # characters of typed or pasted text kept across a restart


@dataclass
class WindowSettings:
    """What the controls and the corpus panel show at start."""

    vocab_size: int = 2000
    pattern: str = "gpt2"
    special_tokens: str = ""  # comma-separated, as typed
    min_frequency: int = 0
    max_token_length: int = 0  # bytes; 0: no cap
    max_token_chars: int = 0  # characters; 0: no cap
    tie_break: str = "lexicographic"
    superbpe_transition: int = 0  # 0: classic BPE
    parity_by: str = ""  # "" (classic BPE), lang, folder or script
    parity_window: int = 0  # merges of parity-aware BPE's moving window; 0: the greedy rule
    start_from: str = ""  # the tokenizer a run extends (gpt2, cl100k, o200k, a path); "": none
    corpus: list[str] = field(default_factory=list)  # empty: the demo corpus
    recent: list[list[str]] = field(default_factory=list)
    geometry: QByteArray = field(default_factory=QByteArray)
    window_state: QByteArray = field(default_factory=QByteArray)
    # Where the user left off: the open run (0: none), the tab, the Tokens text and the
    # Evaluate tab's choices, so a restart does not land on an empty Training tab.
    open_run: int = 0
    tab: int = 0
    tokens_text: str = ""
    eval_tokenizers: list[str] = field(default_factory=list)  # TokenizerPicker.specs()
    eval_paths: list[str] = field(default_factory=list)
    eval_pasted: str = ""
    eval_group: str = "none"
    eval_field: str = "lang"

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
        max_token_length=settings.value("train/max_token_length", 0, type=int),
        max_token_chars=max(0, settings.value("train/max_token_chars", 0, type=int)),
        tie_break=settings.value("train/tie_break", d.tie_break, type=str),
        superbpe_transition=max(0, settings.value("train/superbpe_transition", 0, type=int)),
        parity_by=settings.value("train/parity_by", d.parity_by, type=str),
        parity_window=max(0, settings.value("train/parity_window", 0, type=int)),
        start_from=settings.value("train/start_from", "", type=str),
        corpus=[str(p) for p in _json_list(settings, "corpus/current")],
        recent=[[str(p) for p in r] for r in recent][:MAX_RECENT],
        geometry=settings.value("window/geometry", QByteArray(), type=QByteArray),
        window_state=settings.value("window/state", QByteArray(), type=QByteArray),
        open_run=settings.value("session/open_run", 0, type=int),
        tab=settings.value("session/tab", 0, type=int),
        tokens_text=settings.value("session/tokens_text", "", type=str),
        eval_tokenizers=[str(s) for s in _json_list(settings, "session/eval_tokenizers")],
        eval_paths=[str(p) for p in _json_list(settings, "session/eval_paths")],
        eval_pasted=settings.value("session/eval_pasted", "", type=str),
        eval_group=settings.value("session/eval_group", d.eval_group, type=str),
        eval_field=settings.value("session/eval_field", d.eval_field, type=str),
    )


def save(settings: QSettings, values: WindowSettings) -> None:
    settings.setValue("train/vocab_size", values.vocab_size)
    settings.setValue("train/pattern", values.pattern)
    settings.setValue("train/special_tokens", values.special_tokens)
    settings.setValue("train/min_frequency", values.min_frequency)
    settings.setValue("train/max_token_length", values.max_token_length)
    settings.setValue("train/max_token_chars", values.max_token_chars)
    settings.setValue("train/tie_break", values.tie_break)
    settings.setValue("train/superbpe_transition", values.superbpe_transition)
    settings.setValue("train/parity_by", values.parity_by)
    settings.setValue("train/parity_window", values.parity_window)
    settings.setValue("train/start_from", values.start_from)
    settings.setValue("corpus/current", json.dumps(values.corpus))
    settings.setValue("corpus/recent", json.dumps(values.recent))
    settings.setValue("window/geometry", values.geometry)
    settings.setValue("window/state", values.window_state)
    settings.setValue("session/open_run", values.open_run)
    settings.setValue("session/tab", values.tab)
    settings.setValue("session/tokens_text", values.tokens_text[:MAX_KEPT_TEXT])
    settings.setValue("session/eval_tokenizers", json.dumps(values.eval_tokenizers))
    settings.setValue("session/eval_paths", json.dumps(values.eval_paths))
    settings.setValue("session/eval_pasted", values.eval_pasted[:MAX_KEPT_TEXT])
    settings.setValue("session/eval_group", values.eval_group)
    settings.setValue("session/eval_field", values.eval_field)
    settings.sync()
