"""`let_go`: large containers the UI thread is done with are freed on a thread of their own."""

from __future__ import annotations

import threading
import time

from workbench.gui.buffers import ChartData
from workbench.gui.let_go import LET_GO, LetGo


class Recorder:
    """Notes the thread that frees it."""

    def __init__(self, freed_on: list[str]) -> None:
        self.freed_on = freed_on

    def __del__(self) -> None:
        self.freed_on.append(threading.current_thread().name)


def no_let_go_thread() -> bool:
    return not any(t.name.startswith("bpe-let-go-test") for t in threading.enumerate())


def ends_when_idle(dropper: LetGo) -> bool:
    """Its thread ends once it has had nothing to free for `idle_s`."""
    deadline = time.monotonic() + 5
    while dropper.running() and time.monotonic() < deadline:
        time.sleep(0.01)
    return not dropper.running() and no_let_go_thread()


def test_a_container_held_by_nobody_else_is_freed_on_the_let_go_thread() -> None:
    freed_on: list[str] = []
    dropper = LetGo("bpe-let-go-test", idle_s=0.05)
    given = [
        [Recorder(freed_on) for _ in range(20_000)],
        {i: Recorder(freed_on) for i in range(10)},
        {Recorder(freed_on) for _ in range(10)},
    ]
    dropper(given)
    assert given == []  # moved out: the caller no longer holds them
    assert dropper.wait(10)
    assert len(freed_on) == 20_020
    assert set(freed_on) == {"bpe-let-go-test"}
    assert not dropper.busy()
    assert ends_when_idle(dropper)


def test_a_container_still_held_elsewhere_keeps_what_it_holds() -> None:
    freed_on: list[str] = []
    shared = [Recorder(freed_on) for _ in range(100)]
    dropper = LetGo("bpe-let-go-test", idle_s=0.05)
    dropper([shared])
    assert dropper.wait(10)
    assert len(shared) == 100 and freed_on == []  # not emptied: someone holds it
    del shared
    assert freed_on == ["MainThread"] * 100  # its holder freed it
    assert ends_when_idle(dropper)


def test_calls_while_it_waits_use_its_thread_and_a_later_call_starts_another() -> None:
    """Starting a thread waits until it runs (which needs the GIL): a call while the thread
    waits for more hands its items over without starting one."""
    freed_on: list[str] = []
    dropper = LetGo("bpe-let-go-test", idle_s=5)
    threads = []
    for _ in range(3):
        dropper([[Recorder(freed_on)]])
        assert dropper.wait(10)
        threads.append(dropper._thread)
    assert freed_on == ["bpe-let-go-test"] * 3
    assert threads[0] is not None and threads == [threads[0]] * 3  # one thread for all three
    dropper.idle_s = 0.05
    dropper([[Recorder(freed_on)]])  # wakes it: it then waits the shorter time
    assert dropper.wait(10) and ends_when_idle(dropper)
    dropper([[Recorder(freed_on)]])  # after it ended: another
    assert dropper.wait(10) and freed_on == ["bpe-let-go-test"] * 5
    assert ends_when_idle(dropper)


def test_resetting_the_charts_data_frees_its_lists_off_the_calling_thread() -> None:
    data = ChartData()
    freed_on: list[str] = []
    for merges in (data.tokens, data.left, data.right, data.new_id):
        merges.extend(Recorder(freed_on) for _ in range(3))  # stand for a run's 200k merges
    del merges  # the test holds none of them: only the data does
    data.reset(7)
    assert LET_GO.wait(10)
    assert freed_on == ["bpe-let-go"] * 12
    assert (data.tokens, data.left, data.right, data.new_id) == ([], [], [], [])
    assert data.n == 0 and data.corpus_bytes == 7
    assert not LET_GO.busy()
