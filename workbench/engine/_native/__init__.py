"""The fenced place: everything in the engine that relies on Numba or CPython internals, on libc,
or on LLVM IR written by hand. Each piece has a portable fallback that gives the same results.

A Numba or CPython release can break what is here, so it is kept in one package, listed below,
tested on the versions named, bounded in `pyproject.toml` to match, and can be switched off as a
whole: with the environment variable `BPE_WORKBENCH_PORTABLE=1` every fallback runs instead
(`portable()` says so; CI runs the exactness tests of counting, training and encoding that way).

| module | relies on | fallback (also under the switch) |
|---|---|---|
| `numba_config` | Numba's private `Cache._load_overload` / `_guard_against_spurious_io_errors` (load a cached kernel without refreshing the compiler's context) and the private `_nrt` option (kernels without reference counting) | the stock cache loader; kernels compiled with reference counts |
| `id_lists` | CPython's C API from LLVM intrinsics (`PyList_New`, `PyObject_GC_(Un)Track`), the list object's layout, and reference counts (3.11-3.14 with the GIL) raised so the ready ints are kept for the process (immortal on 3.12+) | `numpy.take(...).tolist()`, the ints counted as usual |
| `utf8_text` | Numba's unicode model (`_data`, `_kind`, `_is_ascii` of a str passed to a kernel) | `str.encode("utf-8")` |
| `libc_read` | libc's `open`/`openat`/`read`/`close` called from a kernel through the JIT's symbol table | reading with Python's `os` calls |
| `memory` | glibc's `malloc_trim` through `ctypes` | nothing (freed memory stays with the process) |
| `prefetch` | an LLVM `prefetch` intrinsic | no prefetch (same results, slower on large tables) |
| `unchecked` | `scan_ir`'s hand-built loads and stores (array reads and writes without the negative-index wraparound) | plain indexing |
| `cache_keys` | Numba's cache implementation (`_source_stamp`) to key the encoder's cache on the scanner's sources | the stock cache key (the encoder recompiles only when its own file changes) |
| `scan_ir` (and its neighbours) | hand-built LLVM IR for the scanner's 32-byte steps (vector compares, an inline-asm barrier) | the regex pre-tokenizer (`regex.findall` with the same pattern) for counting and encoding |

Tested here: Numba 0.68.1 with llvmlite 0.50.0, CPython 3.11.7 on x86-64 Linux (glibc). The
bounds in `pyproject.toml` (`numba>=0.60,<0.69`, `requires-python >=3.11,<3.15`) stop an
untested major release from being installed under it; every piece also checks at run time
what it relies on and takes its fallback when that is missing.
"""

from __future__ import annotations

import os

_SWITCH = "BPE_WORKBENCH_PORTABLE"


def portable() -> bool:
    """True when `BPE_WORKBENCH_PORTABLE` is set to anything but "" or "0": every piece in this
    package then takes its portable fallback. Read at each call (cheap), so tests can set it."""
    return os.environ.get(_SWITCH, "") not in ("", "0")
