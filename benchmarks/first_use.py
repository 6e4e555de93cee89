"""Hand-run benchmark: a new user's first use on every path, from an empty kernel cache.

    python benchmarks/first_use.py [--corpus /work/bench-data/c-1g.txt] [--cases api,eval,train]

Each case is whole processes with `NUMBA_CACHE_DIR` and the user cache directory
(`XDG_CACHE_HOME`) pointing at new empty folders, as on a fresh install:

- `api`: `workbench.train` on ~30 MB of text to 32,000 (logging at INFO, as a notebook would);
- `eval`: `bpe-workbench eval --tokenizer o200k` on ~5 MB;
- `train`: `bpe-workbench train` on ~6 MB to 8,000, then the same command 90 s after the first
  ended (the first run's detached compile should have finished: the second is warm), and the
  helpers' log (`compile.log` in the cache: each stage "compiled" at most once).

Prints, per process: wall seconds to the first output of any kind (stdout or stderr), to the
end, the command's own CPU seconds (not its detached helpers': their CPU seconds per stage are
in the `compile.log` lines), and the lines the user was told about kernels meanwhile. Run it on an otherwise idle
machine for the figures the README quotes; a loaded machine stretches every compile.
"""

from __future__ import annotations

import argparse
import os
import re
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from _processes import wait_for_processes_with

ROOT = Path(__file__).resolve().parents[1]
MB = 1_000_000
TOLD = re.compile(r"kernel|preparing|first use|first start", re.IGNORECASE)


def run(argv: list[str], env: dict[str, str]) -> dict:
    """Wall seconds to the first byte of output and to the end, and what was said."""
    started = time.perf_counter()
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    proc = subprocess.Popen(
        argv, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, env=env, cwd=ROOT
    )
    assert proc.stdout is not None
    first = None
    chunks = []
    while True:
        chunk = os.read(proc.stdout.fileno(), 65536)
        if not chunk:
            break
        if first is None:
            first = time.perf_counter() - started
        chunks.append(chunk)
    code = proc.wait()
    end = time.perf_counter() - started
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime
    text = b"".join(chunks).decode(errors="replace")
    lines = [part.strip() for line in text.splitlines() for part in line.split("\r")]
    told = [line for line in lines if TOLD.search(line)]
    return {"first": first, "end": end, "cpu": cpu, "code": code, "told": told, "tail": lines[-1:]}


def fresh_env(folder: Path) -> dict[str, str]:
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    env["NUMBA_CACHE_DIR"] = str(folder / "numba")
    env["XDG_CACHE_HOME"] = str(folder / "user-cache")
    return env


def slice_of(corpus: Path, offset: int, size: int, out: Path) -> Path:
    with open(corpus, "rb") as source:
        source.seek(offset)
        data = source.read(size)
    out.write_bytes(data[: data.rfind(b"\n") + 1])  # whole lines
    return out


def case_api(corpus: Path, folder: Path) -> list[tuple[str, dict]]:
    text = slice_of(corpus, 0, 30 * MB, folder / "api-30mb.txt")
    code = (
        "import logging, sys; logging.basicConfig(level='INFO', stream=sys.stderr,"
        " format='%(name)s: %(message)s'); import workbench;"
        f" r = workbench.train({str(text)!r}, vocab_size=32000, progress=False);"
        " print(r)"
    )
    return [("workbench.train 30 MB -> 32k", run([sys.executable, "-c", code], fresh_env(folder)))]


def case_eval(corpus: Path, folder: Path) -> list[tuple[str, dict]]:
    text = slice_of(corpus, 40 * MB, 5 * MB, folder / "eval-5mb.txt")
    argv = [sys.executable, "-m", "workbench", "eval", "--tokenizer", "o200k", str(text)]
    return [("bpe-workbench eval o200k 5 MB", run(argv, fresh_env(folder)))]


def case_train(corpus: Path, folder: Path, pause: float) -> list[tuple[str, dict]]:
    text = slice_of(corpus, 50 * MB, 6 * MB, folder / "train-6mb.txt")
    env = fresh_env(folder)
    argv = [sys.executable, "-m", "workbench", "train", str(text), "--vocab-size", "8000"]
    argv += ["--no-db", "--out"]
    first = run([*argv, str(folder / "out1")], env)
    time.sleep(pause)
    second = run([*argv, str(folder / "out2")], env)
    log = folder / "numba" / "compile.log"
    compiled = log.read_text().splitlines() if log.exists() else []
    second["told"] = second["told"] + [f"[compile.log] {line}" for line in compiled]
    return [
        ("bpe-workbench train 6 MB -> 8k (1st)", first),
        (f"  same, {pause:.0f} s later (2nd)", second),
    ]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--corpus", type=Path, default=Path("/work/bench-data/c-1g.txt"))
    parser.add_argument("--cases", default="api,eval,train")
    parser.add_argument("--pause", type=float, default=90.0, help="seconds between train runs")
    args = parser.parse_args()
    print(f"load average before: {_load()} (2 cores; above 2 the machine is shared)")
    print("| path | first output | done | exit | CPU s of the command |\n|---|---|---|---|---|")
    rows = []
    for case in args.cases.split(","):
        with tempfile.TemporaryDirectory(prefix=f"first-use-{case}-") as tmp:
            folder = Path(tmp)
            if case == "api":
                rows += case_api(args.corpus, folder)
            elif case == "eval":
                rows += case_eval(args.corpus, folder)
            elif case == "train":
                rows += case_train(args.corpus, folder, args.pause)
            # Detached helpers may still compile into this cache: let them finish first.
            _wait_for_helpers(folder)
            log = folder / "numba" / "compile.log"
            compiled = log.read_text().splitlines() if log.exists() else []
        for name, row in rows[-2:] if case == "train" else rows[-1:]:
            _print(name, row)
        for line in compiled if case != "train" else []:
            print(f"|   [compile.log] {line} | | | |", flush=True)
    print(f"load average after: {_load()} (2 cores)")
    return 0


def _load() -> str:
    with open("/proc/loadavg") as f:
        return f.read().split()[0]


def _wait_for_helpers(folder: Path, limit: float = 600) -> None:
    wait_for_processes_with(f"NUMBA_CACHE_DIR={folder / 'numba'}", limit)


def _print(name: str, row: dict) -> None:
    first = "-" if row["first"] is None else f"{row['first']:.1f} s"
    done = f"{row['end']:.1f} s | exit {row['code']} | {row['cpu']:.1f}"
    print(f"| {name} | {first} | {done} |", flush=True)
    for line in row["told"][:8]:
        print(f"|   told: {line[:110]} | | | | |", flush=True)


if __name__ == "__main__":
    sys.exit(main())
