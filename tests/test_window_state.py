"""The window's run lifecycle without Qt: which actions are enabled and what the status line
says, for every path a run takes (train, pause, step, stop, finish, open, delete)."""

from __future__ import annotations

import subprocess
import sys

from workbench.gui.window_state import Phase, WindowState, grown_name
from workbench.session.states import RunState, StopReason, run_state_words

VOCAB = 1256  # 1,000 merges


def _trained(reason: StopReason, goes_on: bool = True) -> WindowState:
    return (
        WindowState()
        .new_run()
        .started(7, "corpus.txt · 1,256")
        .after_idle(reason, 1000, VOCAB, goes_on)
    )


def test_the_module_needs_no_qt():
    """Imported alone, it loads no Qt (so these tests and the CLI need no display)."""
    code = (
        "import sys, workbench.gui.window_state;"
        "sys.exit(any(m.startswith('PySide6') for m in sys.modules))"
    )
    assert subprocess.run([sys.executable, "-c", code], check=False).returncode == 0


def test_nothing_open_offers_only_train():
    a = WindowState().actions(VOCAB, settings_ok=True)
    assert (a.train, a.pause, a.resume, a.stop, a.step, a.export) == (
        True,
        False,
        False,
        False,
        False,
        False,
    )
    assert not WindowState().actions(VOCAB, settings_ok=False).train


def test_training_offers_pause_and_stop_and_locks_the_settings():
    state = WindowState().new_run().started(7, "c")
    a = state.actions(VOCAB, True)
    assert (a.train, a.pause, a.stop, a.resume, a.step, a.settings) == (
        False,
        True,
        True,
        False,
        False,
        False,
    )
    assert a.export  # the merges so far can be exported


def test_paused_and_stepped_are_one_paused_state():
    for reason in (StopReason.PAUSED, StopReason.STEPPED):
        state = _trained(reason)
        assert state.phase is Phase.PAUSED and state.live
        a = state.actions(VOCAB, True)
        assert a.resume and a.step and a.stop and not a.pause
        assert state.status_line().startswith("Paused at 1,000 merges")


def test_stop_while_paused_finishes_and_says_so_not_paused():
    state = _trained(StopReason.PAUSED).stopped()
    assert state.phase is Phase.FINISHED and state.reason is StopReason.STOPPED
    line = state.status_line()
    assert "Paused" not in line and line.startswith("Stopped at 1,000 merges (finished)")
    assert not state.live  # the worker ended its session: going on replays the corpus


def test_resume_and_steps_after_stop_as_after_opening_the_stopped_run():
    """The bug: after Stop, Resume and +N were off, yet the same run resumed after Open."""
    stopped_in_window = _trained(StopReason.STOPPED, goes_on=False)
    opened = WindowState().opened(7, "c", 1000, VOCAB, "stopped", replayable=True)
    for state in (stopped_in_window, _trained(StopReason.PAUSED).stopped(), opened):
        bigger = state.actions(VOCAB + 100, True)
        same = state.actions(VOCAB, True)
        assert bigger.resume and bigger.step and same.step, state
        assert not same.resume and "Raise Vocab size above 1,256" in same.resume_tip
        assert not bigger.stop  # nothing runs: there is nothing to stop
        assert state.status_line().endswith("Resume (larger vocab) or +N trains further")


def test_a_finished_run_offers_buttons_that_agree():
    """Reached its size: Stop is off (nothing runs), +N on, Resume only to a larger size."""
    state = _trained(StopReason.VOCAB_SIZE)
    assert state.phase is Phase.FINISHED and state.live
    a = state.actions(VOCAB, True)
    assert (a.stop, a.step, a.resume, a.train, a.pause) == (False, True, False, True, False)
    assert state.actions(VOCAB + 1, True).resume
    assert state.status_line().startswith(
        "Finished: 1,000 merges, vocab 1,256 (reached vocabulary size) — Resume"
    )


def test_a_run_with_nothing_left_to_merge_cannot_grow_and_says_why():
    for reason in (StopReason.NO_PAIRS, StopReason.MIN_FREQUENCY):
        state = _trained(reason, goes_on=False)
        a = state.actions(VOCAB + 500, True)
        assert not (a.resume or a.step or a.stop)
        assert reason.words in a.resume_tip and reason.words in state.status_line()


def test_an_opened_run_without_its_corpus_cannot_grow():
    state = WindowState().opened(3, "old", 10, 266, "vocab_size", replayable=False)
    a = state.actions(4000, True)
    assert not (a.resume or a.step) and a.export
    assert "corpus was not recorded" in state.status_line()


def test_deleting_the_open_run_leaves_nothing_open():
    state = _trained(StopReason.VOCAB_SIZE).deleted(7)
    assert state.phase is Phase.IDLE and state.run_id is None
    assert state.status_line() == "Run 7 deleted"
    a = state.actions(VOCAB, True)
    assert not (a.resume or a.step or a.stop or a.export)
    other = _trained(StopReason.VOCAB_SIZE)
    assert other.deleted(8) == other  # another run's deletion changes nothing here


def test_a_run_deleted_while_it_trained_ends_with_a_note():
    state = WindowState().new_run().started(9, "c").after_idle(StopReason.DELETED, 0, 0, False)
    assert state.phase is Phase.IDLE and "Run 9 was deleted while it trained" in (
        state.status_line()
    )


def test_counting_stopped_before_a_run_opened_leaves_nothing_open():
    state = WindowState().new_run().after_idle(StopReason.STOPPED, 0, 0, False)
    assert state.phase is Phase.IDLE and state.run_id is None
    assert not state.actions(VOCAB, True).step


def test_a_failure_while_training_ends_the_training_phase():
    state = WindowState().new_run().started(4, "c").failed("training failed: disk full")
    assert state.phase is Phase.FINISHED and not state.actions(VOCAB, True).stop
    assert WindowState().new_run().failed("bad file").phase is Phase.IDLE


def test_teaching_keeps_pause_enabled_between_ticks():
    assert _trained(StopReason.STEPPED).actions(VOCAB, True, teaching=True).pause


def test_runs_tab_words_say_each_thing_once():
    assert run_state_words("interrupted", "interrupted") == "interrupted"
    assert run_state_words("paused", "stepped") == "paused"
    assert run_state_words("paused", "paused") == "paused"
    assert run_state_words("done", "vocab_size") == "finished (reached vocabulary size)"
    assert run_state_words("done", "stopped") == "finished (stopped by you)"
    assert run_state_words("running", None) == "training"
    assert run_state_words("failed", None) == "failed"
    assert run_state_words("done", "process_ended") == "finished (process ended)"
    assert RunState.DONE.words == "finished"  # the word the CLI should print too


def test_a_continued_run_name_follows_its_size():
    assert grown_name("corpus · 32,000", 48_000) == "corpus · 48,000"
    assert grown_name("docs +2 · 1,000", 1_500) == "docs +2 · 1,500"
    assert grown_name("corpus · 32,000", 32_000) is None  # not grown past it
    assert grown_name("corpus · 32,000", 20_000) is None  # stopped early: the target stays
    assert grown_name("my best tokenizer", 48_000) is None  # the user's own name stays
    assert grown_name("a · b · 500", 600) == "a · b · 600"


def test_a_replay_that_failed_is_not_offered_again():
    opened = WindowState().opened(7, "c", 1000, VOCAB, "stopped", replayable=True)
    failed = opened.training().failed("cannot continue run 7: its corpus changed")
    assert failed.phase is Phase.FINISHED and not failed.can_grow
    assert not failed.actions(VOCAB + 100, True).step
    live = _trained(StopReason.PAUSED).training().failed("training failed: disk full")
    assert live.can_grow and not live.live  # the stored run can still be replayed
