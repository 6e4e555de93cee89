"""Loading gpt2, cl100k and o200k from each file format we read: CPU seconds to a usable tokenizer.

Each set of ranks (gpt2 from ../shared/corpora, cl100k and o200k from the `bpe_openai` wheel of
the bench extra) is exported once into a temporary folder as a `.tiktoken` file, a tokenizer.json
and a vocab.json + merges.txt pair; then each file is loaded with `formats.load` (read, checked,
the tokenizer made; its tables are built on first use and timed apart as "tables"), median of
`--runs`, a new load each time, no tokenizer of the same ranks alive (it would share its
tables). Where Hugging Face `tokenizers` is installed, its `Tokenizer.from_file` of the same
tokenizer.json is timed beside ours.

    python benchmarks/load_formats.py [--runs 5] [--only o200k]
"""

from __future__ import annotations

import argparse
import gc
import statistics
import tempfile
import time
from pathlib import Path

from encode_matrix import tokenizers

from workbench.engine import formats
from workbench.engine.formats import gpt2_files, hf_json, tiktoken_file


def _cpu(call) -> tuple[float, object]:
    gc.collect()
    start = time.process_time()
    made = call()
    return time.process_time() - start, made


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--only", nargs="*", default=["gpt2", "cl100k", "o200k"])
    args = parser.parse_args()
    try:
        from tokenizers import Tokenizer as HFTokenizer  # noqa: PLC0415 -- optional
    except ImportError:
        HFTokenizer = None  # noqa: N806
    print(f"CPU seconds, median of {args.runs}; 'tables': the first encode's table build")
    with tempfile.TemporaryDirectory() as folder:
        out = Path(folder)
        written: dict[str, dict[str, Path]] = {}
        for name, (tok, _, _) in tokenizers().items():
            if name in args.only:
                written[name] = {
                    ".tiktoken": tiktoken_file.export(tok, out / name / "tiktoken")[0],
                    "tokenizer.json": hf_json.export(tok, out / name / "hf")[0],
                    "vocab.json + merges.txt": gpt2_files.export(tok, out / name / "gpt2")[0],
                }
        del tok  # the loop's last: no tokenizer of these ranks left alive to share tables
        gc.collect()
        for name, files in written.items():
            for kind, path in files.items():
                times, tables = [], []
                for _ in range(args.runs):
                    seconds, loaded = _cpu(lambda p=path: formats.load(p))
                    times.append(seconds)
                    tables.append(_cpu(lambda t=loaded: t.encode("warm up the tables"))[0])
                    del loaded
                line = f"{name:7} {kind:24} load {statistics.median(times):6.3f} s"
                print(line + f"   tables {statistics.median(tables):6.3f} s", flush=True)
            if HFTokenizer is not None:
                hf_file = str(files["tokenizer.json"])
                hf = [_cpu(lambda f=hf_file: HFTokenizer.from_file(f))[0] for _ in range(args.runs)]
                print(f"{name:7} {'tokenizer.json (HF)':24} load {statistics.median(hf):6.3f} s")


if __name__ == "__main__":
    main()
