"""Progress bars for long work, drawn with tqdm from the callbacks the session and engine call.

    bars = ProgressBars(quiet=args.quiet)          # silent when stderr is not a terminal
    count_paths(paths, config, progress=bars.bytes("pre-tokenize", total))
    RunSession.start(..., listeners=[bars.merges("merge", target)])
    bars.close()                                     # the last bar keeps its final line

One bar at a time, in the units of the work: bytes read (shown as kB/MB/GB with MB/s), merges
made, documents. A bar starts with its total when the caller knows it (the CLI lists the corpus
first); without one it is an honest counter with a rate and no ETA, never a total that moves.
Each bar is closed (finalized at 100 % or where the work stopped) before the next one starts.
The CLI and the Python API share this module (the notebook passes `tqdm.auto.tqdm`).

Leaves out: what the work is (see `session/`), and Qt (the window has its own progress).
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable
from typing import Any, TextIO

BYTES: dict[str, Any] = {"unit": "B", "unit_scale": True, "unit_divisor": 1000}
MERGES: dict[str, Any] = {"unit": " merges", "unit_scale": False}  # whole numbers: 144/144
DOCUMENTS: dict[str, Any] = {"unit": " documents", "unit_scale": False}
BAR_FORMAT = "{l_bar}{bar}| {n_fmt}/{total_fmt}{unit} [{elapsed}<{remaining}, {rate_fmt}]"
STEPS: dict[str, Any] = {"unit": " steps", "unit_scale": False}


def is_terminal(stream: TextIO) -> bool:
    try:
        return stream.isatty()
    except (AttributeError, ValueError):  # no stream, or a closed one
        return False


def _width(stream: TextIO) -> dict[str, Any]:
    """Follow the terminal's width; a terminal that reports none (0 columns: `script`, some CI
    pseudo-terminals) gets 100, where tqdm would draw an empty line."""
    try:
        columns = os.get_terminal_size(stream.fileno()).columns
    except (AttributeError, OSError, ValueError):
        columns = 0
    return {"dynamic_ncols": True} if columns > 0 else {"ncols": 100, "nrows": 20}


class ProgressBars:
    """The bars of one command or call; every method is a no-op when disabled."""

    def __init__(
        self,
        quiet: bool = False,
        stream: TextIO | None = None,
        tqdm_class: Callable[..., Any] | None = None,
        enabled: bool | None = None,
    ) -> None:
        self.stream = stream if stream is not None else sys.stderr
        if enabled is None:
            enabled = not quiet and is_terminal(self.stream)
        self.enabled = enabled
        self._tqdm_class = tqdm_class
        self._bar: Any = None
        self._key: tuple[str, int | None] | None = None

    # -- one bar ---------------------------------------------------------------------------

    def show(self, label: str, done: float, total: float | None, units: dict[str, Any]) -> None:
        """Move the bar `label` to `done` of `total` (None: a counter without a total)."""
        if not self.enabled:
            return
        key = (label, id(units))
        if self._bar is None or self._key != key:
            self.close()
            self._bar = self._new(label, total, units)
            self._key = key
        bar = self._bar
        if total is not None and done > total:  # the work outgrew its estimate: say so
            bar.total = done
        if done > bar.n:
            bar.update(done - bar.n)

    def note(self, line: str) -> None:
        """A line above the bars (tqdm keeps the bar below it)."""
        if not self.enabled:
            return
        if self._bar is not None:
            self._bar.write(line, file=self.stream)
        else:
            print(line, file=self.stream)

    def close(self) -> None:
        """Finalize the current bar (its last line stays, with the rate and time taken)."""
        if self._bar is not None:
            self._bar.close()
            self._bar = None
            self._key = None

    def __enter__(self) -> ProgressBars:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _new(self, label: str, total: float | None, units: dict[str, Any]) -> Any:
        tqdm_class = self._tqdm_class
        if tqdm_class is None:
            from tqdm import tqdm as tqdm_class
        # With a total, the unit follows the figures ("1.20/3.00 MB", "44/44 merges");
        # tqdm's own format leaves it out there.
        shape = {} if total is None else {"bar_format": BAR_FORMAT}
        return tqdm_class(
            **shape,
            total=total,
            desc=label,
            file=self.stream,
            **_width(self.stream),
            mininterval=0.1,
            leave=True,
            **units,
        )

    # -- adapters to the callbacks of the work ---------------------------------------------

    def bytes(self, label: str, total: int | None = None) -> Callable[[int, int], None]:
        """A `progress(done, total)` for counting a corpus, in bytes. `total`: the size listed
        before reading; None uses no total (the engine's grows while it lists folders)."""

        def progress(done: int, _moving_total: int) -> None:
            self.show(label, done, total, BYTES)

        return progress

    def merges(self, label: str, target: int, specials: int = 0) -> Callable[[Any], None]:
        """A session listener: each `MergeBatch` moves the bar to the merged tokens made
        (`target` of them: the vocabulary less the 256 bytes and the `specials`)."""
        target = max(target, 1)

        def listener(batch: Any) -> None:
            self.show(label, batch.vocab_size - 256 - specials, target, MERGES)

        return listener

    def fractions(self, total_bytes: int | None) -> Callable[[str, float], None]:
        """An evaluation's `progress(what, fraction)`: a bar in bytes per phase ("encoding
        with gpt2"); a fraction below 0 (a phase of unknown length) is a counter of steps."""
        steps: dict[str, int] = {}

        def progress(what: str, fraction: float) -> None:
            if fraction >= 0 and total_bytes:
                self.show(what, round(fraction * total_bytes), total_bytes, BYTES)
            else:
                steps[what] = steps.get(what, 0) + 1
                self.show(what, steps[what], None, STEPS)

        return progress
