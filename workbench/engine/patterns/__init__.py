"""What every stage agrees on about splitting text: the pre-tokenization patterns (the presets
`gpt2`, `cl100k`, `o200k` and checked custom regexes), special tokens, and the Unicode classes
pinned to one version.

The foot of the engine's ladder (`patterns` → `corpus` → `pretokenize` → `train` → `encode` →
`formats`): it imports no other stage, so the corpus reader (which splits on special tokens), the
settings (which check a pattern) and every later stage can use it without a circle.
"""

from workbench.engine.patterns.regexes import (
    CL100K,
    GPT2,
    NO_SPLIT,
    O200K,
    PRESETS,
    compile_pattern,
    preset_name,
    resolve,
)
from workbench.engine.patterns.specials import specials_regex, split_on_specials
from workbench.engine.patterns.unicode_classes import UNICODE_VERSION

__all__ = [
    "CL100K",
    "GPT2",
    "NO_SPLIT",
    "O200K",
    "PRESETS",
    "UNICODE_VERSION",
    "compile_pattern",
    "preset_name",
    "resolve",
    "specials_regex",
    "split_on_specials",
]
