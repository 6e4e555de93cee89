"""One evaluation from start to end, shared by `bpe-workbench eval` and the Evaluate tab.

`evaluate(candidates, docs, options, progress, cancel)` reads the documents once in batches,
encodes each batch with every tokenizer in a thread pool (the Numba kernels release the GIL),
counts per group, then adds what was asked: compression curves, token health. It returns one
JSON-ready dict (`report.py` writes it out) and raises `CancelledError` when `cancel` is set.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Callable, Iterable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from workbench.engine.batching import runs_of
from workbench.engine.corpus import fingerprint, list_files
from workbench.engine.encode.tokenizer import Tokenizer
from workbench.engine.errors import CancelledError, CorpusError, WorkbenchError
from workbench.evaluate import curves, health, metrics
from workbench.evaluate import plan as planner
from workbench.evaluate.prefix_counts import tokens_at_every_k
from workbench.evaluate.specs import Candidate
from workbench.evaluate.texts import Doc, batches, iter_docs

Progress = Callable[[str, float], None]  # (what is happening, fraction done or -1)
CHUNK_CHARS = 1 << 19  # documents per thread task: about 512 K characters


@dataclass
class Options:
    health: bool = False
    rare_below: int = 5
    residue_ratio: float = 0.05
    residue_min_count: int = 100
    training_corpus: bool = True  # health: also encode a run's training corpus if it is there
    curves: bool = False
    curve_points: int = 24
    curve_max_chars: int = 32 << 20  # curves re-encode the text many times: cap what they use
    plan: planner.ServingModel | None = None  # the vocabulary-size planner's model, when asked
    plan_points: int = 48
    threads: int | None = None
    total_chars: int | None = None  # for progress, when the caller knows it


class _Job:
    """The pool, the cancel flag and the progress callback of one evaluation."""

    def __init__(self, options: Options, progress: Progress | None, cancel: threading.Event | None):
        self.options = options
        self.progress = progress or (lambda _what, _done: None)
        self.cancel = cancel or threading.Event()
        self.pool = ThreadPoolExecutor(max(1, options.threads or os.cpu_count() or 1))

    def check(self) -> None:
        if self.cancel.is_set():
            raise CancelledError("evaluation cancelled")

    def count(
        self, tok: Tokenizer, id_space: int, docs: Sequence[Doc]
    ) -> dict[str, tuple[int, np.ndarray]]:
        """{group: (tokens, emitted counts by id)} of `docs`, encoded in the pool."""
        chunks = runs_of(docs, lambda doc: len(doc.text), CHUNK_CHARS)

        def work(chunk: list[Doc]) -> dict[str, tuple[int, np.ndarray]]:
            if self.cancel.is_set():
                return {}
            found: dict[str, list[np.ndarray]] = {}
            for doc in chunk:
                found.setdefault(doc.group, []).append(tok.encode_array(doc.text, "all"))
            out = {}
            for group, parts in found.items():
                ids = np.concatenate(parts) if len(parts) > 1 else parts[0]
                out[group] = (int(ids.shape[0]), np.bincount(ids, minlength=id_space))
            return out

        merged: dict[str, tuple[int, np.ndarray]] = {}
        for part in self.pool.map(work, chunks):
            for group, (n, counts) in part.items():
                if group in merged:
                    merged[group] = (merged[group][0] + n, merged[group][1] + counts)
                else:
                    merged[group] = (n, counts)
        self.check()
        return merged

    def measure(self, texts: Sequence[str], total_bytes: int) -> curves.Measure:
        def bytes_per_token(tok: Tokenizer) -> float:
            self.check()
            tokens = sum(self.pool.map(lambda t: int(tok.encode_array(t, "all").shape[0]), texts))
            return total_bytes / tokens if tokens else 0.0

        return bytes_per_token


def evaluate(
    candidates: Sequence[Candidate],
    docs: Iterable[Doc],
    options: Options | None = None,
    progress: Progress | None = None,
    cancel: threading.Event | None = None,
) -> dict:
    """Metrics per tokenizer and group, plus curves and health when `options` ask for them."""
    options = options or Options()
    job = _Job(options, progress, cancel)
    try:
        return _evaluate(list(candidates), docs, job)
    finally:
        job.pool.shutdown(wait=True, cancel_futures=True)


def _evaluate(candidates: list[Candidate], docs: Iterable[Doc], job: _Job) -> dict:
    options = job.options
    if not candidates:
        raise ValueError("no tokenizer to evaluate")
    spaces = [c.id_space for c in candidates]
    texts: dict[str, metrics.TextCounts] = {}
    tallies: list[dict[str, metrics.TokenTally]] = [{} for _ in candidates]
    kept: list[str] = []  # the text the curves use
    kept_chars = 0
    done_chars = 0
    for batch in batches(docs):
        job.check()
        for doc in batch:
            texts.setdefault(doc.group, metrics.TextCounts()).add(doc.text)
            if (options.curves or options.plan) and kept_chars < options.curve_max_chars:
                kept.append(doc.text)
                kept_chars += len(doc.text)
        for i, cand in enumerate(candidates):
            job.progress(f"encoding with {cand.label}", _fraction(done_chars, options))
            for group, (n, counts) in job.count(cand.tokenizer, spaces[i], batch).items():
                tallies[i].setdefault(group, metrics.TokenTally(spaces[i])).add(n, counts)
        done_chars += sum(len(d.text) for d in batch)
    if not texts and not options.health:
        raise WorkbenchError("the text to evaluate on holds no documents")

    group_names = list(texts)
    rows: list[dict] = []
    total_text = metrics.TextCounts()
    for counts in texts.values():
        total_text.documents += counts.documents
        total_text.bytes += counts.bytes
        total_text.chars += counts.chars
        total_text.words += counts.words
    for i, cand in enumerate(candidates):
        groups = []
        total = metrics.TokenTally(spaces[i])
        for name in group_names:
            tally = tallies[i].get(name) or metrics.TokenTally(spaces[i])
            groups.append(metrics.group_figures(name, texts[name], tally, cand.vocab_size))
            total.add(tally.tokens, tally.emitted)
        rows.append(
            {
                "name": cand.name,
                "label": cand.label,
                "kind": cand.kind,
                "run_id": cand.run_id,
                "vocab_size": cand.vocab_size,
                "merges": cand.merge_count,
                "groups": groups,
                "total": metrics.group_figures("total", total_text, total, cand.vocab_size)
                if texts
                else None,
                "parity": metrics.parity(groups),
                "_emitted": total.emitted,  # for health; dropped from the JSON by report
            }
        )
    if texts:
        metrics.mark_ratio_to_best(rows)
    result: dict = {"tokenizers": rows, "group_names": group_names}
    if options.curves:
        result["curves"] = _curves(candidates, rows, kept, job)
    if options.plan is not None:
        result["plan"] = _plan(candidates, kept, job)
    if options.health:
        result["health"] = {
            cand.name: _health(cand, row["_emitted"] if texts else None, job)
            for cand, row in zip(candidates, rows, strict=True)
        }
    return result


def _fraction(done: int, options: Options) -> float:
    return min(1.0, done / options.total_chars) if options.total_chars else -1.0


def _curves(candidates: list[Candidate], rows: list[dict], kept: list[str], job: _Job) -> dict:
    """Curves of every tokenizer with merges to cut; references as flat lines."""
    kept_bytes = sum(len(t.encode("utf-8", "surrogatepass")) for t in kept)
    measure = job.measure(kept, kept_bytes)
    out: dict = {"chars": sum(map(len, kept)), "bytes": kept_bytes, "runs": [], "references": []}
    flat = {c.name: measure(c.tokenizer) for c in candidates if c.kind == "reference"}
    for name, value in flat.items():
        size = next(r["vocab_size"] for r in rows if r["name"] == name)
        out["references"].append({"name": name, "vocab_size": size, "bytes_per_token": value})
    for cand in candidates:
        if cand.kind == "reference":
            continue
        tok = cand.tokenizer
        job.progress(f"compression curve of {cand.label}", -1.0)
        grid = curves.log_grid(len(tok.merges), job.options.curve_points)
        points = curves.curve(tok, grid, measure, job.cancel.is_set)
        job.check()
        entry = {
            "name": cand.name,
            "label": cand.label,
            "k": [k for k, _ in points],
            "vocab_size": [k + 256 + len(tok.special_tokens) for k, _ in points],
            "bytes_per_token": [v for _, v in points],
            "k_within_1pct": curves.within_of_final(tok, points, measure),
            "k_matching": {
                name: curves.first_k_reaching(tok, points, value, measure)
                for name, value in flat.items()
            },
        }
        out["runs"].append(entry)
    return out


def _plan(candidates: list[Candidate], kept: list[str], job: _Job) -> dict:
    """The planner over each tokenizer's prefixes (a reference: its full vocabulary only)."""
    model = job.options.plan
    assert model is not None
    kept_bytes = sum(len(t.encode("utf-8", "surrogatepass")) for t in kept)
    measure = job.measure(kept, kept_bytes)
    out: dict = {"model": model.to_json(), "chars": sum(map(len, kept)), "bytes": kept_bytes}
    plans = []
    for cand in candidates:
        job.progress(f"planning the vocabulary size of {cand.label}", -1.0)
        tok = cand.tokenizer
        if cand.kind == "reference":  # a yardstick at its own size: no prefixes
            entry = planner.plan_whole(tok, model, measure)
        elif tok.splitter != "custom":  # pieces as `regex` cuts them: every k exactly
            tokens = tokens_at_every_k(tok, kept, job.cancel.is_set)
            entry = planner.plan_every_k(tok, model, tokens, kept_bytes, job.options.plan_points)
        else:
            entry = planner.plan_tokenizer(
                tok, model, measure, job.options.plan_points, job.cancel.is_set
            )
        job.check()
        plans.append({"name": cand.name, "label": cand.label, "kind": cand.kind, **entry})
    out["tokenizers"] = plans
    best = planner.cheapest(plans)
    out["cheapest"] = None if best is None else plans[best]["name"]
    return out


def _health(cand: Candidate, emitted: np.ndarray | None, job: _Job) -> dict:
    """The health lists of one tokenizer; `emitted`: its counts on the given text (None: none
    given, then the emitted-count lists come from the training corpus alone, if there)."""
    options = job.options
    tok = cand.tokenizer
    job.progress(f"token health of {cand.label}", -1.0)
    out: dict = {
        "unreachable": health.unreachable(tok),
        "never_completes": health.never_completes(tok),
        "rare_below": options.rare_below,
    }
    if emitted is not None:
        out["never_emitted"] = health.never_emitted(tok, emitted)
        out["rare"] = health.rare(tok, emitted, options.rare_below)
    basis, counted = "given text", emitted
    training, why_not = _training_counts(cand, job) if options.training_corpus else (None, None)
    if why_not:
        out["training_corpus"] = why_not
    if training is not None:
        basis, counted = "training corpus", training
        out["never_emitted_training"] = health.never_emitted(tok, counted)
        if emitted is None:
            out["rare"] = health.rare(tok, counted, options.rare_below)
    out["emitted_on"] = basis if counted is not None else "no text"
    if cand.merge_counts is not None and counted is not None:
        out["residues"] = health.residues(
            tok, cand.merge_counts, counted, options.residue_ratio, options.residue_min_count
        )
        out["residue_ratio"] = options.residue_ratio
        out["residue_min_count"] = options.residue_min_count
    return out


def _training_counts(cand: Candidate, job: _Job) -> tuple[np.ndarray | None, str | None]:
    """Emitted counts of `cand` on its training corpus, or (None, why not) when it is gone,
    changed since the run or unreadable (then the given text stands in)."""
    if not cand.corpus_paths:
        return None, None
    if not all(Path(p).exists() for p in cand.corpus_paths):
        return None, "not found where the run read it"
    files = list_files(cand.corpus_paths)
    if cand.corpus_fingerprint and fingerprint(files) != cand.corpus_fingerprint:
        return None, "changed since the run: not used"
    job.progress(f"encoding the training corpus of {cand.label}", -1.0)
    space = cand.id_space
    counted = np.zeros(space, dtype=np.int64)
    try:
        for batch in batches(iter_docs(cand.corpus_paths)):
            for _n, counts in job.count(cand.tokenizer, space, batch).values():
                counted += counts[:space]
    except CorpusError as exc:
        return None, f"unreadable ({exc}): not used"
    return counted, None
