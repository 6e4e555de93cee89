"""Training: the BPE merge loop over a word table (`pretokenize.words.WordTable`), handing out
batches of merge events (`events.MergeBatch`).

- `trainer.BpeTrainer`: owns the loop's state (one named tuple, `_state.TrainState`) and calls
  the Numba kernels (`_kernels` entry points, `_tables` and `_heap` helpers).
- `py_trainer.PyTrainer`: the same merges in pure Python, for the first seconds of a first start
  while the kernels compile (lexicographic tie-break only).
- `starting.trainer_for`: which of the two a run starts with.

Names resolve on first use (see `engine._facade`), so importing this package loads no Numba.
"""

from workbench.engine._facade import lazy_exports

__all__ = [
    "TIE_LIMIT",
    "BpeTrainer",
    "PyTrainer",
    "StartingTrainer",
    "python_can_start",
    "trainer_for",
]

__getattr__, __dir__ = lazy_exports(
    __name__,
    {
        "TIE_LIMIT": "trainer",
        "BpeTrainer": "trainer",
        "PyTrainer": "py_trainer",
        "StartingTrainer": "starting",
        "python_can_start": "starting",
        "trainer_for": "starting",
    },
)
