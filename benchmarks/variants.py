"""Tokenizer variants beside classic BPE on the same text at the same vocab size.

    PYTHONPATH=. python benchmarks/variants.py [--mb 100] [--vocab-size 32000] [--transition 0.8]
                                               [--text FILE] [--held-out-mb 2]
                                               [--held-out-text FILE]

Each variant trains in a process of its own through `workbench.train` (no run store), so its
peak memory is its own: printed are the wall seconds of the process, its CPU seconds (with its
counting processes), the session's stage timings (count includes SuperBPE's second count), peak
RSS of the process and of its largest counting process, and bytes per token on held-out text
(the Evaluate tab's compression figure) with the tokenizer trained. SuperBPE's transition is
`--transition` times the vocab size (the paper's best were 0.8-0.9 of 200k).

Without `--text` the text is `memory_training.make_documents` (paragraphs of the reference
corpora shuffled into documents, with a paragraph of made-up Zipf-distributed words in each, so
there is a long tail of rare pieces), and the held-out text is made the same way with another
seed (`--held-out-text` gives one; `english_docs.py` makes ~100 MB of real English text and a
held-out file from this machine's Debian documentation). Variants so far: classic BPE and
SuperBPE; parity-aware BPE needs a corpus in groups (languages) and has its own script beside
classic BPE, `parity_variant.py`.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))


def child(args: argparse.Namespace) -> None:
    """Train one variant and print its figures as JSON (runs in its own process)."""
    import workbench

    transition = int(args.transition * args.vocab_size) if args.child == "superbpe" else 0
    started = time.perf_counter()
    result = workbench.train(
        Path(args.text), args.vocab_size, superbpe_transition=transition, progress=False
    )
    wall = time.perf_counter() - started
    held = Path(args.held_out).read_text("utf-8")
    ids = result.tokenizer.encode_ordinary(held)
    self_use = resource.getrusage(resource.RUSAGE_SELF)
    kids = resource.getrusage(resource.RUSAGE_CHILDREN)
    print(
        json.dumps(
            {
                "variant": args.child,
                "transition": transition,
                "train_wall": wall,
                "cpu": self_use.ru_utime + self_use.ru_stime + kids.ru_utime + kids.ru_stime,
                "timings": result.timings,
                "merges": len(result.merges),
                "counting_peak_mb": kids.ru_maxrss / 1024,
                "bytes_per_token": len(held.encode("utf-8")) / max(len(ids), 1),
            }
        )
    )


def run_variant(name: str, text: Path, held: Path, args: argparse.Namespace) -> dict:
    command = [
        sys.executable, __file__, "--child", name, "--text", str(text),
        "--held-out", str(held), "--vocab-size", str(args.vocab_size),
        "--transition", str(args.transition),
    ]  # fmt: skip
    started = time.perf_counter()
    process = subprocess.Popen(command, stdout=subprocess.PIPE, env=os.environ.copy())
    assert process.stdout is not None
    out = process.stdout.read()
    _, status, usage = os.wait4(process.pid, 0)
    process.returncode = os.waitstatus_to_exitcode(status)
    if process.returncode:
        sys.exit(f"{name} failed (exit {process.returncode})")
    figures = json.loads(out.decode().strip().splitlines()[-1])
    figures["wall"] = time.perf_counter() - started
    figures["peak_mb"] = usage.ru_maxrss / 1024
    return figures


def make_text(path: Path, megabytes: float, seed: int) -> None:
    from memory_training import make_documents

    path.write_text("\n\n".join(make_documents(megabytes, seed)), "utf-8")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--mb", type=float, default=100.0, help="MB of generated text")
    parser.add_argument("--vocab-size", type=int, default=32000)
    parser.add_argument("--transition", type=float, default=0.8, help="t / vocab size")
    parser.add_argument("--text", type=Path, default=None, help="train on this file instead")
    parser.add_argument("--held-out-mb", type=float, default=2.0)
    parser.add_argument(
        "--held-out-text", type=Path, default=None, help="held-out text (default: generated)"
    )
    parser.add_argument("--child", default=None, help=argparse.SUPPRESS)
    parser.add_argument("--held-out", default=None, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        child(args)
        return
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        text = args.text
        if text is None:
            text = folder / "train.txt"
            make_text(text, args.mb, seed=0)
        held = args.held_out_text
        if held is None:
            held = folder / "held_out.txt"
            make_text(held, args.held_out_mb, seed=1)
        size = text.stat().st_size / 1e6
        print(
            f"text: {size:.1f} MB ({text if args.text else 'generated'}), vocab {args.vocab_size:,}"
        )
        print(
            f"held-out: {held.stat().st_size / 1e6:.1f} MB; load average {os.getloadavg()[0]:.1f}"
        )
        rows = [run_variant(name, text, held, args) for name in ("classic", "superbpe")]
    print()
    print(
        "| variant | t | wall s | CPU s | count s | stage-2 count s | index s | merge s | peak MB"
        " | counting peak MB | bytes/token held-out |"
    )
    print("|---|---|---|---|---|---|---|---|---|---|---|")
    for r in rows:
        t = r["timings"]
        print(
            f"| {r['variant']} | {r['transition'] or '-'} | {r['wall']:.1f} | {r['cpu']:.1f}"
            f" | {t.get('pretokenize', 0):.1f} | {t.get('pretokenize_stage2', 0):.1f}"
            f" | {t.get('index', 0):.1f} | {t.get('merge', 0):.1f}"
            f" | {r['peak_mb']:.0f} | {r['counting_peak_mb']:.0f} | {r['bytes_per_token']:.3f} |"
        )
    base = rows[0]["bytes_per_token"]
    print(f"\nSuperBPE bytes/token vs classic: {rows[1]['bytes_per_token'] / base - 1:+.1%}")


if __name__ == "__main__":
    main()
