"""Test helpers: a slow, obviously correct BPE trainer and the GPT-2 reference encoders."""

from __future__ import annotations

import os
from collections import Counter
from pathlib import Path

import regex

from workbench.engine.patterns import GPT2

EXAMPLES = int(os.environ.get("HYPOTHESIS_EXAMPLES", "300"))


def naive_merges(text: str, num_merges: int, pattern: str = GPT2) -> list[tuple[bytes, bytes]]:
    """Plain BPE: count pairs within pieces, merge the most frequent (ties: greatest bytes)."""
    words = Counter(tuple(bytes([b]) for b in p.encode()) for p in regex.findall(pattern, text))
    merges: list[tuple[bytes, bytes]] = []
    for _ in range(num_merges):
        pairs: Counter = Counter()
        for word, count in words.items():
            for pair in zip(word, word[1:], strict=False):
                pairs[pair] += count
        if not pairs:
            break
        best = max(pairs, key=lambda p: (pairs[p], p))
        merges.append(best)
        merged: Counter = Counter()
        for word, count in words.items():
            out, i = [], 0
            while i < len(word):
                if i + 1 < len(word) and (word[i], word[i + 1]) == best:
                    out.append(word[i] + word[i + 1])
                    i += 2
                else:
                    out.append(word[i])
                    i += 1
            merged[tuple(out)] += count
        words = merged
    return merges


def gpt2_tiktoken(corpora: Path, tmp: Path):
    """tiktoken's Encoding from the GPT-2 files (merges.txt gets the header data_gym expects)."""
    import tiktoken
    import tiktoken.load

    merges = tmp / "merges_with_header.txt"
    merges.write_text("#version: 0.2\n" + (corpora / "gpt2_merges.txt").read_text("utf-8"), "utf-8")
    ranks = tiktoken.load.data_gym_to_mergeable_bpe_ranks(
        str(merges), str(corpora / "gpt2_vocab.json")
    )
    return tiktoken.Encoding(
        "gpt2-local", pat_str=GPT2, mergeable_ranks=ranks, special_tokens={"<|endoftext|>": 50256}
    )
