"""A sweep: several runs over one corpus (vocab sizes × patterns), counted once per pattern.

    for step in plan_sweep([8000, 16000], ["gpt2"]):   # SweepStep(config, index, of, label)
        ...

Each run is an ordinary run in the store, tagged `settings["sweep"] = {"id", "index", "of"}`
so `eval` and the window can put a sweep's runs side by side.
"""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from dataclasses import dataclass, replace

from workbench.engine.config import TrainConfig
from workbench.engine.errors import ConfigError
from workbench.engine.patterns.regexes import PRESETS


@dataclass(frozen=True)
class SweepStep:
    config: TrainConfig
    index: int  # 1-based
    of: int
    sweep_id: str
    label: str  # a folder-safe name: `gpt2-8000`, `custom1-16000`

    @property
    def tag(self) -> dict[str, object]:
        return {"id": self.sweep_id, "index": self.index, "of": self.of}


def parse_vocab_sizes(text: str | int) -> list[int]:
    """`"8000,16000"` -> [8000, 16000] (sorted, duplicates dropped); a clear error otherwise."""
    if isinstance(text, int):
        return [text]
    sizes = []
    for part in str(text).split(","):
        part = part.strip()
        if not part.isascii() or not part.isdigit():
            raise ConfigError(f"--vocab-size: {part!r} is not a whole number (e.g. 8000,16000)")
        sizes.append(int(part))
    if not sizes:
        raise ConfigError("--vocab-size: give at least one size")
    return sorted(set(sizes))


def plan_sweep(
    base: TrainConfig, vocab_sizes: Sequence[int], patterns: Sequence[str]
) -> list[SweepStep]:
    """Every (pattern, vocab size) pair, patterns in the order given, sizes ascending."""
    sweep_id = uuid.uuid4().hex[:8]
    combos = [(p, v) for p in dict.fromkeys(patterns) for v in sorted(set(vocab_sizes))]
    names: dict[str, str] = {}
    steps = []
    for index, (pattern, vocab) in enumerate(combos, 1):
        if pattern not in names:
            custom = sum(1 for n in names.values() if n.startswith("custom"))
            names[pattern] = pattern if pattern in PRESETS else f"custom{custom + 1}"
        config = replace(base, vocab_size=vocab, pattern=pattern)
        steps.append(SweepStep(config, index, len(combos), sweep_id, f"{names[pattern]}-{vocab}"))
    return steps
