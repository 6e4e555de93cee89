"""A stored run turned into the `Tokenizer` it made: the one home of "stored run -> tokenizer".

The run's merges come from the store in rank order; its pattern and special tokens from its
settings. An extension run (settings `extends`: its base's spec and fingerprint) is its base,
loaded again and checked against the fingerprint, with the run's merges after the base's
(`engine.extending.extended_tokenizer`); a base gone or changed is one line naming it. The CLI (`runs export`, `eval run:ID`), the Tokens tab and the Evaluate tab all call
`tokenizer_of_run`. Imported on demand (it pulls in the Numba engine, which `runs list` and the
store's own users do not need).

The database may be crafted, so what it makes is checked as an imported file would be
(`Tokenizer.from_vocab_merges`), and `export_run` reads every file back with the project's own
loader before it replaces anything: a run that cannot become a tokenizer file is one line naming
the database, never a file the loader then refuses.
"""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np

from workbench.engine.encode.tokenizer import Tokenizer
from workbench.engine.encode.validation import check_vocab_merges
from workbench.engine.errors import WorkbenchError
from workbench.engine.patterns.regexes import resolve
from workbench.engine.patterns.superbpe import STAGE2_PATTERN
from workbench.engine.release import release_in_pieces
from workbench.store import checks
from workbench.store.errors import StoreError
from workbench.store.models import RunInfo
from workbench.store.runs import RunStore

EXTENDS = "extends"  # the settings key of an extension run's base record


def tokenizer_of_run(store: RunStore, run_id: int) -> Tokenizer:
    """The tokenizer of every merge run `run_id` has stored so far."""
    return stored_tokenizer(store, store.get_run(run_id))


def stored_tokenizer(store: RunStore, run: RunInfo) -> Tokenizer:
    """The tokenizer of run `run`'s stored merges: after its base's, for an extension run."""
    base = base_of_run(run, store.path)
    if base is None:
        pairs = store.merges_as_pairs(run.id)
        try:
            return tokenizer_of(run, pairs, store.path)
        finally:
            release_in_pieces(pairs)  # 200k pairs freed at once held the GIL for ~16 ms
    from workbench.engine.extending import extended_tokenizer

    pairs = store.merges_as_pairs(run.id, base.vocab)
    try:
        return extended_tokenizer(base, pairs)
    except WorkbenchError as exc:
        raise StoreError(f"{store.path}: run {run.id}: {exc}") from None


def base_record(run: RunInfo) -> dict | None:
    """An extension run's base record ({"spec", "digest", ...}), or None for any other run."""
    record = run.settings.get(EXTENDS)
    if record is None:
        return None
    if (
        not isinstance(record, dict)
        or type(record.get("spec")) is not str
        or type(record.get("digest")) is not str
    ):
        raise StoreError(f"run {run.id}: its base record is not one this app writes")
    return record


def base_of_run(run: RunInfo, where: str | os.PathLike[str] | None) -> Tokenizer | None:
    """The tokenizer run `run` extends, loaded again (`where`: the database, for a `run:ID`
    base), or None when it extends nothing. A StoreError, one line, when the base cannot be
    loaded any more or is not the one the run was trained from."""
    from workbench.engine.extending import tokenizer_digest
    from workbench.evaluate.specs import parse_run, resolve

    record = base_record(run)
    if record is None:
        return None
    spec = record["spec"]
    parsed = parse_run(spec)
    if parsed is not None and parsed[0] >= run.id:  # a base is older: no circles
        raise StoreError(f"{where or 'run database'}: run {run.id}: its base {spec} is not older")
    try:
        pattern = checks.pattern_setting(f"run {run.id}", run.settings.get("pattern"))
        base = resolve(spec, where, pattern=pattern, option="base").tokenizer
    except (checks.CraftedRow, WorkbenchError) as exc:
        raise StoreError(
            f"run {run.id}: its base {spec} cannot be loaded any more ({exc})"
        ) from None
    if not isinstance(base, Tokenizer) or tokenizer_digest(base) != record["digest"]:
        raise StoreError(f"run {run.id}: its base {spec} changed since the run was trained")
    return base


def tokenizer_of(
    run: RunInfo,
    pairs: list[tuple[bytes, bytes]],
    where: str | os.PathLike[str] | None = None,
) -> Tokenizer:
    """The tokenizer of `pairs` (a run's merges) with `run`'s pattern and special tokens.

    `where` (the database) names the file in the one-line StoreError a crafted run gets."""
    try:
        settings = run.settings
        specials = checks.special_names(f"run {run.id}", settings.get("special_tokens"))
        pattern = resolve(checks.pattern_setting(f"run {run.id}", settings.get("pattern")))
        if settings.get("superbpe_transition"):  # encodes with the stage-2 split
            pattern = STAGE2_PATTERN
        tok = Tokenizer.from_merges(pairs, pattern, specials)
        # The checks an imported file gets (`Tokenizer.from_vocab_merges`'s): no pair twice,
        # every id made once, specials apart. Only the checks: that constructor also built a
        # second byte arena, only to drop it: a tenth of the build's CPU.
        check_vocab_merges(tok.vocab, tok.merges, dict(tok.special_tokens))
    except (checks.CraftedRow, WorkbenchError) as exc:
        raise StoreError(f"{where or 'run database'}: run {run.id}: {exc}") from None
    return tok


def export_run(
    store: RunStore, run_id: int, fmt: str, out: str | os.PathLike[str]
) -> tuple[RunInfo, Tokenizer, list[Path]]:
    """Write run `run_id`'s tokenizer in format `fmt` into `out`: (run, tokenizer, files).

    The files are staged, loaded back with `formats.load` and their merges compared with the
    tokenizer's before they replace anything (`outputs.write_staged`)."""
    from workbench.engine import formats
    from workbench.engine.formats.outputs import write_staged

    run = store.get_run(run_id)
    tok = stored_tokenizer(store, run)
    write = formats.exporter(fmt)

    def written_and_read_back(stage: Path) -> list[Path]:
        written = write(tok, stage)
        try:
            again = formats.load(stage, tok.pattern)
        except WorkbenchError as exc:
            raise StoreError(
                f"{store.path}: run {run_id} does not make a valid {fmt} file ({exc})"
            ) from None
        # Ids may be renumbered by a format (tiktoken's are ranks); the merges may not change.
        if again.merge_bytes != tok.merge_bytes:
            raise StoreError(f"{store.path}: run {run_id}'s {fmt} file reads back differently")
        return written

    return run, tok, write_staged(out, written_and_read_back)


def merge_counts(store: RunStore, run_id: int) -> np.ndarray:
    """The pair count each merge had when it was made, by rank (int64)."""
    merges = store.merges(run_id, after_rank=-1, limit=max(1, store.merge_count(run_id)))
    return np.array([m.count for m in merges], dtype=np.int64)
