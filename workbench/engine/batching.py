"""Grouping many items (texts, documents) into runs of about a given size, for thread pools.

A task per short text costs the pool more than the text's encoding; runs of at least `target`
characters keep that cost small while leaving enough runs to balance threads.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import TypeVar

T = TypeVar("T")


def runs_of(items: Iterable[T], size: Callable[[T], int], target: int) -> list[list[T]]:
    """Consecutive items in runs whose sizes add up to at least `target` (the last may be less).

    `runs_of(["ab", "c", "de", "f"], len, 3) -> [["ab", "c"], ["de", "f"]]`
    """
    runs: list[list[T]] = [[]]
    total = 0
    for item in items:
        if total >= target:
            runs.append([])
            total = 0
        runs[-1].append(item)
        total += size(item)
    return runs
