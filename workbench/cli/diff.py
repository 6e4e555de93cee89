"""`bpe-workbench diff A B [C …] [--k K] [--text FILE] [--json]`: where two merge lists part.

A, B, … are what `eval --tokenizer` takes: `run:ID`, `run:ID@k`, a tokenizer file or folder,
`gpt2`/`cl100k`/`o200k`. The first is the base; each other one is compared with it: the first
rank whose merge differs, the overlap@k (shared merges among the first k of each, over k), the
tokens only in one, and with `--text` how many tokens each needs there and which tokens and
merges explain the difference (see docs/evaluation.md, "Comparing runs").
"""

from __future__ import annotations

import argparse

from workbench.cli._common import (
    TOKENIZER_HELP,
    UsageError,
    add_db_option,
    add_quiet_option,
    patterns_before_loading,
    prepare_kernels,
    print_json,
    read_text,
    shown,
)

JSON_HELP = (
    "print every figure as JSON on stdout: {base, pairs: [{a, b: {name, label, kind, merges, "
    "vocab_size, pattern}, same_pattern, compared_merges, first_divergence, divergent_merges, "
    "overlap: {k, fraction}, overlap_at_end, only_in_a, only_in_b: [{id, rank, text}], text: "
    "{bytes, tokens_a, tokens_b, difference, saved_by_a, saved_by_b, merge_order_a, "
    "merge_order_b, credits_a, credits_b: [{text, id, rank, merge, saved}], cuts: [{a, b, "
    "count, saved_by_a}]} or null}]}"
)
OVERLAP_SHOWN = (10, 100, 1000, 10_000, 100_000)


def register(subparsers: argparse._SubParsersAction) -> None:
    p = subparsers.add_parser(
        "diff",
        help="compare merge lists: first divergence, overlap@k, tokens only in one, a text",
        description=__doc__,
    )
    p.add_argument(
        "specs", nargs="+", metavar="SPEC", help=f"{TOKENIZER_HELP}; the first is the base"
    )
    p.add_argument(
        "--k",
        type=int,
        default=None,
        metavar="K",
        help="cut each to its first K merges (a run:ID@k keeps its k)",
    )
    p.add_argument(
        "--text", default=None, metavar="FILE", help="UTF-8 text to encode with both (- for stdin)"
    )
    p.add_argument("--json", action="store_true", help=JSON_HELP)
    p.add_argument("--limit", type=int, default=10, metavar="N", help="rows printed per list")
    p.add_argument("--pattern", default=None, help="pattern for tokenizer files without one")
    add_db_option(p)
    add_quiet_option(p)
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from workbench.evaluate.diff import at_k, diff
    from workbench.evaluate.specs import resolve

    if len(args.specs) < 2:
        raise UsageError("diff: name at least two tokenizers (e.g. run:1 run:2)")
    if len(set(args.specs)) != len(args.specs):
        raise UsageError("diff: the same tokenizer is named twice")
    if args.k is not None and args.k < 0:
        raise UsageError("--k must be 0 or more")
    if args.limit < 0:
        raise UsageError("--limit must be 0 or more")
    text = read_text(args.text) if args.text is not None else None
    prepare_kernels(args, "eval", patterns_before_loading(args.specs, args))
    candidates = [
        at_k(resolve(spec, args.db, args.pattern, "SPEC"), None if "@" in spec else args.k)
        for spec in args.specs
    ]
    prepare_kernels(args, "eval", [c.tokenizer.pattern for c in candidates])
    result = diff(candidates, [text] if text is not None else None)
    if args.json:
        print_json(result)
    else:
        print("\n".join(table_lines(result, args.limit, args.text)))
    return 0


def table_lines(result: dict, limit: int, text_name: str | None = None) -> list[str]:
    """The pairs as text; every name and token escaped for a terminal."""
    out: list[str] = []
    for pair in result["pairs"]:
        a, b = pair["a"], pair["b"]
        out.append(f"A: {shown(a['label'])} ({a['merges']:,} merges, vocab {a['vocab_size']:,})")
        out.append(f"B: {shown(b['label'])} ({b['merges']:,} merges, vocab {b['vocab_size']:,})")
        if not pair["same_pattern"]:
            out.append("   (their pre-tokenizer patterns differ: so do their pieces)")
        out.append(_divergence(pair))
        out.append(_overlap(pair))
        out += _only(pair, limit)
        if pair["text"] is not None:
            out += _text_lines(pair["text"], limit, text_name or "text")
        out.append("")
    return out[:-1]


def _divergence(pair: dict) -> str:
    rank, n = pair["first_divergence"], pair["compared_merges"]
    if rank is None:
        return f"first divergent rank: none (the first {n:,} merges are the same)"
    m = pair["divergent_merges"]
    return f"first divergent rank: {rank:,} (A: {shown(m['a'])}   B: {shown(m['b'])})"


def _overlap(pair: dict) -> str:
    ks, fractions = pair["overlap"]["k"], pair["overlap"]["fraction"]
    n = pair["compared_merges"]
    if not n:
        return "overlap@k: no merges to compare"
    at = dict(zip(ks, fractions, strict=True))
    shown_ks = [k for k in OVERLAP_SHOWN if k < n and k in at] + [n]
    return "overlap@k: " + "  ".join(f"{k:,}: {at[k]:.3f}" for k in shown_ks)


def _only(pair: dict, limit: int) -> list[str]:
    lines = []
    for side, key in (("A", "only_in_a"), ("B", "only_in_b")):
        rows = pair[key]
        listed = ", ".join(f"{r['id']}:'{shown(r['text'])}'" for r in rows[:limit])
        more = " …" if len(rows) > limit else ""
        lines.append(f"only in {side}: {len(rows):,} tokens" + (f"  {listed}{more}" if rows else ""))  # fmt: skip
    return lines


def _text_lines(t: dict, limit: int, name: str) -> list[str]:
    diff = t["difference"]
    if diff:
        who = "A" if diff > 0 else "B"
        share = abs(diff) / max(t["tokens_a"], t["tokens_b"])
        verdict = f"{who} needs {abs(diff):,} fewer ({share:.2%})"
    else:
        verdict = "the same count"
    lines = [
        f"{shown(name)}: {t['bytes']:,} bytes; A {t['tokens_a']:,} tokens, B {t['tokens_b']:,}: "
        + verdict,
        f"  {t['segments_differing']:,} stretches cut differently: A saves {t['saved_by_a']:,} "
        f"tokens in them, B saves {t['saved_by_b']:,}",
    ]
    for side in ("a", "b"):
        rows = t[f"credits_{side}"]
        order = t[f"merge_order_{side}"]
        if not rows and not order:
            continue
        head = (
            f"  {side.upper()}'s savings by token it has and the other lacks (merge that makes it):"
        )
        lines.append(head)
        for r in rows[:limit]:
            merge = f"#{r['rank']:,} {shown(r['merge'])}" if r["merge"] else "special"
            lines.append(f"    {r['saved']:>10,.1f}  '{shown(r['text'])}'  ({merge})")
        if order:
            lines.append(f"    {order:>10,.1f}  merge order (the other has every token, cuts otherwise)")  # fmt: skip
    if t["cuts"] and limit:
        lines.append("  commonest differing cuts (A | B, times, tokens A saves):")
        for c in t["cuts"][:limit]:
            cut_a = "|".join(shown(x) for x in c["a"])
            cut_b = "|".join(shown(x) for x in c["b"])
            lines.append(f"    {cut_a}  vs  {cut_b}  ×{c['count']:,}  {c['saved_by_a']:+,}")
    return lines
