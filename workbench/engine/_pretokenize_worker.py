"""The work a pre-tokenizing process does: count the pieces of a batch of segments.

Kept apart and light (regex and numpy, no Numba) so that spawned worker processes start fast.
Patterns are compiled by `patterns.compile_pattern`, so they match with Unicode 16.0 classes.
"""

from __future__ import annotations

from collections import Counter

from workbench.engine.patterns import PinnedPattern, compile_pattern

_compiled: dict[str, PinnedPattern] = {}


def count_segments(pattern: str, segments: list[str]) -> Counter[str]:
    """Counter of `regex.findall(pattern, s)` pieces over all segments."""
    compiled = _compiled.get(pattern)
    if compiled is None:
        compiled = _compiled[pattern] = compile_pattern(pattern)
    counts: Counter[str] = Counter()
    for segment in segments:
        counts.update(compiled.findall(segment))
    return counts


def run_task(task: tuple) -> tuple:
    """(key, action, pattern, segments) -> (key, action, counts): actions pass through, in order."""
    key, action, pattern, segments = task
    return key, action, count_segments(pattern, segments) if segments else Counter()
