"""`bpe-workbench runs list|show ID|export ID|delete ID|continue ID [--db FILE]`: run history.

`export` rebuilds the tokenizer from the stored merges (the first k merges are the tokenizer at
rank k, so a run interrupted mid-way exports what it reached) and writes it in a chosen format.
"""

from __future__ import annotations

import argparse
import functools
import json
import sqlite3
from collections.abc import Callable
from pathlib import Path

from workbench.engine.errors import WorkbenchError
from workbench.store import RunInfo, RunStore, default_db_path
from workbench.store.connection import as_store_error


def _open(args: argparse.Namespace, read_only: bool = False) -> RunStore:
    """The store at --db (None: $BPE_WORKBENCH_DB or the user's data folder); read-only for
    commands that only read, so a database on a read-only disk can still be listed."""
    return RunStore(args.db, read_only=read_only)


def _store_errors(func: Callable[[argparse.Namespace], int]) -> Callable[[argparse.Namespace], int]:
    """SQLite's own errors (a damaged file, a locked or full disk) as one line naming the db."""

    @functools.wraps(func)
    def run(args: argparse.Namespace) -> int:
        try:
            return func(args)
        except (sqlite3.Error, UnicodeDecodeError) as exc:
            raise as_store_error(args.db or default_db_path(), exc) from None

    return run


def _cmd_list(args: argparse.Namespace) -> int:
    if not (args.db or default_db_path()).exists():
        print("no runs yet")  # and no database made just to say so
        return 0
    with _open(args, read_only=True) as store:
        runs = store.list_runs()
    if not runs:
        print("no runs yet")
        return 0
    print(f"{'id':>5}  {'state':<11}  {'merges':>8}  {'vocab':>7}  {'created':<19}  name")
    for run in runs:
        print(
            f"{run.id:>5}  {run.state:<11}  {run.merge_count:>8}  {run.vocab_size:>7}  "
            f"{run.created[:19].replace('T', ' '):<19}  {run.name}"
        )
    return 0


def _describe(run: RunInfo) -> dict[str, object]:
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
        "stats": run.stats,
        "timings": run.timings,
    }


def _cmd_show(args: argparse.Namespace) -> int:
    if args.merges < 0:  # SQLite would read a negative LIMIT as "all of them"
        raise WorkbenchError(f"--merges must be 0 or more, not {args.merges}")
    with _open(args, read_only=True) as store:
        run = store.get_run(args.id)
        first = store.merges(args.id, limit=args.merges)
    print(json.dumps(_describe(run), indent=2, ensure_ascii=False))
    if first:
        print(f"\nfirst {len(first)} merges:")
        for m in first:
            print(
                f"{m.rank:>7}  {m.left_id:>6} + {m.right_id:<6} -> {m.new_id:<6} "
                f"{m.count:>10}  {m.readable}"
            )
    return 0


def _cmd_export(args: argparse.Namespace) -> int:
    # Imported here: the tokenizer and formats pull in Numba, which `runs list` does not need.
    from workbench.engine.formats.outputs import check_output_folder
    from workbench.store.tokenizer_of_run import export_run

    out = check_output_folder(args.out)
    with _open(args, read_only=True) as store:
        run, tokenizer, written = export_run(store, args.id, args.format, out)
    print(f"run {run.id} ({len(tokenizer.merges)} merges) exported as {args.format} to {out}")
    for path in written or ():
        print(f"  {path}")
    return 0


def _cmd_delete(args: argparse.Namespace) -> int:
    with _open(args) as store:
        run = store.get_run(args.id)
        store.delete(args.id)
    print(f"deleted run {run.id} ({run.name}, {run.merge_count} merges)")
    return 0


def _cmd_continue(args: argparse.Namespace) -> int:
    from workbench.engine.pretokenize.counting import count_corpus
    from workbench.session.interrupts import stop_on_signals
    from workbench.session.run import RunSession
    from workbench.session.states import StopReason

    with _open(args) as store:
        path = store.path
        before = store.merge_count(args.id)
    with stop_on_signals() as interrupted:
        session = RunSession.resume(path, args.id, count_corpus, args.vocab_size)
        with session:
            reason = session.advance(should_stop=interrupted.check)
            if reason is StopReason.INTERRUPTED:
                raise KeyboardInterrupt
    trainer = session.trainer
    print(
        f"run {args.id}: {before} -> {trainer.n_merges} merges, vocab {trainer.vocab_size}"
        f" ({reason.words})"
    )
    return 0


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser("runs", help="list, show, export, continue or delete runs")
    actions = parser.add_subparsers(dest="action", metavar="ACTION", required=True)

    def action(
        name: str, func: Callable[[argparse.Namespace], int], help_text: str, with_id: bool = True
    ) -> argparse.ArgumentParser:
        sub = actions.add_parser(name, help=help_text)
        if with_id:
            sub.add_argument("id", type=int, metavar="ID")
        sub.add_argument(
            "--db",
            type=Path,
            help="run database (default: $BPE_WORKBENCH_DB or runs.db in the user's data folder)",
        )
        sub.set_defaults(func=_store_errors(func))
        return sub

    action("list", _cmd_list, "every run with its state", with_id=False)
    show = action("show", _cmd_show, "a run's settings, statistics, timings and first merges")
    show.add_argument("--merges", type=int, default=10, help="how many merges to list (0 or more)")
    export = action("export", _cmd_export, "write a run's tokenizer in a file format")
    export.add_argument("--format", required=True, help="e.g. hf, gpt2, tiktoken")
    export.add_argument("--out", required=True, type=Path, help="output folder")
    action("delete", _cmd_delete, "delete a run and its merges")
    more = action("continue", _cmd_continue, "train a stored run on to a larger vocabulary")
    more.add_argument("--vocab-size", type=int, required=True)
