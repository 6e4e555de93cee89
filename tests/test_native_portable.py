"""The portable switch: with BPE_WORKBENCH_PORTABLE=1 every piece of `engine/_native` takes its
fallback, and the engine's results stay the same (CI also runs the exactness tests that way).

Each case runs in a fresh process, because several pieces decide once, at import or first use.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

PROBE = """
import json
import numpy as np
from workbench.engine._native import id_lists, libc_read, numba_config, portable, prefetch, utf8_text
from workbench.engine._native import scan_ir, unchecked
from workbench.engine._native.huge_pages import huge_page_copy
from workbench.engine.pretokenize import scan as scanner
from workbench.engine.patterns import GPT2
print(json.dumps({
    "portable": portable(),
    "light_cache_loading": numba_config.LIGHT_CACHE_LOADING,
    "borrowing_without_refcounts": "_nrt" in numba_config.njit_borrowing.keywords,
    "fast_lists": id_lists.fast_lists(),
    "libc_read": libc_read.available(),
    "llvm_prefetch": prefetch.prefetch is prefetch._llvm_prefetch,
    "unchecked_ir": unchecked.get is scan_ir._get and unchecked.put is scan_ir._put,
    "utf8_kernels": len(utf8_text.kernels()),
    "list_kernels": len(id_lists.kernels()),
    "scanner": scanner.can_scan(GPT2),
    "huge_pages": huge_page_copy(table := np.zeros(1 << 19)) is not table,
}))
"""


def _probe(switch: str | None) -> dict:
    env = {k: v for k, v in os.environ.items() if k != "BPE_WORKBENCH_PORTABLE"}
    if switch is not None:
        env["BPE_WORKBENCH_PORTABLE"] = switch
    done = subprocess.run(
        [sys.executable, "-c", PROBE], env=env, capture_output=True, text=True, timeout=600
    )
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout.splitlines()[-1])


@pytest.mark.skipif(sys.platform != "linux", reason="the native pieces are checked on Linux")
def test_without_the_switch_every_native_piece_is_in_use():
    if os.environ.get("BPE_WORKBENCH_PORTABLE", "") not in ("", "0"):
        pytest.skip("this run is itself under the portable switch")
    seen = _probe(None)
    assert seen == {
        "portable": False,
        "light_cache_loading": True,
        "borrowing_without_refcounts": True,
        "fast_lists": True,
        "libc_read": True,
        "llvm_prefetch": True,
        "unchecked_ir": True,
        "utf8_kernels": 1,
        "list_kernels": 5,
        "scanner": True,
        "huge_pages": True,
    }
    assert _probe("0")["portable"] is False  # "0" is off, as an empty value is


def test_the_switch_turns_every_native_piece_off():
    seen = _probe("1")
    assert seen == {
        "portable": True,
        "light_cache_loading": False,
        "borrowing_without_refcounts": False,
        "fast_lists": False,
        "libc_read": False,
        "llvm_prefetch": False,
        "unchecked_ir": False,
        "utf8_kernels": 0,
        "list_kernels": 0,
        "scanner": False,
        "huge_pages": False,
    }


RESULTS = """
import json
from pathlib import Path
import workbench
text = Path({corpus!r}).read_text(encoding="utf-8")
tok = workbench.train(Path({corpus!r}), 400).tokenizer
long_text = text * 3
print(json.dumps({{
    "merges": [list(m) for m in tok.merges],
    "ids": tok.encode(long_text),
    "batch": tok.encode_batch([long_text, "x" * 5000, "é" * 3000]),
    "splitter": tok.splitter,
}}))
"""


def test_the_switch_gives_the_same_merges_and_ids(corpora):
    corpus = str(corpora / "tinyshakespeare.txt")
    outs = []
    for switch in ("0", "1"):
        env = dict(os.environ, BPE_WORKBENCH_PORTABLE=switch)
        done = subprocess.run(
            [sys.executable, "-c", RESULTS.format(corpus=corpus)],
            env=env,
            capture_output=True,
            text=True,
            timeout=900,
        )
        assert done.returncode == 0, done.stderr
        outs.append(json.loads(done.stdout.splitlines()[-1]))
    fast, portable = outs
    assert portable["splitter"] == "regex" and fast["splitter"] == "scanner"
    assert portable["merges"] == fast["merges"] and len(fast["merges"]) == 400 - 256
    assert portable["ids"] == fast["ids"]
    assert portable["batch"] == fast["batch"]


def test_asking_for_the_scanner_under_the_switch_says_why():
    code = (
        "from workbench.engine.encode import Tokenizer\n"
        "from workbench.engine.errors import TokenizerError\n"
        "from workbench.engine.patterns import GPT2\n"
        "try:\n"
        "    Tokenizer.from_merges([], GPT2).with_splitter('scanner')\n"
        "except TokenizerError as exc:\n"
        "    print(exc)\n"
    )
    env = dict(os.environ, BPE_WORKBENCH_PORTABLE="1")
    done = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True)
    assert "BPE_WORKBENCH_PORTABLE" in done.stdout, done.stderr
