"""The Evaluate tab's charts: compression curves (bytes per token against vocabulary size, log
axis; references as dashed horizontal lines ending at their vocabulary size) and tokens per
byte by group (one bar per tokenizer in each group)."""

from __future__ import annotations

import math

import pyqtgraph as pg
from PySide6.QtCore import Qt

from workbench.evaluate.report import MAX_GROUPS_SHOWN

PALETTE = ("#4361ee", "#f72585", "#2a9d8f", "#e76f51", "#7209b7", "#8ab17d", "#e9c46a")
REFERENCE_PEN = pg.mkPen("#555555", width=2, style=Qt.PenStyle.DashLine)


class CurvesPlot(pg.PlotWidget):
    """Bytes per token of each run at k merges; references as flat lines."""

    def __init__(self, parent=None) -> None:
        super().__init__(parent, background="w")
        self.setLogMode(x=True, y=False)
        self.setLabel("bottom", "vocabulary size (bytes + merges + specials)")
        self.setLabel("left", "bytes per token")
        self.showGrid(x=True, y=True, alpha=0.25)
        self.legend = self.addLegend(offset=(-10, -40), labelTextColor="#222222")
        self.labels: list[pg.TextItem] = []
        self.lines: list[pg.PlotDataItem] = []  # one per run, then one per reference

    def show(self, curves: dict | None) -> None:
        self.clear()
        self.legend.clear()
        self.labels, self.lines = [], []
        if not curves:
            return
        top = 1.0
        for i, run in enumerate(curves.get("runs", [])):
            pen = pg.mkPen(PALETTE[i % len(PALETTE)], width=2)
            xs = [max(1, v) for v in run["vocab_size"]]
            line = self.plot(
                xs, run["bytes_per_token"], pen=pen, symbol="o", symbolSize=4,
                symbolBrush=PALETTE[i % len(PALETTE)], name=run["label"],
            )  # fmt: skip
            self.lines.append(line)
            end = pg.ScatterPlotItem([math.log10(xs[-1])], [run["bytes_per_token"][-1]], size=10,
                                     brush=PALETTE[i % len(PALETTE)], pen=pg.mkPen("w"))  # fmt: skip
            self.addItem(end)  # where the run stopped: its final vocabulary
            top = max([top, *run["bytes_per_token"]])
        for ref in curves.get("references", []):
            size, value = ref["vocab_size"], ref["bytes_per_token"]
            flat = self.plot([256, size], [value, value], pen=REFERENCE_PEN, name=ref["name"])
            self.lines.append(flat)
            label = pg.TextItem(f"{ref['name']} {value:.2f}", color="#333333", anchor=(1, 1))
            label.setPos(math.log10(size), value)
            self.addItem(label)
            self.labels.append(label)
            top = max(top, value)
        self.setYRange(0, top * 1.1)
        sizes = [v for run in curves.get("runs", []) for v in run["vocab_size"]]
        sizes += [ref["vocab_size"] for ref in curves.get("references", [])]
        if sizes:
            ticks = log_ticks(min(256, *sizes), max(sizes))
            # Our own labels, no minor ones: pyqtgraph labels every 2..9 x 10^k on a log axis
            # and over a decade or two they run together ("4·10²5·10⁶·10²...").
            self.getAxis("bottom").setTicks([ticks, []])


class GroupBars(pg.PlotWidget):
    """Tokens per byte of each tokenizer in each group (lower is cheaper)."""

    def __init__(self, parent=None) -> None:
        super().__init__(parent, background="w")
        self.setLabel("left", "tokens per byte")
        self.getAxis("left").enableAutoSIPrefix(False)
        self.showGrid(y=True, alpha=0.25)
        self.legend = self.addLegend(offset=(-10, 10), labelTextColor="#222222")
        self.bars: list[pg.BarGraphItem] = []

    def show(self, result: dict | None) -> None:
        self.clear()
        self.legend.clear()
        self.bars = []
        if not result or not result.get("group_names"):
            return
        groups = result["group_names"][:MAX_GROUPS_SHOWN]  # a bar chart of 1,000 files says nothing
        tokenizers = result["tokenizers"]
        width = 0.8 / max(1, len(tokenizers))
        top = 0.0
        for ti, t in enumerate(tokenizers):
            xs = [gi + (ti - (len(tokenizers) - 1) / 2) * width for gi in range(len(groups))]
            heights = [g["tokens_per_byte"] or 0.0 for g in t["groups"][: len(groups)]]
            color = PALETTE[ti % len(PALETTE)]
            bars = pg.BarGraphItem(x=xs, height=heights, width=width * 0.9, brush=color, name=t["label"])  # fmt: skip
            self.addItem(bars)  # named: the legend lists it by itself
            self.bars.append(bars)
            top = max([top, *heights])
        axis = self.getAxis("bottom")
        axis.setTicks([[(i, _short(name)) for i, name in enumerate(groups)]])
        self.setYRange(0, (top or 1.0) * 1.35)  # headroom for the legend


def compact(n: float) -> str:
    """300 -> "300", 2000 -> "2k", 50000 -> "50k", 1000000 -> "1M"."""
    if n >= 1e6:
        return f"{n / 1e6:g}M"
    return f"{n / 1e3:g}k" if n >= 1e3 else f"{n:g}"


def log_ticks(low: float, high: float) -> list[tuple[float, str]]:
    """Labelled ticks (log10 position, text) for a log axis over [low, high]: the decades, and
    2 and 5 times them when the axis spans under three decades, so labels never crowd."""
    low, high = max(low, 1.0), max(high, low, 1.0)
    first, last = math.floor(math.log10(low)), math.ceil(math.log10(high))
    steps = (1,) if math.log10(high / low) >= 3 else (1, 2, 5)
    ticks = []
    for k in range(first, last + 1):
        for step in steps:
            value = step * 10**k
            if low / 1.5 <= value <= high * 1.5:
                ticks.append((math.log10(value), compact(value)))
    if len(ticks) < 2:  # a narrow axis (one run of a few hundred tokens): label its ends
        ticks = [(math.log10(low), compact(low)), (math.log10(high), compact(high))]
    return ticks


def _short(name: str, width: int = 24) -> str:
    return name if len(name) <= width else "…" + name[-(width - 1) :]
