"""Lanes sharing a gate (the Tokens tab's encodes: `TOKENS_GATE`) run their jobs one at a time,
each still answers, and a job superseded while it waited for the gate never runs."""

# ruff: noqa: F811  (fixtures imported from gui_fixtures are "redefined" as test arguments)
from __future__ import annotations

import threading
import time

import pytest

pytest.importorskip("pytestqt")

from gui_fixtures import no_qthread_left  # noqa: E402, F401  (autouse fixture)
from PySide6.QtCore import QObject  # noqa: E402

from workbench.gui.tokens.jobs import JobLane  # noqa: E402


def test_lanes_sharing_a_gate_take_turns_and_a_superseded_job_never_runs(qtbot):
    owner = QObject()
    gate = threading.Lock()
    lanes = [JobLane(owner, encodes=False, gate=gate) for _ in range(3)]
    spans: list[tuple[str, float, float]] = []
    answers: dict[int, object] = {}
    for n, lane in enumerate(lanes):
        lane.sigResult.connect(lambda result, n=n: answers.__setitem__(n, result))

    def job(name: str):
        def run() -> str:
            start = time.perf_counter()
            time.sleep(0.05)
            spans.append((name, start, time.perf_counter()))
            return name

        return run

    held = threading.Event()
    release = threading.Event()

    def blocker() -> str:  # holds the gate until told, so the next jobs queue behind it
        held.set()
        release.wait(5)
        return "blocker"

    lanes[0].submit(blocker)
    assert held.wait(5)
    lanes[1].submit(job("stale"))  # starts and waits for the gate ...
    time.sleep(0.05)
    lanes[1].cancel_event.set()  # ... and is superseded meanwhile (as a newer request does)
    lanes[2].submit(job("b"))
    release.set()
    qtbot.waitUntil(lambda: answers.get(2) == "b" and answers.get(0) == "blocker", timeout=5000)
    lanes[0].submit(job("c"))
    qtbot.waitUntil(lambda: answers.get(0) == "c", timeout=5000)
    for lane in lanes:
        lane.shutdown()
    assert [name for name, _s, _e in spans] == ["b", "c"]  # the stale one never ran
    ordered = sorted(spans, key=lambda span: span[1])
    for (_a, _s, end), (_b, start, _e) in zip(ordered, ordered[1:], strict=False):
        assert start >= end  # never two at once
