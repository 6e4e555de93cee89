"""Compression curves: bytes per token on held-out text at the first k merges, for k on a
log-spaced grid, from `Tokenizer.prefix(k)` (the stored merges: no retraining).

Two readings of a curve, each found on the grid and then narrowed by bisection (compression
grows with k on real text; a bump in the curve can shift the answer by a few merges):
the smallest k within 1% of the final compression, and the k at which a run reaches a
reference's bytes per token (GPT-2's, say) on the same text.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np

from workbench.engine.encode.tokenizer import Tokenizer

Measure = Callable[[Tokenizer], float]


def log_grid(merges: int, points: int = 24) -> list[int]:
    """Distinct k from 0 to `merges`, spaced evenly in log(k + 1); both ends included.

    `log_grid(1000, 5) -> [0, 5, 31, 177, 1000]`.
    """
    if merges <= 0:
        return [0]
    raw = np.expm1(np.linspace(0.0, np.log1p(merges), max(2, points)))
    return sorted({int(round(v)) for v in raw} | {0, merges})


def bytes_per_token(tok: Tokenizer, texts: Sequence[str], total_bytes: int) -> float:
    tokens = sum(int(tok.encode_array(t, "all").shape[0]) for t in texts)
    return total_bytes / tokens if tokens else 0.0


def curve(
    tok: Tokenizer, grid: Sequence[int], measure: Measure, cancelled: Callable[[], bool]
) -> list[tuple[int, float]]:
    """(k, bytes per token of `tok.prefix(k)`) for each k of `grid`; stops early if cancelled."""
    points: list[tuple[int, float]] = []
    for k in grid:
        if cancelled():
            break
        points.append((k, measure(tok.prefix(k))))
    return points


def first_k_reaching(
    tok: Tokenizer, points: Sequence[tuple[int, float]], target: float, measure: Measure
) -> int | None:
    """The smallest k with bytes/token >= `target`: first grid point, then bisection below it."""
    above = next((i for i, (_, v) in enumerate(points) if v >= target), None)
    if above is None:
        return None
    if above == 0:
        return points[0][0]
    low, high = points[above - 1][0], points[above][0]  # measure(low) < target <= measure(high)
    while high - low > 1:
        mid = (low + high) // 2
        if measure(tok.prefix(mid)) >= target:
            high = mid
        else:
            low = mid
    return high


def within_of_final(
    tok: Tokenizer, points: Sequence[tuple[int, float]], measure: Measure, fraction: float = 0.01
) -> int | None:
    """The smallest k whose bytes/token is within `fraction` of the last point's."""
    if not points:
        return None
    return first_k_reaching(tok, points, points[-1][1] * (1 - fraction), measure)
