"""A text encoded for display: token ids with byte, character and UTF-16 spans, as numpy arrays.

Why not `Tokenizer.encode_with_spans` directly: it builds one NamedTuple per token, which costs
~100 ms on 100 KB of text -- half the re-render budget. Tokens of a byte-level BPE tile the text's
bytes (the preset patterns match everything), so the byte starts are a cumulative sum of token
lengths, and the character and UTF-16 spans follow by `searchsorted` over the text's boundaries.
When the tokens do not tile the bytes (a custom pattern that skips text) this falls back to
`encode_with_spans`, so the spans are always the encoder's.

A user-perceived character made of several code points (a flag, an emoji ZWJ sequence, a letter
with combining accents) is one group too, and a token that starts or ends inside one has
`splits_cluster` set: the views paint the cluster in one format, so it is drawn as one glyph,
and mark the token boundary inside it (dotted underline, `[..|..]` in the strip).

Qt counts positions in UTF-16 code units: an emoji is one Python character but two Qt units, so
every colour is placed with `u16_start`/`u16_end`, never with character indices.

No Qt here: this runs in worker threads and in plain tests.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass

import numpy as np
import regex

from workbench.display import grapheme_bounds
from workbench.engine.encode.tokenizer import Tokenizer

COPY_SLICE = 8192  # vocabulary entries copied per C call (a GIL hold well under a millisecond)
_WORD = regex.compile(r"\S+")
_CRLF = regex.compile(r"\r\n")
# Characters that join the one before or after them into one grapheme cluster.
_JOINER = regex.compile(
    r"[\p{GCB=Extend}\p{GCB=ZWJ}\p{GCB=SpacingMark}\p{GCB=Regional_Indicator}"
    r"\p{GCB=Prepend}\p{GCB=L}\p{GCB=V}\p{GCB=T}]"
)


class TokenTable:
    """Per-tokenizer lookups the display needs: byte length and bytes of every id (specials too).

    Built once per tokenizer (a 50k vocabulary takes ~10 ms), then shared by every encode.
    """

    def __init__(self, tokenizer: Tokenizer) -> None:
        self.tokenizer = tokenizer
        vocab = tokenizer.vocab
        if tokenizer.special_tokens:
            # Copied a slice at a time: `dict(vocab)` is one C call, which held the GIL (and
            # so the UI thread) 30-60 ms for a run of 200k merges.
            table: dict[int, bytes] = {}
            items = iter(vocab.items())
            while chunk := list(itertools.islice(items, COPY_SLICE)):
                table.update(chunk)
            table.update((tid, name.encode()) for name, tid in tokenizer.special_tokens.items())
        else:
            table = vocab  # the tokenizer's own, only read here: no copy at all
        self.bytes_of = table
        size = max(table) + 1
        self.lengths = np.zeros(size, dtype=np.int64)
        for tid, token in table.items():
            self.lengths[tid] = len(token)
        self.special_ids = frozenset(tokenizer.special_tokens.values())


def clean_text(text: str) -> str:
    """Lone surrogates (possible in a Qt editor) become U+FFFD, one unit each, as the encoder does.

    The UTF-16 length is unchanged, so Qt positions stay valid.
    """
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return text.encode("utf-16", "surrogatepass").decode("utf-16", "replace")
    return text


def boundaries(text: str) -> tuple[np.ndarray, np.ndarray]:
    """UTF-8 byte offset and UTF-16 offset of every character boundary.

    `boundaries("a😀")` -> `([0, 1, 5], [0, 1, 3])`.
    """
    points = np.frombuffer(text.encode("utf-32-le"), dtype=np.uint32)
    astral = points >= 0x10000
    u8 = 1 + (points >= 0x80).astype(np.int64) + (points >= 0x800) + astral
    u16 = 1 + astral.astype(np.int64)
    byte_off = np.zeros(len(text) + 1, dtype=np.int64)
    u16_off = np.zeros(len(text) + 1, dtype=np.int64)
    np.cumsum(u8, out=byte_off[1:])
    np.cumsum(u16, out=u16_off[1:])
    return byte_off, u16_off


@dataclass(frozen=True, eq=False)
class Encoded:
    """`text` cut into tokens; parallel arrays, one entry per token, in text order."""

    text: str
    ids: np.ndarray
    byte_start: np.ndarray
    byte_end: np.ndarray
    char_start: np.ndarray
    char_end: np.ndarray
    u16_start: np.ndarray
    u16_end: np.ndarray
    splits_char: np.ndarray  # bool: the token starts or ends inside a character
    group: np.ndarray  # int: tokens sharing a character or a grapheme cluster share a group
    splits_cluster: np.ndarray  # bool: the token starts or ends inside a grapheme cluster
    n_bytes: int
    n_words: int
    seconds: float = 0.0

    def __len__(self) -> int:
        return len(self.ids)

    @property
    def bytes_per_token(self) -> float:
        return self.n_bytes / len(self.ids) if len(self.ids) else 0.0

    @property
    def tokens_per_word(self) -> float:
        return len(self.ids) / self.n_words if self.n_words else 0.0

    def token_at_u16(self, position: int) -> int | None:
        """Index of the token covering Qt position `position` (None past the end)."""
        i = int(np.searchsorted(self.u16_end, position, side="right"))
        if i < len(self.ids) and self.u16_start[i] <= position:
            return i
        return None

    def group_range(self, index: int) -> tuple[int, int]:
        """Token indices `[first, last)` of the character group holding token `index`."""
        g = self.group[index]
        first = int(np.searchsorted(self.group, g, side="left"))
        last = int(np.searchsorted(self.group, g, side="right"))
        return first, last


def cluster_starts(text: str) -> np.ndarray:
    """Bool per character offset (and the end): a grapheme cluster starts there.

    CR LF is one cluster by Unicode's rules, but here two: they are two visible glyphs and
    usually two tokens. cluster_starts("a🇫🇷") -> [True, True, False, True].
    """
    starts = np.ones(len(text) + 1, dtype=bool)
    if text.isascii():
        return starts
    # Clusters never cross a line feed, and only lines holding a character that can join its
    # neighbour need the (slow, ~0.7 us a character) cluster walk.
    done_to = 0
    for hit in _JOINER.finditer(text):
        if hit.start() < done_to:
            continue
        line_start = text.rfind("\n", 0, hit.start()) + 1
        line_end = text.find("\n", hit.start())
        line_end = len(text) if line_end < 0 else line_end
        starts[line_start:line_end] = False
        starts[[line_start + b for b in grapheme_bounds(text[line_start:line_end])]] = True
        done_to = line_end
    for i in (m.start() + 1 for m in _CRLF.finditer(text)):
        starts[i] = True
    return starts


def encode_text(table: TokenTable, text: str) -> Encoded:
    """Encode `text` and compute every span the views need (see the module docstring)."""
    import time

    start = time.perf_counter()
    text = clean_text(text)
    tok = table.tokenizer
    ids = tok.encode_array(text, allowed_special="all").astype(np.int64)
    byte_off, u16_off = boundaries(text)
    lengths = table.lengths[ids] if len(ids) else np.zeros(0, dtype=np.int64)
    if int(lengths.sum()) == int(byte_off[-1]):
        byte_end = np.cumsum(lengths)
        byte_start = byte_end - lengths
    else:  # the pattern skipped some text: ask the encoder for its spans
        spans = tok.encode_with_spans(text, allowed_special="all")
        byte_start = np.array([s.byte_start for s in spans], dtype=np.int64)
        byte_end = np.array([s.byte_end for s in spans], dtype=np.int64)
    char_start = np.searchsorted(byte_off, byte_start, side="right") - 1
    char_end = np.searchsorted(byte_off, byte_end, side="left")
    on_start = byte_off[char_start] == byte_start
    on_end = byte_off[np.minimum(char_end, len(text))] == byte_end
    clusters = cluster_starts(text)
    start_ok = on_start & clusters[char_start]
    end_ok = on_end & clusters[np.minimum(char_end, len(text))]
    # A new group starts where a token begins on a cluster (hence character) boundary.
    group = np.cumsum(start_ok) - 1 if len(ids) else np.zeros(0, dtype=np.int64)
    return Encoded(
        text=text,
        ids=ids,
        byte_start=byte_start,
        byte_end=byte_end,
        char_start=char_start,
        char_end=char_end,
        u16_start=u16_off[char_start],
        u16_end=u16_off[char_end],
        splits_char=~(on_start & on_end),
        group=group,
        splits_cluster=~(start_ok & end_ok),
        n_bytes=int(byte_off[-1]),
        n_words=sum(1 for _ in _WORD.finditer(text)),
        seconds=time.perf_counter() - start,
    )


def cut_points(encoded: Encoded) -> np.ndarray:
    """Byte offsets where a token starts (without 0): what two tokenizers compare."""
    return encoded.byte_start[1:] if len(encoded) else encoded.byte_start


def differing_tokens(encoded: Encoded, others: list[Encoded]) -> np.ndarray:
    """Bool per token of `encoded`: one of its edges is not a cut in every other encoding.

    `"hello"` cut `hel|lo` against `hell|o`: both tokens differ (the cut at 3 is not shared).
    """
    mask = np.zeros(len(encoded), dtype=bool)
    if not len(encoded):
        return mask
    mine = encoded.byte_start
    for other in others:
        theirs = np.concatenate([other.byte_start, [other.n_bytes]])
        starts_ok = np.isin(mine, theirs)
        ends_ok = np.isin(encoded.byte_end, theirs)
        mask |= ~(starts_ok & ends_ok)
    return mask
