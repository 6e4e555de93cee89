"""`workbench.extend`: a tokenizer grown with merges learned on a new corpus, every old id,
token, special and merge kept, with the check that proves it.

    ext = workbench.extend("gpt2", ["german/"], vocab_size=50257 + 4000)
    ext.check.ok                      # old ids/merges/specials unchanged, new tokens reachable
    ext.tokenizer.export("hf", "out/")
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Any

from workbench.engine.config import TrainConfig, whole_number
from workbench.engine.encode.tokenizer import Tokenizer
from workbench.engine.errors import ConfigError, WorkbenchError
from workbench.engine.extending import Extension
from workbench.evaluate.extension_check import ExtensionCheck


@dataclass(frozen=True)
class ExtendResult:
    """The extended tokenizer, what was added (`extension`: the new merges, their ids and
    counts) and the check against the base (`check.ok`, `check.lines()`)."""

    tokenizer: Tokenizer
    extension: Extension
    check: ExtensionCheck
    run_id: int | None = None  # the recorded run (extend's `db`), or None

    @property
    def new_merges(self) -> list[tuple[bytes, bytes]]:
        return self.extension.new_merges

    def __repr__(self) -> str:
        ext = self.extension
        return (
            f"ExtendResult({len(ext.base.vocab):,} → {len(self.tokenizer.vocab):,} tokens, "
            f"{len(ext.new_merges):,} new merges, check {'passed' if self.check.ok else 'FAILED'})"
        )


def resolve_base(base: Any, db: str | os.PathLike | None = None) -> Tokenizer:
    """A Tokenizer; `gpt2`, `cl100k`, `o200k`; `run:ID` (`run:ID@k`) of the run store `db`;
    a tokenizer file or folder; or a tiktoken / tokenizers / transformers object."""
    if isinstance(base, Tokenizer):
        return base
    if isinstance(base, str | os.PathLike):
        from workbench.evaluate.specs import resolve

        try:
            return resolve(os.fspath(base), db).tokenizer
        except WorkbenchError as exc:  # its words name `--tokenizer`: here it is the base
            if type(exc) in (WorkbenchError, ConfigError) and str(exc).startswith("--tokenizer"):
                raise type(exc)("the base" + str(exc)[len("--tokenizer") :]) from None
            raise
    from workbench.api import load

    return load(base)


def extend(
    base: Any,
    corpus: Any,
    vocab_size: int,
    tie_break: str = "lexicographic",
    max_token_length: int = 0,
    min_frequency: int = 0,
    db: str | os.PathLike | None = None,
    progress: bool = True,
    name: str | None = None,
    max_token_chars: int = 0,
) -> ExtendResult:
    """Grow `base` (see `resolve_base`) with merges learned on `corpus` (as `train` takes it)
    until it has `vocab_size` tokens, its special tokens counted: the corpus is cut by the
    base's pattern, each piece encoded by the base (its merges replayed exactly), and the new
    merges learned from there. New ids follow every old id; a new merge whose bytes are an
    old token reuses its id.

    `db`: the run store a `run:ID` base is read from, and, as for `train`, where the run is
    recorded (named `name`), as `bpe-workbench extend --db` records it: the Runs tab then opens
    it, and `run_id` names it. A recorded run names its base to load it again, so with `db` the
    base must be given by name (gpt2, cl100k, o200k, run:ID, a tokenizer file or folder).
    `max_token_length` / `max_token_chars`: no new token longer, in bytes / characters."""
    from workbench.api import _count
    from workbench.session.extension import Base, extension_config, load_base
    from workbench.session.interrupts import stop_on_signals
    from workbench.session.run import RunSession
    from workbench.session.states import StopReason

    vocab_size = whole_number("vocab size", vocab_size)
    if db is not None and not isinstance(base, str | os.PathLike):
        raise ConfigError(
            "extend(db=...) records the run, which names its base to load it again: give the"
            " base as gpt2, cl100k, o200k, run:ID or a tokenizer file, not a"
            f" {type(base).__name__}"
        )
    named = load_base(os.fspath(base), db) if db is not None else None
    tokenizer = named.tokenizer if named is not None else resolve_base(base, db)
    if vocab_size < tokenizer.vocab_size:
        raise ConfigError(
            f"vocab size {vocab_size:,} is below the base tokenizer's {tokenizer.vocab_size:,}"
        )
    config = extension_config(
        tokenizer,
        TrainConfig(
            vocab_size=max(vocab_size, 256 + len(tokenizer.special_tokens)),
            tie_break=tie_break,
            min_frequency=min_frequency,
            max_token_length=max_token_length,
            max_token_chars=max_token_chars,
            special_tokens=tuple(tokenizer.special_tokens),
        ),
    )
    counted = _count(corpus, config, progress)
    with RunSession.start(
        counted, config, db, name, count_ties=db is not None,
        extends=named or Base("", tokenizer),
    ) as session, stop_on_signals() as interrupted:  # fmt: skip
        if session.advance(should_stop=interrupted.check) is StopReason.INTERRUPTED:
            raise KeyboardInterrupt
        check = session.check_extension()  # kept in the run's stats
        ext = session.trainer.extension()
    return ExtendResult(ext.tokenizer, ext, check, session.run_id)
