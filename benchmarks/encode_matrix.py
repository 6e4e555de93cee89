"""Hand-run benchmark: single-thread encoding, ranks (gpt2, cl100k, o200k) x text (English docs,
multilingual, C code), ours against every peer that installs (tiktoken, gigatoken, fastokens,
riptoken; quicktok with `--peers`, see `encode_peers.py` for each one's calls), ids checked
against tiktoken's in every cell (a peer whose ids differ is marked and not counted); then
`Tokenizer.encode_batch` (lists) and `encode_batch_arrays` on one and two threads, each text cut
into 64 KB documents, and with `--peer-batch` each peer's own batch call on the same documents.

The matrix: every encoder builds a NEW INSTANCE for each timed call from the same `.tiktoken`
rank file (written to a temporary folder): reading the file and building are timed apart (the
`build s` column) and excluded from the rates, so the rates are what encoding a text once costs
a new tokenizer, with no cache carried over between calls. `cold` is that instance's first call,
on a copy of the text made for it (a str keeps its UTF-8 form once a PyO3 peer asked for it: see
`_fresh`), `warm` a second call on the same copy (caches full). The batch lines' first calls
likewise get fresh copies of the documents. List output (Python ints, what most callers
use) and array output are timed with instances of their own. Rates are MB of UTF-8 per CPU
second of the whole process (`time.process_time`: an encoder that spreads a call over threads is
charged for all of them; a shared machine inflates it less than wall time), with MB/s of wall
time beside them. Peers take turns within each run; medians of `--runs`. Ours shares immutable
tables between tokenizers of the same ranks only while one lives (`_shared_cores`; none does
between the cells' instances), and one set of ready-made ints per process (`id_lists`), made by
the warm-up before any timing.

The batch lines are wall time, the only measure of threads, with the process's CPU time beside
it. Two threads can only be timed on an idle machine: Linux's autogroup scheduling gives a busy
machine's process one share of the CPUs however many threads it runs; each line ends with the
cores other processes used meanwhile (0.0 for a fair figure).

Run `python benchmarks/encode_matrix.py [--data /work/bench-data] [--mb 8] [--runs 3] [--ranks
gpt2 cl100k o200k] [--peers ours tiktoken gigatoken ...] [--out table.md]`: `--out` writes the
matrix as the markdown table docs/benchmarks.md shows; `--stages` adds ours stage by stage
(instance, scan, cache probe, merge, output: `encode_matrix_stages.py`); `--batch-only` for the
threads lines alone, `--batch-ranks gpt2 cl100k o200k` for more ranks, `--peer-batch` for the
peers' batch calls, `--gil` for the share of a one-thread call spent outside the kernel (holding
the GIL). The texts: English docs, multilingual and C code of `--mb` MB each, assembled on first
use into `--data`, or `--text A.txt en-2 cjk-1` (UTF-8 files, or names of texts in `--data`): the
options `encode_stages.py` and `merge_micro.py` share, see `_texts.py`. GPT-2's ranks come from
`$BPE_WORKBENCH_GPT2` (or the corpora folder's gpt2_vocab.json + gpt2_merges.txt); cl100k and
o200k from the `bpe-openai` wheel, which ships them (the `bench` extra installs it and the peers).
"""

from __future__ import annotations

import argparse
import base64
import gc
import gzip
import os
import resource
import statistics
import tempfile
import time
from pathlib import Path
from typing import NamedTuple

import numpy as np
from _paths import corpora  # noqa: E402
from _texts import add_text_options, chosen_texts
from encode_peers import PEERS, Peer, RankFile, available, write_rank_file

from workbench.engine import formats
from workbench.engine._native import id_lists
from workbench.engine.encode.tokenizer import Tokenizer
from workbench.engine.patterns.regexes import CL100K, GPT2, O200K

try:
    from workbench.engine._native import utf8_text
except ImportError:  # an older checkout, measured for comparison
    utf8_text = None


def ranks_from_bpe_openai(name: str) -> dict[bytes, int]:
    import bpe_openai  # noqa: PLC0415 -- the bench extra

    path = Path(bpe_openai.__file__).parent / "data" / f"{name}_base.tiktoken.gz"
    ranks = {}
    for line in gzip.decompress(path.read_bytes()).splitlines():
        if line:
            token, rank = line.split()
            ranks[base64.b64decode(token)] = int(rank)
    return ranks


def tokenizers() -> dict[str, tuple[Tokenizer, dict[bytes, int], str]]:
    """name -> (our tokenizer, the same ranks as bytes -> id, pattern)."""
    gpt2_dir = os.environ.get("BPE_WORKBENCH_GPT2")
    gpt2 = formats.load(gpt2_dir or corpora() / "gpt2_vocab.json")  # beside gpt2_merges.txt
    out = {"gpt2": (gpt2, {token: tid for tid, token in gpt2.vocab.items()}, GPT2)}
    for name, pattern in (("cl100k", CL100K), ("o200k", O200K)):
        ranks = ranks_from_bpe_openai(name)
        ours = Tokenizer.from_ranks({rank: token for token, rank in ranks.items()}, pattern)
        out[name] = (ours, ranks, pattern)
    return out


def rate(encode, text: str, runs: int, clock=time.thread_time) -> tuple[float, object]:
    """(MB/s by the median of `runs` calls on `clock`, the last result)."""
    size = len(text.encode("utf-8")) / 1e6
    times, result = [], None
    for _ in range(runs):
        result = None  # freed outside the timing
        start = clock()
        result = encode(text)
        times.append(clock() - start)
    return size / statistics.median(times), result


def _cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)  # every thread of the process
    return usage.ru_utime + usage.ru_stime


def _machine_busy() -> float:
    """CPU seconds every process has used since boot (/proc/stat), to tell how much of a
    measurement's time other processes took: they make two threads look no faster than one."""
    with open("/proc/stat") as f:
        fields = [int(x) for x in f.readline().split()[1:]]
    return (sum(fields) - fields[3] - fields[4]) / os.sysconf("SC_CLK_TCK")  # minus idle, iowait


def batch_lines(ours: Tokenizer, name: str, corpus: dict[str, str], runs: int) -> None:
    """`encode_batch` and `encode_batch_arrays` of each text cut into 64 KB documents, on one
    thread and on two: the first call of a fresh tokenizer (every thread's piece cache empty),
    then the median of `runs` more calls of the same tokenizer (caches warm, as in a stream of
    batches). One and two threads alternate call by call; wall time and the process's CPU."""
    ours.encode("load the compiled kernels before any timing")
    for kind, text in corpus.items():
        size = len(text.encode("utf-8")) / 1e6
        docs = [text[i : i + 65536] for i in range(0, len(text), 65536)]
        for method in ("encode_batch", "encode_batch_arrays"):
            if not hasattr(ours, method):  # an older checkout, measured for comparison
                continue
            pair = [ours.with_splitter("auto") for _ in (1, 2)]
            start_wall, start_ours, start_all = time.perf_counter(), _cpu(), _machine_busy()
            times: list[list[tuple[float, float]]] = [[], []]
            for run in range(runs + 1):
                for threads, tok in enumerate(pair, start=1):
                    result = None  # freed outside the timing
                    texts = [_fresh(doc) for doc in docs] if run == 0 else docs
                    wall, cpu = time.perf_counter(), _cpu()
                    result = getattr(tok, method)(
                        texts, num_threads=threads, allowed_special="none"
                    )
                    times[threads - 1].append((time.perf_counter() - wall, _cpu() - cpu))
            del result
            for tok in pair:
                getattr(tok, "close", lambda: None)()
            cells = []
            for label, picked in (("first call", slice(0, 1)), ("warm", slice(1, None))):
                (w1, c1), (w2, c2) = (
                    (statistics.median(w for w, _ in t[picked]), statistics.median(c for _, c in t[picked]))
                    for t in times
                )  # fmt: skip
                cells.append(
                    f"{label} {size / w1:5.1f} -> {size / w2:5.1f} MB/s {w1 / w2:4.2f}x"
                    f" (CPU {c1:.2f} -> {c2:.2f} s)"
                )
            others = (_machine_busy() - start_all) - (_cpu() - start_ours)
            cells.append(f"others {others / (time.perf_counter() - start_wall):.1f} cores")
            print(f"{method:20}{name + ' x ' + kind:24} 1 -> 2 threads: " + "; ".join(cells))


def gil_lines(ours: Tokenizer, name: str, corpus: dict[str, str], runs: int) -> None:
    """The share of a one-thread `encode_batch` / `encode_batch_arrays` call spent outside the
    kernels that release the GIL (`_scan_segments`, and where a checkout has them the lists'
    `_whole` (`_tally` before it) and `_fill_items` and the texts' `_utf8_into`): what two threads cannot share. Thread CPU, median of `runs` warm
    calls, each text in 64 KB documents."""
    kernel_time = [0.0]
    scan = Tokenizer._scan_segments
    free_of_gil = [
        (id_lists, "_whole"),
        (id_lists, "_tally"),
        (id_lists, "_fill_items"),
        (utf8_text, "_utf8_into"),
    ]
    originals = {
        (module, kernel): getattr(module, kernel)
        for module, kernel in free_of_gil
        if module is not None and hasattr(module, kernel)
    }

    def timing(function):
        def timed(*args):
            start = time.thread_time()
            try:
                return function(*args)
            finally:
                kernel_time[0] += time.thread_time() - start

        return timed

    Tokenizer._scan_segments = timing(scan)  # type: ignore[method-assign]
    for (module, kernel), function in originals.items():
        setattr(module, kernel, timing(function))
    try:
        for kind, text in corpus.items():
            docs = [text[i : i + 65536] for i in range(0, len(text), 65536)]
            tok = ours.with_splitter("auto")
            cells = []
            for method in ("encode_batch", "encode_batch_arrays"):
                call = getattr(tok, method)
                call(docs, num_threads=1, allowed_special="none")  # caches warm
                totals, kernels_ = [], []
                for _ in range(runs):
                    result = None  # freed outside the timing
                    kernel_time[0] = 0.0
                    start = time.thread_time()
                    result = call(docs, num_threads=1, allowed_special="none")
                    totals.append(time.thread_time() - start)
                    kernels_.append(kernel_time[0])
                del result
                total, kernel = statistics.median(totals), statistics.median(kernels_)
                label = "lists" if method == "encode_batch" else "arrays"
                cells.append(f"{label} {total * 1e3:5.1f} ms, {1 - kernel / total:4.2f} outside")
            tok.close()
            print(f"GIL share, one thread   {name + ' x ' + kind:24} " + "; ".join(cells))
    finally:
        Tokenizer._scan_segments = scan  # type: ignore[method-assign]
        for (module, kernel), function in originals.items():
            setattr(module, kernel, function)


# ----- the single-thread matrix: every peer, a new instance per timed call ----------------------


class Cell(NamedTuple):
    """One peer on one text: medians over the runs (CPU seconds of the process, wall seconds)."""

    build: float  # CPU s to build an instance from the rank file (outside every other figure)
    cold_list: tuple[float, float] | None  # (CPU s, wall s) of a new instance's first call
    cold_array: tuple[float, float] | None
    warm_list: tuple[float, float] | None  # the same instance's second call on the same text
    warm_array: tuple[float, float] | None
    same_ids: bool  # every result equal to tiktoken's ids


def _fresh(text: str) -> str:
    """A new str equal to `text` that has not made its UTF-8 form: CPython keeps a str's UTF-8
    once `PyUnicode_AsUTF8AndSize` is asked for it (the PyO3 peers read a str so; ours calls
    `str.encode` or reads the characters), and a later call on the same object skips the
    conversion (gigatoken, a new instance on 2.2 MB of English: 11.3 ms on a fresh str, 9.6 on
    one it had read before). A cold call gets its own copy, as a text read once from a file
    would; the warm call the same copy again."""
    return (text + " ")[:-1]


def _timed(call, *args) -> tuple[tuple[float, float], object]:
    """((CPU s of the whole process, wall s), result) of one call: process CPU, not the
    thread's, so an encoder that spreads one call over threads is charged for all of them."""
    cpu, wall = time.process_time(), time.perf_counter()
    result = call(*args)
    return (time.process_time() - cpu, time.perf_counter() - wall), result


def _same(result: object, expected: np.ndarray, relabel: np.ndarray | None) -> bool:
    ids = np.asarray(result, dtype=np.int64)
    if relabel is not None and ids.size and ids.max() < relabel.shape[0]:
        ids = relabel[ids]
    return np.array_equal(ids, expected)


def _median_pair(pairs: list[tuple[float, float]]) -> tuple[float, float] | None:
    if not pairs:
        return None
    return statistics.median(c for c, _ in pairs), statistics.median(w for _, w in pairs)


def measure_cell(peers: list[Peer], rank_file: RankFile, text: str, runs: int) -> dict[str, Cell]:
    """Every peer on `text`: per run, for list and then array output, a new instance built from
    the rank file (timed apart), its first call (cold) and a second call on the same text
    (warm). Peers take turns within a run, so a busy moment of the machine hits all of them."""
    expected = None
    times: dict[str, dict[str, list]] = {p.name: {} for p in peers}
    same = {p.name: True for p in peers}
    relabels = {p.name: p.relabel(rank_file) if p.relabel else None for p in peers}
    for _ in range(runs):
        for peer in peers:
            slot = times[peer.name]
            for kind, call in (("list", peer.as_list), ("array", peer.as_array)):
                if call is None:
                    continue
                gc.collect()
                (build, _), instance = _timed(peer.build, rank_file)
                slot.setdefault("build", []).append(build)
                fresh = _fresh(text)  # made outside the timing; the warm call reads it again
                for phase in ("cold", "warm"):
                    result = None  # the last result freed outside the timing
                    timing, result = _timed(call, instance, fresh)
                    slot.setdefault(f"{phase}_{kind}", []).append(timing)
                    if expected is None:  # tiktoken's, always first
                        expected = np.asarray(result, dtype=np.int64)
                    same[peer.name] &= _same(result, expected, relabels[peer.name])
                del instance, result, fresh
    return {
        name: Cell(
            statistics.median(slot["build"]),
            *(_median_pair(slot.get(key, [])) for key in _PHASES),
            same[name],
        )
        for name, slot in times.items()
    }


_PHASES = ("cold_list", "cold_array", "warm_list", "warm_array")


def _rate(size: float, pair: tuple[float, float] | None, wall: bool = False) -> float | None:
    if pair is None:
        return None
    seconds = pair[1] if wall else pair[0]
    return size / seconds if seconds > 0 else float("inf")


def best_peer(cells: dict[str, Cell], size: float, phase: str) -> tuple[str, float] | None:
    """(name, MB per CPU second) of the fastest peer other than ours with tiktoken's ids."""
    found = [
        (rate_, name)
        for name, cell in cells.items()
        if name != "ours" and cell.same_ids
        and (rate_ := _rate(size, getattr(cell, phase))) is not None
    ]  # fmt: skip
    return (max(found)[1], max(found)[0]) if found else None


def print_cell(label: str, cells: dict[str, Cell], size: float) -> None:
    """One block of lines per ranks x text: a line per peer."""
    print(f"\n{label} ({size:.1f} MB)  MB per CPU second (MB/s wall in brackets)")
    print(f"  {'encoder':11}{'build s':>8}{'list cold':>18}{'array cold':>18}"
          f"{'list warm':>18}{'array warm':>18}  ids")  # fmt: skip
    for name, cell in cells.items():
        row = f"  {name:11}{cell.build:8.2f}"
        for phase in _PHASES:
            pair = getattr(cell, phase)
            row += (
                f"{'-':>18}"
                if pair is None
                else f"{_rate(size, pair):10.1f} ({_rate(size, pair, wall=True):5.1f})"
            )
        print(row + ("  same" if cell.same_ids else "  DIFFER (not counted)"))
    ours = cells.get("ours")
    if ours is not None:
        for phase in ("cold_list", "cold_array"):
            best = best_peer(cells, size, phase)
            if best is not None and getattr(ours, phase) is not None:
                ratio = _rate(size, getattr(ours, phase)) / best[1]
                print(f"  ours {phase.replace('_', ' ')} / best peer ({best[0]}): {ratio:.2f}x")


def markdown(results: dict[str, tuple[dict[str, Cell], float]], names: list[str]) -> str:
    """The docs' table: a row per ranks x text, cold MB per CPU second for each encoder's list
    and array, the best peer in bold, a peer whose ids differ struck out."""
    columns = [
        (name, phase)
        for name in names
        for phase in ("cold_list", "cold_array")
        if any(getattr(cells[name], phase) is not None for cells, _ in results.values()
               if name in cells)
    ]  # fmt: skip
    head = " | ".join(f"{n} ({p.split('_')[1]})" for n, p in columns)
    lines = [
        f"| ranks × text | {head} | ours list / best | ours array / best |",
        "|---" * (len(columns) + 3) + "|",
    ]
    for label, (cells, size) in results.items():
        best_rate = max(
            (r for n, p in columns if n != "ours" and cells[n].same_ids
             and (r := _rate(size, getattr(cells[n], p))) is not None),
            default=None,
        )  # fmt: skip
        row = []
        for name, phase in columns:
            rate_ = _rate(size, getattr(cells[name], phase)) if name in cells else None
            if rate_ is None:
                row.append("n/a")
            elif not cells[name].same_ids:
                row.append(f"~~{rate_:.1f}~~")
            elif rate_ == best_rate or (name == "ours" and best_rate and rate_ >= best_rate):
                row.append(f"**{rate_:.1f}**")
            else:
                row.append(f"{rate_:.1f}")
        ratios = []
        for phase in ("cold_list", "cold_array"):
            best = best_peer(cells, size, phase)
            ours_rate = _rate(size, getattr(cells["ours"], phase)) if "ours" in cells else None
            ratios.append(f"{ours_rate / best[1]:.2f}× ({best[0]})" if best and ours_rate else "")
        lines.append(f"| {label} | " + " | ".join(row) + " | " + " | ".join(ratios) + " |")
    return "\n".join(lines) + "\n"


def peer_batch_lines(
    peers: list[Peer], rank_file: RankFile, corpus: dict[str, str], runs: int
) -> None:
    """Each peer's own batch call on each text cut into 64 KB documents: a new instance's first
    call, then the median of `runs` more (warm); on 1 and 2 threads where the peer takes a
    number, else once at its own choice of threads. Wall time, with the process's CPU."""
    for kind, text in corpus.items():
        size = len(text.encode("utf-8")) / 1e6
        docs = [text[i : i + 65536] for i in range(0, len(text), 65536)]
        for peer in peers:
            for method in ("batch_lists", "batch_arrays"):
                call = getattr(peer, method)
                if call is None:
                    continue
                counts = (
                    (1, 2) if peer.threads_note.startswith(("num_threads", "parallel")) else (2,)
                )
                cells = []
                for threads in counts:
                    instance = peer.build(rank_file)
                    timings = []
                    for run in range(runs + 1):
                        result = None
                        texts = [_fresh(doc) for doc in docs] if run == 0 else docs
                        wall, cpu = time.perf_counter(), _cpu()
                        result = call(instance, texts, threads)
                        timings.append((time.perf_counter() - wall, _cpu() - cpu))
                    del instance, result
                    first, warm = timings[0], _median_pair([(c, w) for w, c in timings[1:]])
                    cells.append(
                        f"{threads} thr: first {size / first[0]:6.1f} MB/s (CPU {first[1]:.2f} s),"
                        f" warm {size / warm[1]:6.1f} MB/s (CPU {warm[0]:.2f} s)"
                    )
                label = f"{peer.name} {method.split('_')[1]}"
                print(f"  {label:20}{rank_file.name + ' x ' + kind:24} " + "; ".join(cells)
                      + f"   [{peer.threads_note}]")  # fmt: skip


def rank_files(folder: Path) -> dict[str, RankFile]:
    """gpt2, cl100k and o200k written as .tiktoken files into `folder`, for every peer to load."""
    found = {}
    for name, (_, ranks, pattern) in tokenizers().items():
        found[name] = write_rank_file(folder, name, pattern, ranks)
    return found


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    add_text_options(parser)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--ranks", nargs="+", default=["gpt2", "cl100k", "o200k"])
    parser.add_argument(
        "--peers",
        nargs="+",
        default=[name for name in PEERS if name != "quicktok"],
        help=f"encoders to race, of: {' '.join(PEERS)} (default all but quicktok, whose"
        " pre-tokenizer differs from tiktoken's on runs of spaces: its ids differ)",
    )
    parser.add_argument(
        "--batch-ranks", nargs="*", default=["gpt2"], help="ranks for the threads lines"
    )
    parser.add_argument("--batch-only", action="store_true", help="skip the one-thread matrix")
    parser.add_argument(
        "--peer-batch", action="store_true", help="also each peer's own batch API (threads lines)"
    )
    parser.add_argument(
        "--gil", action="store_true", help="also the share of encode_batch outside the kernel"
    )
    parser.add_argument(
        "--stages",
        action="store_true",
        help="also ours stage by stage (scan, probe, merge, output)",
    )
    parser.add_argument("--out", type=Path, help="write the matrix as a markdown table here")
    args = parser.parse_args()
    unknown = [name for name in args.peers if name not in PEERS]
    if unknown:
        parser.error(f"unknown peer {unknown[0]!r}: choose from {', '.join(PEERS)}")
    names = ["tiktoken", *(n for n in args.peers if n != "tiktoken")]  # tiktoken's ids first
    peers = available(names)
    if not peers or peers[0].name != "tiktoken":
        raise SystemExit("tiktoken is needed: every cell's ids are checked against it")

    with open("/proc/loadavg") as f:
        print(f"load average before: {f.read().split()[0]} (2 cores; >2 means shared)")
    corpus = chosen_texts(args)
    with tempfile.TemporaryDirectory(prefix="encode-matrix-") as folder:
        files = rank_files(Path(folder))
        ours_peer = next((p for p in peers if p.name == "ours"), None)
        for name in args.ranks if ours_peer is not None else ():
            warm = ours_peer.build(files[name])  # compile or load our kernels before any timing
            ours_peer.as_list(warm, "warm the kernels, lists too " * 1000)
            ours_peer.as_array(warm, "and arrays")
            del warm  # no tokenizer of ours lives between the timed ones: none shares tables
        results: dict[str, tuple[dict[str, Cell], float]] = {}
        if not args.batch_only:
            print("\nSingle thread; build: CPU s to make an instance from the .tiktoken file"
                  " (excluded from the rates); cold: that new instance's first call; warm: its"
                  " second call on the same text; ids checked against tiktoken's.")  # fmt: skip
            for name in args.ranks:
                for kind, text in corpus.items():
                    size = len(text.encode("utf-8")) / 1e6
                    cells = measure_cell(peers, files[name], text, args.runs)
                    label = f"{name} × {kind}"
                    results[label] = (cells, size)
                    print_cell(label, cells, size)
            if args.out:
                table = markdown(results, [p.name for p in peers])
                args.out.write_text(table, encoding="utf-8")
                print(f"\nmarkdown table written to {args.out}")
        if args.stages:
            import encode_matrix_stages  # noqa: PLC0415

            for name in args.ranks:
                for kind, text in corpus.items():
                    encode_matrix_stages.print_stages(
                        files[name], f"{name} × {kind}", text, args.runs
                    )
        built = tokenizers() if args.batch_ranks else {}
        for name in args.batch_ranks:
            batch_lines(built[name][0], name, corpus, args.runs)
            if args.peer_batch:
                peer_batch_lines(
                    [p for p in peers if p.name != "ours"], files[name], corpus, args.runs
                )
            if args.gil:
                gil_lines(built[name][0], name, corpus, max(args.runs, 5))
    with open("/proc/loadavg") as f:
        print(f"load average after: {f.read().split()[0]}")


if __name__ == "__main__":
    main()
