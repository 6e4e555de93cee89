"""Counts and the figures that follow from them, per tokenizer and per group of documents.

Everything here is arithmetic on counts, so every ratio in a report can be checked by hand:
`bytes_per_token = bytes / tokens`, `tokens_per_word = tokens / words` (fertility; words are
whitespace-separated), `vocab_used = distinct ids emitted / vocab_size`, and per group
`ratio_to_best = tokens / fewest tokens any tokenizer needed for that group`.

Rényi efficiency (Zouhar et al., 2023): `H_a(p) / log |V|` with `H_a = log(sum p_i^a) / (1 - a)`,
`p` the share of each token among the tokens emitted, `a = 2.5`. Caveat: it rewards a balanced
use of the vocabulary, was fitted to one translation task, and later work found tokenizers it
ranks wrongly; read it beside compression, never instead of it.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np

RENYI_ALPHA = 2.5


@dataclass
class TextCounts:
    """What a group of documents holds, whatever the tokenizer."""

    documents: int = 0
    bytes: int = 0
    chars: int = 0
    words: int = 0

    def add(self, text: str) -> None:
        self.documents += 1
        self.bytes += len(text.encode("utf-8", "surrogatepass"))
        self.chars += len(text)
        self.words += len(text.split())


@dataclass
class TokenTally:
    """Tokens one tokenizer emitted on one group: how many, and how often each id."""

    id_space: int
    tokens: int = 0
    emitted: np.ndarray = field(init=False)

    def __post_init__(self) -> None:
        self.emitted = np.zeros(self.id_space, dtype=np.int64)

    def add(self, tokens: int, counts: np.ndarray) -> None:
        """Add `tokens` tokens whose ids were counted into `counts` (a bincount)."""
        self.tokens += tokens
        self.emitted += counts[: self.id_space]


def renyi_efficiency(emitted: np.ndarray, vocab_size: int, alpha: float = RENYI_ALPHA):
    """`H_alpha(p) / log(vocab_size)` of the emitted-token distribution (None without tokens).

    Every id used equally often over the whole vocabulary gives 1.0; one id alone gives 0.0.
    """
    total = int(emitted.sum())
    if total == 0 or vocab_size < 2:
        return None
    p = emitted[emitted > 0] / total
    entropy = np.log(np.sum(p**alpha)) / (1.0 - alpha)
    return float(entropy / np.log(vocab_size))


def _ratio(a: int | float, b: int | float) -> float | None:
    return a / b if b else None


def group_figures(
    name: str, text: TextCounts, tally: TokenTally, vocab_size: int
) -> dict[str, object]:
    """The row of one tokenizer on one group (JSON-ready; a ratio over zero is None)."""
    used = int(np.count_nonzero(tally.emitted))
    return {
        "name": name,
        "documents": text.documents,
        "bytes": text.bytes,
        "chars": text.chars,
        "words": text.words,
        "tokens": tally.tokens,
        "bytes_per_token": _ratio(text.bytes, tally.tokens),
        "chars_per_token": _ratio(text.chars, tally.tokens),
        "tokens_per_word": _ratio(tally.tokens, text.words),
        "tokens_per_byte": _ratio(tally.tokens, text.bytes),
        "renyi_2_5": renyi_efficiency(tally.emitted, vocab_size),
        "distinct_tokens": used,
        "vocab_used": _ratio(used, vocab_size),
    }


def gini(values: Sequence[float]) -> float | None:
    """Gini coefficient: 0 when all are equal, towards 1 when one holds everything.

    `gini([1, 1]) -> 0.0`, `gini([0, 1]) -> 0.5` (mean absolute difference / twice the mean).
    """
    x = np.sort(np.asarray(values, dtype=np.float64))
    if x.size == 0 or x.sum() == 0:
        return None
    # sum over pairs of |xi - xj| from the sorted values in O(n log n), not an n x n matrix
    n = x.size
    weights = 2 * np.arange(1, n + 1) - n - 1
    return float(np.sum(weights * x) / (n * x.sum()))


def parity(groups: list[dict[str, object]]) -> dict[str, object]:
    """How evenly one tokenizer treats the groups: tokens per byte, max over min, and Gini."""
    per_byte = [g["tokens_per_byte"] for g in groups if g["tokens_per_byte"]]
    if len(per_byte) < 2:
        return {"groups": len(per_byte), "max_over_min": None, "gini": None}
    worst = max(range(len(groups)), key=lambda i: groups[i]["tokens_per_byte"] or 0)
    best = min(range(len(groups)), key=lambda i: groups[i]["tokens_per_byte"] or float("inf"))
    return {
        "groups": len(per_byte),
        "max_over_min": max(per_byte) / min(per_byte),
        "gini": gini(per_byte),
        "costliest_group": groups[worst]["name"],
        "cheapest_group": groups[best]["name"],
    }


def mark_ratio_to_best(tokenizers: list[dict[str, object]]) -> None:
    """Set each group's `ratio_to_best`: its tokens over the fewest any tokenizer needed."""
    names = [g["name"] for g in tokenizers[0]["groups"]] if tokenizers else []
    for i, name in enumerate(names):
        fewest = min(t["groups"][i]["tokens"] for t in tokenizers)
        for t in tokenizers:
            t["groups"][i]["ratio_to_best"] = _ratio(t["groups"][i]["tokens"], fewest)
            assert t["groups"][i]["name"] == name
    if tokenizers:
        fewest = min(t["total"]["tokens"] for t in tokenizers)
        for t in tokenizers:
            t["total"]["ratio_to_best"] = _ratio(t["total"]["tokens"], fewest)
