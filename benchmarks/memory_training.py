"""Training from memory against training from a file, on the same ~30 MB of documents.

    PYTHONPATH=. python benchmarks/memory_training.py [--mb 30] [--vocab-size 16000] [--runs 3]

The documents are paragraphs of the reference corpora (`BPE_WORKBENCH_CORPORA`) shuffled into
documents of 1 to 20 paragraphs, each with a numbered heading and a paragraph of made-up words
(Zipf-distributed, for a long tail of rare pieces). They are trained on as a JSONL file (each
document a record), a plain text file (the documents one after another), a list of strings,
batches of 1000 strings (a Hugging Face batch iterator), a `datasets.Dataset` and an
`IterableDataset` (`Dataset.to_iterable_dataset`). Printed per input: the median wall seconds
of the whole `train` call and of its counting stage, the CPU seconds of the process (all
threads) and the ratios of the wall time to the text file's (the file speed to match) and to
the JSONL file's; then a third of the text as one document, in a file and as one string. The
merges of every in-memory kind are checked against the JSONL file's (the same documents; the
text file's differ a little: its documents run into each other). The first call compiles and
is not timed.
"""

from __future__ import annotations

import argparse
import itertools
import json
import random
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _paths import corpora  # noqa: E402

import workbench  # noqa: E402

SOURCES = ("tinyshakespeare.txt", "corpus.en", "taylorswift.txt")


def pseudo_words(rng: random.Random, count: int) -> list[str]:
    """`count` distinct made-up words of 1 to 4 syllables (a long tail of rare words, as real
    text has: the reference corpora alone repeat too few to make merging take any time)."""
    syllables = [c + v for c in "bcdfghjklmnprstvwz" for v in ("a", "e", "i", "o", "u", "ai", "ou")]
    words: set[str] = set()
    while len(words) < count:
        words.add("".join(rng.choices(syllables, k=rng.randint(1, 4))))
    return sorted(words)


def make_documents(megabytes: float, seed: int = 0) -> list[str]:
    folder = corpora()
    paragraphs = [
        p.strip()
        for name in SOURCES
        for p in (folder / name).read_text(encoding="utf-8").split("\n\n")
        if p.strip()
    ]
    rng = random.Random(seed)
    vocabulary = pseudo_words(rng, 50_000)
    weights = list(itertools.accumulate(1 / (rank + 1) for rank in range(len(vocabulary))))
    documents: list[str] = []
    size = 0
    while size < megabytes * 1e6:
        made_up = " ".join(rng.choices(vocabulary, cum_weights=weights, k=rng.randint(50, 2000)))
        body = "\n\n".join([*rng.choices(paragraphs, k=rng.randint(1, 20)), made_up + "."])
        text = f"Document {len(documents)} ({rng.randint(1, 10**6)})\n\n{body}"
        documents.append(text)
        size += len(text.encode("utf-8"))
    return documents


def timed(make: Callable[[], object], vocab_size: int, runs: int) -> tuple[list, object]:
    """[(wall, counting wall, cpu)] of `runs` trainings on a fresh `make()` each, and the last
    result."""
    figures = []
    result = None
    for _ in range(runs):
        corpus = make()
        wall, cpu = time.perf_counter(), time.process_time()
        result = workbench.train(corpus, vocab_size, progress=False)
        figures.append(
            (
                time.perf_counter() - wall,
                result.stats.seconds,
                time.process_time() - cpu,
            )
        )
    return figures, result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--mb", type=float, default=30.0, help="megabytes of text (default 30)")
    parser.add_argument("--vocab-size", type=int, default=16000)
    parser.add_argument("--runs", type=int, default=3, help="timed runs per input (median)")
    args = parser.parse_args()
    import datasets

    datasets.disable_progress_bars()
    documents = make_documents(args.mb)
    total = sum(len(d.encode("utf-8")) for d in documents)
    print(f"{len(documents)} documents, {total / 1e6:.1f} MB, vocab {args.vocab_size}")
    with tempfile.TemporaryDirectory() as tmp:
        jsonl = Path(tmp) / "docs.jsonl"
        jsonl.write_text("".join(json.dumps({"text": d}) + "\n" for d in documents), "utf-8")
        plain = Path(tmp) / "docs.txt"
        plain.write_text("\n".join(documents), "utf-8")
        dataset = datasets.Dataset.from_dict({"text": documents})
        kinds: dict[str, Callable[[], object]] = {
            "JSONL file": lambda: jsonl,
            "text file": lambda: plain,
            "list of str": lambda: documents,
            "batches of str": lambda: (
                documents[i : i + 1000] for i in range(0, len(documents), 1000)
            ),
            "Dataset": lambda: dataset,
            "IterableDataset": lambda: dataset.to_iterable_dataset(),
        }
        workbench.train(documents[:200], 300, progress=False)  # compiles: not timed
        print(
            f"{'input':<16} {'wall s':>7} {'count s':>8} {'CPU s':>7} {'× text':>7} {'× JSONL':>8}"
        )
        walls: dict[str, float] = {}
        merges = None
        for name, make in kinds.items():
            figures, result = timed(make, args.vocab_size, args.runs)
            wall, counting, cpu = (statistics.median(f[i] for f in figures) for i in range(3))
            walls[name] = wall
            merges = result.merges if merges is None else merges  # the JSONL file's, first
            same = ""
            if name not in ("JSONL file", "text file"):
                same = "" if result.merges == merges else "  MERGES DIFFER"
            to_text = wall / walls.get("text file", wall)  # the JSONL file runs first
            to_jsonl = wall / walls["JSONL file"]
            print(
                f"{name:<16} {wall:7.2f} {counting:8.2f} {cpu:7.2f} {to_text:7.2f}"
                f" {to_jsonl:8.2f}{same}"
            )
        print(f"{len(merges)} merges, stopped: {result.stop_reason.words}")
        # one large document: cut at safe points as a file is, so still counted on every core
        big = "\n".join(documents[: len(documents) // 3])
        (Path(tmp) / "big.txt").write_text(big, "utf-8")
        file_wall = None
        for name, make in (
            (f"{len(big) / 1e6:.0f} MB text file", lambda: Path(tmp) / "big.txt"),
            (f"one {len(big) / 1e6:.0f} MB string", lambda: [big]),
        ):
            figures, result = timed(make, args.vocab_size, args.runs)
            wall, counting, cpu = (statistics.median(f[i] for f in figures) for i in range(3))
            file_wall = file_wall or wall
            ratio = wall / file_wall
            print(f"{name:<16} {wall:7.2f} {counting:8.2f} {cpu:7.2f} {ratio:7.2f}")


if __name__ == "__main__":
    main()
