"""Single-thread encode throughput: our encoder vs tiktoken, riptoken and Hugging Face.

`bench_encode(text_path)` repeats the text to about `repeat_to_mb` MB, encodes the whole text
with each encoder three times and reports the median MB/s (bytes of UTF-8 per second). All three
get the same vocabulary, from `tokenizer_path` (GPT-2's `vocab.json` + `merges.txt`, or any
tokenizer file the workbench loads); the
tiktoken and Hugging Face encoders are built from our own exports, so nothing is downloaded.
Our encoder runs with its default pre-tokenizer (the Numba scanner for the GPT-2 preset); the
ratios `ours/tiktoken` and `ours/hf` are throughput ratios (2.0 = twice as fast), and `same_ids`
compares the ids of the whole text.
"""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

import numpy as np

from workbench.bench import median_rate
from workbench.engine import formats
from workbench.engine.errors import WorkbenchError


def bench_encode(
    text_path: str | Path, tokenizer_path: str | Path, repeat_to_mb: float = 40
) -> dict:
    """{"mb", "splitter", "ours", "tiktoken", "riptoken", "hf", "ours/<peer>"..., "same_ids"}.

    MB/s are medians of three whole-text encodes (each returns a Python list, as tiktoken's
    does). A library that is not installed is left out of the result.
    """
    os.environ.setdefault("RAYON_NUM_THREADS", "1")  # HF tokenizers: one thread, as the others
    try:
        text = Path(text_path).read_text(encoding="utf-8")
    except OSError as exc:
        raise WorkbenchError(f"{text_path}: cannot read: {exc.strerror or exc}") from None
    except UnicodeDecodeError as exc:
        raise WorkbenchError(f"{text_path}: invalid UTF-8 at byte {exc.start}") from None
    if not text:
        raise WorkbenchError(f"{text_path}: is empty")
    size = len(text.encode("utf-8"))
    text = text * max(1, round(repeat_to_mb * 1e6 / size))
    tokenizer = formats.load(tokenizer_path)
    tokenizer.encode_ordinary(text[:10000])  # compile / warm up outside the timing
    result: dict = {"mb": round(len(text.encode("utf-8")) / 1e6, 1)}
    result["splitter"] = tokenizer.splitter
    # Timed like tiktoken's `encode_ordinary` (special-token text is plain text) and compared
    # with it; Hugging Face splits out the registered specials, so it is compared with "all".
    # A fresh tokenizer (same tables) per run: the piece cache one keeps between calls would
    # otherwise remember the text of the run before.
    result["ours"], ours = median_rate(
        lambda t: tokenizer.with_splitter("auto").encode_ordinary(t), text
    )
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
            result["tiktoken"], theirs = median_rate(enc.encode_ordinary, text)
            same &= np.array_equal(theirs, ours)
            del theirs
        except ImportError:
            pass
        try:
            import riptoken

            rip = riptoken.CoreBPE(ranks, {}, tokenizer.pattern)
            result["riptoken"], theirs = median_rate(rip.encode_ordinary, text)
            same &= np.array_equal(theirs, ours)
            del theirs
        except (ImportError, NameError):  # NameError: no tiktoken, so no ranks to give it
            pass
        try:
            import tokenizers

            formats.export(tokenizer, "hf", folder)
            hf = tokenizers.Tokenizer.from_file(str(Path(folder) / "tokenizer.json"))
            result["hf"], theirs = median_rate(
                lambda t: hf.encode(t, add_special_tokens=False).ids, text
            )
            same &= np.array_equal(theirs, tokenizer.encode_array(text, "all"))
            del theirs
        except ImportError:
            pass
    for peer in ("tiktoken", "riptoken", "hf"):
        if peer in result:
            result[f"ours/{peer}"] = result["ours"] / result[peer]
    result["same_ids"] = same
    return result
