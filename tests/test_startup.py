"""Start-up has one owner: it knows what a job needs, names every wait, compiles each stage once
per machine (a lock per stage, helpers that outlive the command), and says nothing when warm."""

from __future__ import annotations

import io
import os
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from workbench.engine import warmup
from workbench.engine.config import TrainConfig
from workbench.session import startup
from workbench.session.startup import Need


def test_o200k_is_estimated_longer_than_the_other_presets():
    o200k, gpt2 = Need("encoder", "o200k"), Need("encoder", "gpt2")
    assert startup.estimate([o200k]) > startup.estimate([gpt2]) == startup.STAGE_SECONDS["encoder"]
    assert startup.estimate([o200k, gpt2]) == startup.estimate([o200k]) + startup.estimate([gpt2])


def test_needs_follow_the_job_and_its_presets():
    assert startup.needs("eval", ["o200k", "cl100k"]) == [
        Need("encoder", "o200k"),
        Need("encoder", "cl100k"),
    ]
    # The trainer's kernels are the same for every pattern: listed once.
    train = startup.needs("prepare", ["gpt2", "o200k"])
    assert [need.stage for need in train].count("merges") == 1
    assert Need("pretokenizer", "o200k") in train
    assert [need.stage for need in startup.needs("train", [r"\w+|\W+"])] == ["index", "merges"]


def test_a_wait_is_named_with_its_job_count_and_estimate():
    event = startup.StartupEvent("eval", Need("encoder", "o200k"), 1, 3, 19.6)
    assert event.line() == "preparing the o200k encoder (first use) — 2 of 3, about 20 s"


def test_nothing_is_said_when_nothing_compiles(monkeypatch):
    monkeypatch.setattr(warmup, "is_ready", lambda stage, pattern="gpt2": True)
    said: list[str] = []
    assert startup.ensure("eval", ["o200k"], lambda event: said.append(event.line())) == []
    start = startup.plan_training(["x"], TrainConfig(vocab_size=300), said.append)
    assert said == [] and start.kernels_ready is None
    assert startup.wait_words() == "Loading the fast kernels"


def test_ensure_reports_k_of_n_and_compiles_here_when_no_helper_runs(monkeypatch, tmp_path):
    monkeypatch.setenv("NUMBA_CACHE_DIR", str(tmp_path))
    compiled: set[tuple[str, str]] = set()
    monkeypatch.setattr(
        warmup, "is_ready", lambda stage, pattern="gpt2": (stage, pattern) in compiled
    )
    monkeypatch.setattr(warmup, "start_detached", lambda *args: None)  # no helper here
    monkeypatch.setitem(
        warmup._STAGES, "encoder", ("encoder", lambda p: compiled.add(("encoder", p)), None)
    )
    said: list[str] = []
    done = startup.ensure("eval", ["o200k", "cl100k"], lambda event: said.append(event.line()))
    assert done == [Need("encoder", "o200k"), Need("encoder", "cl100k")]
    assert said[0].startswith("preparing the o200k encoder (first use) — 1 of 2, about ")
    assert said[1].startswith("preparing the cl100k encoder (first use) — 2 of 2")
    assert said[2] == "fast kernels ready for eval (2 compiled)"
    assert compiled == {("encoder", "o200k"), ("encoder", "cl100k")}


def test_a_stage_is_compiled_once_when_two_ask_at_once(monkeypatch, tmp_path):
    """Two callers (threads here; processes in use: flock excludes both) race for one stage:
    the lock lets one compile; the other waits, finds it cached, and only loads it."""
    compiled = threading.Event()
    runs: list[str] = []

    def slow_compile(pattern: str) -> None:
        runs.append("compiled" if not compiled.is_set() else "loaded")
        time.sleep(0.3)
        compiled.set()

    monkeypatch.setitem(warmup._STAGES, "merges", ("merges", slow_compile, None))
    monkeypatch.setattr(warmup, "is_ready", lambda stage, pattern="gpt2": compiled.is_set())
    results: list[bool] = []
    threads = [
        threading.Thread(
            target=lambda: results.append(warmup.compile_stage("merges", "gpt2", tmp_path))
        )
        for _ in range(2)
    ]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(10)
    assert sorted(results) == [False, True] and runs == ["compiled", "loaded"]
    assert (tmp_path / "merges.lock").exists()


def test_a_held_lock_is_seen_by_another_opener(tmp_path):
    with warmup.stage_lock(tmp_path, "encoder", "o200k") as held:
        assert held
        with warmup.stage_lock(tmp_path, "encoder", "o200k", wait=False) as second:
            assert second is False
        with warmup.stage_lock(tmp_path, "encoder", "cl100k", wait=False) as other:
            assert other is True  # another preset's encoder: its own lock
    assert warmup.lock_name("index", "o200k") == "index.lock"
    assert warmup.lock_name("encoder", r"\w+").startswith("encoder-custom-")


def test_the_detached_helper_outlives_its_caller_and_logs(tmp_path):
    """The helper runs in its own session (a terminal's Ctrl-C and the command's exit do not
    reach it), writes to the log in the cache, and takes the stage's lock file there. The
    stage is warmed here first, so the helper only loads it (no compile on a shared machine)."""
    warmup.warm_up("gpt2", only=("index",), helper=False)
    cache = Path(os.environ["NUMBA_CACHE_DIR"])
    log = tmp_path / "compile.log"
    proc = warmup.start_detached([("index", "gpt2")], log)
    assert proc is not None
    assert os.getsid(proc.pid) == proc.pid != os.getsid(0)
    assert proc.wait(300) == 0
    assert log.read_text().strip().splitlines()[-1].startswith("index gpt2: already cached in ")
    assert (cache / "locks" / "index.lock").exists()


def test_a_small_cold_run_starts_at_once_and_a_large_one_waits_named(monkeypatch, tmp_path):
    corpus = tmp_path / "small.txt"
    corpus.write_text("the cat sat\n" * 100, encoding="utf-8")
    monkeypatch.setattr(warmup, "is_ready", lambda stage, pattern="gpt2": stage != "pretokenizer")
    monkeypatch.setattr(warmup, "start_detached", lambda *args: None)  # no real compile here
    monkeypatch.setenv("NUMBA_CACHE_DIR", str(tmp_path / "cache"))
    said: list[startup.StartupEvent] = []
    start = startup.plan_training([corpus], TrainConfig(vocab_size=300), said.append)
    assert start.count_config.pretokenizer == "regex" and start.kernels_ready is None
    assert [event.line() for event in said] == [
        "preparing the gpt2 pre-tokenizer in the background (first use, about 15 s); training"
        " starts at once in Python and moves to the fast kernels when ready"
    ]
    waited: list[str] = []
    monkeypatch.setattr(startup, "ensure", lambda job, patterns, report: waited.append(job))
    monkeypatch.setattr(startup, "QUICK_COUNT_BYTES", 10)
    monkeypatch.setattr(startup, "REGEX_COUNT_BYTES", 20)
    big = startup.plan_training([corpus], TrainConfig(vocab_size=300), said.append)
    assert waited == ["train"] and big.count_config.pretokenizer == "auto"
    startup.plan_training([corpus], TrainConfig(vocab_size=300, tie_break="hf"))
    assert waited == ["train", "train"]  # HF mode: the kernels only


def test_a_mid_sized_cold_run_counts_with_regex_while_the_trainer_compiles(monkeypatch, tmp_path):
    """Over QUICK_COUNT_BYTES: the trainer compiles first at the normal priority (the merges
    wait for it), the scanner after it in the same helper, lowered (only the next run needs
    it); `regex` counts meanwhile."""
    corpus = tmp_path / "mid.txt"
    corpus.write_text("the cat sat\n" * 100, encoding="utf-8")
    monkeypatch.setattr(warmup, "is_ready", lambda stage, pattern="gpt2": False)
    started: list[tuple] = []
    monkeypatch.setattr(
        warmup,
        "start_detached",
        lambda work, log, nice, afterwards=(): started.append((work, nice, afterwards)),
    )
    monkeypatch.setenv("NUMBA_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setattr(startup, "QUICK_COUNT_BYTES", 10)
    said: list[startup.StartupEvent] = []
    start = startup.plan_training([corpus], TrainConfig(vocab_size=300), said.append)
    assert start.count_config.pretokenizer == "regex" and start.kernels_ready is not None
    gpt2 = TrainConfig().pattern_string
    assert started == [([("index", "gpt2"), ("merges", "gpt2")], False, [("pretokenizer", gpt2)])]
    assert [event.line() for event in said] == [
        "preparing the trainer's pair index, the trainer's merge loop in the background (first"
        " use, about 12 s); counting with regex meanwhile (the same pieces); training starts in"
        " Python and moves to the fast kernels when ready; the gpt2 pre-tokenizer compiles after"
        " them, for the next run"
    ]
    # The trainer cached already: only the scanner, lowered, and the Numba trainer at once.
    monkeypatch.setattr(warmup, "is_ready", lambda stage, pattern="gpt2": stage != "pretokenizer")
    started.clear()
    start = startup.plan_training([corpus], TrainConfig(vocab_size=300))
    assert start.count_config.pretokenizer == "regex" and start.kernels_ready is None
    assert started == [([], False, [("pretokenizer", gpt2)])]


def test_a_helper_lowers_itself_before_the_stages_after_then_lowered(monkeypatch, tmp_path):
    monkeypatch.setenv("NUMBA_CACHE_DIR", str(tmp_path))
    lowered = []
    compiled: list[tuple[str, bool]] = []
    monkeypatch.setattr(warmup, "_lower_priority", lambda: lowered.append(True))
    monkeypatch.setattr(
        warmup, "compile_stage", lambda key, pattern, folder: compiled.append((key, bool(lowered)))
    )
    argv = ["--lock-now", "index", "gpt2", "merges", "gpt2", warmup._LOWER, "pretokenizer", "o200k"]
    warmup._helper_main(argv)
    assert compiled == [("index", False), ("merges", False), ("pretokenizer", True)]
    compiled.clear(), lowered.clear()
    warmup._helper_main(["--lock", "index", "gpt2"])
    assert compiled == [("index", True)]


@pytest.mark.parametrize("preset", [None, "set"])
def test_the_kernel_cache_is_per_user_unless_numba_cache_dir_is_set(tmp_path, preset):
    env = {k: v for k, v in os.environ.items() if k != "NUMBA_CACHE_DIR"}
    env["XDG_CACHE_HOME"] = str(tmp_path / "xdg")
    if preset:
        env["NUMBA_CACHE_DIR"] = str(tmp_path / "mine")
    code = (
        "import workbench, os, sys; print(os.environ['NUMBA_CACHE_DIR']);"
        " print('numba' in sys.modules)"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True
    ).stdout.split()
    if preset:
        assert out[0] == str(tmp_path / "mine")
    else:
        folder = Path(out[0])
        assert folder.parent == tmp_path / "xdg" / "bpe-workbench"
        assert folder.name.startswith(f"numba-py{sys.version_info.major}.{sys.version_info.minor}-")
    assert out[1] == "False"  # decided before (and without) importing Numba


def test_prepare_compiles_what_is_missing_and_says_so(monkeypatch, capsys):
    from workbench.cli import main

    def fake_prepare(presets, report):
        todo = [Need("encoder", preset) for preset in presets]
        for done, need in enumerate(todo):
            report(startup.StartupEvent("prepare", need, done, len(todo), 10.0))
        return todo

    monkeypatch.setattr(startup, "prepare", fake_prepare)
    assert main(["prepare", "--preset", "o200k", "cl100k"]) == 0
    out, err = capsys.readouterr()
    assert "preparing the o200k encoder (first use) — 1 of 2, about 10 s" in err
    assert out.startswith("prepared 2 kernel stages in ")
    monkeypatch.setattr(startup, "prepare", lambda presets, report: [])
    assert main(["prepare", "-q"]) == 0
    out, err = capsys.readouterr()
    assert out.startswith("every kernel is prepared already") and err == ""
    with pytest.raises(SystemExit) as refused:  # not a preset: a usage error (argparse's)
        main(["prepare", "--preset", "llama"])
    assert refused.value.code == 2


def test_the_api_names_a_wait_through_logging(caplog):
    from workbench import api

    with caplog.at_level("INFO", logger="workbench"):
        api._startup_report(False)(startup.StartupEvent("train", Need("merges", "gpt2"), 0, 2, 14))
    assert caplog.messages == [
        "preparing the trainer's merge loop (first use) — 1 of 2, about 14 s"
    ]


def test_helpers_share_the_work_over_the_cores_each_stage_once(monkeypatch):
    shares: list[list[tuple[str, str]]] = []
    monkeypatch.setattr(warmup, "start_detached", lambda work, log, nice: shares.append(work))
    monkeypatch.setattr(os, "cpu_count", lambda: 2)
    todo = startup.needs("prepare", ["gpt2", "cl100k", "o200k"])
    startup._start_helpers(todo)
    assert len(shares) == 2
    assert sorted(item for share in shares for item in share) == sorted(
        (need.stage, need.pattern) for need in todo
    )
    trainer = next(share for share in shares if ("index", "gpt2") in share)
    assert trainer.index(("merges", "gpt2")) == trainer.index(("index", "gpt2")) + 1


def test_a_helper_still_compiling_when_its_job_drops_it_warns_nothing(tmp_path):
    """A helper outlives the job that started it by design: dropping the job's handle while it
    runs must not warn (a Popen collected while its process runs raises a ResourceWarning,
    which this suite turns into an error)."""
    import gc
    import warnings

    log = tmp_path / "compile.log"
    with warnings.catch_warnings():
        warnings.simplefilter("error", ResourceWarning)
        proc = warmup.start_detached([("index", "gpt2")], log)
        assert proc is not None
        pid = proc.pid
        del proc
        gc.collect()
    kept = [p for p in warmup._DETACHED if p.pid == pid]
    assert kept and kept[0].wait(300) == 0


class _FakeClock:
    """Time that moves only when a wait sleeps: a countdown test takes no real time."""

    def __init__(self, monkeypatch) -> None:
        self.now = 0.0
        monkeypatch.setattr(startup, "_clock", lambda: self.now)
        monkeypatch.setattr(startup, "_sleep", lambda seconds, cancel: self.advance(seconds))

    def advance(self, seconds: float) -> None:
        self.now += seconds


class _FakeBackground:
    """Helpers that compile each stage in `takes` seconds of the fake clock, one core."""

    def __init__(self, wanted, nice: bool = True, afterwards=()) -> None:
        self.needs = list(wanted)

    def seconds_left(self, remaining) -> float:
        return startup.estimate(remaining)

    def helpers_ended(self) -> bool:
        return False


def _cold_stages(monkeypatch, clock: _FakeClock, ends: dict[str, float]) -> None:
    monkeypatch.setattr(startup, "missing", lambda wanted: list(wanted))
    monkeypatch.setattr(startup, "Background", _FakeBackground)
    monkeypatch.setattr(startup, "_settled", lambda need: clock.now >= ends[need.stage])


def _figure(line: str) -> float:
    """The seconds a line shows; 0 for "any moment now"."""
    if line.endswith("any moment now"):
        return 0.0
    return float(line.rsplit("about ", 1)[1].removesuffix(" s"))


def test_an_estimate_counts_down_and_says_any_moment_past_it(monkeypatch):
    clock = _FakeClock(monkeypatch)
    _cold_stages(monkeypatch, clock, {"encoder": 40.0})  # 15 s estimated, 40 s taken
    events: list[startup.StartupEvent] = []
    startup.ensure("eval", ["o200k"], events.append)
    waits = [event for event in events if event.need is not None]
    shown = [_figure(event.line()) for event in waits]
    assert shown[0] == startup.estimate([Need("encoder", "o200k")]) and not waits[0].tick
    assert all(event.tick for event in waits[1:])
    assert shown == sorted(shown, reverse=True)  # never up within the stage
    assert len(set(shown)) == len(shown)  # a tick only when the figure changes
    assert shown[-1] == 0 and waits[-1].line().endswith("— 1 of 1, any moment now")
    assert set(range(1, int(shown[0]))) <= set(shown)  # every second of the countdown shown
    assert all(event.seconds_left >= 0 for event in waits)
    assert not any("about 0 s" in event.line() or "-" in event.line() for event in waits)
    assert events[-1].need is None


def test_a_late_stage_stretches_the_next_estimate(monkeypatch):
    clock = _FakeClock(monkeypatch)
    # The pre-tokenizer (15 s planned) takes 30 s: the machine is twice as slow as planned.
    _cold_stages(monkeypatch, clock, {"pretokenizer": 30.0, "index": 40.0, "merges": 50.0})
    events: list[startup.StartupEvent] = []
    startup.ensure("train", ["gpt2"], events.append)
    firsts = [event for event in events if event.need is not None and not event.tick]
    assert [event.need.stage for event in firsts] == ["pretokenizer", "index", "merges"]
    # The plan expected 15 s gone by the index; 30 were: what is left counts double.
    planned_left = startup.STAGE_SECONDS["index"] + startup.STAGE_SECONDS["merges"]
    assert firsts[1].seconds_left == pytest.approx(2 * planned_left, abs=0.5)


def test_kept_lines_count_down_seldom_and_a_terminal_line_is_rewritten(monkeypatch):
    clock = _FakeClock(monkeypatch)
    _cold_stages(monkeypatch, clock, {"encoder": 40.0})
    kept: list[str] = []
    startup.ensure("eval", ["o200k"], startup.seldom(lambda event: kept.append(event.line())))
    # 40 s of waiting: the stage's line, a countdown line every 10 s, "any moment now" once.
    assert 3 <= len(kept) <= 6
    assert [_figure(line) for line in kept[:-1]] == sorted(map(_figure, kept[:-1]), reverse=True)
    assert sum(line.endswith("any moment now") for line in kept) == 1

    class Terminal(io.StringIO):
        def isatty(self) -> bool:
            return True

    terminal = Terminal()
    clock.now = 0.0  # a new wait, from the start
    startup.ensure("eval", ["o200k"], startup.to_stream(terminal))
    written = terminal.getvalue()
    assert written.count("\n") == 1 and written.endswith(
        "fast kernels ready for eval (1 compiled)\n"
    )
    assert written.count("\r\x1b[K") > 15  # the same line, rewritten as it counts down


def test_helpers_a_person_waits_for_are_not_lowered(monkeypatch, tmp_path):
    """A job that only waits (ensure, prepare) starts its helpers at the normal priority; one
    that works meanwhile (a quick start) lowers them, so its own work comes first."""
    started: list[bool] = []
    monkeypatch.setenv("NUMBA_CACHE_DIR", str(tmp_path))
    monkeypatch.setattr(warmup, "start_detached", lambda work, log, nice: started.append(nice))
    ready: set[str] = set()
    monkeypatch.setattr(warmup, "is_ready", lambda stage, pattern="gpt2": stage in ready)
    monkeypatch.setitem(
        warmup._STAGES, "encoder", ("encoder", lambda p: ready.add("encoder"), None)
    )
    startup.ensure("eval", ["o200k"])
    assert started == [False]
    ready.clear()
    startup.plan_encoding("eval", ["o200k"], 1000)
    assert started == [False, True]
    lowered: list[int] = []
    monkeypatch.setattr(os, "nice", lowered.append)
    monkeypatch.setattr(warmup, "compile_stage", lambda *args: True)
    warmup._helper_main(["--lock-now", "encoder", "o200k"])
    assert lowered == []
    warmup._helper_main(["--lock", "encoder", "o200k"])
    assert lowered == [warmup._HELPER_NICENESS]


def test_a_stage_compiled_meanwhile_is_not_announced(monkeypatch):
    """The trainer's stages compile beside the pre-tokenizer: when it is ready they are too, and
    no "2 of 3, about 24 s" is printed for a wait that does not happen."""
    clock = _FakeClock(monkeypatch)
    _cold_stages(monkeypatch, clock, {"pretokenizer": 30.0, "index": 10.0, "merges": 20.0})
    events: list[startup.StartupEvent] = []
    ready: list[str] = []
    startup.ensure("train", ["gpt2"], events.append, on_ready=lambda need: ready.append(need.stage))
    assert {event.need.stage for event in events if event.need is not None} == {"pretokenizer"}
    assert events[-1].line() == "fast kernels ready for train (3 compiled)"
    assert ready == ["pretokenizer", "index", "merges"]


def test_a_cold_mid_sized_run_makes_the_warm_runs_merges(monkeypatch, tmp_path, caplog):
    """The mid-sized first use (`regex` counting, Python merges while nothing is compiled)
    against the usual warm path (the scanner, the Numba trainer): the same merges."""
    import logging

    import workbench

    text = "".join(path.read_text(encoding="utf-8") for path in sorted(Path("docs").glob("*.md")))
    corpus = tmp_path / "docs.txt"
    corpus.write_text(text[:80_000] + "\n", encoding="utf-8")
    warm = workbench.train(corpus, vocab_size=700, progress=False)
    monkeypatch.setattr(warmup, "is_ready", lambda stage, pattern="gpt2": False)
    monkeypatch.setattr(warmup, "start_detached", lambda *args, **kwargs: None)  # never ready
    monkeypatch.setenv("NUMBA_CACHE_DIR", str(tmp_path / "cache"))  # its locks only
    monkeypatch.setattr(startup, "QUICK_COUNT_BYTES", 10)
    with caplog.at_level(logging.INFO, logger="workbench"):
        cold = workbench.train(corpus, vocab_size=700, progress=False)
    assert "counting with regex meanwhile (the same pieces)" in caplog.text
    assert len(cold.merges) == 700 - 256 and cold.merges == warm.merges
    assert cold.stats.unique_pieces == warm.stats.unique_pieces


def test_the_window_encoder_follows_the_scanner_in_its_helper(monkeypatch, tmp_path):
    """`ensure("train", then="encode")`: the encoder is queued, lowered, in the helper that
    compiles the scanner (it loads the scanner's kernels, and no core idles between the
    waits); the trainer's helper gets none of it, and the wait is for the trainer only."""
    monkeypatch.setenv("NUMBA_CACHE_DIR", str(tmp_path))
    monkeypatch.setattr(os, "cpu_count", lambda: 2)
    monkeypatch.setattr(warmup, "is_ready", lambda stage, pattern="gpt2": False)
    started: list[tuple] = []

    def start(work, log, nice, afterwards=()):
        started.append((work, nice, list(afterwards)))

    monkeypatch.setattr(warmup, "start_detached", start)
    waited: list[list[str]] = []
    monkeypatch.setattr(
        startup, "_wait_through", lambda job, todo, *rest: waited.append([n.stage for n in todo])
    )
    startup.ensure("train", ["gpt2"], nice=True, then="encode")
    assert sorted(started) == [
        ([("index", "gpt2"), ("merges", "gpt2")], True, []),
        ([("pretokenizer", "gpt2")], True, [("encoder", "gpt2")]),
    ]
    assert waited == [["pretokenizer", "index", "merges"]]
