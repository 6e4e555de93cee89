"""How fast is merge-list search? `python benchmarks/store_search.py [--merges 200000]`.

Fills a temporary database with synthetic merges (see synthetic.py) through `RunWriter`, then
times a first page (limit 200) of typical searches: substrings short and long, common and
absent, regexes, hex, ranges, newest-first, and a count. Prints the median per query and the
median over all of them; the target is under 50 ms. Not a test: timings vary by machine.
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

from workbench.store.runs import RunStore
from workbench.store.synthetic import synthetic_batches

QUERIES: list[tuple[str, dict[str, Any]]] = [
    ("text 'e'", {"text": "e"}),
    ("text 'th'", {"text": "th"}),
    ("text 'the'", {"text": "the"}),
    ("text ' th' (-> ·th)", {"text": " th"}),
    ("text 'tion'", {"text": "tion"}),
    ("text 'zqxj' (absent)", {"text": "zqxj"}),
    ("text 'the' case-sensitive", {"text": "the", "case_sensitive": True}),
    ("text 'ea' newest", {"text": "ea", "order": "newest"}),
    ("regex '^·[A-Z]'", {"regex": "^·[A-Z]"}),
    ("regex 'q.*z$' (rare)", {"regex": "q.*z$"}),
    ("hex 'e2 80'", {"hex": "e2 80"}),
    ("hex '00 01' (absent)", {"hex": "00 01"}),
    ("length 10..12", {"length_range": (10, 12)}),
    ("count 100..1000", {"count_range": (100, 1000)}),
    ("id 150000..", {"id_range": (150_000, None)}),
    ("rank 199000.. + text 'a'", {"rank_range": (199_000, None), "text": "a"}),
    ("text 'ing' + length 6..", {"text": "ing", "length_range": (6, None)}),
]


def fill(store: RunStore, n: int) -> int:
    run_id = store.create_run("bench", settings={"vocab_size": 256 + n})
    with store.writer(run_id) as writer:
        for batch in synthetic_batches(n):
            writer.write(batch)
        writer.set_state("done")
    return run_id


def time_query(store: RunStore, run_id: int, kwargs: dict[str, Any], repeat: int) -> float:
    """Median milliseconds of `repeat` runs of one query (first page of 200)."""
    samples = []
    for _ in range(repeat):
        start = time.perf_counter()
        store.search(run_id, limit=200, **kwargs)
        samples.append((time.perf_counter() - start) * 1000)
    return statistics.median(samples)


def run_bench(n: int = 200_000, repeat: int = 7, db: Path | None = None) -> dict[str, float]:
    """Median ms per query label, plus 'ALL (median of medians)' and 'count ...' entries."""
    with tempfile.TemporaryDirectory() as tmp:
        path = db or Path(tmp) / "bench.db"
        with RunStore(path) as store:
            start = time.perf_counter()
            run_id = fill(store, n)
            print(f"wrote {n:,} merges in {time.perf_counter() - start:.1f} s")
            results = {label: time_query(store, run_id, kw, repeat) for label, kw in QUERIES}
            start = time.perf_counter()
            matches = store.search_count(run_id, text="the")
            results[f"count text 'the' ({matches} matches)"] = (time.perf_counter() - start) * 1000
    results["ALL (median of medians)"] = statistics.median(
        v for k, v in results.items() if not k.startswith("count")
    )
    return results


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--merges", type=int, default=200_000)
    parser.add_argument("--repeat", type=int, default=7)
    parser.add_argument("--db", type=Path, help="write here instead of a temporary file")
    args = parser.parse_args()
    for label, ms in run_bench(args.merges, args.repeat, args.db).items():
        print(f"{ms:8.2f} ms  {label}")


if __name__ == "__main__":
    main()
