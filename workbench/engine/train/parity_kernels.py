"""Parity-aware BPE on the Numba merge loop: the same merges as `parity.ParityTrainer` (the
rules live in their shared base, `parity.ParityLoop`), at the classic trainer's speed and memory.

Each group has two of the classic trainer's states (`_state.TrainState`, built as `BpeTrainer`
builds them): one over its training words, whose lazy heap gives the group's best pair by the
classic LEX rule (`_given_merges.best_pair`), and one over its held-out words, which keeps no
heap: only its token total is read (held-out tokens after a merge = before - the pair's
occurrences there). A merge is decided here, its id assigned here (so ids are the same in every
state), and it is applied (`_given_merges.apply_merge`) to every state whose words may hold
both of its tokens; a state files the tokens it lacks when it is next called. Memory is what
the classic trainer takes for each group's unique pieces, summed.

Ties, `min_frequency`, `max_token_length`, the moving window and the stop reasons are the base
class's, so `tests/test_parity.py` checks this trainer against the slow reference as it checks
the Python one, and against the Python one on real multilingual text.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from workbench.engine._native.memory import give_back_freed_memory
from workbench.engine.config import TrainConfig
from workbench.engine.train import _given_merges
from workbench.engine.train import _state as st
from workbench.engine.train.parity import GroupWords, Pair, ParityLoop
from workbench.engine.train.trainer import (
    START_ROWS,
    TIE_LIMIT,
    BpeTrainer,
    capped_pairs_left,
    chars_capped_pairs_left,
)


class KernelParityTrainer(ParityLoop):
    """Parity-aware byte-level BPE over the classic trainer's kernels (LEX tie-break only)."""

    def __init__(
        self,
        groups: Sequence[GroupWords],
        config: TrainConfig,
        tie_limit: int = TIE_LIMIT,
        start_rows: int = START_ROWS,
    ) -> None:
        """`start_rows`: the first capacity of each state's tables, as `BpeTrainer`'s (small
        ones make tests regrow them; the same merges whatever it is)."""
        self._start(groups, config, tie_limit)
        self._train: list[st.TrainState] = []
        self._dev: list[st.TrainState] = []
        # Per state (group g's training words at 2g, held-out at 2g + 1), the tokens that may
        # occur in its words (1: it has or had some): a merge is applied to a state only when
        # both its tokens may, so a state skips the merges of other scripts. A superset: a
        # token merged away stays marked (then the call finds no pair and changes nothing).
        self._present: list[bytearray] = []
        for group in groups:  # built one at a time: each builder's spare tables are let go
            for table, held_out in ((group.train, False), (group.dev, True)):
                trainer = BpeTrainer(table, config, 0, start_rows, held_out=held_out)
                (self._dev if held_out else self._train).append(trainer.state)
                present = bytearray(1024)
                for byte in np.unique(table.data).tolist():
                    present[byte] = 1
                self._present.append(present)
        # Row t: the pair whose bytes made token t (t >= 256), for states that file it late.
        self._made = np.zeros((1024, 2), dtype=np.int64)
        self._n_made = 256  # rows filled: the bytes need none

    # -- the counts, in the states ---------------------------------------------------------------

    @property
    def dev_tokens(self) -> list[int]:  # type: ignore[override]
        return [int(state.scal[st.S_TOKENS]) for state in self._dev]

    @property
    def corpus_tokens(self) -> int:
        return sum(int(s.scal[st.S_TOKENS]) for states in (self._train, self._dev) for s in states)

    def _best(self, g: int) -> tuple[int, Pair] | None:
        count, left, right, _ = _given_merges.best_pair(self._train[g], st.LEX, 0)
        return None if count == 0 else (int(count), (int(left), int(right)))

    def _ties(self, g: int, count: int) -> int:
        got, _, _, ties = _given_merges.best_pair(self._train[g], st.LEX, self.tie_limit)
        if got != count:  # the heap's top cannot move between the choice and this
            raise AssertionError(f"group {g}: best count {got}, chosen at {count}")
        return int(ties)

    def _capped_left(self, g: int) -> bool:
        state, chars = self._train[g], self.config.max_token_chars
        return bool(self._cap and capped_pairs_left(state, self._cap)) or bool(
            chars and chars_capped_pairs_left(state, chars)
        )

    def _merge_into(self, pair: Pair, new: int) -> None:
        left, right = pair
        tokens = len(self.vocab)  # `new` is filed already (when new)
        # Checked here, once per merge: the kernels index their token arrays with these ids.
        if not (0 <= left < tokens and 0 <= right < tokens and 0 <= new < tokens):
            raise ValueError(f"merge ({left}, {right}) -> {new} outside {tokens} tokens")
        if new == self._n_made:  # a token no merge made before: the row states file it from
            self._record(new, left, right)
        grew = False
        for g in range(len(self._train)):
            for held_out, states in ((0, self._train), (1, self._dev)):
                present = self._present[2 * g + held_out]
                if not (present[left] and present[right]):
                    continue  # one of them cannot occur: no word of this state holds the pair
                merged, grown, states[g] = _given_merges.apply_merge(
                    states[g], left, right, new, self._made, st.LEX
                )
                if merged:
                    present[new] = 1
                grew = grew or bool(grown)
        if grew:  # as `BpeTrainer.step`: the tables' old copies back to the system
            give_back_freed_memory()

    def _record(self, new: int, left: int, right: int) -> None:
        """Token `new` is made of (left, right): the row states file it from."""
        if new >= self._made.shape[0]:
            size = 2 * self._made.shape[0]
            self._made = np.concatenate([self._made, np.zeros_like(self._made)])
            for i, present in enumerate(self._present):
                self._present[i] = present + bytearray(size - len(present))
        self._made[new] = (left, right)
        self._n_made = new + 1

    # -- as BpeTrainer ---------------------------------------------------------------------------

    def state_bytes(self) -> dict[str, int]:
        """Bytes held by the states' arrays (capacity, not use), summed by array name."""
        out: dict[str, int] = {}
        for state in (*self._train, *self._dev):
            for name, array in state._asdict().items():
                if array is not None:
                    out[name] = out.get(name, 0) + array.nbytes
        return out
