"""Loading and exporting tokenizers whose tokens are long runs of one byte (16 KB, 256 KB, 1 MB).

Such tokens come from minified files, base64 blobs and `=====` rulers. The tokenizer here is
the one BPE learns from a long run of `a`: `a+a`, `aa+aa`, ... doubling up to the given length,
plus the single-step tokens `a^k + a` up to 63 bytes. Every format is exported, then loaded back
(the loader rebuilds its lookup tables; that was quadratic in token length: 56 s for 256 KB),
then one long text is encoded. Times should grow about linearly with the token length.

    python benchmarks/long_tokens.py [--sizes 16384,262144,1048576]
"""

from __future__ import annotations

import argparse
import tempfile
import time
from pathlib import Path

from workbench.engine.encode.tokenizer import Tokenizer

from workbench.engine import formats


def run_tokenizer(length: int) -> Tokenizer:
    merges = [(b"a" * k, b"a") for k in range(1, 63)]
    token = b"a" * 64
    merges.append((b"a" * 32, b"a" * 32))
    while len(token) * 2 <= length:
        merges.append((token, token))
        token += token
    unique = list(dict.fromkeys(merges))
    return Tokenizer.from_merges(unique, "gpt2")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="16384,262144,1048576")
    args = parser.parse_args()
    sizes = [int(s) for s in args.sizes.split(",")]
    Tokenizer.from_merges([(b"a", b"a")], "gpt2").encode("aaaa")  # compile outside the timing
    print(f"{'token':>9} {'format':<9} {'export s':>9} {'load s':>8} {'encode s':>9}")
    with tempfile.TemporaryDirectory() as tmp:
        for size in sizes:
            tok = run_tokenizer(size)
            text = "a" * size
            for fmt in formats.FORMATS:
                out = Path(tmp) / f"{fmt}-{size}"
                t0 = time.perf_counter()
                formats.export(tok, fmt, out)
                t1 = time.perf_counter()
                back = formats.load(out)
                t2 = time.perf_counter()
                ids = back.encode(text)
                t3 = time.perf_counter()
                # tiktoken files list no merges: the vocabulary and the ids must survive.
                assert back.vocab == tok.vocab and back.decode(ids) == text, fmt
                print(
                    f"{size:>9,} {fmt:<9} {t1 - t0:>9.3f} {t2 - t1:>8.3f} {t3 - t2:>9.3f}",
                    flush=True,
                )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
