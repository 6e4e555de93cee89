"""The scanner's kernels are spread over several modules and compile in each other's code, so
each kernel's on-disk cache must be keyed on every one of those sources, not its own file only."""

from __future__ import annotations

from pathlib import Path

import pytest

from workbench.engine._native.cache_keys import kernels_of, sources_digest
from workbench.engine.pretokenize import scan

# Modules of the scan package that hold no kernel the others compile in.
_ON_TOP = {"__init__.py", "count.py", "fold.py"}
_NATIVE_SCAN = {"scan_layout.py", "scan_ir.py", "window_ir.py"}


def test_every_scanner_source_is_a_key() -> None:
    """A new module in the scan package (or a renamed one) must join `KERNEL_SOURCES`."""
    package = Path(scan.__file__).parent
    listed = {Path(module.__file__).name for module in scan.KERNEL_SOURCES}
    in_package = {path.name for path in package.glob("*.py")} - _ON_TOP
    assert in_package <= listed
    assert listed - in_package == _NATIVE_SCAN


def test_every_scanner_kernel_is_keyed_on_all_sources() -> None:
    kernels = [kernel for module in scan.KERNEL_SOURCES for kernel in kernels_of(module)]
    assert any(kernel.__name__ == "_count_table_o200k" for kernel in kernels)
    digest = sources_digest(scan.KERNEL_SOURCES)
    for kernel in kernels:
        cache_file = getattr(getattr(kernel, "_cache", None), "_cache_file", None)
        if cache_file is None:
            pytest.skip("Numba caching is off")
        assert cache_file._source_stamp[1] == digest, kernel.__name__


def test_every_trainer_kernel_is_keyed_on_all_its_sources() -> None:
    """The merge loop's kernels (`train/_kernels`) inline `_tables`, `_heap` and the prefetch
    intrinsic: an edit to any of them must not load stale machine code."""
    from workbench.engine.train import _kernels

    package = Path(_kernels.__file__).parent
    listed = {Path(module.__file__).name for module in _kernels.KERNEL_SOURCES}
    # `_given_merges` (parity-aware BPE's entries) calls into the merge loop's kernels and keys
    # its own caches on their sources plus itself: checked below.
    kernel_files = {path.name for path in package.glob("_*.py")} - {
        "__init__.py",
        "_given_merges.py",
    }
    assert kernel_files <= listed
    digest = sources_digest(_kernels.KERNEL_SOURCES)
    names = set()
    for module in _kernels.KERNEL_SOURCES:
        for kernel in kernels_of(module):
            names.add(kernel.__name__)
            cache_file = getattr(getattr(kernel, "_cache", None), "_cache_file", None)
            if cache_file is None:
                pytest.skip("Numba caching is off")
            assert cache_file._source_stamp[1] == digest, kernel.__name__
    assert {"run_merges", "init_pairs", "_heap_top"} <= names


def test_the_given_merge_kernels_are_keyed_on_the_merge_loop_and_themselves() -> None:
    """Parity-aware BPE's kernels (`train/_given_merges`) inline the merge loop's helpers: an edit
    to those or to their own module must not load stale machine code."""
    from workbench.engine.train import _given_merges, _kernels

    assert set(_kernels.KERNEL_SOURCES) < set(_given_merges.SOURCES)
    assert _given_merges in _given_merges.SOURCES
    digest = sources_digest(_given_merges.SOURCES)
    kernels = list(kernels_of(_given_merges))
    assert kernels
    for kernel in kernels:
        cache_file = getattr(getattr(kernel, "_cache", None), "_cache_file", None)
        if cache_file is None:
            pytest.skip("Numba caching is off")
        assert cache_file._source_stamp[1] == digest, kernel.__name__
