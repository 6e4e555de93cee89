"""The proof that an extended tokenizer kept its base: every old id, token, special and merge
unchanged, every new token reachable (token health's "unreachable" list, over the new tokens,
is empty), and every piece of the new corpus that offers no new merge encoded as before.

    check = check_extension(ext, words)      # words: the new corpus's word table
    check.ok, check.lines()

Why those pieces: the extended tokenizer merges by rank, the old ranks first, so it reaches the
base's ids for a piece before any new merge can apply; if no two neighbouring base tokens of the
piece make a new token's bytes, nothing more happens and the ids must be the base's. Pieces
that do offer one must still decode to their own bytes, in no more tokens than before.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from workbench.engine.extending import Extension
from workbench.engine.pretokenize.words import WordTable
from workbench.evaluate.health import TokenRow, unreachable


@dataclass
class ExtensionCheck:
    old_tokens: int  # old ordinary ids checked
    changed_ids: list[int] = field(default_factory=list)  # old ids whose bytes differ (or gone)
    specials_unchanged: bool = True
    old_merges: int = 0
    merges_unchanged: bool = True
    new_tokens: int = 0
    new_ids_after_old: bool = True
    unreachable: list[TokenRow] = field(default_factory=list)
    pieces: int = 0  # unique pieces of the corpus encoded by both
    pieces_without_new_merge: int = 0
    pieces_changed_without_new_merge: int = 0  # must be 0
    pieces_not_lossless: int = 0  # must be 0: decoded bytes differ, or more tokens than before

    @property
    def ok(self) -> bool:
        return (
            not self.changed_ids
            and self.specials_unchanged
            and self.merges_unchanged
            and self.new_ids_after_old
            and not self.unreachable
            and self.pieces_changed_without_new_merge == 0
            and self.pieces_not_lossless == 0
        )

    def summary(self) -> str:
        """One line for a status bar: `Extension check passed: 50,257 old ids unchanged, 2,000
        new tokens all reachable`, or what failed."""
        if self.ok:
            return (
                f"Extension check passed: {self.old_tokens:,} old ids unchanged, "
                f"{self.new_tokens:,} new tokens all reachable"
            )
        failed = [line[5:] for line in self.lines() if line.startswith("FAIL")]
        return "Extension check FAILED: " + "; ".join(failed)

    def lines(self) -> list[str]:
        """The check as a person reads it, one fact a line."""

        def mark(good: bool) -> str:
            return "ok  " if good else "FAIL"

        unchanged = self.pieces_without_new_merge - self.pieces_changed_without_new_merge
        lines = [
            f"{mark(not self.changed_ids)} {self.old_tokens:,} old ids keep their bytes"
            + (f" ({len(self.changed_ids):,} changed)" if self.changed_ids else ""),
            f"{mark(self.specials_unchanged)} the special tokens keep their ids",
            f"{mark(self.merges_unchanged)} {self.old_merges:,} old merges unchanged, in order",
            f"{mark(self.new_ids_after_old)} {self.new_tokens:,} new tokens, ids after every old id",
            f"{mark(not self.unreachable)} every new token reachable"
            + (f" ({len(self.unreachable):,} unreachable)" if self.unreachable else ""),
            f"{mark(self.pieces_changed_without_new_merge == 0)} {unchanged:,} of "
            f"{self.pieces_without_new_merge:,} pieces with no new merge encode as before",
            f"{mark(self.pieces_not_lossless == 0)} all {self.pieces:,} pieces decode to "
            "their bytes in no more tokens",
        ]
        return lines


def check_extension(ext: Extension, words: WordTable | None = None) -> ExtensionCheck:
    """Check `ext` against its base; `words` (the new corpus's word table) adds the encoding
    check of its pieces."""
    base, tok = ext.base, ext.tokenizer
    check = ExtensionCheck(old_tokens=len(base.vocab))
    vocab = tok.vocab
    check.changed_ids = [tid for tid, token in base.vocab.items() if vocab.get(tid) != token]
    check.specials_unchanged = tok.special_tokens == base.special_tokens
    n = len(base.merges)
    check.old_merges = n
    check.merges_unchanged = (
        tok.merges[:n] == base.merges and tok.merge_results[:n] == base.merge_results
    )
    new = set(vocab) - set(base.vocab)
    check.new_tokens = len(new)
    old_ids = [*base.vocab, *base.special_tokens.values()]
    check.new_ids_after_old = not new or min(new) > max(old_ids)
    check.unreachable = unreachable(tok, among=new)
    if words is not None and len(words):
        _check_pieces(check, ext, words)
    return check


def _check_pieces(check: ExtensionCheck, ext: Extension, words: WordTable) -> None:
    base_ids, base_off = ext.base.encode_pieces(words.data, words.offsets)
    new_ids, new_off = ext.tokenizer.encode_pieces(words.data, words.offsets)
    vocab = ext.tokenizer.vocab
    new_bytes = {vocab[t] for t in set(vocab) - set(ext.base.vocab)}
    base_list, new_list = base_ids.tolist(), new_ids.tolist()
    b_off, n_off = base_off.tolist(), new_off.tolist()
    check.pieces = len(words)
    for i in range(len(words)):
        before = base_list[b_off[i] : b_off[i + 1]]
        after = new_list[n_off[i] : n_off[i + 1]]
        offers = any(
            vocab[a] + vocab[b] in new_bytes for a, b in zip(before, before[1:], strict=False)
        )
        if not offers:
            check.pieces_without_new_merge += 1
            if after != before:
                check.pieces_changed_without_new_merge += 1
        if len(after) > len(before) or b"".join(vocab[t] for t in after) != words.word(i):
            check.pieces_not_lossless += 1
