"""Table models of the Evaluate tab: the metrics (one row per tokenizer, the best value of each
column marked) and a health list (one row per token). Both sort through a proxy on `SORT_ROLE`,
which holds the raw number, not the formatted text."""

from __future__ import annotations

from PySide6.QtCore import QObject, Qt
from PySide6.QtGui import QBrush, QColor, QFont

from workbench.evaluate.health import TokenRow
from workbench.evaluate.report import HIGHER_IS_BETTER, fmt
from workbench.gui.table_model import Index, ListTableModel

SORT_ROLE = Qt.ItemDataRole.UserRole + 1
_BEST = QBrush(QColor("#c8efc8"))
_BOLD = QFont()
_BOLD.setBold(True)


# What differs between tokenizers (the text's own counts are the same for all: shown above).
_KEYS = ("tokenizer", "vocab", "tokens", "bytes_per_token", "chars_per_token",
         "tokens_per_word", "renyi_2_5", "vocab_used", "ratio_to_best")  # fmt: skip


class MetricsModel(ListTableModel):
    """Rows: the tokenizers' figures for one group (`None`: all text)."""

    headers = ("tokenizer", "vocab", "tokens", "bytes/token", "chars/token", "tokens/word",
               "Rényi 2.5", "vocab used", "× best")  # fmt: skip

    def __init__(self, parent: QObject | None = None) -> None:
        super().__init__(parent)
        self._best: dict[str, float] = {}

    def show(self, result: dict | None, group_index: int | None = None) -> None:
        rows = []
        for t in (result or {}).get("tokenizers", []):
            figures = t["total"] if group_index is None else t["groups"][group_index]
            if figures is not None:
                rows.append((t, figures))
        self._best = {}
        for column, higher in HIGHER_IS_BETTER.items():
            values = [f[column] for _, f in rows if f.get(column) is not None]
            if values and len(rows) > 1:
                self._best[column] = max(values) if higher else min(values)
        self.set_rows(rows)

    def is_best(self, row: int, column: int) -> bool:
        name = _KEYS[column]
        value = self.rows[row][1].get(name)
        return name in self._best and value is not None and value == self._best[name]

    def value(self, row: int, column: int) -> object:
        tokenizer, figures = self.rows[row]
        name = _KEYS[column]
        if name == "tokenizer":
            return tokenizer["label"]
        if name == "vocab":
            return tokenizer["vocab_size"]
        return figures.get(name)

    def data(self, index: Index, role: int = Qt.ItemDataRole.DisplayRole) -> object:
        if not index.isValid():
            return None
        row, column = index.row(), index.column()
        if role == Qt.ItemDataRole.DisplayRole:
            value = self.value(row, column)
            return value if isinstance(value, str) else fmt(value)
        if role == SORT_ROLE:
            value = self.value(row, column)
            return float("-inf") if value is None else value
        if role == Qt.ItemDataRole.TextAlignmentRole and column > 0:
            return int(Qt.AlignmentFlag.AlignRight | Qt.AlignmentFlag.AlignVCenter)
        if self.is_best(row, column):
            if role == Qt.ItemDataRole.BackgroundRole:
                return _BEST
            if role == Qt.ItemDataRole.FontRole:
                return _BOLD
            if role == Qt.ItemDataRole.ToolTipRole:
                return "best in this column"
        return None

    def headerData(self, section: int, orientation: Qt.Orientation, role: int = Qt.ItemDataRole.DisplayRole) -> object:  # fmt: skip
        if role == Qt.ItemDataRole.ToolTipRole and orientation == Qt.Orientation.Horizontal:
            return _TIPS.get(_KEYS[section])
        return super().headerData(section, orientation, role)


_TIPS = {
    "vocab": "tokens in the vocabulary (bytes + merged + specials)",
    "tokens_per_word": "fertility: tokens per whitespace-separated word",
    "renyi_2_5": "Rényi efficiency, alpha 2.5: an even use of the vocabulary scores high. "
    "Fitted to one translation task; read it beside compression, never instead of it.",
    "vocab_used": "share of the vocabulary emitted at least once on this text",
    "ratio_to_best": "tokens over the fewest any tokenizer needed for this text",
}


class HealthModel(ListTableModel):
    """The tokens of one health list."""

    headers = ("id", "rank", "token", "emitted", "count at merge", "ratio", "why")
    _FIELDS = ("id", "rank", "text", "emitted", "merge_count", "ratio", "reason")

    def token_at(self, row: int) -> TokenRow:
        return self.rows[row]

    def data(self, index: Index, role: int = Qt.ItemDataRole.DisplayRole) -> object:
        if not index.isValid():
            return None
        value = getattr(self.rows[index.row()], self._FIELDS[index.column()])
        if role == Qt.ItemDataRole.DisplayRole:
            return value if isinstance(value, str) else fmt(value)
        if role == SORT_ROLE:
            return float("-inf") if value is None else value
        if role == Qt.ItemDataRole.ToolTipRole:
            return "click: show this token in the Tokens tab"
        return None
