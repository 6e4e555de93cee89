"""`eval --plan`'s table: per tokenizer, a few prefixes k on the grid and its cheapest k."""

from __future__ import annotations

from workbench.cli._common import shown

ROWS_SHOWN = 16  # the grid has ~48 points; --json has them all


def _rows_to_show(points: list[dict], grid: list[int], best_k: int) -> list[dict]:
    """About ROWS_SHOWN points of the grid, spread evenly, and the cheapest k."""
    step = max(1, len(grid) // ROWS_SHOWN)
    chosen = set(grid[::step]) | {grid[-1], best_k}
    return [p for p in points if p["k"] in chosen]


def _num(value: float | None) -> str:
    return "—" if value is None else f"{value:,.0f}"


def plan_lines(plan: dict) -> list[str]:
    m = plan["model"]
    tied = "tied" if m["tied"] else "untied"
    out = [
        "",
        f"vocabulary-size plan: d={m['width']:,}, L={m['layers']:,}, ctx={m['context']:,}, "
        f"N={m['n']:,} non-embedding parameters, {tied} embeddings; "
        f"{plan['bytes']:,} bytes of held-out text",
        f"  {m['formula']}",
    ]
    header = (f"  {'k':>8} {'vocab':>8} {'bytes/token':>12} {'params':>14} "
              f"{'FLOPs/token':>14} {'FLOPs/byte':>12} {'vs best':>8}")  # fmt: skip
    for t in plan["tokenizers"]:
        best = t["best"]
        out.append(f"\n{shown(t['label'])}:")
        out.append(header)
        for p in _rows_to_show(t["points"], t["grid"], best["k"]):
            ratio = (
                p["flops_per_byte"] / best["flops_per_byte"]
                if p["flops_per_byte"] and best["flops_per_byte"]
                else None
            )
            mark = "  ← cheapest" if p["k"] == best["k"] else ""
            out.append(
                f"  {p['k']:>8,} {p['vocab_size']:>8,} {p['bytes_per_token']:>12.4f} "
                f"{p['parameters']:>14,} {p['flops_per_token']:>14,} "
                f"{_num(p['flops_per_byte']):>12} {'—' if ratio is None else f'{ratio:.3f}':>8}{mark}"
            )
        out.append(
            f"  cheapest: k = {best['k']:,} (vocabulary {best['vocab_size']:,}), "
            f"{_num(best['flops_per_byte'])} FLOPs per byte"
        )
        if t["best_is_last"] and t["kind"] != "reference":
            out.append("  (its last merge: more merges may be cheaper still)")
    if len(plan["tokenizers"]) > 1 and plan["cheapest"] is not None:
        label = next(t["label"] for t in plan["tokenizers"] if t["name"] == plan["cheapest"])
        out.append(f"\ncheapest of all: {shown(label)}")
    return out
