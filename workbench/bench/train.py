"""Training against the peers, each in its own process, on the same corpus in the same run.

Wall time is measured around the whole process (start-up and imports included) and peak memory
is the process's max RSS from `wait4`, so every trainer pays the same overheads. The workbench
runs once unmeasured first so Numba's on-disk cache is warm, as it is for a user's second run.
"""

from __future__ import annotations

import gzip
import importlib.util
import sys
import tempfile
from pathlib import Path

from workbench.bench import Measurement, run_measured
from workbench.engine.patterns.regexes import GPT2

_HF = """
import sys
from tokenizers import Tokenizer, models, pre_tokenizers, trainers
tok = Tokenizer(models.BPE())
tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
trainer = trainers.BpeTrainer(vocab_size=int(sys.argv[2]), show_progress=False,
                              initial_alphabet=pre_tokenizers.ByteLevel.alphabet())
tok.train([sys.argv[1]], trainer)
"""

_RUSTBPE = """
import sys, rustbpe
tok = rustbpe.Tokenizer()
with open(sys.argv[1], encoding="utf-8") as f:
    tok.train_from_iterator(f, int(sys.argv[2]), pattern=sys.argv[3])
"""

_FFBPE = """
import sys, ffbpe
counter = ffbpe.PreTokenizer([], pat_str=sys.argv[3]).word_counter()
with open(sys.argv[1], encoding="utf-8") as f:
    counter.add_source(f)
trainer = ffbpe.BpeTrainer([], unit="byte")
trainer.add_word_counter(counter)
trainer.train(int(sys.argv[2]))
"""


def train_commands(path: Path, vocab_size: int, out: Path) -> dict[str, list[str]]:
    """The command of each trainer that is installed, the workbench first."""
    commands = {
        "bpe-workbench": [
            sys.executable,
            "-m",
            "workbench",
            "train",
            str(path),
            "--vocab-size",
            str(vocab_size),
            "--out",
            str(out),
            "--no-db",
            "--quiet",
        ],  # fmt: skip
    }
    if importlib.util.find_spec("tokenizers"):
        commands["hf tokenizers"] = [sys.executable, "-c", _HF, str(path), str(vocab_size)]
    if importlib.util.find_spec("rustbpe"):
        commands["rustbpe"] = [
            sys.executable, "-c", _RUSTBPE, str(path), str(vocab_size), GPT2,
        ]  # fmt: skip
    if importlib.util.find_spec("ffbpe"):
        commands["ffbpe"] = [sys.executable, "-c", _FFBPE, str(path), str(vocab_size), GPT2]
    return commands


PEERS = ("hf tokenizers", "rustbpe", "ffbpe")


def bench_train(
    path: Path, vocab_size: int, repeat: int = 3, peers: tuple[str, ...] = PEERS
) -> list[Measurement]:
    """Median wall time and peak memory of each trainer (the workbench and `peers` that are
    installed), run interleaved `repeat` times in processes of their own."""
    with tempfile.TemporaryDirectory() as tmp:
        commands = {
            name: argv
            for name, argv in train_commands(path, vocab_size, Path(tmp)).items()
            if name == "bpe-workbench" or name in peers
        }
        run_measured(commands["bpe-workbench"])  # warm Numba's cache; not counted
        results = {name: Measurement(name, [], 0.0) for name in commands}
        for _ in range(repeat):  # interleaved, so drifts in machine load hit every peer alike
            for name, argv in commands.items():
                seconds, peak = run_measured(argv)
                results[name].seconds.append(seconds)
                results[name].peak_mb = max(results[name].peak_mb, peak)
    return list(results.values())


def format_table(results: list[Measurement], title: str) -> str:
    ours = results[0]
    lines = [title, f"{'trainer':<16}{'median s':>10}{'peak MB':>10}{'time ratio':>12}"]
    for r in results:
        ratio = r.median / ours.median
        lines.append(f"{r.name:<16}{r.median:>10.2f}{r.peak_mb:>10.0f}{ratio:>11.2f}x")
    lines.append("time ratio = peer's median wall time / the workbench's (above 1: we are faster)")
    return "\n".join(lines)


def make_corpus(out: Path, megabytes: float, sources: list[Path]) -> int:
    """Assemble real text from the given folders (plain and .gz text files, binaries skipped)
    into one file of about `megabytes` MB. Returns the bytes written."""
    budget = int(megabytes * 1_000_000)
    written = 0
    with open(out, "wb") as sink:
        for source in sources:
            for path in sorted(p for p in source.rglob("*") if p.is_file()):
                if written >= budget:
                    return written
                data = _read_text_bytes(path)
                if data:
                    sink.write(data + b"\n")
                    written += len(data) + 1
    return written


def _read_text_bytes(path: Path) -> bytes | None:
    try:
        data = gzip.decompress(path.read_bytes()) if path.suffix == ".gz" else path.read_bytes()
    except (OSError, EOFError, gzip.BadGzipFile):
        return None
    if b"\0" in data[:4096] or path.suffix in (".html", ".htm", ".png", ".svg", ".js", ".css"):
        return None
    try:
        data.decode("utf-8")
    except UnicodeDecodeError:
        return None
    return data
