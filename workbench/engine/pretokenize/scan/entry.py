"""The scanner's Python calls (`piece_bounds`, `pieces`, `count_pieces_arrays`, ...) and one
entry kernel per preset, so that Python, which cannot pass a literal, still gets a kernel
compiled for one preset only.

Also where every scanner kernel's on-disk cache is keyed on all the scanner's source files
(`KERNEL_SOURCES`): a kernel compiles in code from the other modules. The kernels themselves are
in `byte_classes`, `rules`, `windows` and `table`.
"""

from __future__ import annotations

import functools
import sys
from types import ModuleType

import numpy as np

from workbench.engine._native import portable, scan_ir, scan_layout, window_ir
from workbench.engine._native.cache_keys import kernels_of, key_caches_on
from workbench.engine._native.numba_config import njit
from workbench.engine._native.scan_layout import _CR, _LF, _NL, ascii_classes_by_ranges
from workbench.engine.patterns import unicode_classes as uc
from workbench.engine.patterns.regexes import CL100K, GPT2, O200K
from workbench.engine.patterns.superbpe import STAGE2_PATTERN
from workbench.engine.pretokenize.scan import byte_classes, rules, table, windows
from workbench.engine.pretokenize.scan.byte_classes import classify
from workbench.engine.pretokenize.scan.table import _count_table, _empty_table, fold_table
from workbench.engine.pretokenize.scan.windows import scan_starts

PRESETS_SCANNABLE = ("gpt2", "cl100k", "o200k")
# SuperBPE's stage-2 pattern is no preset a user picks, but the scanner counts with it too
# (`rules._piece_stage2`): the corpus is counted a second time for stage 2.
STAGE2 = "superbpe-stage2"
PRESETS = {"gpt2": GPT2, "cl100k": CL100K, "o200k": O200K}
_PRESET_STRINGS = {**PRESETS, STAGE2: STAGE2_PATTERN}
_PRESET_CODES = {"gpt2": 0, "cl100k": 1, "o200k": 2, STAGE2: 3}


def can_scan(pattern: str) -> bool:
    """True when `pattern` is exactly one of the preset strings the scanner reproduces, and the
    native pieces are on: the scanner is built on hand-written LLVM IR (`engine/_native`), so
    under `BPE_WORKBENCH_PORTABLE=1` the regex path stands in for it everywhere. (The encoder
    asks this: its fused kernels exist for the three presets.)"""
    return pattern in PRESETS.values() and not portable()


def can_count(pattern: str) -> bool:
    """`can_scan`, or SuperBPE's stage-2 pattern: what counting a corpus may scan with."""
    return (pattern == STAGE2_PATTERN and not portable()) or can_scan(pattern)


# --- one entry point per preset ------------------------------------------------------------------
# Python cannot pass a literal, so each preset gets thin entry kernels that call the shared ones
# with a constant: the first use of a preset compiles that preset's code only.


@njit
def _scan_starts_gpt2(data, cls, start, fold_cps, fold_letters, out):
    return scan_starts(data, cls, start, 0, fold_cps, fold_letters, out)


@njit
def _scan_starts_cl100k(data, cls, start, fold_cps, fold_letters, out):
    return scan_starts(data, cls, start, 1, fold_cps, fold_letters, out)


@njit
def _scan_starts_o200k(data, cls, start, fold_cps, fold_letters, out):
    return scan_starts(data, cls, start, 2, fold_cps, fold_letters, out)


@njit
def _count_table_gpt2(data, cls, seg_starts, seg_ends, fold_cps, fold_letters):
    return _count_table(data, cls, seg_starts, seg_ends, 0, fold_cps, fold_letters)


@njit
def _count_table_cl100k(data, cls, seg_starts, seg_ends, fold_cps, fold_letters):
    return _count_table(data, cls, seg_starts, seg_ends, 1, fold_cps, fold_letters)


@njit
def _count_table_o200k(data, cls, seg_starts, seg_ends, fold_cps, fold_letters):
    return _count_table(data, cls, seg_starts, seg_ends, 2, fold_cps, fold_letters)


@njit
def _scan_starts_stage2(data, cls, start, fold_cps, fold_letters, out):
    return scan_starts(data, cls, start, 3, fold_cps, fold_letters, out)


@njit
def _count_table_stage2(data, cls, seg_starts, seg_ends, fold_cps, fold_letters):
    return _count_table(data, cls, seg_starts, seg_ends, 3, fold_cps, fold_letters)


_SCAN_STARTS = (_scan_starts_gpt2, _scan_starts_cl100k, _scan_starts_o200k, _scan_starts_stage2)
_COUNT_TABLE = (_count_table_gpt2, _count_table_cl100k, _count_table_o200k, _count_table_stage2)


def counting_kernels(preset: str) -> tuple:
    """The compiled kernels that counting with `preset` runs (`warmup` asks their cache)."""
    return (_COUNT_TABLE[preset_code(preset)], classify, fold_table)


# --- public wrappers ---------------------------------------------------------------------------

BytesLike = bytes | bytearray | memoryview | np.ndarray


def _as_uint8(data: BytesLike) -> np.ndarray:
    """A read-only, contiguous uint8 view (one array type, so Numba compiles each kernel once)."""
    if isinstance(data, np.ndarray):
        if data.dtype != np.uint8 or data.ndim != 1:
            raise TypeError(f"expected a 1-D uint8 array, got {data.dtype} with {data.ndim} dims")
        array = np.ascontiguousarray(data).view()
    elif isinstance(data, bytes | bytearray | memoryview):
        array = np.frombuffer(data, dtype=np.uint8).view()
    else:
        raise TypeError(f"expected UTF-8 bytes or a uint8 array, got {type(data).__name__}")
    array.flags.writeable = False
    return array


def preset_code(preset: str) -> int:
    """The kernel's code for a preset name (or the preset's pattern string itself)."""
    for name, pattern in _PRESET_STRINGS.items():
        if preset in (name, pattern):
            return _PRESET_CODES[name]
    known = (*PRESETS_SCANNABLE, STAGE2)
    raise ValueError(f"the scanner knows the presets {known}, not {preset!r}")


@functools.cache
def kernel_tables() -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    r"""The class tables as the kernels take them: `flags` with _NL added on \r and \n."""
    t = uc.tables()
    flags = t.flags.copy()
    flags[[_LF, _CR]] |= _NL
    if not np.array_equal(flags[:128], ascii_classes_by_ranges()):  # `classify` computes these
        raise RuntimeError("the generated ASCII classes differ from the scanner's _ASCII_RANGES")
    return flags, t.fold_cps, t.fold_letters


def _classified(data: BytesLike) -> tuple[np.ndarray, np.ndarray]:
    """The input as a uint8 view and its per-byte class array."""
    array = _as_uint8(data)
    cls = np.empty(array.shape[0], dtype=np.uint8)
    classify(array, kernel_tables()[0], cls)
    return array, cls


def piece_bounds(data: BytesLike, preset: str) -> np.ndarray:
    """Byte offsets of the pieces: piece i is data[b[i]:b[i+1]], b[0] = 0, b[-1] = len(data).

    Example: piece_bounds(b"a   b", "gpt2") -> [0, 1, 3, 5] ("a", "  ", " b"). The result may be
    a view into a larger, mostly untouched buffer (saves a copy of the biggest array).
    """
    code = preset_code(preset)
    array, cls = _classified(data)
    _, fold_cps, fold_letters = kernel_tables()
    n = array.shape[0]
    # Room for English (~4 bytes per piece) plus the final offset. Pages never written are never
    # committed, so the unused tail costs no memory and the common case returns a view, no copy.
    # A short text gets a block of at least 4,096 starts: the scan takes 32 bytes a step only
    # while its block has room for a window's 32 more (tests of short texts then reach it too).
    out = np.empty(max(n // 3, 4096) + 2, dtype=np.int64)
    scan_starts = _SCAN_STARTS[code]
    k, i = scan_starts(array, cls, 0, fold_cps, fold_letters, out[:-1])
    if i == n:
        out[k] = n
        return out[: k + 1]
    parts = [out[:k]]
    while i < n:  # text with many short pieces: continue in more blocks
        block = np.empty(max(1 << 16, (n - i) // 2), dtype=np.int64)
        k, i = scan_starts(array, cls, i, fold_cps, fold_letters, block)
        parts.append(block[:k])
    parts.append(np.array([n], dtype=np.int64))
    return np.concatenate(parts)


def pieces(data: BytesLike, preset: str) -> list[bytes]:
    """The pieces as bytes objects (for tests and small inputs; slow on a whole corpus)."""
    raw = bytes(_as_uint8(data))
    bounds = piece_bounds(raw, preset).tolist()
    return [raw[a:b] for a, b in zip(bounds[:-1], bounds[1:], strict=True)]


def count_pieces_arrays(
    data: BytesLike, preset: str, segments: tuple[np.ndarray, np.ndarray] | None = None
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(buf, offsets, counts): unique piece k is buf[offsets[k]:offsets[k+1]], seen counts[k] times.

    Pieces are in order of first occurrence. This is the trainer's word table, built without a
    Python object per piece. `segments` = (starts, ends) byte offsets limits the scan to those
    stretches, each scanned on its own (the text between special tokens); default: all of it.
    Example: b"a a a" (gpt2) -> buf b"a a", offsets [0, 1, 3], counts [1, 2].
    """
    code = preset_code(preset)
    array, cls = _classified(data)
    _, fold_cps, fold_letters = kernel_tables()
    if segments is None:
        segments = (np.zeros(1, dtype=np.int64), np.full(1, array.shape[0], dtype=np.int64))
    starts = np.ascontiguousarray(segments[0], dtype=np.int64)
    ends = np.ascontiguousarray(segments[1], dtype=np.int64)
    arena, offsets, counts, used = _COUNT_TABLE[code](
        array, cls, starts, ends, fold_cps, fold_letters
    )
    return arena[: offsets[used]].copy(), offsets[: used + 1].copy(), counts[:used].copy()


def merge_count_tables(
    tables: list[tuple[np.ndarray, np.ndarray, np.ndarray]],
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Several (buf, offsets, counts) tables as one, counts of the same piece summed."""
    if len(tables) == 1:
        return tables[0]
    buf = np.concatenate([t[0] for t in tables]) if tables else np.empty(0, np.uint8)
    shifted, base = [], 0
    for t_buf, t_offsets, _ in tables:
        shifted.append(t_offsets[:-1] + base)
        base += t_buf.shape[0]
    offsets = np.concatenate([*shifted, np.array([base], dtype=np.int64)])
    counts = np.concatenate([t[2] for t in tables]) if tables else np.empty(0, np.int64)
    *_, arena, out_offsets, out_counts, used = fold_table(
        *_empty_table(), np.int64(0), buf, offsets, counts
    )
    return (
        arena[: out_offsets[used]].copy(),
        out_offsets[: used + 1].copy(),
        out_counts[:used].copy(),
    )


def count_pieces(data: BytesLike, preset: str) -> dict[bytes, int]:
    """Unique piece bytes -> count, equal to `Counter(p.encode() for p in regex.findall(...))`."""
    buf, offsets, counts = count_pieces_arrays(data, preset)
    raw = buf.tobytes()
    edges = offsets.tolist()
    return {raw[edges[k] : edges[k + 1]]: count for k, count in enumerate(counts.tolist())}


# --- the kernels' cache keys -------------------------------------------------------------------

KERNEL_SOURCES: tuple[ModuleType, ...] = (
    scan_layout,
    scan_ir,
    window_ir,
    byte_classes,
    rules,
    windows,
    table,
    sys.modules[__name__],
)
"""Every module whose code a scanner kernel may compile in (a kernel that inlines or calls the
scanner's kernels, as the fused encoder does, keys its cache on all of them)."""

key_caches_on(
    (kernel for module in KERNEL_SOURCES for kernel in kernels_of(module)), KERNEL_SOURCES
)
