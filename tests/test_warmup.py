"""Warming the kernels up: stages in order with "k of n" progress, nothing left to do after."""

from __future__ import annotations

import subprocess
import sys
import threading

import pytest

from workbench.engine.errors import CancelledError
from workbench.engine.warmup import stages, warm_up


def test_warm_up_reports_every_stage_then_ready():
    calls: list[tuple[int, int, str]] = []
    warm_up("gpt2", lambda done, total, stage: calls.append((done, total, stage)))
    total = len(stages("gpt2"))
    assert [done for done, _, _ in calls] == list(range(total + 1))
    assert all(t == total for _, t, _ in calls)
    assert calls[0][2] == "pre-tokenizer" and calls[-1][2] == "ready"
    assert warm_up("gpt2") == []  # all compiled (or loaded) now: nothing missing


def test_a_custom_pattern_has_no_scanner_stage():
    assert "pretokenizer" not in stages(r"\w+|\W+")
    assert stages("o200k")[0] == "pretokenizer"


def test_the_helper_process_reports_each_stage_it_compiled():
    proc = subprocess.run(
        [sys.executable, "-m", "workbench.engine.warmup", "gpt2", "index"],
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert proc.stdout.split() == ["index"]


def test_closing_the_app_stops_a_helper_compile_without_compiling_here(monkeypatch, tmp_path):
    """`stop_compiling` ends the helper at once, and the `warm_up` waiting for it raises
    instead of compiling the stage in this process."""
    from workbench.engine import warmup

    monkeypatch.setenv("NUMBA_CACHE_DIR", str(tmp_path))  # the helper starts cold
    monkeypatch.setattr(warmup, "is_ready", lambda key, pattern="gpt2": False)
    started = threading.Event()

    def progress(done: int, total: int, stage: str) -> None:
        started.set()

    threading.Timer(1.0, warmup.stop_compiling).start()
    with pytest.raises(CancelledError):
        warmup.warm_up("gpt2", progress, only=("merges",), helper_takes_all=True)
    assert started.is_set() and not warmup._LIVE
