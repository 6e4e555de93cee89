"""The names tiktoken and Hugging Face users type, as thin aliases; hand-offs; notebook display.

    tok.n_vocab, tok.eot_token, tok.special_tokens_set        # tiktoken
    tok.decode_batch(ids_lists), tok.encode_ordinary_batch(texts), tok.encode_to_numpy(text)
    tok.token_to_id("Ġthe"), tok.id_to_token(262), tok.get_vocab_size()   # tokenizers
    tok.encode_iterable(open("big.txt"))                      # streaming, bounded memory
    tok.to_tiktoken(), tok.to_tokenizers(), tok.to_transformers(pad="<|endoftext|>")

`Tokenizer` inherits this mixin; every method here is a few lines over `Tokenizer`'s own
(`encode`, `encode_batch`, `decode_bytes`, `vocab`, `special_tokens`) or delegates to a module
that owns the work: `encode_stream` (cutting a stream), `handoff` (the other libraries' objects),
`workbench.notebook_html` (the HTML repr). docs/python-api.md has the table of names.

Hugging Face names tokens by their byte-level form ("Ġthe" for b" the", see `byte_mapping`);
special tokens by their text. tiktoken's `n_vocab` is the largest id plus one.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Iterator, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from workbench.engine.encode import state as tokenizer_state
from workbench.engine.encode._core import build_core
from workbench.engine.encode.special_roles import AUTO, Role
from workbench.engine.errors import TokenizerError

if TYPE_CHECKING:
    from workbench.engine.encode.tokenizer import AllowedSpecial, DisallowedSpecial, Tokenizer

END_OF_TEXT = "<|endoftext|>"


class NoEndOfTextError(TokenizerError, KeyError):
    """`eot_token` of a tokenizer without `<|endoftext|>` (tiktoken raises KeyError too)."""

    def __str__(self) -> str:  # KeyError's would quote the message
        return str(self.args[0])


class TokenizerInterop:
    """Mixed into `Tokenizer`: aliases, conversions and the notebook display."""

    # ----- files and pickling ----------------------------------------------------------------

    def export(self, format: str, out: str | os.PathLike[str], **options: object) -> list[Path]:
        """Write this tokenizer as `format` (gpt2, hf, tiktoken, minbpe) into folder `out`;
        `options` go to the format (hf: `bos`, `eos`, `pad`, `unk`, `model_max_length`)."""
        from workbench.engine import formats

        return formats.export(self, format, out, **options)

    def encode_pieces(self, data: np.ndarray, offsets: np.ndarray) -> tuple[np.ndarray, ...]:
        """Pre-tokens already cut (a word table's `data`, `offsets`), each merged as `encode`
        merges a piece, the pattern not applied again: (ids, id offsets), piece i's ids being
        `ids[id_offsets[i]:id_offsets[i + 1]]` (see `piece_ids`)."""
        from workbench.engine.encode import piece_ids

        return piece_ids.encode_pieces(self._core.tables, self._max_rank, data, offsets)

    def __getstate__(self) -> dict:
        """The defining data only (`state.pack`): the thread-local buffers and caches and the
        helper threads cannot be pickled and belong to one process; they are rebuilt."""
        return tokenizer_state.pack(
            self._core, self.pattern, self.special_tokens, self._max_rank, self._splitter_choice
        )

    def __setstate__(self, state: dict) -> None:
        core = tokenizer_state.core_of(state, build_core)
        pattern, special_tokens, max_rank, splitter = tokenizer_state.settings(state)
        type(self).__init__(
            self, core, pattern=pattern, special_tokens=special_tokens, max_rank=max_rank,
            splitter=splitter,
        )  # fmt: skip

    # ----- tiktoken's names ---------------------------------------------------------------

    @property
    def max_token_value(self: Tokenizer) -> int:
        """The largest id, special tokens included."""
        return max(max(self.vocab), *self.special_tokens.values())

    @property
    def n_vocab(self: Tokenizer) -> int:
        """tiktoken's size: the largest id plus one."""
        return self.max_token_value + 1

    @property
    def eot_token(self: Tokenizer) -> int:
        """The id of `<|endoftext|>`."""
        if END_OF_TEXT not in self.special_tokens:
            listed = ", ".join(map(repr, self.special_tokens)) or "none"
            raise NoEndOfTextError(
                f"this tokenizer has no {END_OF_TEXT} special token (its specials: {listed})"
            )
        return self.special_tokens[END_OF_TEXT]

    @property
    def special_tokens_set(self: Tokenizer) -> set[str]:
        return set(self.special_tokens)

    def encode_ordinary_batch(
        self: Tokenizer, text: Sequence[str], *, num_threads: int | None = None
    ) -> list[list[int]]:
        """`encode_ordinary` of each text, in threads."""
        return self.encode_batch(
            text, num_threads=num_threads, allowed_special=(), disallowed_special=()
        )

    def encode_to_numpy(
        self: Tokenizer,
        text: str,
        *,
        allowed_special: AllowedSpecial = frozenset(),
        disallowed_special: DisallowedSpecial = "all",
    ) -> np.ndarray:
        """`encode` as a uint32 array, as tiktoken returns it."""
        return self.encode_array(text, allowed_special, disallowed_special).astype(np.uint32)

    def decode_batch(
        self: Tokenizer,
        batch: Iterable[Iterable[int]],
        *,
        errors: str = "replace",
        num_threads: int | None = None,  # accepted for tiktoken's signature; decoding is a join
    ) -> list[str]:
        """`decode` of each list of ids; `errors` as for `bytes.decode`."""
        return [self.decode_bytes(ids).decode("utf-8", errors) for ids in batch]

    def decode_bytes_batch(self: Tokenizer, batch: Iterable[Iterable[int]]) -> list[bytes]:
        return [self.decode_bytes(ids) for ids in batch]

    # ----- Hugging Face tokenizers' names ---------------------------------------------------

    def token_to_id(self: Tokenizer, token: str) -> int | None:
        """The id of a token in its byte-level form ("Ġthe") or of a special token; None if
        there is no such token."""
        if token in self.special_tokens:
            return self.special_tokens[token]
        return self._mapped_ids().get(token)

    def id_to_token(self: Tokenizer, id: int) -> str | None:  # noqa: A002 (tokenizers' name)
        """The byte-level form of token `id` (or a special's text); None if there is none."""
        token = self.vocab.get(id)
        if token is not None:
            from workbench.engine.byte_mapping import to_mapped

            return to_mapped(token)
        return next((name for name, tid in self.special_tokens.items() if tid == id), None)

    def get_vocab_size(self: Tokenizer, with_added_tokens: bool = True) -> int:
        """Ordinary tokens, plus the special tokens unless `with_added_tokens=False`."""
        return self.vocab_size if with_added_tokens else len(self.vocab)

    def get_vocab(self: Tokenizer, with_added_tokens: bool = True) -> dict[str, int]:
        """Byte-level form -> id (and special -> id), as `tokenizers.Tokenizer.get_vocab`."""
        found = dict(self._mapped_ids())
        if with_added_tokens:
            found.update(self.special_tokens)
        return found

    def _mapped_ids(self: Tokenizer) -> dict[str, int]:
        """Byte-level form -> id, built on first use (not pickled: rebuilt after loading)."""
        table = self.__dict__.get("_mapped_id_table")
        if table is None:
            from workbench.engine.formats._common import mapped_vocab

            table = {mapped: tid for tid, mapped in mapped_vocab(self).items()}
            self.__dict__["_mapped_id_table"] = table
        return table

    # ----- streaming -----------------------------------------------------------------------

    def encode_iterable(
        self: Tokenizer,
        iterable: Iterable[str],
        allowed_special: AllowedSpecial = frozenset(),
        disallowed_special: DisallowedSpecial = "all",
    ) -> Iterator[int]:
        """The ids of `"".join(iterable)` one by one, holding only a stretch of the text at a
        time (see `encode_stream`): a file opened as text streams line by line."""
        from workbench.engine.encode.stream import encode_iterable

        return encode_iterable(self, iterable, allowed_special, disallowed_special)

    # ----- hand-off ------------------------------------------------------------------------

    def to_tiktoken(self: Tokenizer, name: str = "workbench") -> Any:
        """A `tiktoken.Encoding` giving the same ids (needs tiktoken)."""
        from workbench.engine.formats import handoff

        return handoff.to_tiktoken(self, name)

    def to_tokenizers(self: Tokenizer) -> Any:
        """A Hugging Face `tokenizers.Tokenizer` giving the same ids (needs tokenizers)."""
        from workbench.engine.formats import handoff

        return handoff.to_tokenizers(self)

    def to_transformers(
        self: Tokenizer,
        bos: Role = AUTO,
        eos: Role = AUTO,
        pad: Role = AUTO,
        unk: Role = None,
        model_max_length: int | None = None,
    ) -> Any:
        """A transformers `PreTrainedTokenizerFast` giving the same ids (needs transformers).
        Each role names one of the special tokens, or None for none; left out, it is chosen
        from their names (`special_roles`) and the choice is logged."""
        from workbench.engine.formats import handoff

        return handoff.to_transformers(self, bos, eos, pad, unk, model_max_length)

    # ----- notebook ------------------------------------------------------------------------

    def _repr_html_(self: Tokenizer) -> str:
        from workbench.notebook_html import tokenizer_html

        return tokenizer_html(self)
