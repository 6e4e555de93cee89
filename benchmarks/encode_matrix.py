"""Hand-run benchmark: single-thread encoding, ranks (gpt2, cl100k, o200k) x text (English docs,
multilingual, C code), against tiktoken and riptoken in the same process, identical ids checked;
then `Tokenizer.encode_batch` (lists) and `encode_batch_arrays` on one and two threads, each text
cut into 64 KB documents: a fresh tokenizer's first call, and later calls (warm piece caches).

Single-thread cells are CPU seconds of the calling thread (`time.thread_time`: all three encode
on it), so other work on a shared machine inflates them less than wall time; the batch lines are
wall time, the only measure of threads, with the process's CPU time beside it. Two threads can
only be timed on an idle machine: Linux's autogroup scheduling gives a busy machine's process
one share of the CPUs however many threads it runs; each line ends with the cores other
processes used meanwhile (0.0 for a fair figure). Every run of ours uses a fresh tokenizer sharing the
tables: the piece cache a tokenizer keeps between calls would otherwise remember the text.

Run `python benchmarks/encode_matrix.py [--data /work/bench-data] [--mb 8] [--runs 3]`; add
`--batch-only` for the threads lines alone, `--batch-ranks gpt2 cl100k o200k` for more ranks,
`--gil` for the share of a one-thread call spent outside the kernel (holding the GIL), `--text
A.txt B.txt` to measure your own UTF-8 files instead of the assembled texts.
Texts are assembled on first use into `--data` (outside the repository, never committed) from
what a Debian machine has: English from /usr/share/doc, multilingual from the ja/ko/zh/it/ru
manual pages in /usr/share/man, C from the headers in /usr/include. GPT-2's ranks come from
`$BPE_WORKBENCH_GPT2` (or the corpora folder's gpt2_vocab.json + gpt2_merges.txt); cl100k and
o200k from the `bpe-openai` wheel, which ships them (the `bench` extra installs it).
"""

from __future__ import annotations

import argparse
import base64
import gzip
import os
import resource
import statistics
import time
from pathlib import Path

import numpy as np
from _paths import corpora  # noqa: E402
from workbench.engine._native import id_lists
from workbench.engine.encode.tokenizer import Tokenizer
from workbench.engine.patterns.regexes import CL100K, GPT2, O200K

from workbench.bench.train import make_corpus
from workbench.engine import formats

try:
    from workbench.engine._native import utf8_text
except ImportError:  # an older checkout, measured for comparison
    utf8_text = None

_LANGUAGES = ("ja", "ko", "zh_CN", "zh_TW", "it", "ru")


def _gather(out: Path, megabytes: float, files) -> None:
    budget = int(megabytes * 1e6)
    parts, size = [], 0
    for path in files:
        try:
            data = gzip.decompress(path.read_bytes()) if path.suffix == ".gz" else path.read_bytes()
            data.decode("utf-8")
        except (OSError, EOFError, gzip.BadGzipFile, UnicodeDecodeError):
            continue
        parts.append(data)
        size += len(data)
        if size >= budget:
            break
    blob = b"\n".join(parts)
    if not blob:
        raise SystemExit(f"no text found for {out.name}")
    out.write_bytes((blob * (budget // len(blob) + 1))[:budget].rsplit(b"\n", 1)[0])


def texts(data: Path, megabytes: float) -> dict[str, str]:
    """English docs, multilingual and C code, about `megabytes` MB each (made once, then read)."""
    data.mkdir(parents=True, exist_ok=True)
    paths = {
        "English docs": data / f"en-{megabytes:g}.txt",
        "multilingual": data / f"multi-{megabytes:g}.txt",
        "C code": data / f"c-{megabytes:g}.txt",
    }
    if not paths["English docs"].exists():
        make_corpus(paths["English docs"], megabytes, [Path("/usr/share/doc")])
    if not paths["multilingual"].exists():
        man = Path("/usr/share/man")
        files = sorted(p for lang in _LANGUAGES for p in (man / lang).rglob("*") if p.is_file())
        _gather(paths["multilingual"], megabytes, files)
    if not paths["C code"].exists():
        _gather(paths["C code"], megabytes, sorted(Path("/usr/include").rglob("*.h")))
    return {name: path.read_text(encoding="utf-8") for name, path in paths.items()}


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
            for _ in range(runs + 1):
                for threads, tok in enumerate(pair, start=1):
                    result = None  # freed outside the timing
                    wall, cpu = time.perf_counter(), _cpu()
                    result = getattr(tok, method)(docs, num_threads=threads, allowed_special="none")
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
    `_tally` and `_fill_items` and the texts' `_utf8_into`): what two threads cannot share. Thread CPU, median of `runs` warm
    calls, each text in 64 KB documents."""
    kernel_time = [0.0]
    scan = Tokenizer._scan_segments
    free_of_gil = [(id_lists, "_tally"), (id_lists, "_fill_items"), (utf8_text, "_utf8_into")]
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


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--data", type=Path, default=Path("/work/bench-data"))
    parser.add_argument("--mb", type=float, default=8.0)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument(
        "--batch-ranks", nargs="*", default=["gpt2"], help="ranks for the threads lines"
    )
    parser.add_argument("--batch-only", action="store_true", help="skip the one-thread matrix")
    parser.add_argument(
        "--gil", action="store_true", help="also the share of encode_batch outside the kernel"
    )
    parser.add_argument(
        "--text",
        type=Path,
        nargs="+",
        help="UTF-8 text files to measure instead of the assembled texts (each as it is)",
    )
    args = parser.parse_args()
    import riptoken  # noqa: PLC0415
    import tiktoken  # noqa: PLC0415

    with open("/proc/loadavg") as f:
        print(f"load average before: {f.read().split()[0]} (2 cores; >2 means shared)")
    if args.text:
        corpus = {path.stem: path.read_text("utf-8") for path in args.text}
    else:
        corpus = texts(args.data, args.mb)
    print(f"{'ranks x text':28}{'ours':>9}{'tiktoken':>10}{'riptoken':>10}"
          f"{'ours/tt':>9}{'ours/rip':>9}  same ids   (MB per CPU second, one thread)")  # fmt: skip
    for name, (ours, ranks, pattern) in [] if args.batch_only else tokenizers().items():
        enc = tiktoken.Encoding(name, pat_str=pattern, mergeable_ranks=ranks, special_tokens={})
        rip = riptoken.CoreBPE(ranks, {}, pattern)
        ours.encode("warm up the kernels")
        for kind, text in corpus.items():
            ours_rate, ours_ids = rate(
                lambda t: ours.with_splitter("auto").encode(t, "none"),  # noqa: B023
                text,
                args.runs,
            )
            tt_rate, tt_ids = rate(enc.encode_ordinary, text, args.runs)
            rip_rate, rip_ids = rate(rip.encode_ordinary, text, args.runs)
            same = np.array_equal(ours_ids, tt_ids) and np.array_equal(ours_ids, rip_ids)
            print(
                f"{name + ' x ' + kind:28}{ours_rate:9.1f}{tt_rate:10.1f}{rip_rate:10.1f}"
                f"{ours_rate / tt_rate:8.2f}x{ours_rate / rip_rate:8.2f}x  {'yes' if same else 'NO'}"
            )
    built = tokenizers() if args.batch_ranks else {}
    for name in args.batch_ranks:
        batch_lines(built[name][0], name, corpus, args.runs)
        if args.gil:
            gil_lines(built[name][0], name, corpus, max(args.runs, 5))
    with open("/proc/loadavg") as f:
        print(f"load average after: {f.read().split()[0]}")


if __name__ == "__main__":
    main()
