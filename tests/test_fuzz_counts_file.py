"""Fuzzing counts files (issue 33): any rows (empty, repeated, zero, negative, huge counts),
column types, metadata values and missing keys, and flipped or cut bytes. Reading one, and
summing it with a good one (`count --merge`), must give a valid result or one line naming the
file (`WorkbenchError`), never another exception; a merged file written must read back.

Profiles: `ci` (the default, 100 cases) and `long` (`HYPOTHESIS_PROFILE=long` or
`BPE_WORKBENCH_FUZZ=long`). The cases tried are printed with `-s`.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from collections import Counter
from pathlib import Path

import pyarrow as pa
import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from tests._bpe_helpers import examples
from tests._crafted_counts import GOOD_META, meta_with, write_crafted
from workbench.engine.errors import WorkbenchError
from workbench.engine.pretokenize.counts_file import merge_counts, read_counts

LONG = "long" in (os.environ.get("BPE_WORKBENCH_FUZZ"), os.environ.get("HYPOTHESIS_PROFILE"))
EXAMPLES = examples(1) * (20 if LONG and settings.default.max_examples < 1000 else 1)
SEEN: Counter[str] = Counter()

counts = st.one_of(
    st.integers(1, 1000),
    st.integers(1, 1000),
    st.sampled_from([0, -1, 2**62, 2**63 - 1, -(2**63), 2**31]),
    st.integers(-(2**63), 2**63 - 1),
)
rows = st.one_of(
    st.lists(  # rows a counter could have written
        st.tuples(st.binary(min_size=1, max_size=6), st.integers(1, 10**9)),
        min_size=1,
        max_size=8,
        unique_by=lambda row: row[0],
    ),
    st.lists(st.tuples(st.binary(max_size=6), counts), max_size=8),
)
json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=12),
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=6), inner, max_size=3)
    ),
    max_leaves=6,
)
# Half the cases keep good metadata and bytes, so the rows themselves get fuzzed too.
meta_edits = st.one_of(
    st.just([]),
    st.lists(
        st.tuples(st.sampled_from(sorted(GOOD_META)), st.one_of(st.just(...), json_values)),
        min_size=1,
        max_size=3,
    ),
)
types = st.sampled_from(
    [
        (pa.large_binary(), pa.int64()),
        (pa.large_binary(), pa.int64()),
        (pa.large_binary(), pa.int64()),
        (pa.binary(), pa.int64()),
        (pa.large_binary(), pa.int32()),
        (pa.large_binary(), pa.uint64()),
        (pa.large_binary(), pa.float64()),
        (pa.string(), pa.int64()),
    ]
)
damage = st.one_of(
    st.just([]), st.lists(st.tuples(st.integers(0, 10_000), st.integers(0, 255)), max_size=2)
)


def _refused_or_ok(call, path: Path) -> str:
    try:
        call()
    except WorkbenchError as exc:
        message = str(exc)
        assert "\n" not in message, message
        assert path.name in message, message
        return "refused"
    return "ok"


@settings(
    max_examples=EXAMPLES,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
)
@given(
    rows=rows,
    edits=meta_edits,
    column_types=types,
    flips=damage,
    cut=st.sampled_from([False, False, False, True]),
)
def test_crafted_counts_files_read_or_refuse_in_one_line(rows, edits, column_types, flips, cut):
    folder = Path(tempfile.mkdtemp(prefix="fuzz-counts-"))
    try:
        path = folder / "c.parquet"
        try:
            write_crafted(path, rows, meta_with(**dict(edits)), column_types)
        except (pa.ArrowException, OverflowError, TypeError, ValueError):
            assume(False)  # pyarrow cannot hold these rows in these types: not a file
        data = bytearray(path.read_bytes())
        for where, value in flips:
            data[where % len(data)] ^= value
        if cut:
            del data[len(data) // 2 :]
        path.write_bytes(bytes(data))
        SEEN["read " + _refused_or_ok(lambda: read_counts(path), path)] += 1
        good = write_crafted(folder / "good.parquet")
        out = folder / "all.parquet"
        outcome = _refused_or_ok(lambda: merge_counts([good, path], out), path)
        SEEN["merge " + outcome] += 1
        if outcome == "ok":
            read_counts(out)  # what --merge wrote, its own reader takes
        else:
            assert not out.exists()
    finally:
        shutil.rmtree(folder, ignore_errors=True)


@pytest.fixture(scope="module", autouse=True)
def _report():
    yield
    print(f"\ncounts files fuzzed: {dict(SEEN)}")
