"""Hand-run benchmark: `evaluate` on 10 MB of held-out text with 5 tokenizers, against tiktoken
encoding the same documents with the same 5 tokenizers.

    python benchmarks/evaluate.py [--text FILE] [--mb 10] [--threads 2] [--runs 3]

The text (default: about `--mb` MB of real text from /usr/share/doc, as `bpe-workbench bench
--make-corpus` assembles it) is cut into documents of about 10 KB at line ends. The tokenizers:
gpt2 (the shared corpora's files, via a temporary tiktoken cache), cl100k and o200k (the
bpe-openai wheel), and two tokenizers trained here on other text (vocab 8,000 and 32,000,
exported as .tiktoken so tiktoken reads the same ranks). Ours: one `evaluate()` call (every
metric, grouping by nothing), threads over documents. tiktoken: `encode_batch(docs,
allowed_special="all", num_threads=T)` per tokenizer, and a plain loop of `encode` (one
thread). Each is the median of `--runs`. Token totals are compared: they must be equal.
Loading the tokenizers is timed apart (it is the same whatever the text's size).
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

from _paths import corpora  # noqa: E402


def documents(text: str, size: int = 10_000) -> list[str]:
    docs, start = [], 0
    while start < len(text):
        end = text.find("\n", start + size)
        end = len(text) if end < 0 else end + 1
        docs.append(text[start:end])
        start = end
    return docs


def median(step, runs: int) -> tuple[float, object]:
    times, out = [], None
    for _ in range(runs):
        start = time.perf_counter()
        out = step()
        times.append(time.perf_counter() - start)
    return statistics.median(times), out


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--text", type=Path, default=None)
    parser.add_argument("--mb", type=float, default=10.0)
    parser.add_argument("--threads", type=int, default=os.cpu_count() or 1)
    parser.add_argument("--runs", type=int, default=3)
    args = parser.parse_args()

    import tiktoken

    from workbench.bench.train import make_corpus
    from workbench.cli import main as cli
    from workbench.evaluate.references import seed_gpt2_cache
    from workbench.evaluate.run import Options, evaluate
    from workbench.evaluate.specs import resolve
    from workbench.evaluate.texts import Doc

    work = Path(tempfile.mkdtemp(prefix="bench-eval-"))
    source = args.text
    if source is None:
        source = work / "doc.txt"
        make_corpus(source, args.mb * 1.6, [Path("/usr/share/doc")])
    raw = source.read_text("utf-8", errors="replace")
    budget = int(args.mb * 1e6)
    held = raw[:budget]
    train = raw[budget : budget + 4_000_000] or (corpora() / "tinyshakespeare.txt").read_text()
    (work / "train.txt").write_text(train, "utf-8")
    cache = work / "cache"
    cache.mkdir()
    seed_gpt2_cache(corpora() / "gpt2_vocab.json", corpora() / "gpt2_merges.txt", cache)
    os.environ["TIKTOKEN_CACHE_DIR"] = str(cache)
    specs = ["gpt2", "cl100k", "o200k"]
    for size in (8000, 32000):
        out = work / f"t{size}"
        assert cli(["train", str(work / "train.txt"), "--vocab-size", str(size), "--out",
                    str(out), "--no-db", "--quiet", "--format", "tiktoken"]) == 0  # fmt: skip
        specs.append(str(out / "tokenizer.tiktoken"))

    start = time.perf_counter()
    candidates = [resolve(s) for s in specs]
    load_ours = time.perf_counter() - start
    start = time.perf_counter()
    encodings = []
    for cand in candidates:
        tok = cand.tokenizer
        ranks = {tok.vocab[t]: t for t in tok.vocab}
        encodings.append(tiktoken.Encoding(cand.name, pat_str=tok.pattern, mergeable_ranks=ranks,
                                           special_tokens=tok.special_tokens))  # fmt: skip
    load_theirs = time.perf_counter() - start

    texts = documents(held)
    docs = [Doc(t, "all") for t in texts]
    size_mb = sum(len(t.encode()) for t in texts) / 1e6
    for cand in candidates:  # warm the kernels (JIT cache load) outside the timing
        cand.tokenizer.encode(texts[0])
    options = Options(threads=args.threads)
    ours, result = median(lambda: evaluate(candidates, docs, options), args.runs)

    def batch():
        return [sum(map(len, e.encode_batch(texts, allowed_special="all",
                                            num_threads=args.threads))) for e in encodings]  # fmt: skip

    def loop():
        return [sum(len(e.encode(t, allowed_special="all")) for t in texts) for e in encodings]

    theirs_batch, totals = median(batch, args.runs)
    theirs_loop, _ = median(loop, args.runs)
    same = [r["total"]["tokens"] for r in result["tokenizers"]] == totals
    print(f"text: {size_mb:.1f} MB in {len(texts):,} documents; tokenizers: {', '.join(specs)}")
    print(f"threads: {args.threads}; medians of {args.runs} runs; token totals equal: {same}")
    print(f"{'evaluate() (all metrics)':<40} {ours:7.2f} s")
    print(f"{'tiktoken encode_batch x5':<40} {theirs_batch:7.2f} s   ours/theirs {ours / theirs_batch:.2f}")  # fmt: skip
    print(f"{'tiktoken encode loop x5 (one thread)':<40} {theirs_loop:7.2f} s   ours/theirs {ours / theirs_loop:.2f}")  # fmt: skip
    print(f"loading the 5 tokenizers: ours {load_ours:.1f} s, tiktoken Encoding from the ranks {load_theirs:.1f} s")  # fmt: skip
    return 0 if same else 1


if __name__ == "__main__":
    sys.exit(main())
