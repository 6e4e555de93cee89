"""Handing a tokenizer to tiktoken, Hugging Face `tokenizers` and `transformers`, and back.

    tok.to_tiktoken().encode("hello world") == tok.encode("hello world")
    tok.to_tokenizers().encode("hello world").ids == tok.encode("hello world")
    tok.to_transformers()("hello world")["input_ids"] == tok.encode("hello world")
    workbench.load(tiktoken_encoding)  # and a tokenizers.Tokenizer, a PreTrainedTokenizerFast

Each gives our ids on every text: tiktoken's ids are its ranks, so the ranks are our ids (merged
tokens' ids must grow in merge order, as in every trained tokenizer: the tiktoken file format
refuses otherwise, and so does this); Hugging Face gets the tokenizer.json our `hf` format
writes, built in memory. Special tokens: Hugging Face always splits them out of the text, so its
ids are ours with `allowed_special="all"`.

Every library here is optional: a missing one is a one-line `MissingPackageError` saying what
to install. Nothing is imported before it is needed.

Not here: the files (`formats/`); the choice of bos/eos/pad (`special_roles.py`).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING, Any

from workbench.engine.corpus.readers.optional import require
from workbench.engine.encode import special_roles
from workbench.engine.errors import TokenizerError
from workbench.engine.formats import hf_json
from workbench.engine.formats.tiktoken_file import _check_exportable  # the same rule as the file

if TYPE_CHECKING:
    from workbench.engine.encode.tokenizer import Tokenizer


def to_tiktoken(tokenizer: Tokenizer, name: str = "workbench") -> Any:
    """A `tiktoken.Encoding` with this tokenizer's ranks (= ids), pattern and specials."""
    tiktoken = require("tiktoken", "tiktoken", "to_tiktoken")
    _check_exportable(tokenizer)
    return tiktoken.Encoding(
        name,
        pat_str=tokenizer.pattern,
        mergeable_ranks={token: tid for tid, token in tokenizer.vocab.items()},
        special_tokens=dict(tokenizer.special_tokens),
    )


def to_tokenizers(tokenizer: Tokenizer) -> Any:
    """A `tokenizers.Tokenizer` built from the tokenizer.json the `hf` format writes."""
    tokenizers = require("tokenizers", "hf", "to_tokenizers")
    return tokenizers.Tokenizer.from_str(json.dumps(hf_json.to_json(tokenizer)))


def to_transformers(
    tokenizer: Tokenizer,
    bos: special_roles.Role = special_roles.AUTO,
    eos: special_roles.Role = special_roles.AUTO,
    pad: special_roles.Role = special_roles.AUTO,
    unk: special_roles.Role = None,
    model_max_length: int | None = None,
) -> Any:
    """A `transformers.PreTrainedTokenizerFast`; roles left out are defaulted from the special
    tokens' names (logged, see `special_roles.choose_roles`)."""
    require("transformers", "hf", "to_transformers")
    roles = special_roles.choose_roles(tokenizer.special_tokens, bos, eos, pad, unk)
    special_roles.LOG.info("%s", roles.note)
    from transformers import PreTrainedTokenizerFast

    extra: dict[str, Any] = {"model_max_length": model_max_length} if model_max_length else {}
    return PreTrainedTokenizerFast(
        tokenizer_object=to_tokenizers(tokenizer),
        clean_up_tokenization_spaces=False,
        **roles.as_dict(),
        **extra,
    )


def from_object(obj: Any, pattern: str | None = None) -> Tokenizer | None:
    """Our tokenizer for a tiktoken `Encoding`, a `tokenizers.Tokenizer` or a transformers fast
    tokenizer (None when `obj` is none of them); `pattern` as for files that name none."""
    from workbench.engine.encode.tokenizer import Tokenizer

    kind = f"{type(obj).__module__}.{type(obj).__qualname__}"
    if kind.startswith("tiktoken") and hasattr(obj, "_mergeable_ranks"):
        # tiktoken.Encoding keeps its ranks, pattern and specials only in these attributes.
        ranks = {rank: token for token, rank in obj._mergeable_ranks.items()}  # noqa: SLF001
        specials = dict(obj._special_tokens)  # noqa: SLF001
        return Tokenizer.from_ranks(ranks, obj._pat_str, specials)  # noqa: SLF001
    if kind.startswith("tokenizers") and hasattr(obj, "to_str"):
        return _from_json_text(obj.to_str(), f"<tokenizers.Tokenizer {id(obj):#x}>", pattern)
    if kind.startswith("transformers"):
        backend = getattr(obj, "backend_tokenizer", None)
        if backend is None:
            raise TokenizerError(
                f"{type(obj).__name__} is a slow (Python) tokenizer: load it with use_fast=True"
            )
        return _from_json_text(backend.to_str(), f"<{type(obj).__name__} {id(obj):#x}>", pattern)
    return None


def _from_json_text(text: str, where: str, pattern: str | None) -> Tokenizer:
    return hf_json.from_document(json.loads(text), Path(where), pattern)
