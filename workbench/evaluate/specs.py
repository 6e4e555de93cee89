"""What `--tokenizer` names: a stored run (`run:ID`, `run:ID@k` for its first k merges), every
run of a sweep (`sweep:ID`, as `train --vocab-size A,B,…` tags them), a tokenizer file or
folder (`workbench.engine.formats.load`), or `gpt2`/`cl100k`/`o200k`.

A run's tokenizer comes from the one "stored run -> tokenizer" helper, and keeps the run's
merge counts for token health; `@k` is `Tokenizer.prefix(k)` (no retraining).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from workbench.engine import formats
from workbench.engine.encode.tokenizer import Tokenizer
from workbench.engine.errors import ConfigError, WorkbenchError
from workbench.engine.python_encoder import PythonEncoder
from workbench.evaluate import references

_RUN = re.compile(r"run:(\d+)(?:@(\d+))?$")
_SWEEP = "sweep:"


@dataclass
class Candidate:
    """One tokenizer under evaluation and where it came from."""

    name: str  # as the user wrote it: `run:3@8000`, `gpt2`, `out/tokenizer.json`
    label: str  # for people: `run 3 “wiki” @ 8,000 merges`
    tokenizer: Tokenizer | PythonEncoder  # Python: a reference while its encoder compiles
    kind: str  # run | file | reference
    run_id: int | None = None
    merge_counts: np.ndarray | None = None  # runs only: pair count at each merge, by rank
    corpus_paths: list[str] = field(default_factory=list)  # runs only: what it was trained on
    corpus_fingerprint: str | None = None  # runs only: the corpus as it was then

    @property
    def vocab_size(self) -> int:
        return self.tokenizer.vocab_size

    @property
    def merge_count(self) -> int:
        tok = self.tokenizer
        return tok.merge_count if isinstance(tok, PythonEncoder) else len(tok.merges)

    @property
    def id_space(self) -> int:
        """One more than the largest id it can emit (for counting by id)."""
        ids = list(self.tokenizer.vocab) + list(self.tokenizer.special_tokens.values())
        return max(ids) + 1


def parse_run(spec: str) -> tuple[int, int | None] | None:
    """`run:3` -> (3, None), `run:3@800` -> (3, 800), anything else -> None."""
    m = _RUN.match(spec.strip())
    if m is None:
        return None
    return int(m.group(1)), None if m.group(2) is None else int(m.group(2))


def run_candidate(store, run_id: int, k: int | None = None, name: str | None = None) -> Candidate:
    """Run `run_id` of `store` (a RunStore), at its first `k` merges when k is given."""
    from workbench.store.tokenizer_of_run import base_record, merge_counts, stored_tokenizer

    run = store.get_run(run_id)
    tok = stored_tokenizer(store, run)
    label = f"run {run.id} “{run.name}”"
    if k is not None:
        if not 0 <= k <= len(tok.merges):
            raise ConfigError(f"run:{run_id}@{k}: the run has {len(tok.merges):,} merges")
        tok = tok.prefix(k)
        label += f" @ {k:,}"
    # An extension run counted only its new merges, not the base's: no counts by rank.
    extends = base_record(run) is not None
    counts = None if extends else merge_counts(store, run_id)[: len(tok.merges)]
    return Candidate(
        name or (f"run:{run_id}" + ("" if k is None else f"@{k}")),
        label,
        tok,
        "run",
        run_id,
        counts,
        list(run.corpus.get("paths") or ()),
        run.corpus.get("fingerprint"),
    )


def resolve(
    spec: str,
    db_path: str | Path | None = None,
    pattern: str | None = None,
    option: str = "--tokenizer",
) -> Candidate:
    """The candidate `spec` names; a WorkbenchError (one line, naming `option`) when it names
    nothing usable."""
    run = parse_run(spec)
    if run is not None:
        from workbench.store import RunStore

        with RunStore(db_path, read_only=True) as store:  # eval only reads: a read-only db works
            return run_candidate(store, *run, name=spec)
    if spec.startswith("run:"):
        raise ConfigError(f"{option} {spec!r}: write run:ID or run:ID@k (k merges)")
    if references.is_reference(spec):
        return Candidate(spec, spec, references.load_reference(spec), "reference")
    path = Path(spec)
    if not path.exists():
        raise WorkbenchError(
            f"{option} {spec!r}: no such file or folder (nor run:ID, sweep:ID, gpt2, cl100k, o200k)"
        )
    return Candidate(spec, path.name or spec, formats.load(path, pattern), "file")


def sweep_of(run) -> str | None:
    """The sweep id a run (RunInfo) is tagged with, or None."""
    tag = run.settings.get("sweep")
    return str(tag["id"]) if isinstance(tag, dict) and "id" in tag else None


def sweep_runs(store, sweep_id: str) -> list[int]:
    """The ids of the runs of sweep `sweep_id`, in the sweep's order."""
    runs = [r for r in store.list_runs() if sweep_of(r) == sweep_id]

    def order(run) -> tuple[int, int]:
        index = run.settings["sweep"].get("index", 0)
        return (index if type(index) is int else 0, run.id)  # a crafted index sorts first

    return [r.id for r in sorted(runs, key=order)]


def python_candidates(specs: list[str]) -> list[Candidate] | None:
    """The candidates as pure-Python encoders, when every spec is a reference found as a rank
    file (`session.startup.plan_encoding` decides when to use them); None otherwise."""
    if len(set(specs)) != len(specs):
        return None
    found = []
    for spec in specs:
        tok = references.python_reference(spec) if references.is_reference(spec) else None
        if tok is None:
            return None
        found.append(Candidate(spec, spec, tok, "reference"))
    return found


def resolve_all(
    specs: list[str], db_path: str | Path | None = None, pattern: str | None = None
) -> list[Candidate]:
    """`resolve` each spec, a `sweep:ID` giving one candidate per run of the sweep."""
    out: list[Candidate] = []
    for spec in specs:
        if not spec.startswith(_SWEEP):
            out.append(resolve(spec, db_path, pattern))
            continue
        from workbench.store import RunStore

        with RunStore(db_path, read_only=True) as store:
            ids = sweep_runs(store, spec[len(_SWEEP) :])
            if not ids:
                raise WorkbenchError(f"--tokenizer {spec!r}: no stored run belongs to that sweep")
            out.extend(run_candidate(store, run_id) for run_id in ids)
    return out
