"""The work a pre-tokenizing process does: count the pieces of a batch of segments.

Kept apart and light (regex and numpy, no Numba) so that spawned worker processes start fast.
Patterns are compiled by `patterns.compile_pattern`, so they match with Unicode 16.0 classes.
"""

from __future__ import annotations

from collections import Counter

from workbench.engine.errors import PatternError
from workbench.engine.patterns.regexes import (
    GAP_ADVICE,
    PinnedPattern,
    compile_pattern,
    first_gap,
    preset_name,
)

# A pattern gets this long on a stretch of text before it is judged too slow (catastrophic
# backtracking, as `(a|aa)+$` on a run of a's): a floor, plus an allowance per character so a
# long document of a merely slow pattern still passes (1 MB/s is far below any sane pattern).
TIMEOUT_SECONDS = 10.0
TIMEOUT_SECONDS_PER_CHAR = 1e-6
# The `regex` engine checks the clock as it goes when given a timeout, which triples the cost
# of matching (0.58 -> 1.77 CPU s on 5 MB with gpt2's pattern). The presets run in linear time
# (no nested quantifiers; 200,000 characters of their worst runs take under 0.03 s), so they
# go without it: a first use counts a large corpus with `regex` while the scanner compiles.

_compiled: dict[str, PinnedPattern] = {}


def count_segments(
    pattern: str, segments: list[str], sources: list[str] | None = None
) -> Counter[str]:
    """Counter of `regex.findall(pattern, s)` pieces over all segments.

    A segment the pattern takes too long over raises PatternError naming the pattern, the file
    (`sources[i]`, when given) and the start of the text: the `regex` engine does not answer
    Ctrl-C while it backtracks, so without a time limit such a run would never end."""
    compiled = _compiled.get(pattern)
    if compiled is None:
        compiled = _compiled[pattern] = compile_pattern(pattern)
    counts: Counter[str] = Counter()
    guarded = preset_name(pattern) is None
    for i, segment in enumerate(segments):
        limit = TIMEOUT_SECONDS + TIMEOUT_SECONDS_PER_CHAR * len(segment)
        try:
            # whole matches, always
            pieces = compiled.findall(segment, timeout=limit if guarded else None)
        except TimeoutError:
            where = f" in {sources[i]}" if sources else ""
            raise PatternError(
                f"the pattern {pattern!r} took over {limit:.3g} s on {len(segment):,} characters"
                f"{where} (starting {segment[:30]!r}): it backtracks too much; simplify it"
            ) from None
        if sum(map(len, pieces)) != len(segment):
            _refuse_gap(pattern, compiled, segment, sources[i] if sources else None)
        counts.update(pieces)
    return counts


def _refuse_gap(pattern: str, compiled: PinnedPattern, segment: str, source: str | None) -> None:
    """Raise for a pattern that skips text of `segment` in context (it covered every character
    of `patterns.check_coverage`'s probe): counting would leave that text out of training, and
    the tokenizer could not encode it (`pieces.RegexSplitter` refuses such text)."""
    at = first_gap(compiled.finditer(segment), len(segment)) or 0  # the pieces fell short
    where = f" in {source}" if source else ""
    raise PatternError(
        f"the pattern {pattern[:60]!r} matches no piece{where} at {segment[at : at + 20]!r}"
        f": that text would be left out; {GAP_ADVICE}"
    )


def run_task(task: tuple) -> tuple:
    """(key, action, pattern, segments, sources) -> (key, action, counts): actions pass
    through, in order."""
    key, action, pattern, segments, sources = task
    counts = count_segments(pattern, segments, sources) if segments else Counter()
    return key, action, counts
