"""Writing an evaluation out: JSON (the whole result), CSV (one row per tokenizer and group, or
one per token of a health list), HTML (tables, the curves and the per-group bars as inline SVG,
the health lists). Every file goes through `workbench.output_file` (`-` is standard output; a
regular file is staged and renamed: never half a file). CSV cells that a spreadsheet would run
as a formula are quoted (see `csv_cell`).
"""

from __future__ import annotations

import csv
import html
import io
import json
import math
from pathlib import Path

from workbench.evaluate.health import TokenRow
from workbench.output_file import write_output

COLUMNS = (
    "documents",
    "bytes",
    "chars",
    "words",
    "tokens",
    "bytes_per_token",
    "chars_per_token",
    "tokens_per_word",
    "renyi_2_5",
    "vocab_used",
    "ratio_to_best",
)
# For each column, whether more is better (None: neither, not marked).
HIGHER_IS_BETTER = {
    "tokens": False,
    "bytes_per_token": True,
    "chars_per_token": True,
    "tokens_per_word": False,
    "renyi_2_5": True,
    "vocab_used": True,
    "ratio_to_best": False,
}
MAX_GROUPS_SHOWN = 50  # per-group tables and bars in the HTML report
HEALTH_LISTS = ("unreachable", "never_completes", "never_emitted", "never_emitted_training",
                "residues", "rare")  # fmt: skip


def list_title(kind: str, lists: dict) -> str:
    """What one health list holds, in words: `never emitted on the given text`."""
    given = "the given text" if "never_emitted" in lists else "the training corpus"
    return {
        "unreachable": "unreachable",
        "never_completes": "never completes a character",
        "never_emitted": "never emitted on the given text",
        "never_emitted_training": "never emitted on the training corpus",
        "residues": f"residues (emitted on the {lists.get('emitted_on')} vs count at merge)",
        "rare": f"rare (emitted fewer than {lists.get('rare_below')} times on {given})",
    }[kind]


def to_json(result: dict) -> dict:
    """The result without internal fields, health rows as dicts."""

    def clean(value):
        if isinstance(value, TokenRow):
            return value.as_dict()
        if isinstance(value, dict):
            return {k: clean(v) for k, v in value.items() if not str(k).startswith("_")}
        if isinstance(value, list | tuple):
            return [clean(v) for v in value]
        return value

    return clean(result)


def write_json(result: dict, path: str | Path) -> Path:
    write_output(path, json_text(result))
    return Path(path)


def json_text(result: dict) -> str:
    """The JSON document of a result, ending in a newline (as `jq` and shells expect)."""
    return json.dumps(to_json(result), indent=1, ensure_ascii=False) + "\n"


def metric_rows(result: dict) -> list[dict]:
    """One flat row per tokenizer and group, then per tokenizer its total (group `total`)."""
    rows = []
    for t in result["tokenizers"]:
        for g in [*t["groups"], t["total"]]:
            row = {"tokenizer": t["name"], "vocab_size": t["vocab_size"], "group": g["name"]}
            row.update({c: g.get(c) for c in COLUMNS})
            rows.append(row)
    return rows


_FORMULA_STARTS = ("=", "+", "-", "@", "\t", "\r")


def csv_cell(value: object) -> object:
    """A cell a spreadsheet shows as text: a string starting with = + - @ tab or CR gets a
    leading `'` (OWASP's advice against CSV injection); numbers stay numbers.
    csv_cell("=HYPERLINK(..)") -> "'=HYPERLINK(..)"; csv_cell(-1.5) -> -1.5."""
    if isinstance(value, str) and value.startswith(_FORMULA_STARTS):
        return "'" + value
    return value


def _csv(rows: list[dict]) -> str:
    out = io.StringIO()
    if rows:
        # QUOTE_ALL with the `'` prefix: both halves of OWASP's advice, so no reader of the
        # file takes a cell for a formula, whatever its own quoting rules.
        writer = csv.DictWriter(
            out, fieldnames=list(rows[0]), lineterminator="\n", quoting=csv.QUOTE_ALL
        )
        writer.writeheader()
        writer.writerows({k: csv_cell(v) for k, v in row.items()} for row in rows)
    return out.getvalue()


def write_csv(result: dict, path: str | Path) -> Path:
    write_output(path, _csv(metric_rows(result)))
    return Path(path)


def health_rows(result: dict) -> list[dict]:
    """Every token of every health list: tokenizer, list, then the token's fields."""
    rows = []
    for name, lists in (result.get("health") or {}).items():
        for kind in HEALTH_LISTS:
            for row in lists.get(kind) or ():
                d = row.as_dict() if isinstance(row, TokenRow) else dict(row)
                rows.append(
                    {
                        "tokenizer": name,
                        "list": kind,
                        "id": d.get("id"),
                        "rank": d.get("rank"),
                        "text": d.get("text"),
                        "emitted": d.get("emitted"),
                        "merge_count": d.get("merge_count"),
                        "ratio": d.get("ratio"),
                        "reason": d.get("reason"),
                    }
                )
    return rows


def write_health_csv(result: dict, path: str | Path) -> Path:
    write_output(path, _csv(health_rows(result)))
    return Path(path)


def fmt(value: object) -> str:
    if value is None:
        return "—"
    if isinstance(value, float):
        return f"{value:.4f}" if abs(value) < 100 else f"{value:,.1f}"
    if isinstance(value, int):
        return f"{value:,}"
    return str(value)


def best_values(result: dict, group_index: int | None) -> dict[str, float]:
    """Per column the best value among tokenizers for one group (None: the totals)."""
    best = {}
    for column, higher in HIGHER_IS_BETTER.items():
        values = []
        for t in result["tokenizers"]:
            g = t["total"] if group_index is None else t["groups"][group_index]
            if g.get(column) is not None:
                values.append(g[column])
        if values:
            best[column] = max(values) if higher else min(values)
    return best


# ----- HTML ------------------------------------------------------------------------------------

_STYLE = """
body{font-family:system-ui,sans-serif;margin:2em;color:#222}
table{border-collapse:collapse;margin:1em 0}td,th{border:1px solid #ccc;padding:3px 8px}
td{text-align:right}td.l{text-align:left}.best{background:#d7f5d7;font-weight:bold}
h2{margin-top:2em}.note{color:#666;font-size:90%}
"""
_PALETTE = ("#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b", "#e377c2")


def _table(result: dict, group_index: int | None) -> str:
    best = best_values(result, group_index)
    head = "".join(f"<th>{c}</th>" for c in ("tokenizer", "vocab", *COLUMNS))
    body = []
    for t in result["tokenizers"]:
        g = t["total"] if group_index is None else t["groups"][group_index]
        cells = [f"<td class=l>{html.escape(t['label'])}</td><td>{t['vocab_size']:,}</td>"]
        for c in COLUMNS:
            mark = " class=best" if c in best and g.get(c) == best[c] else ""
            cells.append(f"<td{mark}>{fmt(g.get(c))}</td>")
        body.append("<tr>" + "".join(cells) + "</tr>")
    return f"<table><tr>{head}</tr>{''.join(body)}</table>"


def _svg_curves(curves: dict) -> str:
    runs, refs = curves.get("runs") or [], curves.get("references") or []
    xs = [v for r in runs for v in r["vocab_size"]] + [r["vocab_size"] for r in refs]
    ys = [v for r in runs for v in r["bytes_per_token"]] + [r["bytes_per_token"] for r in refs]
    if not xs:
        return ""
    w, h, pad = 720, 360, 50
    lx0, lx1 = math.log10(max(1, min(xs))), math.log10(max(xs) * 1.05)
    y0, y1 = 0.0, max(ys) * 1.05

    def px(x: float) -> float:
        return pad + (math.log10(max(x, 1)) - lx0) / max(lx1 - lx0, 1e-9) * (w - 2 * pad)

    def py(y: float) -> float:
        return h - pad - (y - y0) / max(y1 - y0, 1e-9) * (h - 2 * pad)

    parts = [f'<svg width="{w}" height="{h}" xmlns="http://www.w3.org/2000/svg">']
    parts.append(f'<rect x="{pad}" y="{pad}" width="{w - 2 * pad}" height="{h - 2 * pad}" '
                 'fill="none" stroke="#999"/>')  # fmt: skip
    for i, r in enumerate(runs):
        color = _PALETTE[i % len(_PALETTE)]
        pts = " ".join(
            f"{px(x):.1f},{py(y):.1f}"
            for x, y in zip(r["vocab_size"], r["bytes_per_token"], strict=True)
        )
        parts.append(f'<polyline points="{pts}" fill="none" stroke="{color}" stroke-width="2"/>')
        parts.append(f'<text x="{w - pad + 4}" y="{py(r["bytes_per_token"][-1]):.1f}" font-size="11" fill="{color}">{html.escape(r["name"])}</text>')  # fmt: skip
    for r in refs:
        y = py(r["bytes_per_token"])
        parts.append(f'<line x1="{pad}" x2="{px(r["vocab_size"]):.1f}" y1="{y:.1f}" y2="{y:.1f}" stroke="#555" stroke-dasharray="5,4"/>')  # fmt: skip
        parts.append(f'<text x="{pad + 4}" y="{y - 3:.1f}" font-size="11">{html.escape(r["name"])} ({r["bytes_per_token"]:.3f})</text>')  # fmt: skip
    parts.append(f'<text x="{w / 2}" y="{h - 12}" font-size="12" text-anchor="middle">vocabulary size (log)</text>')  # fmt: skip
    parts.append(f'<text x="12" y="{h / 2}" font-size="12" transform="rotate(-90 12 {h / 2})" text-anchor="middle">bytes per token</text>')  # fmt: skip
    parts.append(f'<text x="{pad - 4}" y="{py(y1):.1f}" font-size="10" text-anchor="end">{y1:.2f}</text>')  # fmt: skip
    parts.append(f'<text x="{pad - 4}" y="{py(0):.1f}" font-size="10" text-anchor="end">0</text>')  # fmt: skip
    parts.append("</svg>")
    return "".join(parts)


def _svg_bars(result: dict) -> str:
    groups = result["group_names"][:MAX_GROUPS_SHOWN]
    toks = result["tokenizers"]
    if len(groups) < 2:
        return ""
    values = [[t["groups"][i]["tokens_per_byte"] or 0 for t in toks] for i in range(len(groups))]
    top = max(max(v) for v in values) or 1
    bar, gap, h = 14, 18, 260
    w = 60 + len(groups) * (len(toks) * bar + gap)
    parts = [f'<svg width="{w}" height="{h + 60}" xmlns="http://www.w3.org/2000/svg">']
    for gi, name in enumerate(groups):
        x0 = 50 + gi * (len(toks) * bar + gap)
        for ti, value in enumerate(values[gi]):
            bh = value / top * h
            color = _PALETTE[ti % len(_PALETTE)]
            parts.append(f'<rect x="{x0 + ti * bar}" y="{h - bh + 10:.1f}" width="{bar - 2}" height="{bh:.1f}" fill="{color}"><title>{html.escape(toks[ti]["name"])}: {value:.4f}</title></rect>')  # fmt: skip
        parts.append(f'<text x="{x0}" y="{h + 28}" font-size="11">{html.escape(name[-24:])}</text>')  # fmt: skip
    parts.append("</svg>")
    legend = " ".join(f'<span style="color:{_PALETTE[i % len(_PALETTE)]}">■ {html.escape(t["label"])}</span>' for i, t in enumerate(toks))  # fmt: skip
    return "".join(parts) + f"<p>{legend}</p>"


def _health_html(result: dict, limit: int = 200) -> str:
    out = []
    for name, lists in (result.get("health") or {}).items():
        out.append(f"<h3>{html.escape(name)}</h3>")
        for kind in HEALTH_LISTS:
            rows = lists.get(kind)
            if rows is None:
                continue
            out.append(f"<h4>{html.escape(list_title(kind, lists))}: {len(rows):,}</h4>")
            if not rows:
                continue
            cells = "".join(
                f"<tr><td>{r.id}</td><td>{r.rank}</td><td class=l>{html.escape(r.text)}</td>"
                f"<td>{fmt(r.emitted)}</td><td>{fmt(r.merge_count)}</td><td>{fmt(r.ratio)}</td>"
                f"<td class=l>{html.escape(r.reason or '')}</td></tr>"
                for r in rows[:limit]
            )
            more = f"<p class=note>… and {len(rows) - limit:,} more (CSV has all)</p>" if len(rows) > limit else ""  # fmt: skip
            out.append(
                "<table><tr><th>id</th><th>rank</th><th>token</th><th>emitted</th>"
                f"<th>count at merge</th><th>ratio</th><th>why</th></tr>{cells}</table>{more}"
            )
    return "".join(out)


def curve_findings(result: dict) -> list[str]:
    """The sentences the CLI prints and the report shows about each curve."""
    lines = []
    for r in (result.get("curves") or {}).get("runs", []):
        k = r["k_within_1pct"]
        final = r["bytes_per_token"][-1] if r["bytes_per_token"] else 0
        lines.append(
            f"{r['name']}: the smallest k within 1% of the final compression "
            f"({final:.3f} bytes/token) is {fmt(k)}"
        )
        for ref, k_ref in r["k_matching"].items():
            if k_ref is None:
                lines.append(f"{r['name']}: never matches {ref} on this text")
            else:
                lines.append(f"{r['name']}: k at which this run matches {ref} on this text is {k_ref:,}")  # fmt: skip
    return lines


def html_report(result: dict, title: str = "Tokenizer evaluation") -> str:
    parts = [f"<!doctype html><meta charset=utf-8><title>{html.escape(title)}</title>",
             f"<style>{_STYLE}</style><h1>{html.escape(title)}</h1>",
             "<h2>All text</h2>", _table(result, None)]  # fmt: skip
    if len(result["group_names"]) > 1:
        for i, name in enumerate(result["group_names"][:MAX_GROUPS_SHOWN]):
            parts.append(f"<h2>Group {html.escape(name)}</h2>{_table(result, i)}")
        if len(result["group_names"]) > MAX_GROUPS_SHOWN:
            more = len(result["group_names"]) - MAX_GROUPS_SHOWN
            parts.append(f"<p class=note>… and {more:,} more groups (the CSV and JSON have all)</p>")  # fmt: skip
        parts.append("<h2>Tokens per byte by group</h2>" + _svg_bars(result))
        rows = "".join(
            f"<tr><td class=l>{html.escape(t['label'])}</td><td>{fmt(t['parity']['max_over_min'])}</td><td>{fmt(t['parity']['gini'])}</td></tr>"  # fmt: skip
            for t in result["tokenizers"]
        )
        parts.append("<h2>Parity across groups</h2><table><tr><th>tokenizer</th>"
                     f"<th>max/min tokens per byte</th><th>Gini</th></tr>{rows}</table>")  # fmt: skip
    if result.get("curves"):
        parts.append("<h2>Compression curves</h2>" + _svg_curves(result["curves"]))
        parts.append("".join(f"<p>{html.escape(line)}</p>" for line in curve_findings(result)))
    if result.get("health"):
        parts.append("<h2>Token health</h2>" + _health_html(result))
    parts.append(
        "<p class=note>Rényi efficiency (α = 2.5) rewards an even use of the vocabulary; it was "
        "fitted to one translation task and is not a ranking on its own. Best values per "
        "column are marked.</p>"
    )
    return "\n".join(parts)


def write_html(result: dict, path: str | Path, title: str = "Tokenizer evaluation") -> Path:
    write_output(path, html_report(result, title))
    return Path(path)
