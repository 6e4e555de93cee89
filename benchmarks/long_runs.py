"""Hand-run benchmark: long runs of one character train and encode in time proportional to size.

Run `python benchmarks/long_runs.py [--sizes 1,16,64] [--vocab 300,1000] [--char a]`. For each
size (MB) a file of one repeated character is counted (the corpus reader and scanner), indexed and
merged to each vocabulary size, and the text is encoded with the result; each stage prints seconds
and seconds per MB, so quadratic work shows as a seconds/MB column that grows with size. Writing
tokenizer files is left out (the formats' own concern). Run with a warm Numba cache.
"""

from __future__ import annotations

import argparse
import resource
import tempfile
import time
from pathlib import Path

from workbench.engine.config import TrainConfig
from workbench.engine.encode.tokenizer import Tokenizer
from workbench.engine.pretokenize.counting import count_corpus
from workbench.engine.train.trainer import BpeTrainer
from workbench.engine.warmup import warm_up


def train_stages(path: Path, vocab: int) -> tuple[list[tuple[str, float]], BpeTrainer]:
    """(stage, seconds) of counting, indexing and merging one file, and the trained trainer
    (`long_word.py` times the same stages)."""
    config = TrainConfig(vocab_size=vocab)
    times = []
    start = time.perf_counter()
    counted = count_corpus([path], config)
    times.append(("count", time.perf_counter() - start))
    start = time.perf_counter()
    trainer = BpeTrainer(counted.words, config)
    times.append(("index", time.perf_counter() - start))
    start = time.perf_counter()
    trainer.run()
    times.append(("merges", time.perf_counter() - start))
    return times, trainer


def stages(path: Path, text: str, vocab: int) -> list[tuple[str, float]]:
    """(stage, seconds) of counting, indexing, merging and encoding one run file."""
    times, trainer = train_stages(path, vocab)
    tokenizer = Tokenizer.from_merges(trainer.merge_pairs(), trainer.config.pattern_string)
    start = time.perf_counter()
    ids = tokenizer.encode(text)
    times.append(("encode", time.perf_counter() - start))
    assert tokenizer.decode(ids) == text
    return times


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--sizes", default="1,16,64", help="megabytes, comma-separated")
    parser.add_argument("--vocab", default="300,1000", help="vocabulary sizes, comma-separated")
    parser.add_argument("--char", default="a", help="the repeated character")
    args = parser.parse_args()
    warm_up("gpt2")
    print(f"{'MB':>4} {'vocab':>6} {'stage':10} {'seconds':>8} {'s/MB':>7}")
    with tempfile.TemporaryDirectory() as folder:
        for size in (int(s) for s in args.sizes.split(",")):
            path = Path(folder) / f"run{size}.txt"
            text = args.char * (size << 20)
            path.write_text(text, encoding="utf-8")
            megabytes = len(text.encode()) / (1 << 20)
            for vocab in (int(v) for v in args.vocab.split(",")):
                for stage, seconds in stages(path, text, vocab):
                    print(
                        f"{size:4d} {vocab:6d} {stage:10} {seconds:8.3f} {seconds / megabytes:7.3f}"
                    )
            path.unlink()
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(f"peak memory {peak:.0f} MB")


if __name__ == "__main__":
    main()
