"""Parity-aware BPE beside classic BPE on the same multilingual text at the same vocab size
(the parity-aware row of the variants comparison).

    PYTHONPATH=. python benchmarks/parity_variant.py [--vocab-size 3256] [--langs ja,ko,ru,de,zh_CN]

The groups: every man page under /usr/share/man/LANG (roff source, decompressed) per language,
plus tinyshakespeare as `en`. Each group's every 10th line is held out (as the trainer does);
both variants train on the other lines only (classic BPE on all groups' training lines pooled,
parity-aware BPE with `parity_by="folder"`), each in a process of its own through
`workbench.train` (no run store), and both are measured by encoding each group's held-out lines
with the tokenizer made. Printed: CPU seconds of the process (`resource`, user + system),
its peak RSS, each group's held-out bytes per token, the Gini coefficient of those figures
(0: every group compressed alike) and the lowest group.
"""

from __future__ import annotations

import argparse
import gzip
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
MAN = Path("/usr/share/man")


def make_groups(folder: Path, langs: list[str]) -> dict[str, list[str]]:
    from _paths import corpora

    groups: dict[str, list[str]] = {}
    for lang in langs:
        pages = sorted((MAN / lang).rglob("*.gz"))
        groups[lang] = [gzip.decompress(p.read_bytes()).decode("utf-8", "replace") for p in pages]
    groups["en"] = [(corpora() / "tinyshakespeare.txt").read_text("utf-8")]
    return {k: v for k, v in groups.items() if v}


def write(folder: Path, groups: dict[str, list[str]]) -> None:
    from workbench.engine.train.parity import split_held_out

    for name, texts in groups.items():
        train, dev = split_held_out(texts)
        for part, docs in (("train", train), ("dev", dev)):
            (folder / part / name).mkdir(parents=True, exist_ok=True)
            for i, doc in enumerate(docs):
                (folder / part / name / f"{i:05d}.txt").write_text(doc, "utf-8")


def child(args: argparse.Namespace) -> None:
    """Train one variant, measure it on the held-out lines, print JSON (its own process)."""
    import workbench
    from workbench.engine.train.parity import gini

    root = Path(args.folder)
    train = root / "train"
    started = time.process_time()
    if args.child == "parity":
        # every 10th line of the training part is held out again by the trainer: the same
        # rule, so both variants are measured on `dev`, which neither trained on
        result = workbench.train(train, args.vocab_size, parity_by="folder", progress=False)
    else:
        result = workbench.train(train, args.vocab_size, progress=False)
    cpu = time.process_time() - started
    rates = {}
    for group in sorted((root / "dev").iterdir()):
        texts = [p.read_text("utf-8") for p in sorted(group.iterdir())]
        tokens = sum(len(result.tokenizer.encode_ordinary(t)) for t in texts)
        rates[group.name] = sum(len(t.encode("utf-8")) for t in texts) / tokens
    usage = resource.getrusage(resource.RUSAGE_SELF)
    kids = resource.getrusage(resource.RUSAGE_CHILDREN)
    print(
        json.dumps(
            {
                "variant": args.child,
                "cpu_s": usage.ru_utime + usage.ru_stime + kids.ru_utime + kids.ru_stime,
                "train_cpu_s": cpu,
                "timings": result.timings,
                "peak_mb": usage.ru_maxrss / 1024,
                "merges": len(result.merges),
                "rates": rates,
                "gini": gini(list(rates.values())),
                "worst": min(rates, key=rates.get),
            }
        )
    )


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--vocab-size", type=int, default=256 + 3000)
    p.add_argument("--langs", default="ja,ko,ru,de,zh_CN")
    p.add_argument("--child", choices=("classic", "parity"), help=argparse.SUPPRESS)
    p.add_argument("--folder", help=argparse.SUPPRESS)
    args = p.parse_args()
    if args.child:
        child(args)
        return
    with tempfile.TemporaryDirectory() as tmp:
        groups = make_groups(Path(tmp), args.langs.split(","))
        write(Path(tmp), groups)
        sizes = {k: sum(len(t.encode()) for t in v) for k, v in groups.items()}
        print("groups (bytes):", ", ".join(f"{k} {v / 1e6:.2f} MB" for k, v in sizes.items()))
        for name in ("classic", "parity"):
            command = [
                sys.executable, __file__, "--child", name, "--folder", tmp,
                "--vocab-size", str(args.vocab_size),
            ]  # fmt: skip
            out = subprocess.run(command, capture_output=True, text=True, env=os.environ.copy())
            if out.returncode:
                sys.exit(f"{name} failed: {out.stderr[-2000:]}")
            f = json.loads(out.stdout.strip().splitlines()[-1])
            rates = "  ".join(f"{k} {v:.3f}" for k, v in f["rates"].items())
            print(
                f"{name:<8} cpu {f['cpu_s']:6.2f} s (train {f['train_cpu_s']:6.2f} s)"
                f"  peak {f['peak_mb']:6.0f} MB  merges {f['merges']}  Gini {f['gini']:.4f}"
                f"  worst {f['worst']}\n         held-out bytes/token: {rates}"
            )


if __name__ == "__main__":
    main()
