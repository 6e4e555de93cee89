"""`bpe-workbench diff` and the Evaluate tab's "Compare runs", as one JSON-ready dict (no Qt).

`diff(candidates, texts)` compares the first candidate (the base, A) with each of the others (B)
through `compare`: first divergent rank, overlap@k on a log grid, the tokens only in A and only
in B, and, given texts, the token-count difference credited to segments and tokens. Token text
is `display.readable` (bytes that are not a whole character as `<E2>`), as `runs show` writes it.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from workbench.display import readable
from workbench.engine.errors import CancelledError, ConfigError
from workbench.evaluate import compare
from workbench.evaluate.specs import Candidate

LISTED = 1000  # credits and cuts kept in the result; only-in lists are kept whole


def at_k(cand: Candidate, k: int | None) -> Candidate:
    """`cand` cut to its first `k` merges (None: as it is); a one-line error past its end."""
    if k is None:
        return cand
    merges = len(cand.tokenizer.merges)
    if not 0 <= k <= merges:
        raise ConfigError(f"--k {k}: {cand.name} has {merges:,} merges")
    label = cand.label if cand.kind != "run" or "@" in cand.label else f"{cand.label} @ {k:,}"
    return Candidate(
        cand.name if "@" in cand.name else f"{cand.name}@{k}",
        label,
        cand.tokenizer.prefix(k),
        cand.kind,
        cand.run_id,
        None if cand.merge_counts is None else cand.merge_counts[:k],
    )


def diff(
    candidates: Sequence[Candidate],
    texts: Sequence[str] | None = None,
    *,
    points: int = 200,
    cancelled: Callable[[], bool] = lambda: False,
) -> dict:
    """The base (first candidate) against each other one; `texts` for the attribution."""
    if len(candidates) < 2:
        raise ConfigError("diff: give at least two tokenizers")
    base, *others = candidates
    pairs = []
    for other in others:
        if cancelled():
            raise CancelledError("comparison cancelled")
        pairs.append(pair(base, other, texts, points, cancelled))
    return {"base": base.name, "pairs": pairs}


def _about(cand: Candidate) -> dict:
    tok = cand.tokenizer
    return {
        "name": cand.name,
        "label": cand.label,
        "kind": cand.kind,
        "merges": len(tok.merges),
        "vocab_size": tok.vocab_size,
        "pattern": tok.pattern,
    }


def _token_rows(tok, found: list[tuple[int, bytes]]) -> list[dict]:
    return [{"id": tid, "rank": tok.token_rank(tid), "text": readable(raw)} for tid, raw in found]


def pair(
    a: Candidate,
    b: Candidate,
    texts: Sequence[str] | None,
    points: int = 200,
    cancelled: Callable[[], bool] = lambda: False,
) -> dict:
    """Everything `diff` says about A against B."""
    ta, tb = a.tokenizer, b.tokenizer
    ma, mb = ta.merge_bytes, tb.merge_bytes
    n = min(len(ma), len(mb))
    counts = compare.overlap_counts(ma, mb)
    ks = compare.overlap_grid(n, points)
    rank = compare.first_divergence(ma, mb)
    out: dict = {
        "a": _about(a),
        "b": _about(b),
        "same_pattern": ta.pattern == tb.pattern,
        "compared_merges": n,
        "first_divergence": rank,
        "divergent_merges": None
        if rank is None
        else {"a": _merge_text(ma[rank]), "b": _merge_text(mb[rank])},
        "overlap": {"k": ks, "fraction": [float(counts[k - 1]) / k for k in ks]},
        "overlap_at_end": float(counts[-1]) / n if n else None,
        "only_in_a": _token_rows(ta, compare.only_in(ta, tb)),
        "only_in_b": _token_rows(tb, compare.only_in(tb, ta)),
        "text": None,
    }
    if texts:
        found = compare.attribute(ta, tb, texts, cancelled)
        if cancelled():
            raise CancelledError("comparison cancelled")
        out["text"] = _attribution(found, ta, tb, ma, mb)
    return out


def _merge_text(merge: tuple[bytes, bytes]) -> str:
    return f"{readable(merge[0])} + {readable(merge[1])}"


def _attribution(found: compare.Attribution, ta, tb, ma: list, mb: list) -> dict:
    """The attribution as JSON; `ma`, `mb`: the merges as bytes (a property that builds a list
    of every merge on each call, so it is read once)."""
    ids_a = {raw: tid for tid, raw in ta.decode_table().items()}
    ids_b = {raw: tid for tid, raw in tb.decode_table().items()}

    def credits(credit, tok, ids, merge_bytes) -> list[dict]:
        rows = []
        for key, saved in compare.top_credits(credit, LISTED):
            if key == compare.MERGE_ORDER:
                continue
            tid = ids[key]
            made_by = tok.token_rank(tid) if tid in tok.vocab else -1  # a special: no merge
            rows.append(
                {
                    "text": readable(key),
                    "id": tid,
                    "rank": made_by,
                    "merge": _merge_text(merge_bytes[made_by]) if made_by >= 0 else None,
                    "saved": saved,
                }
            )
        return rows

    cuts = sorted(
        found.cuts.items(),
        key=lambda item: (-abs(len(item[0][1]) - len(item[0][0])) * item[1], -item[1]),
    )[:LISTED]
    return {
        "bytes": found.bytes,
        "tokens_a": found.tokens_a,
        "tokens_b": found.tokens_b,
        "difference": found.difference,
        "saved_by_a": found.saved_by_a,
        "saved_by_b": found.saved_by_b,
        "segments_differing": found.segments_differing,
        "merge_order_a": found.credit_a.get(compare.MERGE_ORDER, 0),
        "merge_order_b": found.credit_b.get(compare.MERGE_ORDER, 0),
        "credits_a": credits(found.credit_a, ta, ids_a, ma),
        "credits_b": credits(found.credit_b, tb, ids_b, mb),
        "cuts": [
            {
                "a": [readable(t) for t in cut_a],
                "b": [readable(t) for t in cut_b],
                "count": count,
                "saved_by_a": (len(cut_b) - len(cut_a)) * count,
            }
            for (cut_a, cut_b), count in cuts
        ],
    }
