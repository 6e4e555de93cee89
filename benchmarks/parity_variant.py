"""Parity-aware BPE beside classic BPE on the same multilingual text at the same vocab size
(the parity-aware row of the variants comparison).

    PYTHONPATH=. python benchmarks/parity_variant.py [--vocab-size 3256] [--langs ja,ko,ru,de,zh_CN]
    PYTHONPATH=. python benchmarks/parity_variant.py --assemble /work/bench-data/parity/corpus \\
        --man /work/bench-data/parity/extract/usr/share/man --mb-per-group 16
    PYTHONPATH=. python benchmarks/parity_variant.py --corpus /work/bench-data/parity/corpus \\
        --vocab-size 32000

The groups: without `--corpus`, every man page under /usr/share/man/LANG (roff source,
decompressed) per language of `--langs`, plus tinyshakespeare as `en`. With `--corpus DIR`, each
folder of DIR is a group (its files, in name order). `--assemble DIR` writes such a folder from
man pages: each language folder of every `--man` root (e.g. the Debian `manpages-LANG` packages
unpacked with `dpkg-deb -x`) and the English sections of /usr/share/man as `en`, at most
`--mb-per-group` MB of text a group, a file per page (the text stays outside the repository).

Each group's every 10th line is held out (as the trainer does); both variants train on the other
lines only (classic BPE on all groups' training lines pooled, parity-aware BPE with
`parity_by="folder"`), each in a process of its own through `workbench.train` (no run store),
and both are measured by encoding each group's held-out lines with the tokenizer made. Printed:
wall and CPU seconds of the process (`resource`: user + system, its helpers included), the
session's stage timings, its peak RSS, each group's held-out bytes per token, the Gini
coefficient of those figures (0: every group compressed alike) and the lowest group.
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


def _page_text(path: Path) -> str:
    data = path.read_bytes()
    return (gzip.decompress(data) if path.suffix == ".gz" else data).decode("utf-8", "replace")


def make_groups(langs: list[str]) -> dict[str, list[str]]:
    from _paths import corpora

    groups: dict[str, list[str]] = {}
    for lang in langs:
        groups[lang] = [_page_text(p) for p in sorted((MAN / lang).rglob("*.gz"))]
    groups["en"] = [(corpora() / "tinyshakespeare.txt").read_text("utf-8")]
    return {k: v for k, v in groups.items() if v}


def assemble(out: Path, roots: list[Path], most: float) -> None:
    """Write `out/LANG/NNNNN.txt`, a page a file, at most `most` MB of text a group."""
    sources: dict[str, list[Path]] = {"en": sorted(MAN.glob("man[1-8]/*.gz"))}
    for root in roots:
        for lang in sorted(p for p in root.iterdir() if p.is_dir()):
            if not lang.name.startswith("man"):
                sources.setdefault(lang.name, []).extend(sorted(lang.rglob("*.gz")))
    for lang, pages in sources.items():
        size, written = 0, 0
        (out / lang).mkdir(parents=True, exist_ok=True)
        for page in pages:
            text = _page_text(page)
            if size + len(text.encode()) > most * 1e6:
                break
            (out / lang / f"{written:05d}.txt").write_text(text, "utf-8")
            size += len(text.encode())
            written += 1
        print(f"{lang}: {written} pages, {size / 1e6:.1f} MB")


def read_corpus(folder: Path) -> dict[str, list[str]]:
    return {
        group.name: [p.read_text("utf-8") for p in sorted(group.iterdir()) if p.is_file()]
        for group in sorted(folder.iterdir())
        if group.is_dir()
    }


def write(folder: Path, groups: dict[str, list[str]]) -> None:
    from workbench.engine.train.parity import split_held_out

    for name, texts in groups.items():
        train, dev = split_held_out(texts)
        (folder / "train" / name).mkdir(parents=True, exist_ok=True)
        for i, doc in enumerate(train):
            (folder / "train" / name / f"{i:05d}.txt").write_text(doc, "utf-8")
        (folder / "dev").mkdir(exist_ok=True)
        (folder / "dev" / f"{name}.txt").write_text("".join(dev), "utf-8")


def child(args: argparse.Namespace) -> None:
    """Train one variant, measure it on the held-out lines, print JSON (its own process)."""
    import workbench
    from workbench.engine.train.parity import gini

    root = Path(args.folder)
    train = root / "train"
    started, wall = time.process_time(), time.perf_counter()
    if args.child == "parity":
        # every 10th line of the training part is held out again by the trainer: the same
        # rule, so both variants are measured on `dev`, which neither trained on
        result = workbench.train(train, args.vocab_size, parity_by="folder", progress=False)
    else:
        result = workbench.train(train, args.vocab_size, progress=False)
    cpu, wall = time.process_time() - started, time.perf_counter() - wall
    rates = {}
    for path in sorted((root / "dev").iterdir()):
        text = path.read_text("utf-8")
        tokens = len(result.tokenizer.encode_ordinary(text))
        rates[path.stem] = len(text.encode("utf-8")) / tokens
    usage = resource.getrusage(resource.RUSAGE_SELF)
    kids = resource.getrusage(resource.RUSAGE_CHILDREN)
    print(
        json.dumps(
            {
                "variant": args.child,
                "cpu_s": usage.ru_utime + usage.ru_stime + kids.ru_utime + kids.ru_stime,
                "train_cpu_s": cpu,
                "train_wall_s": wall,
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
    p.add_argument("--corpus", type=Path, help="a folder of group folders (instead of --langs)")
    p.add_argument("--assemble", type=Path, help="write a corpus folder from man pages, then stop")
    p.add_argument("--man", type=Path, action="append", default=[], help="man roots (LANG/...)")
    p.add_argument("--mb-per-group", type=float, default=16.0)
    p.add_argument("--work", type=Path, help="where the split text is written (default: /tmp)")
    p.add_argument("--child", choices=("classic", "parity"), help=argparse.SUPPRESS)
    p.add_argument("--folder", help=argparse.SUPPRESS)
    args = p.parse_args()
    if args.child:
        child(args)
        return
    if args.assemble:
        assemble(args.assemble, args.man, args.mb_per_group)
        return
    with tempfile.TemporaryDirectory(dir=args.work) as tmp:
        groups = read_corpus(args.corpus) if args.corpus else make_groups(args.langs.split(","))
        write(Path(tmp), groups)
        sizes = {k: sum(len(t.encode()) for t in v) for k, v in groups.items()}
        del groups
        print("groups (bytes):", ", ".join(f"{k} {v / 1e6:.2f} MB" for k, v in sizes.items()))
        print(f"in all {sum(sizes.values()) / 1e6:.1f} MB; vocab {args.vocab_size:,};"
              f" load average {os.getloadavg()[0]:.1f} (a shared machine)")  # fmt: skip
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
            stages = "  ".join(f"{k} {v:.1f}" for k, v in f["timings"].items())
            print(
                f"{name:<8} train wall {f['train_wall_s']:6.1f} s  cpu {f['cpu_s']:6.1f} s"
                f" (train {f['train_cpu_s']:6.1f} s)  peak {f['peak_mb']:6.0f} MB"
                f"  merges {f['merges']}  Gini {f['gini']:.4f}  worst {f['worst']}"
                f"\n         stages (wall s): {stages}\n         held-out bytes/token: {rates}"
            )


if __name__ == "__main__":
    main()
