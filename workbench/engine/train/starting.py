"""Choosing the trainer for a run, so a first start trains at once instead of waiting.

`trainer_for(words, config, kernels_ready)` gives the Numba `BpeTrainer` whenever its kernels
are compiled (every start after the first), or when the run is too large for Python to be worth
it, or in HF tie-break mode (its quirks live in the kernels only). Otherwise it gives a
`StartingTrainer`: merges come from the pure-Python `PyTrainer` while the kernels compile
elsewhere (a helper process or thread), and at the first batch boundary after `kernels_ready()`
says yes, the run moves to a `BpeTrainer` that replays the merges made so far and is checked
against them. Both trainers make identical merges (tests/test_starting_trainer.py), so the
move is invisible except in speed.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

from workbench.engine.config import TrainConfig
from workbench.engine.errors import WorkbenchError
from workbench.engine.events import MergeBatch
from workbench.engine.pretokenize.words import WordTable
from workbench.engine.train.py_trainer import PyTrainer

# Pair occurrences (sum of unique words' lengths) above which the Python trainer's index alone
# takes longer than a first compile: such runs wait for the kernels instead. The demo corpus
# holds about 0.2 million; Python indexes about a million a second.
PYTHON_SYMBOLS = 2_000_000
READY_POLL_SECONDS = 0.2


def trainer_for(
    words: WordTable,
    config: TrainConfig,
    kernels_ready: Callable[[], bool] | None = None,
    count_ties: bool = True,
) -> Any:
    """The trainer for a run (see the module docstring). `kernels_ready` None: the caller will
    not compile them meanwhile, so the Numba trainer is used (it compiles on first use).
    `count_ties=False`: every merge's `ties` is 0 (not counted: saves time)."""
    from workbench.engine.train import trainer  # imports Numba, compiles nothing

    tie_limit = trainer.TIE_LIMIT if count_ties else 0
    if (
        kernels_ready is not None
        and config.tie_break != "hf"
        and not python_can_start(words, config)
    ):
        # Too large for Python, and compiling elsewhere: compiling here as well would do the
        # same work twice. (HF mode never trains in Python: its callers compile it here.)
        while not kernels_ready():
            time.sleep(READY_POLL_SECONDS)
    if kernels_ready is None or kernels_ready() or not python_can_start(words, config):
        return trainer.BpeTrainer(words, config, tie_limit)
    return StartingTrainer(words, config, kernels_ready, tie_limit)


def python_can_start(words: WordTable, config: TrainConfig) -> bool:
    """Whether the Python trainer may start this run (LEX mode, a small word table)."""
    return config.tie_break != "hf" and int(words.data.shape[0]) <= PYTHON_SYMBOLS


class StartingTrainer:
    """Python merges until the kernels are ready, then the Numba trainer, same interface."""

    def __init__(
        self,
        words: WordTable,
        config: TrainConfig,
        kernels_ready: Callable[[], bool],
        tie_limit: int,
    ) -> None:
        self.config = config
        self._words = words
        self._ready = kernels_ready
        self.current: Any = PyTrainer(words, config, tie_limit)
        self._batch_size = 1

    @property
    def in_python(self) -> bool:
        """Whether merges still come from the Python trainer (the kernels are not ready)."""
        return isinstance(self.current, PyTrainer)

    def __getattr__(self, name: str) -> Any:
        # Everything else (merges, vocab, stop_reason, vocab_size, ...) is the current trainer's.
        if name in ("current", "_ready", "_words", "config", "_batch_size"):
            raise AttributeError(name)
        return getattr(self.current, name)

    def step(self, n: int, target_vocab_size: int | None = None) -> MergeBatch:
        if self.in_python and self._ready():
            self._hand_over()
        return self.current.step(n, target_vocab_size)

    def _hand_over(self) -> None:
        """Move to the Numba trainer: replay the merges made so far and check them."""
        from workbench.engine.train.trainer import BpeTrainer

        done = self.current
        fast = BpeTrainer(self._words, self.config, done.tie_limit)
        if done.merges:
            fast.step(len(done.merges))
        if fast.merges != done.merges or fast.merge_ids != done.merge_ids:
            raise WorkbenchError(
                "internal error: the Numba trainer did not replay the Python trainer's merges"
            )
        fast.kernel_seconds += done.kernel_seconds
        self.current = fast


def _share_batching() -> None:
    """`StartingTrainer` batches exactly as `BpeTrainer` does (same code, on its `step`)."""
    from workbench.engine.train.trainer import BpeTrainer

    for name in ("batches", "_adapt_batch_size", "run"):
        setattr(StartingTrainer, name, getattr(BpeTrainer, name))


_share_batching()
