"""Fuzzing tokenizer files of every format (issue 11): truncate, flip bytes, change ids, types and
nesting. Each case is loaded and used in a worker process capped at 1 GiB more memory
(`_fuzz_worker.py`): the answer must be a one-line error naming the file, a tokenizer that
round-trips the text, or one whose pattern (no probe catches every damaged one) refuses the text in
one line rather than lose part of it; never a traceback, a signal death, a hang or a giant allocation.

Profiles: 100 cases per format by default (about half a minute); `BPE_WORKBENCH_FUZZ=long` (or
`HYPOTHESIS_PROFILE=long`) runs 5,000 per format. The number of cases tried is printed (`-s`).
"""

from __future__ import annotations

import json
import os
import select
import shutil
import subprocess
import sys
import tempfile
from collections import Counter
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from workbench.engine.encode.tokenizer import Tokenizer

LONG = "long" in (os.environ.get("BPE_WORKBENCH_FUZZ"), os.environ.get("HYPOTHESIS_PROFILE"))
EXAMPLES = 5000 if LONG else 100
CASE_SECONDS = 60.0
TEXT = "Hello wörld 123 <|endoftext|>\r\n ### abc 👩\u200d👧 \u0558's\n\n  x"
# (format, the file the loader is pointed at, the files a case may damage)
TARGETS = {
    "hf": ("tokenizer.json", ["tokenizer.json"]),
    "gpt2": (".", ["vocab.json", "merges.txt", "bpe-workbench.json"]),
    "tiktoken": ("tokenizer.tiktoken", ["tokenizer.tiktoken", "tokenizer.tiktoken.json"]),
    "minbpe": ("tokenizer.model", ["tokenizer.model"]),
}
ODD_VALUES = [2**31 + 5, 10**12, 2**63, 2**64 + 1, -1, 0, 1.5, 1e308, True, False, None, "", "²"]
ODD_VALUES += ["<|endoftext|>", [], {}, [[[[]]]], {"Regex": "(a|aa)+$|\\S|\\s"}, "\\p{L}+"]


class Worker:
    """One `_fuzz_worker.py` process, restarted after it dies or hangs."""

    def __init__(self) -> None:
        self.process: subprocess.Popen[str] | None = None
        self.cases: Counter[str] = Counter()

    def start(self) -> subprocess.Popen[str]:
        script = Path(__file__).with_name("_fuzz_worker.py")
        self.process = subprocess.Popen(
            [sys.executable, str(script)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            text=True,
        )
        ready = self._read(300.0)
        assert ready == {"kind": "ready"}, ready
        return self.process

    def _read(self, timeout: float) -> dict:
        assert self.process is not None and self.process.stdout is not None
        readable, _, _ = select.select([self.process.stdout], [], [], timeout)
        if not readable:
            self.stop()
            return {"kind": "bug", "message": f"no answer within {timeout:.0f} s (a hang)"}
        line = self.process.stdout.readline()
        if not line:
            code = self.process.wait()
            self.stop()
            return {"kind": "bug", "message": f"the worker died (exit status {code})"}
        return json.loads(line)

    def ask(self, path: Path, text: str) -> dict:
        if self.process is None or self.process.poll() is not None:
            self.start()
        assert self.process is not None and self.process.stdin is not None
        self.process.stdin.write(json.dumps({"path": str(path), "text": text}) + "\n")
        self.process.stdin.flush()
        answer = self._read(CASE_SECONDS)
        self.cases[answer["kind"]] += 1
        return answer

    def stop(self) -> None:
        if self.process is not None:
            self.process.kill()
            self.process.wait()
            for pipe in (self.process.stdin, self.process.stdout):
                if pipe is not None:
                    pipe.close()
            self.process = None


@pytest.fixture(scope="module")
def worker():
    w = Worker()
    yield w
    w.stop()
    total = sum(w.cases.values())
    print(f"\nfuzz: {total} cases ({dict(w.cases)})")


@pytest.fixture(scope="module")
def seeds(tmp_path_factory) -> Path:
    """Valid files of every format from one small tokenizer with specials and the o200k pattern."""
    merges = [(b"a", b"b"), (b"ab", b"c"), (b" ", b"w"), (b"\xc3", b"\xb6"), (b"l", b"d")]
    tok = Tokenizer.from_merges(merges, "o200k", ["<|endoftext|>", "###"])
    root = tmp_path_factory.mktemp("seeds")
    for fmt in TARGETS:
        tok.export(fmt, root / fmt)
    return root


def json_paths(value: object, prefix: tuple = (), limit: int = 400) -> list[tuple]:
    """Paths (tuples of keys/indices) to the nodes of a JSON value, breadth first."""
    paths, queue = [], [(prefix, value)]
    while queue and len(paths) < limit:
        path, node = queue.pop(0)
        paths.append(path)
        items = (
            node.items()
            if isinstance(node, dict)
            else enumerate(node)
            if isinstance(node, list)
            else []
        )
        queue.extend((path + (k,), v) for k, v in items)
    return paths


def mutate_json(data: bytes, draw) -> bytes:
    try:
        doc = json.loads(data)
    except ValueError:
        return data
    paths = json_paths(doc)
    path = draw(st.sampled_from(paths))
    if not path:
        return json.dumps(draw(st.sampled_from(ODD_VALUES))).encode()
    parent = doc
    for key in path[:-1]:
        parent = parent[key]
    key = path[-1]
    op = draw(st.sampled_from(["replace", "delete", "wrap", "int", "rename"]))
    if op == "replace":
        parent[key] = draw(st.sampled_from(ODD_VALUES))
    elif op == "delete":
        del parent[key]
    elif op == "wrap":
        parent[key] = draw(st.sampled_from([[parent[key]], {"x": parent[key]}]))
    elif op == "int":
        parent[key] = draw(st.integers(min_value=-(2**70), max_value=2**70))
    elif isinstance(parent, dict):
        parent[draw(st.text(max_size=6))] = parent.pop(key)
    return json.dumps(doc, ensure_ascii=draw(st.booleans())).encode()


def mutate_bytes(data: bytes, draw) -> bytes:
    if not data:
        return draw(st.binary(max_size=20))
    at = draw(st.integers(min_value=0, max_value=len(data) - 1))
    op = draw(st.sampled_from(["truncate", "flip", "delete", "insert", "duplicate", "digits"]))
    if op == "truncate":
        return data[:at]
    if op == "flip":
        return data[:at] + bytes([draw(st.integers(0, 255))]) + data[at + 1 :]
    if op == "delete":
        return data[:at] + data[at + draw(st.integers(1, 200)) :]
    if op == "insert":
        return data[:at] + draw(st.binary(min_size=1, max_size=12)) + data[at:]
    if op == "digits":  # an id rewritten: huge, negative, or in other scripts' digits
        odd = draw(st.sampled_from(["2147483653", "-1", "²", "٣", "99999999999999999999", "1.5"]))
        return data[:at] + odd.encode() + data[at + draw(st.integers(0, 3)) :]
    lines = data.split(b"\n")
    k = draw(st.integers(0, len(lines) - 1))
    return b"\n".join(lines[: k + 1] + lines[k:])


@settings(
    max_examples=EXAMPLES,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
)
@given(data=st.data())
@pytest.mark.parametrize("fmt", list(TARGETS))
def test_fuzzed_files_fail_cleanly_or_work(worker, seeds, fmt, data):
    target, damageable = TARGETS[fmt]
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp) / fmt
        shutil.copytree(seeds / fmt, folder)
        for _ in range(data.draw(st.integers(1, 3))):
            victim = folder / data.draw(st.sampled_from(damageable))
            raw = victim.read_bytes() if victim.exists() else b""
            if victim.suffix == ".json" and data.draw(st.booleans()):
                raw = mutate_json(raw, data.draw)
            else:
                raw = mutate_bytes(raw, data.draw)
            victim.write_bytes(raw)
        if data.draw(st.booleans()) and fmt in ("gpt2", "tiktoken"):
            side = folder / damageable[-1]
            side.unlink(missing_ok=True)  # without the sidecar, too
        answer = worker.ask(folder / target, TEXT)
    assert answer["kind"] in ("ok", "refused"), answer["message"]
    if answer["kind"] == "refused":
        message = answer["message"]
        assert "\n" not in message, message
        if answer["stage"] == "load":  # a file's problem names the file
            assert str(folder) in message, message
        else:  # a pattern from the file that drops text in context: refused, never lost
            assert "pattern" in message, message
