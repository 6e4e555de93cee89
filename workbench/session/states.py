"""A run's states and stop reasons, with the words people read for them.

The store keeps the codes (`done`, `vocab_size`); everything a person sees goes through
`describe()`: "reached vocabulary size", never `vocab_size`.
"""

from __future__ import annotations

from enum import StrEnum


class RunState(StrEnum):
    """Where a run is. A run ends in exactly one of DONE, INTERRUPTED, FAILED."""

    RUNNING = "running"
    PAUSED = "paused"
    DONE = "done"
    INTERRUPTED = "interrupted"
    FAILED = "failed"

    @property
    def words(self) -> str:
        return _STATE_WORDS[self]

    @property
    def is_final(self) -> bool:
        return self in (RunState.DONE, RunState.INTERRUPTED, RunState.FAILED)


class StopReason(StrEnum):
    """Why the merge loop returned."""

    VOCAB_SIZE = "vocab_size"  # reached the vocabulary size asked for
    NO_PAIRS = "no_pairs"  # every pre-token is one token: nothing left to merge
    MIN_FREQUENCY = "min_frequency"  # the best pair is rarer than the minimum frequency
    MAX_TOKEN_LENGTH = "max_token_length"  # every pair left would make too long a token
    PAUSED = "paused"  # a person paused; the run can go on
    STEPPED = "stepped"  # a step of N merges ended; the run can go on
    STOPPED = "stopped"  # a person stopped the run
    INTERRUPTED = "interrupted"  # Ctrl-C, a signal, or the window closing mid-run
    DELETED = "deleted"  # the run was deleted while it trained

    @property
    def words(self) -> str:
        return _REASON_WORDS[self]

    @property
    def can_continue(self) -> bool:
        """True when more merges can still be made after this stop."""
        return self not in (
            StopReason.NO_PAIRS,
            StopReason.MIN_FREQUENCY,
            StopReason.MAX_TOKEN_LENGTH,
            StopReason.DELETED,
        )


_STATE_WORDS = {
    RunState.RUNNING: "training",
    RunState.PAUSED: "paused",
    RunState.DONE: "finished",
    RunState.INTERRUPTED: "interrupted",
    RunState.FAILED: "failed",
}

_REASON_WORDS = {
    StopReason.VOCAB_SIZE: "reached vocabulary size",
    StopReason.NO_PAIRS: "no pairs left to merge",
    StopReason.MIN_FREQUENCY: "best pair below the minimum frequency",
    StopReason.MAX_TOKEN_LENGTH: "no pair left within the maximum token length",
    StopReason.PAUSED: "paused",
    StopReason.STEPPED: "stepped",
    StopReason.STOPPED: "stopped by you",
    StopReason.INTERRUPTED: "interrupted",
    StopReason.DELETED: "deleted while training",
}


def describe(code: str | None) -> str:
    """Words for a stored state or stop reason code; unknown codes (older stores, "process
    ended") are shown as they are. `describe("vocab_size") -> "reached vocabulary size"`."""
    if not code:
        return ""
    for enum in (StopReason, RunState):
        try:
            return enum(code).words
        except ValueError:
            pass
    return code.replace("_", " ")


def run_state_words(state: str, stop_reason: str | None) -> str:
    """One phrase for a stored run's state and reason, as the Runs tab shows it:
    ("done", "vocab_size") -> "finished (reached vocabulary size)",
    ("interrupted", "interrupted") -> "interrupted", ("paused", "stepped") -> "paused"."""
    words = describe(state)
    if not stop_reason:
        return words
    try:
        reason = StopReason(stop_reason)
    except ValueError:
        return f"{words} ({describe(stop_reason)})"
    # Pausing and stepping are both just "paused"; a reason that repeats the state adds nothing.
    if reason in (StopReason.PAUSED, StopReason.STEPPED, StopReason.INTERRUPTED):
        return words
    if state == RunState.DONE and reason is StopReason.STOPPED:
        return "finished (stopped by you)"
    return f"{words} ({reason.words})"
