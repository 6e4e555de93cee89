"""Hand-run benchmark: the fused kernel's cost per piece on a warm cache (every piece a hit),
beyond the scan, on texts of different shapes, to tell the hit path's own cost from what real
text adds (pieces of many lengths, pieces of several ids, a cache of thousands of rows).

Thread CPU ms, median of `--runs`: "scan" the scanner alone (`encode_matrix_stages`' counting
kernel), "kernel" the fused kernel's second call on the same instance, and their difference per
piece. Shapes (0.5 M pieces each, GPT-2 pattern): one repeated piece; 64 single-token words of 4
bytes, of 3-8 and of 3-12 bytes, in random order; 64 words of 4 random letters (mostly 2-3 ids);
1,500 single-token words; and each `--text` as it is (English docs by default).

Run `python benchmarks/encode_shapes.py [--ranks gpt2] [--text en-2] [--data DIR] [--runs 9]`.
"""

from __future__ import annotations

import argparse
import random
import re
import statistics
import time

import numpy as np
from _texts import add_text_options, chosen_texts
from encode_matrix import tokenizers
from encode_matrix_stages import _COUNT, _KernelClock

from workbench.engine.pretokenize import scan as scanner

_PIECES = 500_000


def shapes(tok, seed: int = 1) -> dict[str, str]:
    """The synthetic texts, from `tok`'s own single-token words (a space and lowercase letters)."""
    rng = random.Random(seed)
    words = [tok.decode([i]) for i in range(300, min(20_000, len(tok.vocab)))]
    single = [w for w in words if re.fullmatch(r" [a-z]+", w)]

    def pick(lengths: range | list[int], k: int) -> list[str]:
        pool = [w for w in single if len(w) in lengths]
        return rng.sample(pool, min(k, len(pool)))

    def text(words: list[str]) -> str:
        return "".join(rng.choice(words) for _ in range(_PIECES))

    letters = "abcdefghijklmnop"
    random4 = [" " + "".join(rng.choice(letters) for _ in range(3)) for _ in range(64)]
    return {
        "one piece": " the" * _PIECES,
        "64 one-token words, 4 bytes": text(pick([4], 64)),
        "64 one-token words, 3-8 bytes": text(pick(range(3, 9), 64)),
        "64 one-token words, 3-12 bytes": text(pick(range(3, 13), 64)),
        "64 random 4-byte words": text(random4),
        "1,500 one-token words, 4-5 bytes": text(pick([4, 5], 1_500)),
    }


def per_piece(tok, code: int, text: str, runs: int) -> tuple[int, float, float]:
    """(pieces, scan ms, warm kernel ms) of `text`."""
    flags, fold_cps, fold_letters = scanner.kernel_tables()
    data = np.frombuffer(text.encode("utf-8"), dtype=np.uint8)
    fresh = tok.with_splitter("auto")  # its own piece cache
    fresh.encode_array(text)  # fills the cache: every later piece a hit
    scans, kernels, pieces = [], [], 0
    for _ in range(runs):
        start = time.thread_time()
        pieces = _COUNT[code](data, flags, fold_cps, fold_letters)
        scans.append(time.thread_time() - start)
        with _KernelClock() as kernel:
            fresh.encode_array(text)
        kernels.append(kernel.seconds)
    return pieces, statistics.median(scans) * 1e3, statistics.median(kernels) * 1e3


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    add_text_options(parser, mb=2.0)
    parser.add_argument("--ranks", nargs="+", default=["gpt2"])
    parser.add_argument("--runs", type=int, default=9)
    args = parser.parse_args()
    if not args.text:
        args.text = ["en-2"]
    texts = chosen_texts(args)
    built = tokenizers()
    print(f"{'ranks x text':42}{'pieces':>9}{'scan ms':>9}{'kernel ms':>10}{'ns/piece':>10}")
    for name in args.ranks:
        tok = built[name][0]
        code = tok._scan_code
        _COUNT[code](np.zeros(100, dtype=np.uint8), *scanner.kernel_tables())  # compiled first
        for label, text in {**shapes(tok), **texts}.items():
            pieces, scan_ms, kernel_ms = per_piece(tok, code, text, args.runs)
            beyond = (kernel_ms - scan_ms) / pieces * 1e6
            print(
                f"{name + ' x ' + label:42}{pieces:9d}{scan_ms:9.2f}{kernel_ms:10.2f}{beyond:10.2f}"
            )


if __name__ == "__main__":
    main()
