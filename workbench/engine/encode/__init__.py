"""Encoding: a trained tokenizer's ids for text, exactly tiktoken's, and back.

`Tokenizer` (tokenizer.py) is the public class; `validation.py` checks a tokenizer's parts and
holds `DisallowedSpecialError`; `ids.py` checks single ids; `pieces.py` is the regex
pre-tokenizer (`Splitter`). The private modules are the machinery under `Tokenizer` (`_core.py`)
and its Numba kernels (`_tables.py`, `_chars.py`, `_merge.py`, `_scanned.py`). Names are
imported on first use: the kernels load Numba, and `import workbench.engine.encode.ids` stays
light. Not here: reading and writing tokenizer files (`engine/formats/`).
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

__all__ = [
    "DisallowedSpecialError",
    "RegexSplitter",
    "Splitter",
    "TokenSpan",
    "Tokenizer",
    "check_specials",
]

if TYPE_CHECKING:
    from workbench.engine.encode.pieces import RegexSplitter, Splitter
    from workbench.engine.encode.tokenizer import Tokenizer, TokenSpan
    from workbench.engine.encode.validation import DisallowedSpecialError, check_specials

_HOME = {
    "DisallowedSpecialError": "validation",
    "RegexSplitter": "pieces",
    "Splitter": "pieces",
    "TokenSpan": "tokenizer",
    "Tokenizer": "tokenizer",
    "check_specials": "validation",
}


def __getattr__(name: str) -> Any:
    if name not in _HOME:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(importlib.import_module(f"{__name__}.{_HOME[name]}"), name)
