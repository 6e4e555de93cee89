r"""A hand-written pre-tokenizer ("scanner") for the three preset patterns, over UTF-8 bytes.

It splits exactly like `regex.findall(pattern, text)` for `gpt2`, `cl100k` and `o200k` with code
points classified as Unicode 16.0 does (tiktoken's version: `unicode_classes`), over ten
times faster than the regex engine (see benchmarks/scanner.py), and counts pieces without making
a Python object per piece. It is single-threaded; kernels release the GIL.
It also counts SuperBPE's stage-2 pieces (`patterns.superbpe.STAGE2_PATTERN`; `can_count`).
Custom patterns are not handled here: `can_scan` says when the scanner may stand in for `regex`.

How the regex semantics map onto the code (each alternative is tried in pattern order at the
current position, as `regex` does; the first that matches wins, not the longest):

- `\s+(?!\S)`: take the whole whitespace run; if a non-space follows and the run has two or more
  characters, give the last one back (it becomes the ` ?` prefix of the next piece); a run of one
  character falls through to `\s+`. At the end of the text the whole run is one piece.
- `\s*[\r\n]+`: the run up to and including its last `\r`/`\n` (backtracking of `\s*`).
- o200k's `[Up]*[Lo]+` (Lm, Lo and M are in both classes): the greedy upper run, then the last
  lower-class character at or before its end (backtracking); `[Up]+[Lo]*` only when that fails.
- Contractions use case-insensitive letter tables (`'ſ` matches `'s`), generated with the classes.

Invalid UTF-8 (the corpus reader rejects it, but kernels must never crash or loop): a byte that
does not start a well-formed sequence is one character, U+DC00 + byte, of class "other" -- exactly
what `bytes.decode("utf-8", "surrogateescape")` produces, so the pieces equal `regex.findall` on
that decoding. Every byte is covered and each step advances at least one byte.

The modules: `byte_classes` (classifying bytes), `rules` (the presets' rules piece by piece),
`windows` (piece starts 32 bytes at a time, `scan_starts`), `table` (counting pieces in a hash
table), `entry` (per-preset entry kernels and the Python calls, re-exported here); the LLVM IR
built by hand is in `workbench.engine._native` (`scan_layout`, `scan_ir`, `window_ir`).
`count` (counting a corpus with the scanner) and `fold` (merging count tables) sit on top and are
imported from their own modules, not from here.
"""

from workbench.engine.pretokenize.scan.byte_classes import classify
from workbench.engine.pretokenize.scan.entry import (
    KERNEL_SOURCES,
    PRESETS_SCANNABLE,
    BytesLike,
    can_count,
    can_scan,
    count_pieces,
    count_pieces_arrays,
    counting_kernels,
    kernel_tables,
    merge_count_tables,
    piece_bounds,
    pieces,
    preset_code,
)
from workbench.engine.pretokenize.scan.table import piece_hash
from workbench.engine.pretokenize.scan.windows import scan_starts

__all__ = [
    "KERNEL_SOURCES",
    "PRESETS_SCANNABLE",
    "BytesLike",
    "can_count",
    "can_scan",
    "classify",
    "count_pieces",
    "count_pieces_arrays",
    "counting_kernels",
    "kernel_tables",
    "merge_count_tables",
    "piece_bounds",
    "piece_hash",
    "pieces",
    "preset_code",
    "scan_starts",
]
