"""The numbers the scanner's kernels and its hand-built LLVM IR share: the bits of a class byte,
the ASCII bytes the patterns name, and the widths of the vector steps.

Class bits are frozen into the kernels as compile-time constants. They are repeated here (not
read from `pretokenize.unicode_classes` inside kernels) so that Numba's on-disk cache, keyed on
the scanner's files (see `cache_keys`), can never hold kernels built with other values;
`pretokenize.scan.byte_classes` checks them against the generated tables. No code runs here.
"""

from __future__ import annotations

import numpy as np

_L, _N, _S, _UP, _LO = 1, 2, 4, 8, 16
_CONT = 32  # a continuation byte of a well-formed multi-byte character
_NL = 64  # \r or \n (literal in the patterns, so not a regex class)
_LNS = _L | _N | _S  # a character with none of these is "other": [^\s\p{L}\p{N}]

_APOSTROPHE, _SPACE, _LF, _CR, _SLASH = 39, 32, 10, 13, 47

_STEP = 32  # bytes `classify` takes at once (one AVX2 register; two SSE2 ones elsewhere)
_BEFORE, _AFTER = 2, 2  # bytes a step reads before and after its 32: the neighbouring characters'

# The classes of ASCII bytes, as the vector step computes them (by compares, not lookups: LLVM IR
# has no portable byte shuffle); `kernel_tables` checks them against the generated table.
_ASCII_RANGES = (  # (first byte, last byte, class bits)
    (ord("A"), ord("Z"), _L | _UP),
    (ord("a"), ord("z"), _L | _LO),
    (ord("0"), ord("9"), _N),
    (0x09, 0x0D, _S),  # \t \n \v \f \r
    (_SPACE, _SPACE, _S),
    (_LF, _LF, _NL),
    (_CR, _CR, _NL),
)


def ascii_classes_by_ranges() -> np.ndarray:
    """The class byte of each ASCII byte as the vector step makes it (for the table check)."""
    out = np.zeros(128, dtype=np.uint8)
    for first, last, bits in _ASCII_RANGES:
        out[first : last + 1] |= bits
    return out


_WINDOW = 32  # bytes whose starts are found at once (one AVX2 register; two SSE2 ones elsewhere)
