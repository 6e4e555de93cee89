"""Single-thread encode throughput: our encoder vs tiktoken (and Hugging Face) on GPT-2 ranks.

`bench_encode(text_path)` repeats the text to about `repeat_to_mb` MB, encodes the whole text
with each encoder three times and reports the median MB/s (bytes of UTF-8 per second). All three
get the same GPT-2 vocabulary, from `../shared/corpora` unless `gpt2_dir` says otherwise; the
tiktoken and Hugging Face encoders are built from our own exports, so nothing is downloaded.
"""

from __future__ import annotations

import os
import statistics
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from workbench.engine import formats

DEFAULT_GPT2 = Path(__file__).resolve().parents[3] / "shared" / "corpora" / "gpt2_vocab.json"


def _median_rate(encode: Callable[[str], object], text: str, runs: int = 3) -> float:
    size = len(text.encode("utf-8")) / 1e6
    times = []
    for _ in range(runs):
        start = time.perf_counter()
        encode(text)
        times.append(time.perf_counter() - start)
    return size / statistics.median(times)


def bench_encode(
    text_path: str | Path, repeat_to_mb: float = 40, gpt2_dir: str | Path | None = None
) -> dict:
    """{"mb": size, "ours": MB/s, "tiktoken": MB/s, "hf": MB/s, "same_ids": bool}.

    A library that is not installed is left out of the result.
    """
    os.environ.setdefault("RAYON_NUM_THREADS", "1")  # HF tokenizers: one thread, as the others
    text = Path(text_path).read_text(encoding="utf-8")
    if not text:
        raise ValueError(f"{text_path} is empty")
    size = len(text.encode("utf-8"))
    text = text * max(1, round(repeat_to_mb * 1e6 / size))
    tokenizer = formats.load(gpt2_dir or DEFAULT_GPT2)
    tokenizer.encode(text[:10000])  # compile / warm up outside the timing
    result: dict = {"mb": round(len(text.encode("utf-8")) / 1e6, 1)}
    result["ours"] = _median_rate(tokenizer.encode, text)
    ours = tokenizer.encode(text[:200000])
    same = True
    with tempfile.TemporaryDirectory() as folder:
        try:
            import tiktoken
            import tiktoken.load

            formats.export(tokenizer, "tiktoken", folder)
            ranks = tiktoken.load.load_tiktoken_bpe(str(Path(folder) / "tokenizer.tiktoken"))
            enc = tiktoken.Encoding(
                "bench", pat_str=tokenizer.pattern, mergeable_ranks=ranks, special_tokens={}
            )
            result["tiktoken"] = _median_rate(enc.encode_ordinary, text)
            same &= enc.encode_ordinary(text[:200000]) == ours
        except ImportError:
            pass
        try:
            import tokenizers

            formats.export(tokenizer, "hf", folder)
            hf = tokenizers.Tokenizer.from_file(str(Path(folder) / "tokenizer.json"))
            result["hf"] = _median_rate(lambda t: hf.encode(t, add_special_tokens=False), text)
            same &= hf.encode(text[:200000]).ids == ours
        except ImportError:
            pass
    result["same_ids"] = same
    return result
