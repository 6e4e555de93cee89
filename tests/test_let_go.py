"""`let_go`: large containers the UI thread is done with are freed on a thread of their own."""

from __future__ import annotations

import threading

from workbench.gui.buffers import ChartData
from workbench.gui.let_go import LET_GO, LetGo


class Recorder:
    """Notes the thread that frees it."""

    def __init__(self, freed_on: list[str]) -> None:
        self.freed_on = freed_on

    def __del__(self) -> None:
        self.freed_on.append(threading.current_thread().name)


def no_let_go_thread() -> bool:
    return not any(t.name.startswith("bpe-let-go") for t in threading.enumerate())


def test_a_container_held_by_nobody_else_is_freed_on_the_let_go_thread() -> None:
    freed_on: list[str] = []
    dropper = LetGo("bpe-let-go-test")
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
    assert no_let_go_thread()


def test_a_container_still_held_elsewhere_keeps_what_it_holds() -> None:
    freed_on: list[str] = []
    shared = [Recorder(freed_on) for _ in range(100)]
    dropper = LetGo("bpe-let-go-test")
    dropper([shared])
    assert dropper.wait(10)
    assert len(shared) == 100 and freed_on == []  # not emptied: someone holds it
    del shared
    assert freed_on == ["MainThread"] * 100  # its holder freed it
    assert no_let_go_thread()


def test_a_later_call_starts_another_thread_after_the_first_ended() -> None:
    freed_on: list[str] = []
    dropper = LetGo("bpe-let-go-test")
    for _ in range(3):
        dropper([[Recorder(freed_on)]])
        assert dropper.wait(10)
    assert freed_on == ["bpe-let-go-test"] * 3
    assert no_let_go_thread()


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
    assert no_let_go_thread()
