"""Hand-run benchmark: CPU seconds to compile each kernel, per start-up stage, from an empty cache.

    python benchmarks/compile_costs.py [--presets gpt2,o200k] [--stages pretokenizer,encoder]

Each stage runs in a new process on a new, empty `NUMBA_CACHE_DIR` (so nothing is shared or
loaded), through `workbench.engine.warmup.compile_stage`, with a Numba event listener timing every
`numba:compile` by thread CPU seconds. A kernel's own figure leaves out the helpers it compiled
on the way (they have their own rows); the stage's total is the process's CPU. Prints a
Markdown table. Compiling is single-threaded, so the CPU figure is steady on a shared machine.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

CHILD = r"""
import json, sys, time
import numba.core.event as ev

class Timer(ev.Listener):
    def __init__(self):
        self.stack, self.rows = [], {}
    def on_start(self, event):
        self.stack.append([time.thread_time(), 0.0])
    def on_end(self, event):
        start, inner = self.stack.pop()
        spent = time.thread_time() - start
        if self.stack:
            self.stack[-1][1] += spent
        dispatcher = event.data["dispatcher"]
        name = f"{dispatcher.py_func.__module__.split('.')[-1]}.{dispatcher.py_func.__name__}"
        self.rows[name] = self.rows.get(name, 0.0) + spent - inner

from workbench.engine import warmup
stage, pattern = sys.argv[1], sys.argv[2]
timer = Timer()
cpu = time.process_time()
with ev.install_listener("numba:compile", timer):
    warmup.compile_stage(stage, pattern, None)
print(json.dumps({"total": time.process_time() - cpu, "kernels": timer.rows}))
"""


def measure(stage: str, pattern: str) -> dict:
    with tempfile.TemporaryDirectory(prefix="compile-costs-") as cache:
        env = dict(os.environ, NUMBA_CACHE_DIR=cache, PYTHONPATH=str(ROOT))
        out = subprocess.run(
            [sys.executable, "-c", CHILD, stage, pattern],
            env=env,
            capture_output=True,
            text=True,
            check=True,
            cwd=ROOT,
        )
    return json.loads(out.stdout.strip().splitlines()[-1])


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--presets", default="gpt2,o200k")
    parser.add_argument("--stages", default="pretokenizer,index,merges,encoder")
    parser.add_argument("--min", type=float, default=0.2, help="kernels below this are summed")
    args = parser.parse_args()
    with open("/proc/loadavg") as f:
        print(f"load average: {f.read().split()[0]} (2 cores)")
    print("| stage | preset | kernel | compile CPU s |\n|---|---|---|---|")
    for stage in args.stages.split(","):
        presets = ["gpt2"] if stage in ("index", "merges") else args.presets.split(",")
        for preset in presets:
            found = measure(stage, preset)
            small = 0.0
            for name, spent in sorted(found["kernels"].items(), key=lambda kv: -kv[1]):
                if spent < args.min:
                    small += spent
                    continue
                print(f"| {stage} | {preset} | `{name}` | {spent:.1f} |")
            print(f"| {stage} | {preset} | (others, each < {args.min}) | {small:.1f} |")
            compiled = sum(found["kernels"].values())
            print(
                f"| {stage} | {preset} | **stage total** (process CPU; compiling {compiled:.1f}) "
                f"| **{found['total']:.1f}** |",
                flush=True,
            )
    return 0


if __name__ == "__main__":
    sys.exit(main())
