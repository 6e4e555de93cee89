"""`bpe-workbench train`: pre-tokenize a corpus, train, write the tokenizer files, record the run.

    bpe-workbench train corpus/ --vocab-size 32000 --out-dir out/ --special "<|endoftext|>"

Writes `DIR/vocab.json` + `DIR/merges.txt` (and the `--format`s asked for), records the run and
every merge in the run store as they stream (`--db FILE`, default the user's database;
`--no-db` to skip), and prints a summary of each stage (`--json`: the summary as one JSON
object, see JSON_HELP).
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

from workbench.cli._common import (
    UsageError,
    add_db_option,
    add_quiet_option,
    add_threads_option,
    check_threads,
    hidden_alias,
    print_json,
    shown,
)
from workbench.engine.formats.outputs import check_output_folder

FORMATS = ("gpt2", "hf", "tiktoken", "minbpe")
# engine.config.TIE_BREAKS (a test keeps them equal): importing the engine here costs --help 0.2 s.
TIE_BREAKS = ("lexicographic", "hf")
PARITY_BY = ("lang", "folder", "script")  # engine.config.PARITY_BY, kept equal by a test
SKIPPED_SHOWN = 5  # bad files listed in the summary; the rest with --verbose or in --json
JSON_HELP = (
    "print the summary as one JSON object: {documents, files, bytes, pre_tokens, "
    "unique_pieces, merges, vocab_size, stop_reason, bytes_per_token, seconds: {STAGE: s, "
    "total: s}, skipped: [MESSAGE], written: [PATH], run_id (null with --no-db), and for "
    "SuperBPE superbpe: {transition, transition_rank, stage2_unique_pieces, dropped_pieces, "
    "dropped_share}, for --parity-by parity: {groups: {NAME: held-out bytes/token}, worst, "
    "gini}}; a sweep: "
    "{sweep, runs: [{label, vocab_size, bytes_per_token, stop_reason, run_id, out_dir}]}"
)


def register(subparsers: argparse._SubParsersAction) -> None:
    p = subparsers.add_parser("train", help="train a byte-level BPE tokenizer on files/folders")
    p.add_argument(
        "paths",
        nargs="*",
        metavar="PATH",
        help="corpus files/folders: text, .jsonl, .parquet, .arrow (or compressed, or URLs)",
    )
    p.add_argument(
        "--from-counts",
        type=Path,
        default=None,
        metavar="FILE",
        help="train on a counts file made by `bpe-workbench count` instead of PATHs",
    )
    add_reading_options(p)
    p.add_argument(
        "--vocab-size",
        required=True,
        metavar="N[,N...]",
        help="bytes + merges + specials; several (8000,16000,32000) train a sweep",
    )
    p.add_argument(
        "--out-dir", metavar="DIR", type=Path, default=None, help="folder for the tokenizer files"
    )
    hidden_alias(p, "--out", dest="out_dir", type=Path)
    p.add_argument(
        "--pattern",
        action="append",
        default=None,
        help="gpt2 (default), cl100k, o200k or a custom regex; give it again to sweep patterns",
    )
    p.add_argument(
        "--special",
        action="append",
        default=[],
        metavar="TOKEN",
        help="a special token, never split or merged (repeatable)",
    )
    p.add_argument(
        "--tie-break",
        choices=TIE_BREAKS,
        default="lexicographic",
        help="which pair wins among equal counts: the greatest bytes (lexicographic, default) "
        "or Hugging Face tokenizers' order (hf)",
    )
    p.add_argument(
        "--min-frequency",
        type=int,
        default=0,
        metavar="N",
        help="stop when the most frequent pair occurs fewer than N times (default 0: never)",
    )
    p.add_argument(
        "--max-token-length",
        type=int,
        default=0,
        metavar="N",
        help="no merge makes a token longer than N bytes (default 0: no cap)",
    )
    p.add_argument(
        "--max-token-chars",
        type=int,
        default=0,
        metavar="N",
        help="no merge makes a token of more than N characters (a character cut by a merge "
        "counts as one; default 0: no cap)",
    )
    p.add_argument(
        "--superbpe-transition",
        type=int,
        default=0,
        metavar="T",
        help="SuperBPE: ordinary BPE up to vocab size T, then merges that may cross spaces up to"
        " --vocab-size (Liu et al., 2025; default 0: classic BPE)",
    )
    p.add_argument(
        "--parity-by",
        choices=PARITY_BY,
        default=None,
        help="parity-aware BPE (Foroutan et al. 2025): each merge helps the group worst "
        "compressed on its held-out lines; groups by a record's lang field (else the script), "
        "by folder, or by script",
    )
    p.add_argument(
        "--parity-window",
        type=int,
        default=0,
        metavar="W",
        help="with --parity-by: the paper's moving-window variant over the last W merges "
        "(100 in the paper; default 0: the greedy rule)",
    )
    p.add_argument(
        "--parity-alpha",
        type=int,
        default=2,
        metavar="A",
        help="with --parity-window: a group chosen more than A/groups of the window gives way "
        "(default 2)",
    )
    p.add_argument("--format", default="gpt2", help=f"comma-separated: {','.join(FORMATS)}")
    add_threads_option(p, "pre-tokenizing threads/processes")
    add_db_option(p)
    p.add_argument("--no-db", action="store_true", help="do not record the run")
    p.add_argument("--name", default=None, help="name of the run in the store")
    p.add_argument("--json", action="store_true", help=JSON_HELP)
    add_quiet_option(p)
    p.set_defaults(func=run)


def add_reading_options(p: argparse.ArgumentParser) -> None:
    """How to read the corpus (`train` and `count` alike)."""
    p.add_argument(
        "--skip-bad-files",
        action="store_true",
        help=f"skip unreadable files; the summary counts them and names the first {SKIPPED_SHOWN}",
    )
    p.add_argument(
        "-v", "--verbose", action="store_true", help="name every skipped file in the summary"
    )
    p.add_argument("--text-column", default="text", help="Parquet/Arrow column of the text")
    p.add_argument("--jsonl-field", default="text", help="JSONL field of the text")
    p.add_argument(
        "--regex-pretokenizer",
        action="store_true",
        help="pre-tokenize with the regex package even for a preset (same pieces, slower)",
    )


def corpus_size(paths: list[str]) -> int | None:
    """The bytes of the files under `paths`, listed before reading so a bar's total is known
    from the start; None when they cannot be listed here (URLs; a bad path, which the
    counting reports in its own words)."""
    if any("://" in str(p) for p in paths):
        return None
    from workbench.engine.corpus import list_files
    from workbench.engine.errors import WorkbenchError

    try:
        return sum(f.stat().st_size for f in list_files(paths))
    except (WorkbenchError, OSError):
        return None


def skipped_lines(skipped: list[str], verbose: bool) -> list[str]:
    """The summary's lines about skipped files: all with --verbose, else a count and the first
    few (a folder of 200 bad files must not bury the summary)."""
    if not skipped:
        return []
    listed = skipped if verbose else skipped[:SKIPPED_SHOWN]
    lines = [f"skipped          {len(skipped):,} files"]
    lines += [f"  {shown(message)}" for message in listed]
    if len(listed) < len(skipped):
        lines.append(f"  … and {len(skipped) - len(listed):,} more (--verbose lists them all)")
    return lines


def _parity_summary(trainer) -> dict:
    from workbench.session.parity import parity_summary

    summary = parity_summary(trainer)
    return {"parity": summary} if summary else {}


def parity_lines(summary: dict) -> list[str]:
    parity = summary.get("parity")
    if not parity:
        return []
    lines = [
        f"groups           {len(parity['groups'])} (held-out bytes/token; Gini {parity['gini']:.4f})"
    ]
    for name, rate in parity["groups"].items():
        worst = "  <- worst" if name == parity["worst"] else ""
        lines.append(f"  {shown(name):<15} {rate:.3f}{worst}")
    return lines


def run(args: argparse.Namespace) -> int:
    from workbench.engine.config import TrainConfig
    from workbench.progress import ProgressBars
    from workbench.session.interrupts import stop_on_signals
    from workbench.session.sweep import parse_vocab_sizes, plan_sweep

    if args.out_dir is None:
        raise UsageError("train needs --out-dir DIR, the folder for the tokenizer files")
    formats = [f.strip() for f in args.format.split(",") if f.strip()]
    unknown = sorted(set(formats) - set(FORMATS))
    if unknown:
        raise UsageError(f"unknown format {', '.join(unknown)}; choose from {', '.join(FORMATS)}")
    check_threads(args)
    if bool(args.paths) == bool(args.from_counts):
        raise UsageError("give the corpus PATHs or --from-counts FILE (one of the two)")
    if args.superbpe_transition and args.from_counts:
        raise UsageError(
            "--superbpe-transition needs the corpus PATHs: a counts file holds stage 1's pieces"
            " only, and stage 2 counts the text again"
        )
    sizes = parse_vocab_sizes(args.vocab_size)
    patterns = args.pattern or ["gpt2"]
    config = TrainConfig(
        vocab_size=max(sizes),
        pattern=patterns[0],
        special_tokens=tuple(args.special),
        tie_break=args.tie_break,
        min_frequency=args.min_frequency,
        max_token_length=args.max_token_length,
        max_token_chars=args.max_token_chars,
        on_bad_file="skip" if args.skip_bad_files else "stop",
        pretokenizer="regex" if args.regex_pretokenizer else "auto",
        text_column=args.text_column,
        jsonl_field=args.jsonl_field,
        superbpe_transition=args.superbpe_transition,
        parity_by=args.parity_by or "",
        parity_window=args.parity_window,
        parity_alpha=args.parity_alpha,
    )
    if args.parity_by and args.from_counts:
        raise UsageError("--parity-by needs the corpus PATHs (a counts file has no groups)")
    steps = plan_sweep(config, sizes, patterns)  # checks every pattern before any counting
    check_output_folder(args.out_dir)  # a bad --out-dir fails now, not after training
    from workbench.engine.formats import check_can_hold

    for step in steps:  # refuse before counting what a chosen format cannot store
        check_can_hold(["gpt2", *formats], step.config.encoding_pattern, step.config.special_tokens)
    store_path = None if args.no_db else (args.db or _default_db())
    with stop_on_signals() as interrupted, ProgressBars(quiet=args.quiet) as bars:
        if len(steps) == 1:
            summary = _train_one(args, steps[0].config, store_path, formats, bars, interrupted)
        else:
            summary = _train_sweep(args, steps, store_path, formats, bars, interrupted)
    if args.json:
        print_json(summary)
    else:
        print("\n".join(_summary_lines(summary, args.verbose)))
    return 0


def _start(args, config):
    """How this run starts (`session.startup`: the one first-use policy), each wait for the
    compiler named on stderr; nothing is said when every kernel is cached."""
    from workbench.session import startup

    report = startup.to_stream(sys.stderr, args.quiet)
    if args.from_counts:  # no counting: the trainer's kernels only
        return startup.plan_training(None, config, report, scanner_path=False)
    return startup.plan_training(args.paths, config, report)


def _count(args, config, bars, interrupted, start=None):
    from workbench.session.counting import count_paths

    if start is None:
        start = _start(args, config)
    config = start.count_config  # `regex` while the scanner compiles: the same pieces
    if args.from_counts:  # counts made by `bpe-workbench count` replace the counting
        from workbench.engine.pretokenize.counts_file import read_counts
        from workbench.session.run import Counted

        result = read_counts(args.from_counts, config.pattern_string, config.special_tokens)
        return Counted(result, (str(args.from_counts),))
    total = corpus_size(args.paths) if bars.enabled else None
    counted = count_paths(
        args.paths,
        config,
        progress=bars.bytes("pre-tokenize", total),
        cancel=lambda: interrupted.is_set,
        workers=args.threads,
    )
    bars.close()
    return counted


def _train(
    counted, config, store_path, name, bars, interrupted, out, formats, sweep=None, start=None
):
    """One run on counted text: train, export, end. Returns the ended session and files."""
    from workbench.session.run import RunSession
    from workbench.session.states import StopReason

    show = bars.merges("merge", config.merged_token_target, len(config.special_tokens))
    # Ties are only worth counting for the store (the window shows them from there).
    count_ties = store_path is not None
    with RunSession.start(
        counted,
        config,
        store_path,
        name,
        [show],
        sweep=sweep,
        kernels_ready=None if start is None else start.kernels_ready,
        count_ties=count_ties,
    ) as session:
        reason = session.advance(should_stop=interrupted.check)
        bars.close()
        if reason is StopReason.INTERRUPTED:
            raise KeyboardInterrupt
        session.release_trainer()  # writing the files then takes memory the merges gave back
        written = session.export(["gpt2", *formats], out)
    return session, written


def _train_one(args, config, store_path, formats, bars, interrupted) -> dict:
    started = time.perf_counter()
    start = _start(args, config)
    counted = _count(args, config, bars, interrupted, start)
    session, written = _train(
        counted, config, store_path, args.name, bars, interrupted, args.out_dir, formats,
        start=start,
    )  # fmt: skip
    return _summary(counted.stats, session, time.perf_counter() - started, written)


def _train_sweep(args, steps, store_path, formats, bars, interrupted) -> dict:
    """Count once per pattern, train each size; files go to OUT/<pattern>-<size>/."""
    from workbench.session.run import run_name

    counted_for: dict[str, tuple] = {}
    runs = []
    for step in steps:
        config = step.config
        if config.pattern not in counted_for:
            start = _start(args, config)
            counted_for[config.pattern] = (_count(args, config, bars, interrupted, start), start)
        counted, start = counted_for[config.pattern]
        name = f"{args.name or run_name(counted.paths, config.vocab_size)} · sweep {step.index}/{step.of}"
        out = args.out_dir / step.label
        session, _ = _train(
            counted, config, store_path, name, bars, interrupted, out, formats, step.tag, start
        )
        trainer = session.trainer
        runs.append(
            {
                "label": step.label,
                "vocab_size": trainer.vocab_size,
                "bytes_per_token": counted.stats.bytes / max(trainer.corpus_tokens, 1),
                "stop_reason": session.stop_reason.words,
                "run_id": session.run_id,
                "out_dir": str(out),
            }
        )
    return {"sweep": str(steps[0].sweep_id), "runs": runs}


def _default_db():
    from workbench.store.connection import default_db_path

    return default_db_path()


def _summary(stats, session, total, written) -> dict:
    """The summary of one run, as the JSON object JSON_HELP describes."""
    trainer = session.trainer
    seconds = {stage: round(s, 6) for stage, s in session.timings.items()}
    seconds["total"] = round(total, 6)
    trained_bytes = stats.bytes
    superbpe = {}
    two = session.counted.stage_two
    if two is not None:  # stage 2 trained on the pieces the memory bound kept
        trained_bytes = two.total_bytes - two.dropped_bytes
        superbpe = {
            "superbpe": {
                "transition": session.config.superbpe_transition,
                "transition_rank": getattr(trainer, "transition_rank", None),
                "stage2_unique_pieces": len(two.words),
                "dropped_pieces": two.dropped_pieces,
                "dropped_share": two.dropped_share,
            }
        }
    return {
        "documents": stats.documents,
        "files": stats.files,
        "bytes": stats.bytes,
        "pre_tokens": stats.pieces,
        "unique_pieces": stats.unique_pieces,
        "merges": trainer.n_merges,
        "vocab_size": trainer.vocab_size,
        "stop_reason": session.stop_reason.words,
        "bytes_per_token": trained_bytes / max(trainer.corpus_tokens, 1),
        "seconds": seconds,
        "skipped": list(stats.skipped),
        "written": [str(p) for p in written],
        "run_id": session.run_id,
        **superbpe,
        **_parity_summary(trainer),
    }


def _summary_lines(summary: dict, verbose: bool) -> list[str]:
    if "sweep" in summary:
        lines = [f"sweep {summary['sweep']}: {len(summary['runs'])} runs"]
        for r in summary["runs"]:
            run = f"run #{r['run_id']}" if r["run_id"] is not None else "not recorded"
            lines.append(
                f"  {r['label']:<22} vocab {r['vocab_size']:>7,}  {r['bytes_per_token']:6.3f}"
                f" bytes/token  {r['stop_reason']:<26} {run}  -> {shown(r['out_dir'])}"
            )
        return lines
    s = summary
    lines = [
        f"documents        {s['documents']:,} in {s['files']:,} files",
        f"bytes            {s['bytes']:,}",
        f"pre-tokens       {s['pre_tokens']:,}",
        f"unique           {s['unique_pieces']:,}",
        f"merges           {s['merges']:,} -> vocab {s['vocab_size']:,} ({s['stop_reason']})",
        f"compression      {s['bytes_per_token']:.3f} bytes/token",
    ]
    if "superbpe" in s:
        two = s["superbpe"]
        rank = two["transition_rank"]
        where = f"from merge {rank:,}" if rank is not None else "not reached"
        lines.append(
            f"superbpe         stage 2 {where} (t = {two['transition']:,}); stage-2 pieces"
            f" {two['stage2_unique_pieces']:,} distinct kept, {two['dropped_pieces']:,} dropped"
            f" ({two['dropped_share']:.1%} of the bytes)"
        )
    lines += parity_lines(s)
    lines += [f"time {stage:<11} {sec:.3f} s" for stage, sec in s["seconds"].items()]
    lines += skipped_lines(s["skipped"], verbose)
    lines += [f"wrote            {shown(p)}" for p in s["written"]]
    if s["run_id"] is not None:
        lines.append(f"run              #{s['run_id']} (bpe-workbench runs show {s['run_id']})")
    return lines
