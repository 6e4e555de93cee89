"""The vocabulary-size planner: what serving a model costs per byte of text at each prefix k.

A bigger vocabulary packs more bytes into a token (fewer tokens to run the model on) but makes
every token dearer (a wider output layer). With Kaplan et al. (2020, "Scaling Laws for Neural
Language Models", Table 1) forward FLOPs per token, plus the output layer they count apart:

    N                 = 12 · L · d²            (non-embedding parameters, d_attn = d, d_ff = 4d;
                                                or the count given)
    FLOPs per token   = 2·N + 2·L·ctx·d + 2·d·V (weights, attention over the context, output layer;
                                                the input embedding is a lookup: free)
    FLOPs per byte    = FLOPs per token / (bytes per token of the held-out text at k)
    parameters        = N + V·d·(1 if tied else 2)

with d the model width, L the layers, ctx the context length in tokens and V = 256 + k + the
specials (the vocabulary at k). Tying input and output embeddings changes the parameters, not
the FLOPs. What it leaves out: training cost, memory bandwidth (decoding is often bound by it),
the softmax itself, and that a model with a bigger vocabulary may need fewer or more
parameters for the same loss; it prices serving a fixed model on the text given.

Bytes per token come at every k exactly from `prefix_counts.tokens_at_every_k` (one BPE run per
distinct piece of the text, noting the rank of each join), so the cheapest k is the true
argmin (`plan_every_k`). A tokenizer with a custom pre-tokenizer (a `Splitter` callable) falls
back to encoding the text with `prefix(k)` for k on a grid (`grid`: log-spaced for the small k
where compression moves fast, evenly spaced for the rest) and narrowing the grid's cheapest k by
ternary search between its neighbours (`refine`, which assumes one dip there).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass

import numpy as np

from workbench.engine.encode.tokenizer import Tokenizer
from workbench.engine.errors import CancelledError, ConfigError

Measure = Callable[[Tokenizer], float]  # bytes per token on the held-out text
FORMULA = (
    "FLOPs/token = 2·N + 2·L·ctx·d + 2·d·V (Kaplan et al. 2020, Table 1, with the output layer);"
    " FLOPs/byte = FLOPs/token ÷ bytes/token; parameters = N + V·d·(1 if tied else 2);"
    " N = 12·L·d² unless given"
)


@dataclass(frozen=True)
class ServingModel:
    """The model served: width d, layers L, context ctx (tokens), tied embeddings, and its
    non-embedding parameter count N when known (else 12·L·d²)."""

    width: int = 768
    layers: int = 12
    context: int = 1024
    tied: bool = False
    non_embedding: int | None = None

    def __post_init__(self) -> None:
        for name in ("width", "layers", "context"):
            if getattr(self, name) < 1:
                raise ConfigError(f"--{name} must be at least 1, not {getattr(self, name)}")
        if self.non_embedding is not None and self.non_embedding < 1:
            raise ConfigError(f"--params must be at least 1, not {self.non_embedding}")

    @property
    def n(self) -> int:
        """Non-embedding parameters: 12·L·d² (GPT-2 small: 12·12·768² = 84,934,656)."""
        if self.non_embedding is not None:
            return self.non_embedding
        return 12 * self.layers * self.width**2

    def flops_per_token(self, vocab: int) -> int:
        """2·N + 2·L·ctx·d + 2·d·V: `ServingModel(4, 1, 8).flops_per_token(10)` = 2·192 + 64 + 80."""
        return 2 * self.n + 2 * self.layers * self.context * self.width + 2 * self.width * vocab

    def parameters(self, vocab: int) -> int:
        return self.n + vocab * self.width * (1 if self.tied else 2)

    def to_json(self) -> dict:
        return {**asdict(self), "n": self.n, "formula": FORMULA}


def layers_for(non_embedding: int, width: int) -> int:
    """The L that 12·L·d² = N implies, at least 1 (`--params` without `--layers`)."""
    return max(1, round(non_embedding / (12 * width * width)))


def grid(merges: int, points: int = 48) -> list[int]:
    """About `points` distinct k in 0..merges: half log-spaced, half evenly spaced, both ends.

    `grid(100, 6) -> [0, 9, 50, 100]` (the two halves share their ends).
    """
    if merges <= 0:
        return [0]
    half = max(2, points // 2)
    logs = np.expm1(np.linspace(0.0, np.log1p(merges), half))
    lines = np.linspace(0, merges, half)
    return sorted({int(round(v)) for v in (*logs, *lines)} | {0, merges})


@dataclass
class Point:
    k: int
    vocab_size: int
    bytes_per_token: float
    flops_per_token: int
    parameters: int

    @property
    def flops_per_byte(self) -> float:
        return self.flops_per_token / self.bytes_per_token if self.bytes_per_token else float("inf")

    def to_json(self) -> dict:
        per_byte = self.flops_per_byte
        return {**asdict(self), "flops_per_byte": per_byte if per_byte != float("inf") else None}


class Curve:
    """Points of one tokenizer, measured once per k."""

    def __init__(self, tok: Tokenizer, model: ServingModel, measure: Measure) -> None:
        self.tok, self.model, self.measure = tok, model, measure
        self.points: dict[int, Point] = {}

    def at(self, k: int) -> Point:
        if k not in self.points:
            prefix = self.tok.prefix(k)
            vocab = prefix.vocab_size
            self.points[k] = Point(
                k,
                vocab,
                self.measure(prefix),
                self.model.flops_per_token(vocab),
                self.model.parameters(vocab),
            )
        return self.points[k]

    def best(self) -> Point:
        return min(self.points.values(), key=lambda p: (p.flops_per_byte, p.k))


def refine(curve: Curve, ks: Sequence[int], cancelled: Callable[[], bool]) -> None:
    """Narrow the cheapest grid k between its neighbours by ternary search on integers."""
    best = min(range(len(ks)), key=lambda i: (curve.at(ks[i]).flops_per_byte, ks[i]))
    low, high = ks[max(0, best - 1)], ks[min(len(ks) - 1, best + 1)]
    while high - low > 2:
        if cancelled():
            raise CancelledError("planning cancelled")
        m1 = low + (high - low) // 3
        m2 = high - (high - low) // 3
        if curve.at(m1).flops_per_byte <= curve.at(m2).flops_per_byte:
            high = m2
        else:
            low = m1
    for k in range(low, high + 1):
        curve.at(k)


def plan_tokenizer(
    tok: Tokenizer,
    model: ServingModel,
    measure: Measure,
    points: int = 48,
    cancelled: Callable[[], bool] = lambda: False,
) -> dict:
    """The grid and refined points of `tok` (JSON-ready), its cheapest k, and whether that is its
    last merge (then more merges might be cheaper still)."""
    curve = Curve(tok, model, measure)
    ks = grid(len(tok.merges), points)
    for k in ks:
        if cancelled():
            raise CancelledError("planning cancelled")
        curve.at(k)
    refine(curve, ks, cancelled)
    rows = [curve.points[k] for k in sorted(curve.points)]
    best = curve.best()
    return {
        "points": [p.to_json() for p in rows],
        "grid": ks,
        "best": best.to_json(),
        "best_is_last": best.k == len(tok.merges),
        "method": "grid",
    }


def vocab_sizes(tok: Tokenizer) -> np.ndarray:
    """`out[k]` = `tok.prefix(k).vocab_size` for k = 0..merges: the bytes (and any token no merge
    makes), the tokens the first k merges make (two merges making one token count once), the
    specials."""
    merges = len(tok.merges)
    ranks = np.array([tok.token_rank(tid) for tid in tok.vocab], dtype=np.int64)
    made = np.bincount(ranks[ranks >= 0], minlength=merges)
    before = np.concatenate(([0], np.cumsum(made)))[: merges + 1]
    return int(np.count_nonzero(ranks < 0)) + before + len(tok.special_tokens)


def plan_every_k(
    tok: Tokenizer, model: ServingModel, tokens: np.ndarray, total_bytes: int, points: int = 48
) -> dict:
    """The plan from exact token counts at every k (`prefix_counts.tokens_at_every_k`): the
    cheapest k over all of them; the points kept are the grid's and the cheapest."""
    vocab = vocab_sizes(tok)
    n_fixed = 2 * model.n + 2 * model.layers * model.context * model.width
    flops = n_fixed + 2 * model.width * vocab
    safe = np.maximum(tokens, 1)
    per_byte = flops * safe / total_bytes if total_bytes else np.full(len(vocab), np.inf)
    best = int(np.argmin(per_byte))  # the first of equals: the smaller vocabulary
    ks = sorted(set(grid(len(tok.merges), points)) | {best})

    def point(k: int) -> Point:
        bpt = total_bytes / int(tokens[k]) if tokens[k] else 0.0
        return Point(k, int(vocab[k]), bpt, int(flops[k]), model.parameters(int(vocab[k])))

    return {
        "points": [point(k).to_json() for k in ks],
        "grid": ks,
        "best": point(best).to_json(),
        "best_is_last": best == len(tok.merges),
        "method": "every k",
    }


def plan_whole(tok: Tokenizer, model: ServingModel, measure: Measure) -> dict:
    """One point: `tok` at its full vocabulary (a reference to compare with)."""
    point = Curve(tok, model, measure).at(len(tok.merges)).to_json()
    return {
        "points": [point],
        "grid": [point["k"]],
        "best": point,
        "best_is_last": True,
        "method": "whole",
    }


def cheapest(plans: Sequence[dict]) -> int | None:
    """Index of the plan whose best point costs least per byte."""
    if not plans:
        return None
    inf = float("inf")
    return min(range(len(plans)), key=lambda i: plans[i]["best"]["flops_per_byte"] or inf)
