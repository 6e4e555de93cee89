"""The one place where Numba options live.

Every kernel in the engine is compiled with `njit` from here, so caching and GIL release are
uniform: `cache=True` keeps compiled code on disk between processes, `nogil=True` lets the Qt
window (and a second pre-tokenizing thread) run while a kernel works.
"""

from __future__ import annotations

import functools

import numba

OPTIONS = {"cache": True, "nogil": True}

njit = functools.partial(numba.njit, **OPTIONS)
