"""Fuzzing the corpus reader: valid .txt/.jsonl/.gz files, mutated (bytes flipped, truncated,
NULs, bad UTF-8, bad or deeply nested JSON, huge numbers, lone surrogates), trained on through
`bpe-workbench train` on both pre-tokenizer paths.

The answer must be a one-line error naming the file (exit 1 or 2) or the merges of training on
the decoded text; never a traceback, a signal death, a hang or more than 1 GB. Cases run in one
long-lived worker process (tests/_fuzz_corpus_worker.py) under RLIMIT_AS, restarted if it dies.

Examples: the Hypothesis profile's (conftest.py: `ci` by default, `HYPOTHESIS_PROFILE=long`), or
`FUZZ_EXAMPLES`; `FUZZ_SECONDS` bounds a run by time (the test then ends as skipped, saying
how many cases passed). A nightly-style run:
    FUZZ_EXAMPLES=1000000 FUZZ_SECONDS=600 python -m pytest -s tests/test_fuzz_corpus.py
"""

from __future__ import annotations

import gzip
import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, note, settings
from hypothesis import strategies as st

resource = pytest.importorskip("resource")  # POSIX only: the memory limit needs it

MEMORY_LIMIT = 1 << 30
CASE_SECONDS = 120  # a case slower than this is a hang
WORKER = Path(__file__).with_name("_fuzz_corpus_worker.py")
ROOT = WORKER.parent.parent
DEADLINE = time.monotonic() + float(os.environ.get("FUZZ_SECONDS", "inf"))
TRIED = {"cases": 0}


def _limit_memory() -> None:
    resource.setrlimit(resource.RLIMIT_AS, (MEMORY_LIMIT, MEMORY_LIMIT))


class Worker:
    """The worker process, started on first use and again after it dies."""

    def __init__(self) -> None:
        self.proc: subprocess.Popen[str] | None = None

    def start(self) -> subprocess.Popen[str]:
        if self.proc is None or self.proc.poll() is not None:
            self.proc = subprocess.Popen(
                [sys.executable, str(WORKER)],
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                text=True,
                cwd=ROOT,
                env={**os.environ, "PYTHONPATH": str(ROOT)},
                preexec_fn=_limit_memory,
            )
        return self.proc

    def judge(self, path: Path, out: Path) -> str | None:
        proc = self.start()
        assert proc.stdin is not None and proc.stdout is not None
        proc.stdin.write(json.dumps({"path": str(path), "out": str(out)}) + "\n")
        proc.stdin.flush()
        line = _read_line(proc, CASE_SECONDS)
        if line is None:
            proc.kill()
            proc.wait()
            return f"no answer within {CASE_SECONDS} s (a hang?)"
        if not line:
            code = proc.wait()
            return f"the worker died (exit status {code}: a signal or the memory limit)"
        return json.loads(line)["problem"]

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            assert self.proc.stdin is not None and self.proc.stdout is not None
            self.proc.stdin.close()
            self.proc.wait(timeout=60)
            self.proc.stdout.close()


def _read_line(proc: subprocess.Popen[str], seconds: float) -> str | None:
    import selectors

    assert proc.stdout is not None
    with selectors.DefaultSelector() as sel:
        sel.register(proc.stdout, selectors.EVENT_READ)
        if not sel.select(seconds):
            return None
    return proc.stdout.readline()


@pytest.fixture(scope="module")
def worker():
    w = Worker()
    yield w
    w.stop()
    print(f"\nfuzz_corpus: {TRIED['cases']} cases tried")


# -- valid files ---------------------------------------------------------------------------------

_pieces = st.sampled_from(
    [
        "the",
        " cat",
        "  ",
        "\n",
        "\r\n",
        "\t",
        "'s",
        "123",
        "日本",
        "😀",
        "é",
        "<|eot|>",
        "<|e",
        "ot|>",
        "\u00a0",
        "a" * 40,
        "=" * 12,
        ".",
        "!?",
    ]  # fmt: skip
)
_text = st.lists(_pieces, max_size=40).map("".join)


@st.composite
def valid_file(draw) -> tuple[str, bytes]:
    kind = draw(st.sampled_from(["txt", "jsonl"]))
    if kind == "txt":
        body = draw(_text).encode("utf-8")
    else:
        records = draw(st.lists(_text, min_size=1, max_size=6))
        body = b"".join(
            json.dumps({"text": t, "id": i}).encode() + b"\n" for i, t in enumerate(records)
        )
    return kind, body


# -- mutations -----------------------------------------------------------------------------------


@st.composite
def mutation(draw, size: int, kind: str):
    """(description, function bytes -> bytes)."""
    at = draw(st.integers(0, max(size, 0)))
    choices = ["flip", "truncate", "nul", "bad_utf8", "bom"]
    if kind == "jsonl":
        choices += ["bad_json", "nested", "huge_int", "surrogate", "not_text", "not_object"]
    what = draw(st.sampled_from(choices))
    if what == "flip":
        bit = draw(st.integers(0, 7))
        return (
            what,
            lambda b: b[:at] + bytes([b[at] ^ (1 << bit)]) + b[at + 1 :] if at < len(b) else b,
        )
    if what == "truncate":
        return what, lambda b: b[:at]
    if what == "nul":
        return what, lambda b: b[:at] + b"\0" + b[at:]
    if what == "bad_utf8":
        junk = draw(
            st.sampled_from(
                [b"\xff", b"\xc3", b"\xe2\x82", b"\xed\xa0\x80", b"\xf4\x90\x80\x80", b"\x80"]
            )
        )
        return what, lambda b: b[:at] + junk + b[at:]
    if what == "bom":
        return what, lambda b: b"\xef\xbb\xbf" + b
    line = {
        "bad_json": lambda: draw(
            st.sampled_from([b"{", b'{"text": }', b"nul", b'{"text": "a"', b"[]"])
        ),
        "nested": lambda: b'{"text": "x", "d": ' + b"[" * draw(st.integers(1, 200_000)) + b"]}",
        "huge_int": lambda: (
            b'{"n": ' + b"9" * draw(st.integers(4000, 20_000)) + b', "text": "num"}'
        ),
        "surrogate": lambda: (
            b'{"text": "a'
            + draw(st.sampled_from([b"\\ud800", b"\\udfff", b"\\ud83d\\ude00", b"\\ud83d"]))
            + b'"}'
        ),
        "not_text": lambda: (
            b'{"text": ' + draw(st.sampled_from([b"1", b"null", b"[]", b'{"a": 1}'])) + b"}"
        ),
        "not_object": lambda: draw(st.sampled_from([b'"text"', b"42", b'[{"text": "a"}]'])),
    }[what]()
    return what, lambda b: b[:at] + b"\n" + line + b"\n" + b[at:]


@st.composite
def corpus_case(draw) -> tuple[str, bytes, list[str]]:
    kind, body = draw(valid_file())
    done = []
    for _ in range(draw(st.integers(0, 3))):
        what, apply = draw(mutation(len(body), kind))
        body = apply(body)
        done.append(what)
    name = f"case.{kind}"
    if draw(st.booleans()):  # compressed: mutate the content, the compressed bytes, or both
        body = gzip.compress(body, mtime=0)
        name += ".gz"
        for _ in range(draw(st.integers(0, 2))):
            what, apply = draw(mutation(len(body), "gz"))
            body = apply(body)
            done.append(f"gz-{what}")
    return name, body, done


@settings(
    max_examples=int(os.environ.get("FUZZ_EXAMPLES", settings.default.max_examples)),
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
    deadline=None,
)
@given(case=corpus_case())
def test_mutated_corpus_files(worker, tmp_path_factory, case):
    if time.monotonic() > DEADLINE:  # Hypothesis lets a skip through and stops generating
        pytest.skip(f"FUZZ_SECONDS ran out after {TRIED['cases']} cases, all passed")
    name, body, done = case
    folder = tmp_path_factory.mktemp("fuzz")
    path = folder / name
    path.write_bytes(body)
    note(f"{name} {len(body)} bytes, mutations {done}: {body[:200]!r}")
    TRIED["cases"] += 1
    problem = worker.judge(path, folder / "out")
    assert problem is None, problem


def test_the_reference_reads_the_valid_files(tmp_path):
    """A guard on the judge: a clean file is read, not refused."""
    sys.path.insert(0, str(WORKER.parent))
    try:
        from _fuzz_corpus_worker import reference_texts
    finally:
        sys.path.remove(str(WORKER.parent))
    path = tmp_path / "a.jsonl.gz"
    path.write_bytes(gzip.compress(b'{"text": "one"}\n\n{"text": "two"}\n'))
    assert reference_texts(path) == ["one", "two"]
    (tmp_path / "b.txt").write_bytes(b"\xef\xbb\xbfplain")
    assert reference_texts(tmp_path / "b.txt") == ["plain"]
