"""The public Python API: train a tokenizer, load one, use it.

    import workbench
    result = workbench.train(["corpus/"], vocab_size=8000, special_tokens=["<|endoftext|>"])
    result.tokenizer.encode("hello world")      # [31373, 995]-style ids
    result.merges[:2]                           # [(b" ", b"t"), (b"h", b"e")]
    tok = workbench.load("out/")                # any format the workbench reads

Everything else in the package is private. `train` drives the same `RunSession` as the command
line and the window, so the same corpus and settings give the same merges, statistics and
stored rows wherever a run starts.
"""

from __future__ import annotations

import itertools
import os
import sys
from collections.abc import Callable, Iterable, Mapping, Sized
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from workbench import progress_api
from workbench.engine.config import TrainConfig
from workbench.engine.corpus import memory
from workbench.engine.encode.tokenizer import Tokenizer
from workbench.engine.errors import CancelledError, ConfigError
from workbench.engine.events import MergeBatch
from workbench.engine.pretokenize.results import CorpusStats
from workbench.session import startup
from workbench.session.counting import count_documents, count_paths
from workbench.session.interrupts import stop_on_signals
from workbench.session.run import Counted, RunSession
from workbench.session.states import StopReason

Corpus = str | os.PathLike | Iterable[str | os.PathLike]


@dataclass(frozen=True)
class TrainResult:
    """What `train` made: the tokenizer, its merges in order, the corpus statistics, why the
    merge loop stopped, the time per stage, and the run's id in the store (None unrecorded)."""

    tokenizer: Tokenizer
    merges: list[tuple[bytes, bytes]]
    stats: CorpusStats
    stop_reason: StopReason
    timings: dict[str, float]
    run_id: int | None
    # parity-aware runs: {"groups": {name: held-out bytes/token}, "worst": name, "gini": x}
    parity: dict | None = None

    def __repr__(self) -> str:  # the dataclass's would print every merge (hundreds of KB)
        stats = self.stats
        run = f", run {self.run_id}" if self.run_id is not None else ""
        return (
            f"TrainResult({self.tokenizer.vocab_size} tokens, {len(self.merges)} merges, "
            f"{stats.documents} documents, {stats.bytes} bytes, "
            f"stopped: {self.stop_reason.words}{run})"
        )

    def _repr_html_(self) -> str:
        from workbench.notebook_html import train_result_html

        return train_result_html(self)


def train(
    corpus: Corpus,
    vocab_size: int,
    pattern: str = "gpt2",
    special_tokens: Iterable[str] | str = (),
    tie_break: str = "lexicographic",
    min_frequency: int = 0,
    max_token_length: int = 0,
    max_token_chars: int = 0,
    skip_bad_files: bool = False,
    on_merge_batch: Callable[[MergeBatch], None] | None = None,
    db: str | os.PathLike | None = None,
    name: str | None = None,
    progress: bool = True,
    text_column: str = "text",
    superbpe_transition: int = 0,
    parity_by: str | None = None,
    parity_window: int = 0,
    parity_alpha: int = 2,
) -> TrainResult:
    """Train a byte-level BPE tokenizer on `corpus`.

    `corpus` is a path (file or folder: text, `.jsonl`, their `.gz` forms), a list of paths,
    or documents in memory: an iterable of strings, of lists of strings (a batch iterator), a
    `datasets.Dataset` / `IterableDataset` or a pyarrow table or record batch (the text in
    `text_column`, also the column read from Parquet/Arrow files). Each document counts as a
    JSONL record does, on all cores for the preset patterns. A list is read by its first item: a
    `Path` (any `os.PathLike`) or a non-empty, one-line string naming an existing file or folder
    makes it a list of paths, every item of which must then be one; anything else makes it a list
    of documents (an empty string is an empty document, never the current folder; a `Path` among
    documents is refused). Pass `Path` objects to say "path" for sure.
    `special_tokens` is an iterable of strings, or one string for a single special token
    (`special_tokens="<|endoftext|>"` is one special, not thirteen letters).
    `max_token_length`: no merge makes a token longer than this many bytes (0: no cap); training
    ends early (stop reason `max_token_length`) when every pair left would exceed it.
    `max_token_chars`: the same cap in characters of the token's UTF-8 bytes (a character cut
    by a merge counts as one; see `engine.train.char_count`), alone or with the cap in bytes.
    A bad file (binary, not UTF-8, a broken JSONL line) stops training with a `CorpusError`
    naming it, or with `skip_bad_files` is left out and named in `stats.skipped`.
    `db` records the run in that run-store file (None: not recorded). `on_merge_batch` is
    called with each batch of merges as it is made. Ctrl-C stops counting between units of work
    and merging between batches (the run recorded as interrupted), and raises KeyboardInterrupt.
    `progress`: bars for counting and merging (`tqdm.auto`: a widget in Jupyter), drawn only on
    a terminal or in a notebook; False draws none.
    `superbpe_transition=t` trains SuperBPE (Liu et al., 2025): ordinary BPE up to vocab size t,
    then merges that may cross spaces (superwords) up to `vocab_size`; 0 is classic BPE. The
    corpus is read twice (once per stage); see docs/variants.md.
    `parity_by`: parity-aware BPE (Foroutan et al., 2025; `engine.train.parity`): each merge is
    the most frequent pair of the group whose held-out lines (every 10th) compress worst. Groups
    come from files by `"lang"` (a record's `lang` field, else the dominant script), `"folder"`
    or `"script"`; documents in memory may be given as `{group: [texts]}`, else are grouped by
    script. `TrainResult.parity` then holds each group's held-out bytes/token, the worst, and
    their Gini coefficient. `parity_window` W > 0 uses the paper's moving-window variant: a
    group chosen more than `parity_alpha` / groups of the last W merges gives way to the next.
    """
    config = TrainConfig(
        vocab_size=vocab_size,
        pattern=pattern,
        special_tokens=_specials(special_tokens),
        tie_break=tie_break,
        min_frequency=min_frequency,
        max_token_length=max_token_length,
        max_token_chars=max_token_chars,
        text_column=text_column,
        on_bad_file="skip" if skip_bad_files else "stop",
        superbpe_transition=superbpe_transition,
        parity_by=parity_by or "",
        parity_window=parity_window,
        parity_alpha=parity_alpha,
    )
    if isinstance(corpus, str | os.PathLike) and not str(os.fspath(corpus)):
        raise ConfigError(
            "the corpus is an empty path; give a file or folder, or documents in a list"
        )
    # Start-up (compiling kernels on first use, named as it happens) is decided in one place.
    paths = [corpus] if _is_path(corpus) else None
    start = startup.plan_training(paths, config, _startup_report(progress))
    merges_wanted = max(vocab_size - 256 - len(config.special_tokens), 0)
    # Ctrl-C while counting: a flag polled between units (not an exception in a kernel)
    with stop_on_signals() as interrupted:

        def cancel() -> bool:
            return interrupted.is_set

        try:
            counted = _count(corpus, start.count_config, progress, cancel)
        except CancelledError:
            if interrupted.is_set:
                raise KeyboardInterrupt from None
            raise
    with progress_api.bar(merges_wanted, "merges", "merging", progress) as merged:
        listeners = [lambda batch: merged(batch.end_rank)]
        listeners += [on_merge_batch] if on_merge_batch is not None else []
        session = RunSession.start(
            counted, config, db, name=name, listeners=listeners,
            kernels_ready=start.kernels_ready,
        )  # fmt: skip
        with session, stop_on_signals() as interrupted:
            reason = session.advance(should_stop=interrupted.check)
            if reason is StopReason.INTERRUPTED:
                raise KeyboardInterrupt
    from workbench.session.parity import parity_summary

    parity = parity_summary(session.trainer)
    session.release_trainer()  # the run has ended: the tokenizer is built without its arrays
    return TrainResult(
        tokenizer=session.tokenizer(),
        merges=session.merges(),
        stats=counted.stats,
        stop_reason=reason,
        timings=dict(session.timings),
        run_id=session.run_id,
        parity=parity,
    )


def load(path: str | os.PathLike | Any, pattern: str | None = None) -> Tokenizer:
    """A tokenizer from a file or folder: Hugging Face `tokenizer.json`, GPT-2 `vocab.json` +
    `merges.txt`, a tiktoken file, or a minbpe `.model`; or from an object in memory: a
    `tiktoken.Encoding`, a `tokenizers.Tokenizer` or a transformers fast tokenizer (what
    `to_tiktoken`, `to_tokenizers`, `to_transformers` make). `pattern` is used for files that do
    not name one."""
    if isinstance(path, Tokenizer):
        return path
    if not isinstance(path, str | os.PathLike):
        from workbench.engine.formats import handoff

        found = handoff.from_object(path, pattern)
        if found is None:
            raise ConfigError(
                f"cannot load a {type(path).__name__}: give a path, a tiktoken Encoding, a"
                " tokenizers.Tokenizer or a transformers fast tokenizer"
            )
        return found
    from workbench.engine import formats

    # Loading builds the tables with the encoder's kernels: ready (named) before, exact after.
    startup.ensure("encode", [pattern or "gpt2"], _startup_report(True))
    tokenizer = formats.load(path, pattern)
    # Its first encode would compile the encoder in silence: do it now, named (cached after).
    startup.ensure("encode", [tokenizer.pattern], _startup_report(True))
    return tokenizer


def _startup_report(progress: bool) -> startup.Report:
    """Each wait for the compiler through `logging` ("workbench", INFO) and, where progress
    bars are shown, as a line above them."""
    logged = startup.to_log()

    def write(event: startup.StartupEvent) -> None:
        if progress and progress_api.visible():
            from tqdm import tqdm

            tqdm.write(f"workbench: {event.line()}", file=sys.stderr)

    written = startup.seldom(write)  # lines that stay: each stage, a countdown now and then

    def report(event: startup.StartupEvent) -> None:
        logged(event)
        written(event)

    return report


def _specials(special_tokens: Iterable[str] | str) -> tuple[str, ...]:
    """special_tokens as a tuple: "<|endoftext|>" -> ("<|endoftext|>",); ["a", "b"] -> ("a", "b").
    Anything but strings raises TypeError naming the parameter."""
    if isinstance(special_tokens, str):
        return (special_tokens,)
    if isinstance(special_tokens, bytes | bytearray) or not isinstance(special_tokens, Iterable):
        raise TypeError(
            f"special_tokens must be strings (or one string), not {type(special_tokens).__name__}"
        )
    names = tuple(special_tokens)
    for name in names:
        if not isinstance(name, str):
            raise TypeError(f"special_tokens must be strings, not {type(name).__name__}")
    return names


def _count(
    corpus: Corpus,
    config: TrainConfig,
    progress: bool = False,
    cancel: Callable[[], bool] | None = None,
) -> Counted:
    if config.parity_by and isinstance(corpus, Mapping):  # {group: [documents]}
        with progress_api.bar(_grouped_total(corpus), "docs", "counting", progress) as counted:
            return count_documents(corpus, config, counted, cancel)
    if memory.is_table(corpus):  # a Dataset or an arrow table: its rows are the documents
        with progress_api.bar(memory.row_count(corpus), "docs", "counting", progress) as counted:
            return count_documents(corpus, config, counted, cancel)
    if isinstance(corpus, str | os.PathLike):
        with progress_api.bar(None, "B", "counting", progress, scale=True) as counted:
            return count_paths([corpus], config, progress=counted, cancel=cancel)
    if isinstance(corpus, bytes | bytearray) or not isinstance(corpus, Iterable):
        raise TypeError(
            "corpus must be a path, a list of paths or an iterable of str documents, "
            f"not {type(corpus).__name__}"
        )
    items = iter(corpus)
    first = next(items, None)
    if first is None:
        raise ConfigError("the corpus is empty: give paths or documents")
    rest = itertools.chain([first], items)
    if _is_path(first):
        paths = list(rest)
        stray = next((p for p in paths if not _is_path(p)), None)
        if stray is not None:
            raise ConfigError(
                f"the corpus mixes paths and documents ({str(stray)[:40]!r} is not a file or"
                " folder); give one or the other"
            )
        with progress_api.bar(None, "B", "counting", progress, scale=True) as counted:
            return count_paths(paths, config, progress=counted, cancel=cancel)
    # a list of strings is that many documents; a list of batches holds an unknown number
    total = len(corpus) if isinstance(corpus, Sized) and isinstance(first, str) else None
    documents: Iterable[object] = _documents(rest)
    if config.superbpe_transition and isinstance(corpus, list | tuple):
        documents = list(documents)  # SuperBPE reads them twice (references only: no copy)
    with progress_api.bar(total, "docs", "counting", progress) as counted:
        return count_documents(documents, config, counted, cancel)


def _grouped_total(grouped: Mapping) -> int | None:
    """The documents of {group: documents} (a string is one), None when a group's are not
    counted ahead (an iterator)."""
    total = 0
    for texts in grouped.values():
        if not isinstance(texts, Sized):
            return None
        total += 1 if isinstance(texts, str) else len(texts)
    return total


def _documents(items: Iterable[object]) -> Iterable[object]:
    """The documents, refusing a path among them (a list is paths or documents, not both)."""
    for item in items:
        if isinstance(item, os.PathLike):
            raise ConfigError(
                f"the corpus mixes paths and documents ({str(item)[:40]!r} is a path after a "
                "document); give one or the other"
            )
        yield item


def _is_path(item: object) -> bool:
    """A PathLike, or a non-empty one-line str naming an existing file or folder ("" would
    name the current folder: it is an empty document instead)."""
    if isinstance(item, os.PathLike):
        return True
    if not isinstance(item, str) or not item or "\n" in item or "\0" in item:
        return False
    try:
        return Path(item).exists()
    except OSError:  # a name too long to be a path: a document
        return False
