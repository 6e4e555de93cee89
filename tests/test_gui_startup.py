"""The window's start-up goes through `session.startup` (one policy for the API, the CLI and the
window): KernelWarmer only turns its events into signals. Every test ends with no QThread."""

# ruff: noqa: F811  (fixtures imported from gui_fixtures are "redefined" as test arguments)
from __future__ import annotations

import threading

import pytest

pytest.importorskip("pytestqt")

from gui_fixtures import COLD_START_MS, no_qthread_left  # noqa: E402,F401
from PySide6.QtCore import QThread  # noqa: E402

from workbench.engine import warmup  # noqa: E402
from workbench.engine.errors import CancelledError  # noqa: E402
from workbench.gui.worker import KernelWarmer  # noqa: E402
from workbench.session import startup  # noqa: E402


def _start(warmer: KernelWarmer) -> QThread:
    thread = QThread()
    thread.setObjectName("kernel-warm-up")
    warmer.moveToThread(thread)
    thread.started.connect(warmer.run)
    thread.start()
    return thread


def _stop(qtbot, thread: QThread) -> None:
    thread.quit()
    qtbot.waitUntil(lambda: not thread.isRunning(), timeout=COLD_START_MS)


def test_a_first_start_names_each_stage_from_startup(qtbot, monkeypatch):
    """A cold start as startup reports it: each event becomes a status line; counting may
    start once the scanner is cached, before the trainer is."""
    calls: list[tuple[str, list[str]]] = []
    counting_when_trainer_waited: list[bool] = []
    counting = threading.Event()
    thens: list[str | None] = []  # the encoder queued behind the trainer's stages

    def ensure(job, patterns, report=None, cancel=None, on_ready=None, nice=False, then=None):
        calls.append((job, list(patterns)))
        thens.append(then)
        todo = startup.needs(job, patterns)
        for done, need in enumerate(todo):
            report(startup.StartupEvent(job, need, done, len(todo), 10.0))
            if need.stage == "index":
                counting_when_trainer_waited.append(counting.is_set())
            if on_ready is not None:
                on_ready(need)
        report(startup.StartupEvent(job, None, len(todo), len(todo), 0.0))
        return todo

    monkeypatch.setattr(startup, "ensure", ensure)
    monkeypatch.setattr(warmup, "warm_up", lambda *a, **k: [])
    monkeypatch.setattr(warmup, "hold_encoder", lambda: None)
    warmer = KernelWarmer(threading.Event(), counting, "o200k")
    lines: list[tuple[int, int, str, bool]] = []
    warmer.sigProgress.connect(lambda *args: lines.append(args))
    with qtbot.waitSignal(warmer.sigEncoderReady, timeout=COLD_START_MS):
        thread = _start(warmer)
    _stop(qtbot, thread)
    assert calls == [("train", ["o200k"]), ("encode", ["o200k"])] and thens == ["encode", None]
    assert counting_when_trainer_waited == [True]
    assert warmer.done.is_set() and warmer.encoder.is_set() and warmer.compiled
    assert lines[0] == (0, 3, "Preparing the o200k pre-tokenizer (first use) — 1 of 3, about 10 s", True)  # fmt: skip
    assert lines[-1] == (2, 3, "Preparing the trainer's merge loop (first use) — 3 of 3, about 10 s", True)  # fmt: skip
    assert len(lines) == 3  # no line for "ready" (sigWarm) nor the encoder (its tab's)


def test_closing_stops_the_wait_and_the_thread(qtbot, monkeypatch):
    """The window closing sets `cancel`: the warm-up thread ends at once (the detached helpers
    finish the compile for the next start) and encoding stays held, compiling nothing here."""
    waiting = threading.Event()

    def ensure(job, patterns, report=None, cancel=None, on_ready=None, nice=False, then=None):
        waiting.set()
        cancel.wait(COLD_START_MS / 1000)
        raise CancelledError("stopped waiting")

    monkeypatch.setattr(startup, "ensure", ensure)
    warmer = KernelWarmer(threading.Event(), threading.Event())
    thread = _start(warmer)
    assert waiting.wait(10)
    warm: list[bool] = []
    warmer.sigWarm.connect(lambda *_: warm.append(True))
    # Polled, not `waitSignal`: the warm-up thread may emit before the wait's event loop starts,
    # and a blocker quit from another thread before `exec` waits for ever (seen once in CI).
    warmer.cancel.set()
    qtbot.waitUntil(lambda: bool(warm), timeout=10_000)
    _stop(qtbot, thread)
    assert warmer.done.is_set() and warmer.counting.is_set()
    assert not warmer.encoder.is_set()
    warmup.release_encoder()  # leave the process as other tests expect it


def test_a_warm_start_says_nothing_about_first_use(qtbot):
    """With every kernel cached (the real startup, no fakes), the warm-up only loads: no
    compiling line, nothing compiled."""
    warmup.warm_up("gpt2", helper=False)  # here, not in helpers left running after the test
    assert not startup.missing(startup.needs("train", ["gpt2"]) + startup.needs("encode"))
    warmer = KernelWarmer(threading.Event(), threading.Event(), "gpt2")
    lines: list[tuple[int, int, str, bool]] = []
    warmer.sigProgress.connect(lambda *args: lines.append(args))
    with qtbot.waitSignal(warmer.sigEncoderReady, timeout=COLD_START_MS):
        thread = _start(warmer)
    _stop(qtbot, thread)
    assert lines == [(0, 1, "Loading the fast kernels", False)]
    assert not warmer.compiled


def _fake_ensure(calls: list):
    """startup.ensure as on a cold start: one encoder compiling for the job (no real helper)."""

    def ensure(job, patterns, report=None, cancel=None, on_ready=None, nice=False, then=None):
        calls.append((job, list(patterns)))
        need = startup.Need("encoder", "o200k")
        if report is not None:
            report(startup.StartupEvent(job, need, 0, 1, 15.0))
            report(startup.StartupEvent(job, None, 1, 1, 0.0))
        return [need]

    return ensure


WAIT_LINE = "Preparing the o200k encoder (first use) — 1 of 1, about 15 s"


def test_a_tokens_lane_names_the_encoder_it_waits_for(qtbot, monkeypatch):
    from workbench.gui.tokens.jobs import JobLane

    calls: list = []
    monkeypatch.setattr(startup, "ensure", _fake_ensure(calls))
    monkeypatch.setattr(startup, "missing", lambda wanted: list(wanted))
    lane = JobLane()
    said: list[str] = []
    lane.sigWaiting.connect(said.append)
    with qtbot.waitSignal(lane.sigResult, timeout=10_000) as blocker:
        lane.submit(lambda: "encoded", inline=True, patterns=("o200k",))  # not inline: cold
    lane.shutdown()
    assert blocker.args == ["encoded"]
    assert said == [WAIT_LINE]  # and nothing for the "ready" event
    assert calls == [("encode", ["o200k"])]


def test_a_warm_tokens_lane_says_nothing(qtbot):
    from workbench.gui.tokens.jobs import JobLane

    warmup.warm_up("gpt2", helper=False, only=("encoder",))
    lane = JobLane()
    said: list[str] = []
    lane.sigWaiting.connect(said.append)
    with qtbot.waitSignal(lane.sigResult, timeout=10_000):
        lane.submit(lambda: "encoded", patterns=("gpt2",))
    lane.shutdown()
    assert said == []


def _evaluate_tab(qtbot, tmp_path):
    from workbench.gui.evaluate_tab import EvaluateTab
    from workbench.store import RunStore

    store = RunStore(tmp_path / "runs.db")
    tab = EvaluateTab(tmp_path / "runs.db", store)
    qtbot.addWidget(tab)
    box = tab.tokenizers.references.get("cl100k")
    if box is None or not box.isEnabled():
        tab.shutdown()
        store.close()
        pytest.skip("the cl100k reference is not on this machine (pip install bpe-openai)")
    box.setChecked(True)
    tab.text.pasted.setPlainText("Hello world, the quick brown fox. " * 20)
    return tab, store


def _run_evaluation(qtbot, tab) -> list[tuple[str, float]]:
    seen: list[tuple[str, float]] = []
    tab.runner.sigProgress.connect(lambda text, fraction: seen.append((text, fraction)))
    with qtbot.waitSignal(tab.runner.sigIdle, timeout=COLD_START_MS):
        assert tab.start()
    tab.shutdown()
    assert tab.status.text() == "done", tab.status.text()
    return seen


def test_evaluate_names_the_encoder_compiling_for_it(qtbot, monkeypatch, tmp_path):
    calls: list = []
    monkeypatch.setattr(startup, "ensure", _fake_ensure(calls))
    tab, store = _evaluate_tab(qtbot, tmp_path)
    seen = _run_evaluation(qtbot, tab)
    store.close()
    from workbench.engine.patterns.regexes import preset_name, resolve

    assert [(job, [preset_name(resolve(p)) for p in patterns]) for job, patterns in calls] == [
        ("eval", ["cl100k"])
    ]
    assert (WAIT_LINE, -1.0) in seen  # a busy bar, not an empty one, and the wait named
    assert seen.index((WAIT_LINE, -1.0)) < len(seen) - 1  # then the evaluation's own progress


def test_evaluate_warm_says_nothing_about_first_use(qtbot, tmp_path):
    warmup.warm_up("cl100k", helper=False, only=("encoder",))
    tab, store = _evaluate_tab(qtbot, tmp_path)
    seen = _run_evaluation(qtbot, tab)
    store.close()
    assert seen and not [text for text, _ in seen if "first use" in text or "reparing" in text]


def test_the_worker_counts_through_the_session(qtbot, monkeypatch, tmp_path):
    """The window's worker counts as the API and the CLI do (session.counting), not on its own;
    a second count of the same corpus and settings is the one kept."""
    from workbench.engine.config import TrainConfig
    from workbench.gui.worker import TrainWorker
    from workbench.session import counting

    corpus = tmp_path / "corpus.txt"
    corpus.write_text("hello world, hello yellow world\n" * 50, encoding="utf-8")
    calls: list[tuple[str, ...]] = []
    real = counting.count_paths

    def spy(paths, config, **kwargs):
        calls.append(tuple(str(p) for p in paths))
        return real(paths, config, **kwargs)

    monkeypatch.setattr(counting, "count_paths", spy)
    ready = threading.Event()
    ready.set()
    worker = TrainWorker(None, ready, ready)
    reports: list = []
    worker.sigCorpus.connect(reports.append)
    result = worker._count((str(corpus),), TrainConfig(vocab_size=300))  # noqa: SLF001
    again = worker._count((str(corpus),), TrainConfig(vocab_size=300))  # noqa: SLF001
    assert calls == [(str(corpus),)]
    assert again is result and dict(result.words.most_common(10))[b" world"] == 100
    assert len(reports) == 2 and reports[0] is reports[1]  # the kept count's report again


def _held_ensure(release: threading.Event, calls: list):
    """startup.ensure as on a cold start: the encoder "compiles" until `release` is set."""

    def ensure(job, patterns, report=None, cancel=None, on_ready=None, nice=False, then=None):
        calls.append((job, list(patterns)))
        need = startup.Need("encoder", "gpt2")
        if report is not None:
            report(startup.StartupEvent(job, need, 0, 1, 15.0))
        while not release.wait(0.02):
            if cancel is not None and cancel.is_set():
                raise CancelledError("superseded")
        if report is not None:
            report(startup.StartupEvent(job, None, 1, 1, 0.0))
        return [need]

    return ensure


GPT2_WAIT = "Preparing the gpt2 encoder (first use) — 1 of 1, about 15 s"


def test_drilldown_scrubber_and_export_name_the_encoder_they_wait_for(qtbot, monkeypatch, tmp_path):
    """Each says what it waits for, in the Tokens tab's words, and then shows its answer."""
    from workbench.engine.encode.tokenizer import Tokenizer
    from workbench.engine.patterns.regexes import resolve
    from workbench.gui.tokens.drilldown import DrillDown
    from workbench.gui.tokens.export_dialog import ExportDialog
    from workbench.gui.tokens.scrubber import Scrubber

    release, calls = threading.Event(), []
    monkeypatch.setattr(startup, "ensure", _held_ensure(release, calls))
    monkeypatch.setattr(startup, "missing", lambda wanted: list(wanted))
    tok = Tokenizer.from_merges([(b"t", b"h"), (b"th", b"e")], resolve("gpt2"))
    the = tok.encode("the")[0]
    (tmp_path / "a.txt").write_text("the cat\nthe the\n", encoding="utf-8")
    drill, scrubber = DrillDown(), Scrubber()
    dialog = ExportDialog(lambda: tok, "the cat", str(tmp_path / "out"))  # a stored run's
    for widget in (drill, scrubber, dialog):
        qtbot.addWidget(widget)
    drill.set_corpus_paths([tmp_path / "a.txt"])
    drill.show_token(tok, the)
    scrubber.set_tokenizer(tok)
    scrubber.set_text("the the the")
    dialog.start()

    def chart() -> str:
        return scrubber.empty.textItem.toPlainText()

    try:
        qtbot.waitUntil(
            lambda: (
                GPT2_WAIT in drill.summary.text()
                and GPT2_WAIT in chart()
                and GPT2_WAIT in dialog.log.toPlainText()
            ),
            timeout=10_000,
        )
        assert drill.summary.text() == f"{GPT2_WAIT}; then searching the corpus for the"
        assert "then the bytes/token curve" in chart()
        assert dialog.log.toPlainText() == f"{GPT2_WAIT}; then writing and checking"
        assert not dialog.busy_bar.isHidden() and not dialog.export_button.isEnabled()
        assert drill.result is None and not dialog.results
    finally:
        release.set()
    qtbot.waitUntil(
        lambda: drill.result is not None and bool(dialog.results) and chart() == "",
        timeout=60_000,
    )
    assert drill.result.total == 3 and drill.summary.text().startswith("token ")
    assert dialog.busy_bar.isHidden() and "round trip" in dialog.log.toPlainText()
    assert {job for job, _ in calls} == {"encode"}
    for widget in (drill, scrubber, dialog):
        widget.shutdown()
        assert not widget.busy(), "a worker outlived the test"


def test_a_warm_drilldown_says_nothing_about_preparing(qtbot, tmp_path):
    from workbench.engine.encode.tokenizer import Tokenizer
    from workbench.engine.patterns.regexes import resolve
    from workbench.gui.tokens.drilldown import DrillDown

    warmup.warm_up("gpt2", helper=False, only=("encoder",))
    tok = Tokenizer.from_merges([(b"t", b"h"), (b"th", b"e")], resolve("gpt2"))
    (tmp_path / "a.txt").write_text("the cat\n", encoding="utf-8")
    drill = DrillDown()
    qtbot.addWidget(drill)
    shown: list[str] = []
    drill._lane.sigWaiting.connect(shown.append)  # noqa: SLF001 -- the lane's own wait signal
    drill.set_corpus_paths([tmp_path / "a.txt"])
    drill.show_token(tok, tok.encode("the")[0])
    qtbot.waitUntil(lambda: drill.result is not None, timeout=60_000)
    drill.shutdown()
    assert shown == [] and "reparing" not in drill.summary.text()


def test_a_warm_start_waits_for_the_load_and_never_says_first_start(qtbot, monkeypatch, tmp_path):
    """Train pressed while a warm start's warmer still loads the cached kernels: the run waits
    about a second for them ("Loading the fast kernels"), not in Python "first start only"."""
    from workbench.engine.config import TrainConfig
    from workbench.gui.worker import TRAINING_IN_PYTHON, TrainWorker
    from workbench.session import counting

    corpus = tmp_path / "corpus.txt"
    corpus.write_text("hello world, hello yellow world\n" * 50, encoding="utf-8")
    monkeypatch.setattr(startup, "missing", lambda wanted: [])  # every kernel cached
    used: list[str] = []
    real = counting.count_paths

    warm, counting_ready = threading.Event(), threading.Event()
    loaded = threading.Timer(0.5, warm.set)  # the trainer's kernels loaded after the count

    def spy(paths, config, **kwargs):
        used.append(config.pretokenizer)
        counted = real(paths, config, **kwargs)
        loaded.start()
        return counted

    monkeypatch.setattr(counting, "count_paths", spy)
    worker = TrainWorker(None, warm, counting_ready)
    stages: list[str] = []
    worker.sigStage.connect(stages.append)
    counting_ready.set()  # the scanner loaded; the trainer's kernels a moment later
    result = worker._prepare((str(corpus),), TrainConfig(vocab_size=300), quick=True)  # noqa: SLF001
    waited = warm.is_set()
    loaded.join()
    assert result is not None and waited  # it waited for the trainer's kernels
    assert used == ["auto"]  # the scanner, once loaded: not `regex` as on a first start
    assert "Loading the fast kernels" in stages
    assert TRAINING_IN_PYTHON not in stages
    assert not [line for line in stages if "first" in line.lower() or "reparing" in line]


def test_evaluate_of_references_starts_in_python_on_a_first_use(qtbot, monkeypatch, tmp_path):
    """Without token health, a first use encodes a reference in Python at once (the encoder
    compiling in the background, said so) and gives the compiled encoder's figures."""
    from workbench.evaluate import specs

    warmup.warm_up("cl100k", helper=False, only=("encoder",))
    tab, store = _evaluate_tab(qtbot, tmp_path)
    tab.health_box.setChecked(False)
    _run_evaluation(qtbot, tab)
    warm = tab.result["tokenizers"][0]["total"]
    monkeypatch.setattr(startup, "missing", lambda wanted: list(wanted))  # a first use
    monkeypatch.setattr(warmup, "start_detached", lambda *args, **kwargs: None)  # no helper
    used: list = []
    real = specs.python_candidates
    monkeypatch.setattr(specs, "python_candidates", lambda s: used.append(s) or real(s))
    seen = _run_evaluation(qtbot, tab)
    store.close()
    assert used == [["cl100k"]]
    said = [text for text, _ in seen if "in Python" in text]
    assert said and said[0].startswith(
        "Preparing the cl100k encoder in the background (first use, about "
    )
    assert tab.result["tokenizers"][0]["total"] == warm
