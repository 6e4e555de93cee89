"""`bpe-workbench runs list|show ID|export ID|delete ID|continue ID [--db FILE]`: run history.

`export` rebuilds the tokenizer from the stored merges (the first k merges are the tokenizer at
rank k, so a run interrupted mid-way exports what it reached) and writes it in a chosen format.
`delete` asks first on a terminal (`-y` to skip; without a terminal it needs `-y`). `list` and
`show` take `--json` (shapes in their help). Names in tables are printed with control characters
escaped. The store is imported when a command runs, so `--help` stays instant.
"""

from __future__ import annotations

import argparse
import functools
import sys
from collections.abc import Callable
from typing import Any

from workbench.cli._common import (
    UsageError,
    add_db_option,
    add_quiet_option,
    hidden_alias,
    prepare_kernels,
    print_json,
    shown,
)

LIST_JSON_HELP = (
    "print one JSON array: [{id, name, state, merges, vocab_size, created, updated, stop_reason}]"
)
SHOW_JSON_HELP = (
    "print one JSON object: {id, name, state, created, updated, merges, vocab_size, "
    "stop_reason, error, settings, corpus, stats, timings, first_merges: [{rank, left_id, "
    "right_id, new_id, count, token}]} (token: readable bytes, see --merges)"
)


def _open(args: argparse.Namespace, read_only: bool = False):
    """The store at --db (None: $BPE_WORKBENCH_DB or the user's data folder); read-only for
    commands that only read, so a database on a read-only disk can still be listed."""
    from workbench.store import RunStore

    return RunStore(args.db, read_only=read_only)


def _store_errors(func: Callable[[argparse.Namespace], int]) -> Callable[[argparse.Namespace], int]:
    """SQLite's own errors (a damaged file, a locked or full disk) as one line naming the db."""

    @functools.wraps(func)
    def run(args: argparse.Namespace) -> int:
        import sqlite3

        from workbench.store import default_db_path
        from workbench.store.connection import as_store_error

        try:
            return func(args)
        except (sqlite3.Error, UnicodeDecodeError) as exc:
            raise as_store_error(args.db or default_db_path(), exc) from None

    return run


def _cmd_list(args: argparse.Namespace) -> int:
    from workbench.store import default_db_path

    runs = []
    if (args.db or default_db_path()).exists():  # and no database made just to say "none"
        with _open(args, read_only=True) as store:
            runs = store.list_runs()
    if args.json:
        print_json([_brief(run) for run in runs])
        return 0
    if not runs:
        print("no runs yet")
        return 0
    from workbench.session.states import run_state_words

    print(f"{'id':>5}  {'state':<34}  {'merges':>8}  {'vocab':>7}  {'created':<19}  name")
    for run in runs:
        print(
            f"{run.id:>5}  {run_state_words(run.state, run.stop_reason):<34}  "
            f"{run.merge_count:>8}  {run.vocab_size:>7}  "
            f"{run.created[:19].replace('T', ' '):<19}  {shown(run.name)}"
        )
    return 0


def _brief(run) -> dict[str, object]:
    return {
        "id": run.id,
        "name": run.name,
        "state": str(run.state),
        "merges": run.merge_count,
        "vocab_size": run.vocab_size,
        "created": run.created,
        "updated": run.updated,
        "stop_reason": run.stop_reason,
    }


def _describe(run) -> dict[str, object]:
    return {
        "id": run.id,
        "name": run.name,
        "state": run.state,
        "created": run.created,
        "updated": run.updated,
        "merges": run.merge_count,
        "vocab_size": run.vocab_size,
        "stop_reason": run.stop_reason,
        "error": run.error,
        "settings": run.settings,
        "corpus": run.corpus,
        "stats": _stats(run.stats),
        "timings": run.timings,
    }


def _stats(stats):
    """A parity-aware run's per-merge group figures summed up (they are a row per merge)."""
    if not isinstance(stats, dict) or "parity" not in stats:
        return stats
    from workbench.session.parity import brief_stats

    return brief_stats(stats)


def _cmd_show(args: argparse.Namespace) -> int:
    from workbench.cli._common import json_text

    if args.merges < 0:  # SQLite would read a negative LIMIT as "all of them"
        raise UsageError(f"--merges must be 0 or more, not {args.merges}")
    with _open(args, read_only=True) as store:
        run = store.get_run(args.id)
        first = store.merges(args.id, limit=args.merges)
    described = _describe(run)
    if args.json:
        described["first_merges"] = [
            {
                "rank": m.rank,
                "left_id": m.left_id,
                "right_id": m.right_id,
                "new_id": m.new_id,
                "count": m.count,
                "token": m.readable,
            }
            for m in first
        ]
        print_json(described)
        return 0
    sys.stdout.write(json_text(described))  # json_text escapes every control character
    for line in _extension_lines(run):
        print(line)
    if first:
        print(f"\nfirst {len(first)} merges:")
        for m in first:
            print(
                f"{m.rank:>7}  {m.left_id:>6} + {m.right_id:<6} -> {m.new_id:<6} "
                f"{m.count:>10}  {m.readable}"
            )
    return 0


def _extension_lines(run) -> list[str]:
    """An extension run's base and check, as people read them (nothing for other runs)."""
    base = run.settings.get("extends")
    if not isinstance(base, dict):
        return []
    lines = [f"\nextends {shown(str(base.get('spec')))}"]
    if isinstance(base.get("tokens"), int) and isinstance(base.get("merges"), int):
        lines[0] += f" ({base['tokens']:,} tokens, {base['merges']:,} merges)"
    check = run.stats.get("extension")
    if not isinstance(check, dict) or not isinstance(check.get("lines"), list):
        return [*lines, "extension check: not made yet (the run has not ended)"]
    lines.append(shown(str(check.get("summary", "extension check:"))))
    lines += [f"  {shown(str(line))}" for line in check["lines"]]
    return lines


def _cmd_export(args: argparse.Namespace) -> int:
    # Imported here: the tokenizer and formats pull in Numba, which `runs list` does not need.
    from workbench.engine.formats.outputs import check_output_folder
    from workbench.store.tokenizer_of_run import export_run

    if args.out_dir is None:
        raise UsageError("runs export needs --out-dir DIR, the folder for the tokenizer files")
    out = check_output_folder(args.out_dir)
    with _open(args, read_only=True) as store:
        run, tokenizer, written = export_run(store, args.id, args.format, out)
    print(
        f"run {run.id} ({len(tokenizer.merges)} merges) exported as {args.format} to {shown(out)}"
    )
    for path in written or ():
        print(f"  {shown(path)}")
    return 0


def _cmd_delete(args: argparse.Namespace) -> int:
    with _open(args) as store:
        run = store.get_run(args.id)
        what = f"run {run.id} ({shown(run.name)}, {run.merge_count} merges)"
        if not args.yes:
            _confirm(f"delete {what}?")
        store.delete(args.id)
    print(f"deleted {what}")
    return 0


def _confirm(question: str) -> None:
    """Ask on the terminal; without one (a script, a pipe) refuse: deleting needs -y there."""
    if not sys.stdin.isatty():
        raise UsageError(f"{question[:-1]}: standard input is not a terminal; pass -y to delete")
    try:
        answer = input(f"{question} [y/N] ")
    except EOFError:
        answer = ""
    if answer.strip().lower() not in ("y", "yes"):
        raise UsageError("nothing deleted")


def _cmd_continue(args: argparse.Namespace) -> int:
    from workbench.engine.pretokenize.counting import count_corpus
    from workbench.progress import ProgressBars
    from workbench.session.counting import count_paths
    from workbench.session.interrupts import stop_on_signals
    from workbench.session.run import RunSession
    from workbench.session.states import StopReason

    formats = [f.strip() for f in args.format.split(",") if f.strip()]
    if args.out_dir is not None:
        from workbench.cli.train import FORMATS
        from workbench.engine.formats.outputs import check_output_folder

        unknown = sorted(set(formats) - set(FORMATS))
        if unknown:
            raise UsageError(
                f"unknown format {', '.join(unknown)}; choose from {', '.join(FORMATS)}"
            )
        check_output_folder(args.out_dir)  # a bad --out-dir fails now, not after training
    with _open(args) as store:
        path = store.path
        before = store.merge_count(args.id)
        settings = store.get_run(args.id).settings
        specials = len(settings.get("special_tokens") or ())
    prepare_kernels(args, "train", [settings.get("pattern") or "gpt2"])  # it counts again
    if settings.get("superbpe_transition"):  # stage 2 encodes its pieces with stage 1's merges
        from workbench.engine.patterns.regexes import NO_SPLIT

        prepare_kernels(args, "encode", [NO_SPLIT])
    with stop_on_signals() as interrupted, ProgressBars(quiet=args.quiet) as bars:

        def count(paths, config, max_bytes=None):  # max_bytes: SuperBPE's stage-2 bound
            from workbench.cli.train import corpus_size

            size = corpus_size(list(paths)) if bars.enabled else None
            if config.parity_by:  # in groups (a document at a time: no byte progress)
                result: Any = count_paths(paths, config)
            else:
                progress = bars.bytes("pre-tokenize", size)
                result = count_corpus(paths, config, progress=progress, max_bytes=max_bytes)
            bars.close()
            return result

        merges = bars.merges("merge", args.vocab_size - 256 - specials, specials)
        session = RunSession.resume(path, args.id, count, args.vocab_size, [merges])
        with session:
            reason = session.advance(should_stop=interrupted.check)
            bars.close()
            if reason is StopReason.INTERRUPTED:
                raise KeyboardInterrupt
            written = session.export(formats, args.out_dir) if args.out_dir is not None else []
    trainer = session.trainer
    print(
        f"run {args.id}: {before} -> {trainer.n_merges} merges, vocab {trainer.vocab_size}"
        f" ({reason.words})"
    )
    for file in written:
        print(f"wrote {shown(file)}")
    return 0


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser("runs", help="list, show, export, continue or delete runs")
    actions = parser.add_subparsers(dest="action", metavar="ACTION", required=True)

    def action(
        name: str, func: Callable[[argparse.Namespace], int], help_text: str, with_id: bool = True
    ) -> argparse.ArgumentParser:
        sub = actions.add_parser(name, help=help_text, description=help_text)
        if with_id:
            sub.add_argument("id", type=int, metavar="ID", help="the run's id (see `runs list`)")
        add_db_option(sub)
        sub.set_defaults(func=_store_errors(func))
        return sub

    listing = action("list", _cmd_list, "every run with its state", with_id=False)
    listing.add_argument("--json", action="store_true", help=LIST_JSON_HELP)
    show = action("show", _cmd_show, "a run's settings, statistics, timings and first merges")
    show.add_argument(
        "--merges", type=int, default=10, metavar="N", help="how many merges to list (0 or more)"
    )
    show.add_argument("--json", action="store_true", help=SHOW_JSON_HELP)
    export = action("export", _cmd_export, "write a run's tokenizer in a file format")
    export.add_argument("--format", required=True, help="e.g. hf, gpt2, tiktoken, minbpe")
    export.add_argument("--out-dir", metavar="DIR", default=None, help="output folder")
    hidden_alias(export, "--out", dest="out_dir")
    delete = action("delete", _cmd_delete, "delete a run and its merges (asks first)")
    delete.add_argument(
        "-y", "--yes", action="store_true", help="do not ask (needed without a terminal)"
    )
    more = action("continue", _cmd_continue, "train a stored run on to a larger vocabulary")
    more.add_argument(
        "--vocab-size", type=int, required=True, metavar="N", help="the vocabulary to reach"
    )
    more.add_argument(
        "--out-dir",
        metavar="DIR",
        default=None,
        help="also write the tokenizer files here when done (as `train --out-dir`)",
    )
    hidden_alias(more, "--out", dest="out_dir")  # as `train` took it before --out-dir
    more.add_argument(
        "--format", default="gpt2", help="with --out-dir, comma-separated: gpt2,hf,tiktoken,minbpe"
    )
    add_quiet_option(more)
