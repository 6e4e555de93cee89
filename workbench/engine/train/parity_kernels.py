"""Parity-aware BPE on the Numba merge loop: the same merges as `parity.ParityTrainer` (the
rules live in their shared base, `parity.ParityLoop`), at the classic trainer's speed and memory.

Each group has two of the classic trainer's states (`_state.TrainState`, built as `BpeTrainer`
builds them): one over its training words, whose lazy heap gives the group's best pair by the
classic LEX rule (`_given_merges.best_pair`), and one over its held-out words, which keeps no
heap: only its token total is read (held-out tokens after a merge = before - the pair's
occurrences there). A merge is decided here, its id assigned here (so ids are the same in every
state), and it is applied (`_given_merges.apply_merge`) to every state whose words may hold
both of its tokens, all states in one kernel call (`_given_merges.apply_merge_all`, over a
typed list of the states); a state files the tokens it lacks when it is next called. Memory is what
the classic trainer takes for each group's unique pieces, summed.

Ties, `min_frequency`, `max_token_length`, the moving window and the stop reasons are the base
class's, so `tests/test_parity.py` checks this trainer against the slow reference as it checks
the Python one, and against the Python one on real multilingual text.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

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
        # Every state (group g's training words at 2g, held-out at 2g + 1) in one typed list,
        # so a merge is applied to all of them in one kernel call; their `scal` arrays (never
        # reallocated) are read from here for the token totals.
        self._states: Any = None  # the typed list (numba), made with the first state
        self._scals: list[np.ndarray] = []
        # Row i: the tokens that may occur in state i's words (1: it has or had some): a merge
        # is applied to a state only when both its tokens may, so a state skips the merges of
        # other scripts. A superset: a token merged away stays marked (then the state finds no
        # pair and changes nothing).
        self._present = np.zeros((2 * len(groups), 1024), dtype=np.uint8)
        for group in groups:  # built one at a time: each builder's spare tables are let go
            for table, held_out in ((group.train, False), (group.dev, True)):
                trainer = BpeTrainer(table, config, 0, start_rows, held_out=held_out)
                self._present[len(self._scals), np.unique(table.data)] = 1
                state = _uniform(trainer.state)
                if self._states is None:
                    self._states = _given_merges.state_list(state)
                else:
                    _given_merges.add_state(self._states, state)
                self._scals.append(trainer.state.scal)
        # Row t: the pair whose bytes made token t (t >= 256), for states that file it late.
        self._made = np.zeros((1024, 2), dtype=np.int64)
        self._n_made = 256  # rows filled: the bytes need none

    # -- the counts, in the states ---------------------------------------------------------------

    def _state(self, i: int) -> st.TrainState:
        return _given_merges.state_at(self._states, i)

    @property
    def _train(self) -> list[st.TrainState]:
        return [self._state(i) for i in range(0, len(self._scals), 2)]

    @property
    def _dev(self) -> list[st.TrainState]:
        return [self._state(i) for i in range(1, len(self._scals), 2)]

    @property
    def dev_tokens(self) -> list[int]:  # type: ignore[override]
        return [int(scal[st.S_TOKENS]) for scal in self._scals[1::2]]

    @property
    def corpus_tokens(self) -> int:
        return sum(int(scal[st.S_TOKENS]) for scal in self._scals)

    def _best(self, g: int) -> tuple[int, Pair] | None:
        count, left, right, _ = _given_merges.best_pair_at(self._states, 2 * g, st.LEX, 0)
        return None if count == 0 else (int(count), (int(left), int(right)))

    def _ties(self, g: int, count: int) -> int:
        got, _, _, ties = _given_merges.best_pair_at(self._states, 2 * g, st.LEX, self.tie_limit)
        if got != count:  # the heap's top cannot move between the choice and this
            raise AssertionError(f"group {g}: best count {got}, chosen at {count}")
        return int(ties)

    def _capped_left(self, g: int) -> bool:
        state, chars = self._state(2 * g), self.config.max_token_chars
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
        if _given_merges.apply_merge_all(
            self._states, self._present, left, right, new, self._made, st.LEX
        ):  # as `BpeTrainer.step`: the tables' old copies back to the system
            give_back_freed_memory()

    def _record(self, new: int, left: int, right: int) -> None:
        """Token `new` is made of (left, right): the row states file it from."""
        if new >= self._made.shape[0]:  # `_present` keeps as many columns as `_made` rows
            self._made = np.concatenate([self._made, np.zeros_like(self._made)])
            self._present = np.concatenate([self._present, np.zeros_like(self._present)], axis=1)
        self._made[new] = (left, right)
        self._n_made = new + 1

    # -- as BpeTrainer ---------------------------------------------------------------------------

    def state_bytes(self) -> dict[str, int]:
        """Bytes held by the states' arrays (capacity, not use), summed by array name."""
        out: dict[str, int] = {}
        for state in map(self._state, range(len(self._scals))):
            for name, array in state._asdict().items():
                if array is not None:
                    out[name] = out.get(name, 0) + array.nbytes
        return out


def _uniform(state: st.TrainState) -> st.TrainState:
    """The state with the long-word arrays every state of the typed list must have (one type
    for all). A state without long words gets one-row ones, never read: `lcache` is read only
    for a word marked long (`W_LONG`, set when the state is built: none here), `scr` only when
    `S_LONG` is set (0 here)."""
    if state.lcache is not None:
        return state
    return state._replace(
        lcache=np.full((1, 4), -1, dtype=np.int64), scr=np.empty(1, dtype=np.int64)
    )
