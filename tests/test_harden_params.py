"""Training parameters out of range get one line naming the setting, on every surface (the API's
TrainConfig, the command line); a closed output pipe and a bad bench corpus end quietly."""

from __future__ import annotations

import subprocess
import sys

import numpy as np
import pytest

from tests._harden_helpers import assert_one_line_error, run_cli
from workbench.engine.config import MAX_VOCAB_SIZE, TrainConfig, check_workers
from workbench.engine.errors import ConfigError
from workbench.engine.pretokenize.counting import count_corpus
from workbench.store import RunStore


@pytest.fixture
def corpus_file(tmp_path):
    path = tmp_path / "corpus.txt"
    path.write_text("low lower lowest newer newest\n" * 3, encoding="utf-8")
    return path


@pytest.mark.parametrize(
    "option, value, words",
    [
        ("--vocab-size", str(2**63), "vocab size"),
        ("--vocab-size", str(2**64 + 5), "vocab size"),
        ("--vocab-size", str(MAX_VOCAB_SIZE + 1), "at most"),
        ("--vocab-size", "-3", "vocab"),
        ("--min-frequency", str(2**63), "min frequency"),
        ("--min-frequency", "-1", "min frequency cannot be negative"),
        ("--threads", "0", "--threads must be from 1"),
        ("--threads", "-2", "--threads"),
        ("--threads", str(2**63), "--threads"),
        ("--workers", "0", "--threads"),  # the old name, hidden, still checked
    ],
)
def test_cli_ranges(tmp_path, capsys, corpus_file, option, value, words):
    args = ["train", str(corpus_file), "--out", str(tmp_path / "out"), "--no-db"]
    if option != "--vocab-size":
        args += ["--vocab-size", "300"]
    code, _, err = run_cli(capsys, *args, option, value)
    assert_one_line_error(code, err, words)
    assert not (tmp_path / "out").exists()


def test_the_largest_vocab_trains_until_no_pair_is_left(tmp_path, capsys, corpus_file):
    code, out, err = run_cli(capsys, "train", str(corpus_file), "--out", str(tmp_path / "out"),
                             "--no-db", "--vocab-size", str(MAX_VOCAB_SIZE))  # fmt: skip
    assert code == 0, err
    assert "merges" in out  # trained as far as the corpus allows


@pytest.mark.parametrize(
    "settings, words",
    [
        ({"vocab_size": 2**63}, "vocab size"),
        ({"vocab_size": 300.5}, "vocab size must be a whole number"),
        ({"vocab_size": "300"}, "vocab size must be a whole number"),
        ({"vocab_size": True}, "vocab size must be a whole number"),
        ({"min_frequency": 2.0}, "min frequency must be a whole number"),
        ({"min_frequency": 2**64}, "min frequency"),
    ],
)
def test_api_ranges(settings, words):
    with pytest.raises(ConfigError, match=words) as info:
        TrainConfig(**settings)
    assert "\n" not in str(info.value)


def test_numpy_integers_are_whole_numbers():
    config = TrainConfig(vocab_size=np.int64(300), min_frequency=np.int32(2))
    assert (config.vocab_size, config.min_frequency) == (300, 2)
    assert type(config.vocab_size) is int


@pytest.mark.parametrize("workers", [0, -1, 10**9, 2.5, "2"])
def test_api_workers(tmp_path, corpus_file, workers):
    with pytest.raises(ConfigError, match="workers"):
        count_corpus([corpus_file], TrainConfig(), workers=workers)
    assert check_workers(None) is None and check_workers(np.int8(3)) == 3


# -- a closed pipe ----------------------------------------------------------------------------


def test_output_piped_to_head(tmp_path):
    db = tmp_path / "runs.db"
    with RunStore(db) as store:
        for i in range(3000):  # well over a pipe's 64 KB of buffer
            store.create_run(f"run number {i} with a longish name")
    proc = subprocess.Popen(
        [sys.executable, "-m", "workbench", "runs", "list", "--db", str(db)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    assert proc.stdout is not None and proc.stderr is not None
    proc.stdout.readline()
    proc.stdout.close()  # as `head -1` does
    err = proc.stderr.read().decode()
    proc.stderr.close()
    assert proc.wait(timeout=120) == 1
    assert err == ""


# -- bench on a bad corpus --------------------------------------------------------------------


def test_bench_on_a_bad_corpus(tmp_path, capsys):
    bad = tmp_path / "bad.txt"
    bad.write_bytes(b"fine\nnot \xff fine\n")
    code, _, err = run_cli(capsys, "bench", str(bad), "--vocab-size", "300", "--repeat", "1")
    assert_one_line_error(code, err, "bad.txt:2: invalid UTF-8")


@pytest.mark.parametrize(
    "args, words",
    [
        (["--repeat", "0"], "--repeat must be at least 1"),
        (["--encode", "--gpt2", "nowhere"], "invalid UTF-8"),
    ],
)
def test_bench_arguments(tmp_path, capsys, args, words):
    bad = tmp_path / "bad.txt"
    bad.write_bytes(b"not \xff fine\n")
    code, _, err = run_cli(capsys, "bench", str(bad), *args)
    assert_one_line_error(code, err, words)


# -- catastrophic custom patterns ----------------------------------------------------------------

CATASTROPHIC = r"(a|aa)+$|\S|\s"


@pytest.fixture
def quick_timeout(monkeypatch):
    from workbench.engine.pretokenize import _regex_worker as worker

    monkeypatch.setattr(worker, "TIMEOUT_SECONDS", 0.2)


def test_catastrophic_pattern_on_the_command_line(tmp_path, capsys, quick_timeout):
    corpus = tmp_path / "as.txt"
    corpus.write_text("a" * 60 + "!", encoding="utf-8")
    code, _, err = run_cli(capsys, "train", str(corpus), "--vocab-size", "300", "--out",
                           str(tmp_path / "out"), "--no-db", "--pattern", CATASTROPHIC)  # fmt: skip
    assert_one_line_error(code, err, "(a|aa)+$", "as.txt", "backtracks")
    assert not (tmp_path / "out").exists()


def test_catastrophic_pattern_through_the_api(quick_timeout):
    from workbench.engine.errors import PatternError
    from workbench.engine.pretokenize.counting import count_texts

    with pytest.raises(PatternError, match="backtracks"):
        count_texts(["fine", "a" * 60 + "!"], TrainConfig(pattern=CATASTROPHIC))
    # the same pattern on text it handles quickly is fine
    words = count_texts(["a b c"], TrainConfig(pattern=CATASTROPHIC)).to_dict()
    assert words == {b"a": 1, b" ": 2, b"b": 1, b"c": 1}


GAPPY = r"\S+|\s+(?![0-9])"  # covers every probe character, yet skips a space before a digit


def test_a_pattern_that_skips_text_in_context_stops_training(tmp_path, capsys):
    corpus = tmp_path / "gap.txt"
    corpus.write_text("ab cd\nab 12\n", encoding="utf-8")
    code, _, err = run_cli(capsys, "train", str(corpus), "--vocab-size", "260", "--out",
                           str(tmp_path / "out"), "--no-db", "--pattern", GAPPY)  # fmt: skip
    assert_one_line_error(code, err, "gap.txt", "matches no piece", "' 12")
    assert not (tmp_path / "out").exists()


def test_a_pattern_that_skips_text_in_context_through_the_api():
    from workbench.engine.errors import PatternError
    from workbench.engine.pretokenize.counting import count_texts

    with pytest.raises(PatternError, match="matches no piece at ' 12'"):
        count_texts(["ab cd", "ab 12"], TrainConfig(pattern=GAPPY))
    words = count_texts(["ab cd"], TrainConfig(pattern=GAPPY)).to_dict()  # no gap: counted
    assert words == {b"ab": 1, b" ": 1, b"cd": 1}


def test_a_pattern_with_groups_counts_whole_matches(tmp_path, capsys):
    """`findall` would hand back the groups (tuples, or one group's text)."""
    from workbench.engine.pretokenize.counting import count_texts

    config = TrainConfig(pattern=r"(\w)(\w*)|\s+|[^\w\s]+")
    assert count_texts(["hello, hello"], config).to_dict() == {b"hello": 2, b",": 1, b" ": 1}
    corpus = tmp_path / "c.txt"
    corpus.write_text("hello, hello", encoding="utf-8")
    code, _, err = run_cli(capsys, "train", str(corpus), "--vocab-size", "260", "--out",
                           str(tmp_path / "out"), "--no-db", "--pattern", config.pattern)  # fmt: skip
    assert code == 0, err


def test_presets_count_without_the_time_limit(monkeypatch):
    """The presets run in linear time and skip `regex`'s timeout (it triples the cost of
    matching); a custom pattern keeps it."""
    from workbench.engine.errors import PatternError
    from workbench.engine.patterns.regexes import resolve
    from workbench.engine.pretokenize import _regex_worker as worker

    monkeypatch.setattr(worker, "TIMEOUT_SECONDS", 0.0)
    monkeypatch.setattr(worker, "TIMEOUT_SECONDS_PER_CHAR", 0.0)
    text = "Hello world, 123 times!\n" * 2000
    for name in ("gpt2", "cl100k", "o200k"):
        counts = worker.count_segments(resolve(name), [text])
        assert sum(map(len, counts.elements())) == len(text)
    with pytest.raises(PatternError, match="backtracks"):
        worker.count_segments(resolve("gpt2") + "|x", [text])
