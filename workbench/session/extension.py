"""Training an extension of a tokenizer as a run: its base named so it can be loaded again,
and the check that proves the base was kept.

    base = load_base("gpt2")                     # or run:ID, or a tokenizer file or folder
    config = extension_config(base.tokenizer, TrainConfig(vocab_size=52_000))
    RunSession.start(counted, config, store_path=db, extends=base)

The run records `extends` in its settings (`Base.record`: the spec, a path made absolute, and
the base's fingerprint); `store.tokenizer_of_run` loads the base again from it and refuses a
base that changed. The corpus must be counted with the base's pattern and specials
(`extension_config` makes that config).
"""

from __future__ import annotations

import os
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from workbench.engine.config import TrainConfig
from workbench.engine.encode.tokenizer import Tokenizer
from workbench.engine.errors import ConfigError


@dataclass(frozen=True)
class Base:
    """The tokenizer a run extends, and the spec it is loaded again from."""

    spec: str  # gpt2 | cl100k | o200k | run:ID | an absolute tokenizer path
    tokenizer: Tokenizer

    def record(self) -> dict[str, Any]:
        from workbench.engine.extending import first_new_id, tokenizer_digest

        tok = self.tokenizer
        return {
            "spec": self.spec,
            "digest": tokenizer_digest(tok),
            "tokens": len(tok.vocab),
            "merges": len(tok.merges),
            "first_new_id": first_new_id(tok),
        }


def load_base(spec: str, db: str | os.PathLike[str] | None = None) -> Base:
    """The base `spec` names (as `extend`'s BASE), a file's path made absolute so the run can
    find it again from anywhere; a one-line WorkbenchError naming the base otherwise."""
    from workbench.evaluate.references import is_reference
    from workbench.evaluate.specs import parse_run
    from workbench.extend_api import resolve_base

    spec = spec.strip()
    tokenizer = resolve_base(spec, db)
    if not (is_reference(spec) or parse_run(spec) is not None):
        spec = str(Path(spec).resolve())
    return Base(spec, tokenizer)


def extension_config(base: Tokenizer, config: TrainConfig) -> TrainConfig:
    """`config` for extending `base`: its pattern and specials; the variants that change how
    pieces are cut or merged across stages are refused (one line)."""
    if config.superbpe_transition:
        raise ConfigError("extending a tokenizer cannot be combined with SuperBPE")
    if config.parity_by:
        raise ConfigError("extending a tokenizer cannot be combined with parity-aware BPE")
    if config.vocab_size < base.vocab_size:
        raise ConfigError(
            f"vocab size {config.vocab_size:,} is below the base tokenizer's "
            f"{base.vocab_size:,} tokens"
        )
    return replace(config, pattern=base.pattern, special_tokens=tuple(base.special_tokens))


def check_stats(check: Any) -> dict[str, Any]:
    """An `ExtensionCheck` as the run's stats keep it (`stats["extension"]`)."""
    return {
        "ok": check.ok,
        "summary": check.summary(),
        "lines": check.lines(),
        "old_tokens": check.old_tokens,
        "new_tokens": check.new_tokens,
    }
