"""A long-lived process that loads fuzzed tokenizer files and encodes with them, under a memory cap.

Run as `python tests/_fuzz_worker.py`; reads one JSON request per line on stdin
(`{"path": ..., "text": ...}`) and answers one JSON line on stdout:
`{"kind": "ok"}` (loaded, and `decode(encode(text)) == text`), `{"kind": "refused", "message",
"stage"}` (a WorkbenchError while loading, or while encoding with what loaded) or `{"kind": "bug", "message"}` (anything else: a traceback, a wrong round
trip, a MemoryError). After the imports its address space is capped at what it already has plus
`BPE_WORKBENCH_FUZZ_MEMORY` bytes (default 1 GiB), so a file that makes it allocate more fails
the test with a MemoryError instead of swapping the machine.
"""

from __future__ import annotations

import json
import os
import resource
import sys
import traceback


def _vm_size() -> int:
    with open("/proc/self/status", encoding="ascii") as handle:
        for line in handle:
            if line.startswith("VmSize:"):
                return int(line.split()[1]) * 1024
    return 0


def handle(request: dict) -> dict:
    from workbench.engine import formats
    from workbench.engine.errors import WorkbenchError

    try:
        tok = formats.load(request["path"])
    except WorkbenchError as exc:
        return {"kind": "refused", "message": str(exc), "stage": "load"}
    except BaseException:  # noqa: BLE001 -- every other exception is what the fuzzer hunts
        return {"kind": "bug", "message": traceback.format_exc(limit=8)}
    try:
        text = request["text"]
        ids = tok.encode(text, allowed_special="all")
        if tok.decode_bytes(ids) != text.encode("utf-8"):
            return {"kind": "bug", "message": "decode(encode(text)) != text"}
        ordinary = tok.encode_ordinary(text)
        if tok.decode_bytes(ordinary) != text.encode("utf-8"):
            return {"kind": "bug", "message": "decode(encode_ordinary(text)) != text"}
        return {"kind": "ok"}
    except WorkbenchError as exc:  # the file loaded, but its tokenizer cannot encode the text
        return {"kind": "refused", "message": str(exc), "stage": "encode"}
    except BaseException:  # noqa: BLE001 -- every other exception is what the fuzzer hunts
        return {"kind": "bug", "message": traceback.format_exc(limit=8)}


def main() -> int:
    # Import and compile everything first, so the cap only meets what a file makes us allocate.
    from workbench.engine.encode.tokenizer import Tokenizer

    Tokenizer.from_merges([(b"a", b"b")], "gpt2", ["<s>"]).encode("ab <s> é", "all")
    Tokenizer.from_merges([(b"a", b"b")], r"\S+|\s+").encode("ab é", "all")
    extra = int(os.environ.get("BPE_WORKBENCH_FUZZ_MEMORY", str(1 << 30)))
    _, hard = resource.getrlimit(resource.RLIMIT_AS)
    resource.setrlimit(resource.RLIMIT_AS, (_vm_size() + extra, hard))
    print(json.dumps({"kind": "ready"}), flush=True)
    for line in sys.stdin:
        print(json.dumps(handle(json.loads(line))), flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
