"""The window's view of the open run, with no Qt: one `WindowState`, from which the enabled
actions (`actions`) and the status line (`status_line`) follow.

The session's `RunState` and `StopReason` say where a run is; this adds what only the window
knows: whether the worker still holds the run's trainer (`live`: Resume and +N go on at once)
or the run must replay its corpus first (a stopped run, or one opened from the Runs tab). Every
request and every worker answer makes a new state through the methods here, so a run stopped in
the window and the same run opened from the Runs tab offer the same buttons and words.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, replace
from enum import StrEnum

from workbench.session.states import StopReason


class Phase(StrEnum):
    IDLE = "idle"  # no run open: a new corpus, a deleted run, nothing trained yet
    TRAINING = "training"  # the worker is counting or merging
    PAUSED = "paused"  # a pause or a step ended; the worker holds the run
    FINISHED = "finished"  # the merge loop ended, a person stopped it, or it was opened


@dataclass(frozen=True)
class Actions:
    """Which of the window's actions are enabled, and what Resume's tooltip says."""

    train: bool
    pause: bool
    resume: bool
    stop: bool
    step: bool
    settings: bool
    export: bool
    resume_tip: str


@dataclass(frozen=True)
class WindowState:
    phase: Phase = Phase.IDLE
    run_id: int | None = None
    name: str = ""
    merges: int = 0
    vocab_size: int = 0
    reason: StopReason | None = None
    live: bool = False  # the worker's session holds the trainer: no replay needed to go on
    replayable: bool = False  # the run recorded its corpus, so it can be replayed and go on
    note: str = ""  # what happened when no run is open ("Run 3 deleted")

    # --- what follows from it --------------------------------------------------------------
    @property
    def can_grow(self) -> bool:
        """More merges can be made (at once, or after replaying the corpus)."""
        if self.phase not in (Phase.PAUSED, Phase.FINISHED) or self.run_id is None:
            return False
        if self.reason is not None and not self.reason.can_continue:
            return False
        return self.live or self.replayable

    def actions(self, wanted_vocab: int, settings_ok: bool, teaching: bool = False) -> Actions:
        """`wanted_vocab`: the Vocab size box; `settings_ok`: the settings would train;
        `teaching`: teaching mode's driver is stepping the run."""
        grow = self.can_grow
        # A paused run resumes towards the box's size; a finished one only to a larger size
        # (Resume to the size it has would do nothing).
        larger = wanted_vocab > self.vocab_size
        resume = grow and (self.phase is Phase.PAUSED or larger)
        if resume:
            tip = "Continue the run to the Vocab size"
        elif grow:
            tip = f"Raise Vocab size above {self.vocab_size:,} to train this run further"
        elif self.phase is Phase.FINISHED and self.run_id is not None:
            tip = self.why_not_more()
        else:
            tip = "Continue a paused or finished run"
        return Actions(
            train=self.phase is not Phase.TRAINING and settings_ok,
            pause=self.phase is Phase.TRAINING or teaching,
            resume=resume,
            stop=self.phase in (Phase.TRAINING, Phase.PAUSED),
            step=grow,
            settings=self.phase not in (Phase.TRAINING, Phase.PAUSED),
            export=self.run_id is not None,
            resume_tip=tip,
        )

    def why_not_more(self) -> str:
        if self.reason is not None and not self.reason.can_continue:
            return f"The run cannot go on: {self.reason.words}"
        return "Its corpus was not recorded, so it cannot be trained further"

    def status_line(self) -> str:
        """The status bar's stage text for this state (training has the worker's own words)."""
        merges = f"{self.merges:,} merge{'s' if self.merges != 1 else ''}"
        if self.phase is Phase.IDLE:
            return self.note
        if self.phase is Phase.TRAINING:
            return "Training"
        if self.phase is Phase.PAUSED:
            return f"Paused at {merges} — Resume or +N goes on"
        if self.reason is StopReason.STOPPED:
            head = f"Stopped at {merges} (finished)"
        elif self.reason is StopReason.INTERRUPTED:
            head = f"Interrupted at {merges}"
        else:
            words = f" ({self.reason.words})" if self.reason is not None else ""
            head = f"Finished: {merges}, vocab {self.vocab_size:,}{words}"
        if self.can_grow:
            return f"{head} — Resume (larger vocab) or +N trains further"
        return f"{head} — {self.why_not_more().lower()}" if self.run_id is not None else head

    # --- transitions -----------------------------------------------------------------------
    def training(self) -> WindowState:
        """Train, Resume or +N was pressed; the worker has the run now."""
        return replace(self, phase=Phase.TRAINING, reason=None, note="")

    def new_run(self) -> WindowState:
        """Train: a new run, not yet in the store."""
        return WindowState(phase=Phase.TRAINING)

    def started(self, run_id: int | None, name: str = "") -> WindowState:
        """The worker opened (or reopened) run `run_id` in the store; it now holds it."""
        recorded = run_id is not None
        return replace(self, run_id=run_id, name=name, live=True, replayable=recorded)

    def after_idle(
        self, reason: StopReason, merges: int, vocab_size: int, session_goes_on: bool
    ) -> WindowState:
        """The worker's loop returned for `reason`; `session_goes_on`: its session can still
        advance (False once a Stop or an interrupt ended it)."""
        if reason is StopReason.DELETED:
            gone = f"Run {self.run_id} was deleted while it trained" if self.run_id else ""
            return WindowState(note=gone)
        ended = reason in (StopReason.STOPPED, StopReason.INTERRUPTED)
        if self.run_id is None and ended:  # stopped while counting: no run was opened
            return WindowState(note="Stopped before the run started")
        paused = reason in (StopReason.PAUSED, StopReason.STEPPED)
        phase = Phase.PAUSED if paused else Phase.FINISHED
        if phase is Phase.PAUSED and not session_goes_on:
            phase = Phase.FINISHED
        return replace(
            self,
            phase=phase,
            merges=merges,
            vocab_size=vocab_size,
            reason=reason,
            live=session_goes_on and not ended,
            note="",
        )

    def stopped(self) -> WindowState:
        """Stop pressed on a paused run: it is finished where it stands ("stopped by you"),
        and can still grow later by replaying its corpus, as when opened from the Runs tab."""
        if self.phase is not Phase.PAUSED:
            return self
        return replace(self, phase=Phase.FINISHED, reason=StopReason.STOPPED, live=False)

    def released(self) -> WindowState:
        """The worker let go of the run's trainer (a new corpus, another run opened)."""
        return replace(self, live=False)

    def opened(
        self,
        run_id: int,
        name: str,
        merges: int,
        vocab_size: int,
        stop_reason: str | None,
        replayable: bool,
    ) -> WindowState:
        """A stored run opened from the Runs tab."""
        try:
            reason = StopReason(stop_reason) if stop_reason else None
        except ValueError:  # an older store's code: nothing known against going on
            reason = None
        return WindowState(
            phase=Phase.FINISHED,
            run_id=run_id,
            name=name,
            merges=merges,
            vocab_size=vocab_size,
            reason=reason,
            live=False,
            replayable=replayable,
        )

    def deleted(self, run_id: int) -> WindowState:
        """Run `run_id` was deleted from the Runs tab: if it is the open one, nothing is open."""
        if run_id != self.run_id:
            return self
        return WindowState(note=f"Run {run_id} deleted")

    def failed(self, message: str) -> WindowState:
        """The worker could not do what was asked (a training run ends as the session says)."""
        if self.phase is not Phase.TRAINING:
            return self
        if self.run_id is None:
            return WindowState(note=message)
        # A replay that failed (its corpus changed or is gone) would fail again: not offered.
        replayable = self.replayable and self.live
        return replace(self, phase=Phase.FINISHED, live=False, replayable=replayable, note=message)

    def cleared(self, note: str = "") -> WindowState:
        """A new corpus: the run shown is not this corpus's (it stays in the Runs tab)."""
        return WindowState(note=note)


_AUTO_NAME = re.compile(r"^(?P<head>.*) · (?P<size>\d{1,3}(?:,\d{3})*)$")


def grown_name(name: str, vocab_size: int) -> str | None:
    """The name a continued run should now have, or None to keep it: a name the workbench gave
    ("corpus.txt · 32,000") follows the run's size once the run grew past it; a name of the
    user's own is never touched. `grown_name("c · 32,000", 48000) -> "c · 48,000"`."""
    match = _AUTO_NAME.match(name)
    if match is None:
        return None
    if vocab_size <= int(match["size"].replace(",", "")):
        return None
    return f"{match['head']} · {vocab_size:,}"
