"""SuperBPE's stage-2 rules (Liu et al., 2025, arXiv 2503.13423; github.com/PythonNut/superbpe).

Stage 1 is ordinary BPE with the run's pattern up to the transition point. Stage 2 counts the
corpus again with pre-tokenization relaxed, so merges may cross spaces ("superwords"), and goes
on from stage 1's merges. What stage 2 still splits on is taken from the authors' code, not
guessed:

- Their stage-2 scripts (`scripts/extend_tokenizer.sh`) split with the regex
  `\\p{N}{1,3}| ?[^\\s\\p{L}\\p{N}]{2,}[\\r\\n/]*| +(?!\\S)` in Hugging Face's `Split(...,
  behavior="isolated")`: each match is a piece and so is each stretch of text between matches.
  So digit groups (1-3 digits), runs of two or more punctuation marks and runs of spaces before
  whitespace stay pieces of their own; a single `.` or `,` does not split.
- Hugging Face trains from files line by line, each line keeping its `\\n`
  (`tokenizers/src/utils/iter.rs`, `lines_with_ending`), so a piece never runs past a newline.
- Their trainer fork (alisawuffles/tokenizers-superbpe, commit a27d8bf, "limit to 4-word
  tokens and special case colon") skips any stage-2 merge whose token contains `": "` or has
  more than 4 words (pieces between spaces).

`STAGE2_PATTERN` is that split written for `regex.findall` (which keeps only matches): the
stretches between matches become a third alternative, cut at each line's `\\n`.
"""

from __future__ import annotations

import regex

# The authors' isolated-split regex, with `[\r\n/]*` limited to one `\n` (a line ends there).
_SPLIT = r"\p{N}{1,3}| ?[^\s\p{L}\p{N}]{2,}[\r/]*\n?| +(?!\S)"
STAGE2_PATTERN = rf"{_SPLIT}|(?:(?!{_SPLIT})[^\n])+\n?|\n"

# Where a long document may be cut for stage-2 counting (a reverse regex: after a newline).
AFTER_NEWLINE = regex.compile(r"(?r)\n")

MAX_WORDS = 4  # words (runs of non-space bytes) a stage-2 token may hold
FORBIDDEN = b": "  # no stage-2 token may contain it

# The memory bound of stage 2 (see `pretokenize.stage_two`): stage-2 pieces are whole lines or
# long parts of them, mostly unique, and counting's and the trainer's memory grow with their
# distinct bytes. Counting admits new distinct pieces while their bytes fit in this many, keeps
# counting the admitted ones, and reports what it left out (occurrences and bytes). 100 MB of
# English (Debian docs) has 46 MB of distinct stage-2 pieces, so nothing is dropped there.
MAX_DISTINCT_BYTES = 200_000_000


def word_count(token: bytes) -> int:
    """Runs of non-space bytes: how the fork counts a token's words (split on space)."""
    return sum(1 for part in token.split(b" ") if part)


def stage2_allows(token: bytes) -> bool:
    """Whether stage 2 may make `token` (the fork's two rules)."""
    return FORBIDDEN not in token and word_count(token) <= MAX_WORDS


def is_superword(token: bytes) -> bool:
    """A token that bridges a space (two or more words: ` the` and `the ` are one word). The
    window and the reports mark these."""
    return word_count(token) > 1
