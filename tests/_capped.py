"""Run a piece of work in a fresh Python process whose address space is capped (RLIMIT_AS).

Numba and LLVM reserve far more address space than they touch, so the cap is set after the
process has imported and compiled what it needs: at what it has then plus `extra` bytes. Work
that allocates more than `extra` fails with a MemoryError (or is refused in one line), which
is what the memory tests look for. Linux only (reads /proc/self/status).

Arrow's default allocator (mimalloc) reserves address space in 1 GiB arenas it never touches,
which an address-space cap counts; the subprocess uses the system allocator
(`ARROW_DEFAULT_MEMORY_POOL=system`) so the cap measures what is really allocated."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

MB = 1 << 20

_RUNNER = """
import json, resource, sys, traceback
def vm_size():
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmSize:"):
                return int(line.split()[1]) * 1024
{prepare}
_, hard = resource.getrlimit(resource.RLIMIT_AS)
base = vm_size()
resource.setrlimit(resource.RLIMIT_AS, (base + {extra}, hard))
answer = {{"kind": "ok"}}
try:
{work}
except MemoryError:
    answer = {{"kind": "memory", "message": traceback.format_exc(limit=6)}}
except Exception as exc:
    answer = {{"kind": "error", "type": type(exc).__name__, "message": str(exc)}}
answer["rss"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
answer["base"] = base
print("RESULT " + json.dumps(answer, default=str))
"""


def run_capped(prepare: str, work: str, extra: int, cwd: Path | None = None) -> dict:
    """Run `prepare` (imports, warm-up), cap the address space at what the process then has
    plus `extra` bytes, run `work` (which may set `answer[...]`); returns the answer: `kind`
    ok / memory (a MemoryError) / error (another exception, with `type`, `message`), `rss`."""
    script = _RUNNER.format(
        prepare=textwrap.dedent(prepare),
        extra=int(extra),
        work=textwrap.indent(textwrap.dedent(work), "    "),
    )
    env = {**os.environ, "ARROW_DEFAULT_MEMORY_POOL": "system"}
    done = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, cwd=cwd, timeout=600,
        env=env,
    )  # fmt: skip
    for line in done.stdout.splitlines():
        if line.startswith("RESULT "):
            return json.loads(line[len("RESULT ") :])
    return {"kind": "died", "code": done.returncode, "stderr": done.stderr[-2000:]}
