"""`bpe-workbench eval --tokenizer A [--tokenizer B …] TEXT… [--group-by …] [--json/--csv/--html]`:
which tokenizer is better for my data.

A tokenizer is `run:ID` (a stored run), `run:ID@k` (its first k merges), `sweep:ID` (every run
of a sweep), a tokenizer file or folder, or `gpt2`/`cl100k`/`o200k`. Text is any corpus the trainer reads. Prints a table per
group; `--health` adds the token health lists, `--curves` the compression curves.
"""

from __future__ import annotations

import argparse
import sys
import threading
from pathlib import Path

from workbench.engine.errors import WorkbenchError

MAX_GROUPS_PRINTED = 20
RENYI_HELP = (
    "Rényi efficiency (alpha 2.5): H_2.5 of the emitted-token distribution over log |V|. "
    "Caveat: it rewards an even use of the vocabulary, was fitted to one translation task "
    "and later work found tokenizers it ranks wrongly: read it beside compression, not instead."
)


def register(subparsers: argparse._SubParsersAction) -> None:
    p = subparsers.add_parser(
        "eval",
        help="compare tokenizers on held-out text (metrics, token health, curves)",
        description=__doc__,
        epilog=RENYI_HELP,
    )
    p.add_argument("paths", nargs="*", metavar="TEXT_OR_CORPUS", help="files and folders of text")
    p.add_argument(
        "--tokenizer",
        action="append",
        required=True,
        metavar="SPEC",
        help="run:ID, run:ID@k, sweep:ID (its runs), a tokenizer file/folder, gpt2, cl100k or "
        "o200k (repeatable)",
    )
    p.add_argument("--group-by", default=None, help="file, folder or field:NAME (JSONL field)")
    p.add_argument("--json", type=Path, default=None, help="write every figure as JSON")
    p.add_argument("--csv", type=Path, default=None, help="one row per tokenizer and group")
    p.add_argument("--html", type=Path, default=None, help="an HTML report")
    p.add_argument("--health", action="store_true", help="token health lists")
    p.add_argument("--health-csv", type=Path, default=None, help="the health lists as CSV")
    p.add_argument("--rare-below", type=int, default=5, metavar="N", help="rare: emitted < N")
    p.add_argument("--residue-ratio", type=float, default=0.05, help="residue: emitted/count <=")
    p.add_argument("--residue-min-count", type=int, default=100, help="residue: count at merge >=")
    p.add_argument(
        "--no-training-corpus",
        action="store_true",
        help="health: do not read a run's training corpus (only the given text)",
    )
    p.add_argument("--curves", action="store_true", help="compression curves of the runs")
    p.add_argument("--curve-points", type=int, default=24, help="points on the log grid")
    p.add_argument("--threads", type=int, default=None, help="encoding threads (default: cores)")
    p.add_argument("--pattern", default=None, help="pattern for tokenizer files without one")
    p.add_argument("--db", type=Path, default=None, help="run store (default: user database)")
    p.add_argument("--limit", type=int, default=10, help="health tokens printed per list")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from workbench.engine.corpus.listing import list_files
    from workbench.evaluate import report
    from workbench.evaluate.run import Options, evaluate
    from workbench.evaluate.specs import resolve_all
    from workbench.evaluate.texts import iter_docs, parse_group_by

    group_by = parse_group_by(args.group_by)
    if not args.paths and not args.health:
        raise WorkbenchError("give text to evaluate on (files or folders), or --health")
    for name, value in (("--rare-below", args.rare_below), ("--curve-points", args.curve_points)):
        if value < 1:
            raise WorkbenchError(f"{name} must be at least 1")
    if args.threads is not None and args.threads < 1:
        raise WorkbenchError("--threads must be at least 1")
    total = sum(f.stat().st_size for f in list_files(args.paths))
    candidates = resolve_all(args.tokenizer, args.db, args.pattern)
    if len({c.name for c in candidates}) != len(candidates):
        raise WorkbenchError("--tokenizer: the same tokenizer is named twice")
    options = Options(
        health=args.health or args.health_csv is not None,
        rare_below=args.rare_below,
        residue_ratio=args.residue_ratio,
        residue_min_count=args.residue_min_count,
        training_corpus=not args.no_training_corpus,
        curves=args.curves,
        curve_points=args.curve_points,
        threads=args.threads,
        total_chars=total or None,
    )
    docs = iter_docs(args.paths, group_by) if args.paths else iter(())
    result = evaluate(candidates, docs, options, _progress(), threading.Event())
    _print(result, args.limit)
    for path, write in (
        (args.json, report.write_json),
        (args.csv, report.write_csv),
        (args.html, report.write_html),
        (args.health_csv, report.write_health_csv),
    ):
        if path is not None:
            write(result, path)
            print(f"wrote {path}")
    return 0


def _progress():
    if not sys.stderr.isatty():
        return None

    def show(what: str, done: float) -> None:
        share = f" {done:4.0%}" if done >= 0 else ""
        print(f"\r\033[K{what}{share}", end="", file=sys.stderr, flush=True)

    return show


def _print(result: dict, limit: int) -> None:
    from workbench.evaluate import report

    if sys.stderr.isatty():
        print("\r\033[K", end="", file=sys.stderr)
    columns = ("tokens", "bytes_per_token", "chars_per_token", "tokens_per_word", "renyi_2_5",
               "vocab_used", "ratio_to_best")  # fmt: skip
    names = result["group_names"]
    sections = [("all text", None)] if len(names) > 1 else [(names[0] if names else "all", 0)]
    if len(names) > 1:
        sections += [(name, i) for i, name in enumerate(names[:MAX_GROUPS_PRINTED])]
    width = max([len(t["label"]) for t in result["tokenizers"]] + [9])
    for title, index in sections:
        if not names:
            break
        first = result["tokenizers"][0]
        g0 = first["total"] if index is None else first["groups"][index]
        print(f"\n{title}: {g0['documents']:,} documents, {g0['bytes']:,} bytes, "
              f"{g0['words']:,} words")  # fmt: skip
        print(f"{'tokenizer':<{width}} {'vocab':>8} " + " ".join(f"{c:>15}" for c in columns))
        for t in result["tokenizers"]:
            g = t["total"] if index is None else t["groups"][index]
            cells = " ".join(f"{report.fmt(g.get(c)):>15}" for c in columns)
            print(f"{t['label']:<{width}} {t['vocab_size']:>8,} {cells}")
    if len(names) > MAX_GROUPS_PRINTED:
        print(
            f"\n… and {len(names) - MAX_GROUPS_PRINTED:,} more groups (all of them: --csv, --json)"
        )
    if len(names) > 1:
        print("\nparity across groups (tokens per byte): max/min, Gini")
        for t in result["tokenizers"]:
            p = t["parity"]
            print(f"{t['label']:<{width}} {report.fmt(p['max_over_min']):>10} "
                  f"{report.fmt(p['gini']):>10}  costliest: {p.get('costliest_group', '—')}")  # fmt: skip
    if result.get("curves"):
        print()
        for line in report.curve_findings(result):
            print(line)
    for name, lists in (result.get("health") or {}).items():
        print(f"\ntoken health of {name}:")
        if lists.get("training_corpus"):
            print(f"  training corpus: {lists['training_corpus']}")
        for kind in report.HEALTH_LISTS:
            rows = lists.get(kind)
            if rows is None:
                continue
            shown = ", ".join(f"{r.id}:{r.text!r}" for r in rows[:limit])
            more = " …" if len(rows) > limit else ""
            title = report.list_title(kind, lists)
            print(f"  {title}: {len(rows):,}" + (f"  {shown}{more}" if rows else ""))
