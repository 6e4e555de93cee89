"""A progress bar that paints in the next turn of the event loop, with everything else.

`QProgressBar.setValue` repaints at once whenever the bar or its text changes. A repaint now
flushes every widget of the window waiting to be painted, in the same turn: the status line's
update each quarter second painted the merge list (7-23 ms) and the charts (~7 ms) inside the
status timer's turn, on top of the timer's own work, and made the window's longest turns while
training. Here the value is set with updates off and turning them back on asks for an ordinary
update, painted with the rest when the event loop gets to it.
"""

from __future__ import annotations

from PySide6.QtWidgets import QProgressBar


class LazyProgressBar(QProgressBar):
    """A `QProgressBar` whose `setValue` schedules its painting instead of painting now."""

    def setValue(self, value: int) -> None:  # noqa: N802  (Qt's name)
        if value == self.value():
            return
        self.setUpdatesEnabled(False)  # QProgressBar's own repaint() then does nothing
        try:
            super().setValue(value)
        finally:
            self.setUpdatesEnabled(True)  # which calls update(): painted in a later turn
