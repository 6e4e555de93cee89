"""`bpe-workbench eval --tokenizer A [--tokenizer B …] TEXT… [--group-by …] [--json/--csv/--html]`:
which tokenizer is better for my data.

A tokenizer is `run:ID` (a stored run), `run:ID@k` (its first k merges), `sweep:ID` (every run
of a sweep), a tokenizer file or folder, or `gpt2`/`cl100k`/`o200k`. Text is any corpus the trainer reads. Prints a table per
group; `--health` adds the token health lists, `--curves` the compression curves.
`--json -` (or `--csv -`, ...) writes that report to standard output, and the table to stderr.
"""

from __future__ import annotations

import argparse
import sys
import threading

from workbench.cli._common import (
    TOKENIZER_HELP,
    UsageError,
    add_db_option,
    add_quiet_option,
    add_threads_option,
    check_threads,
    patterns_before_loading,
    prepare_kernels,
    shown,
)

MAX_GROUPS_PRINTED = 20
JSON_HELP = (
    "write every figure as JSON (- for standard output): {group_names: [NAME], tokenizers: "
    "[{name, label, kind, vocab_size, groups: [{name, documents, bytes, chars, words, tokens, "
    "bytes_per_token, chars_per_token, tokens_per_word, renyi_2_5, vocab_used, ratio_to_best}],"
    " total: {same fields}, parity: {max_over_min, gini, costliest_group}}], curves (with "
    "--curves), plan (with --plan): {model: {width, layers, context, tied, n, formula}, bytes, "
    "tokenizers: [{name, points: [{k, vocab_size, bytes_per_token, flops_per_token, "
    "parameters, flops_per_byte}], grid, best, best_is_last, method}], cheapest}, health: {TOKENIZER: {LIST: [{id, rank, text, emitted, merge_count, ratio, "
    "reason}]}} (with --health)}"
)
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
    p.add_argument(
        "paths", nargs="*", metavar="PATH", help="held-out text: files and folders (any corpus)"
    )
    p.add_argument(
        "--tokenizer",
        action="append",
        required=True,
        metavar="SPEC",
        help=f"{TOKENIZER_HELP}, or sweep:ID (every run of a sweep); repeatable",
    )
    p.add_argument("--group-by", default=None, help="file, folder or field:NAME (JSONL field)")
    p.add_argument("--json", default=None, metavar="FILE", help=JSON_HELP)
    p.add_argument(
        "--csv",
        default=None,
        metavar="FILE",
        help="one row per tokenizer and group (- for standard output); text cells that a "
        "spreadsheet would run as a formula start with '",
    )
    p.add_argument("--html", default=None, metavar="FILE", help="an HTML report (- for stdout)")
    p.add_argument("--health", action="store_true", help="token health lists")
    p.add_argument(
        "--health-csv", default=None, metavar="FILE", help="the health lists as CSV (- for stdout)"
    )
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
    _add_plan_options(p)
    add_threads_option(p, "encoding threads")
    p.add_argument("--pattern", default=None, help="pattern for tokenizer files without one")
    add_db_option(p)
    p.add_argument("--limit", type=int, default=10, help="health tokens printed per list")
    add_quiet_option(p)
    p.set_defaults(func=run)


PLAN_HELP = (
    "the vocabulary-size planner: bytes/token of each run at every prefix k (exact, one pass "
    "over the text's pieces) priced by a serving model, FLOPs/token = 2N + 2·L·ctx·d + 2·d·V "
    "(Kaplan et al. 2020), and the k with the fewest FLOPs per byte of the text"
)


def _add_plan_options(p: argparse.ArgumentParser) -> None:
    p.add_argument("--plan", action="store_true", help=PLAN_HELP)
    p.add_argument("--width", type=int, default=768, metavar="D", help="--plan: model width d")
    p.add_argument(
        "--layers", type=int, default=None, metavar="L", help="--plan: layers (default 12)"
    )
    p.add_argument(
        "--context", type=int, default=1024, metavar="C", help="--plan: context length (tokens)"
    )
    p.add_argument("--tied", action="store_true", help="--plan: input and output embeddings tied")
    p.add_argument(
        "--params",
        type=int,
        default=None,
        metavar="N",
        help="--plan: non-embedding parameters (default 12·L·d²; alone, it sets L = N/(12·d²))",
    )
    p.add_argument(
        "--plan-points", type=int, default=48, help="--plan: prefixes k shown (the grid)"
    )


def _serving_model(args: argparse.Namespace):
    from workbench.evaluate.plan import ServingModel, layers_for

    if not args.plan:
        return None
    layers = args.layers
    if layers is None:
        layers = layers_for(args.params, args.width) if args.params is not None else 12
    return ServingModel(args.width, layers, args.context, args.tied, args.params)


def run(args: argparse.Namespace) -> int:
    from workbench.engine.corpus.listing import list_files
    from workbench.evaluate import report
    from workbench.evaluate.run import Options, evaluate
    from workbench.evaluate.specs import resolve_all
    from workbench.evaluate.texts import iter_docs, parse_group_by
    from workbench.output_file import check_output, is_stdout
    from workbench.progress import ProgressBars

    group_by = parse_group_by(args.group_by)
    if not args.paths and not args.health:
        raise UsageError("give text to evaluate on (files or folders), or --health")
    if args.plan and not args.paths:
        raise UsageError("--plan: give held-out text to price (files or folders)")
    serving = _serving_model(args)
    for name, value in (("--rare-below", args.rare_below), ("--curve-points", args.curve_points),
                        ("--plan-points", args.plan_points)):  # fmt: skip
        if value < 1:
            raise UsageError(f"{name} must be at least 1")
    check_threads(args)
    outputs = [
        (target, write)
        for target, write in (
            (args.json, report.write_json),
            (args.csv, report.write_csv),
            (args.html, report.write_html),
            (args.health_csv, report.write_health_csv),
        )
        if target is not None
    ]
    to_stdout = sum(is_stdout(target) for target, _ in outputs)
    if to_stdout > 1:
        raise UsageError("only one of --json, --csv, --html, --health-csv can be - (stdout)")
    for target, _ in outputs:  # a bad output fails now, not after minutes of encoding
        check_output(target)
    total = sum(f.stat().st_size for f in list_files(args.paths))
    health = args.health or args.health_csv is not None
    candidates = _python_candidates(args, total, health)
    if candidates is None:
        # Loading builds each tokenizer's tables with the encoder's kernels: ready them first.
        prepare_kernels(args, "eval", patterns_before_loading(args.tokenizer, args))
        candidates = resolve_all(args.tokenizer, args.db, args.pattern)
        prepare_kernels(args, "eval", [c.tokenizer.pattern for c in candidates])
    if len({c.name for c in candidates}) != len(candidates):
        raise UsageError("--tokenizer: the same tokenizer is named twice")
    options = Options(
        health=health,
        rare_below=args.rare_below,
        residue_ratio=args.residue_ratio,
        residue_min_count=args.residue_min_count,
        training_corpus=not args.no_training_corpus,
        curves=args.curves,
        curve_points=args.curve_points,
        plan=serving,
        plan_points=args.plan_points,
        threads=args.threads,
        total_chars=total or None,
    )
    docs = iter_docs(args.paths, group_by) if args.paths else iter(())
    with ProgressBars(quiet=args.quiet) as bars:
        result = evaluate(candidates, docs, options, bars.fractions(total), threading.Event())
    table = sys.stderr if to_stdout else sys.stdout  # stdout carries the report alone
    _print(result, args.limit, table)
    for target, write in outputs:
        write(result, target)
        if not is_stdout(target):
            print(f"wrote {shown(target)}", file=table)
    return 0


def _python_candidates(args: argparse.Namespace, total: int, health: bool):
    """On a first use, reference tokenizers encode small text in Python at once while their
    encoders compile in the background (`session.startup.plan_encoding` decides); None: load
    them as usual."""
    from workbench.evaluate import references
    from workbench.evaluate.specs import python_candidates
    from workbench.session import startup

    specs = args.tokenizer
    if not startup.python_encoding_pays("eval", specs, total, only_ids=not health):
        return None
    if len(set(specs)) != len(specs) or not all(map(references.has_rank_file, specs)):
        return None  # then loaded as usual: the same error, or a wait named
    # Said before the ranks are parsed (0.7 s for o200k): the first line comes sooner.
    startup.plan_encoding("eval", specs, total, startup.to_stream(sys.stderr, args.quiet))
    return python_candidates(specs)


def _print(result: dict, limit: int, stream=None) -> None:
    print("\n".join(_table_lines(result, limit)), file=stream or sys.stdout)


def _table_lines(result: dict, limit: int) -> list[str]:
    """The tables; names in them (runs, files, groups) with control characters escaped."""
    from workbench.evaluate import report

    out: list[str] = []
    columns = ("tokens", "bytes_per_token", "chars_per_token", "tokens_per_word", "renyi_2_5",
               "vocab_used", "ratio_to_best")  # fmt: skip
    names = [shown(n) for n in result["group_names"]]
    labels = [shown(t["label"]) for t in result["tokenizers"]]
    sections = [("all text", None)] if len(names) > 1 else [(names[0] if names else "all", 0)]
    if len(names) > 1:
        sections += [(name, i) for i, name in enumerate(names[:MAX_GROUPS_PRINTED])]
    width = max([len(label) for label in labels] + [9])
    for title, index in sections:
        if not names:
            break
        first = result["tokenizers"][0]
        g0 = first["total"] if index is None else first["groups"][index]
        out.append(f"\n{title}: {g0['documents']:,} documents, {g0['bytes']:,} bytes, "
                   f"{g0['words']:,} words")  # fmt: skip
        out.append(f"{'tokenizer':<{width}} {'vocab':>8} " + " ".join(f"{c:>15}" for c in columns))
        for t, label in zip(result["tokenizers"], labels, strict=True):
            g = t["total"] if index is None else t["groups"][index]
            cells = " ".join(f"{report.fmt(g.get(c)):>15}" for c in columns)
            out.append(f"{label:<{width}} {t['vocab_size']:>8,} {cells}")
    if len(names) > MAX_GROUPS_PRINTED:
        more = len(names) - MAX_GROUPS_PRINTED
        out.append(f"\n… and {more:,} more groups (all of them: --csv, --json)")
    if len(names) > 1:
        out.append("\nparity across groups (tokens per byte): max/min, Gini")
        for t, label in zip(result["tokenizers"], labels, strict=True):
            p = t["parity"]
            costliest = shown(p.get("costliest_group", "—"))
            out.append(f"{label:<{width}} {report.fmt(p['max_over_min']):>10} "
                       f"{report.fmt(p['gini']):>10}  costliest: {costliest}")  # fmt: skip
    if result.get("curves"):
        out.append("")
        out += [shown(line) for line in report.curve_findings(result)]
    if result.get("plan"):
        from workbench.cli._plan_table import plan_lines

        out += plan_lines(result["plan"])
    for name, lists in (result.get("health") or {}).items():
        out.append(f"\ntoken health of {shown(name)}:")
        if lists.get("training_corpus"):
            out.append(f"  training corpus: {shown(lists['training_corpus'])}")
        for kind in report.HEALTH_LISTS:
            rows = lists.get(kind)
            if rows is None:
                continue
            # repr() escapes every character that is not printable, C1 controls included
            listed = ", ".join(f"{r.id}:{r.text!r}" for r in rows[:limit])
            more = " …" if len(rows) > limit else ""
            title = report.list_title(kind, lists)
            out.append(f"  {title}: {len(rows):,}" + (f"  {listed}{more}" if rows else ""))
    return out
