"""`bpe-workbench prepare`: compile every kernel now, once per machine, with a progress bar.

Kernels otherwise compile on first use (named on stderr while they do, and kept in the per-user
cache afterwards). Run this once after installing, for people who would rather pay it on
purpose: `bpe-workbench prepare` (every preset) or `--preset o200k`. Later runs of it say
"already prepared" and compile nothing. The work itself is `session.startup.prepare`.
"""

from __future__ import annotations

import argparse
import sys
import time

from workbench.cli._common import add_quiet_option

PRESETS = ("gpt2", "cl100k", "o200k")


def register(subparsers: argparse._SubParsersAction) -> None:
    p = subparsers.add_parser(
        "prepare",
        help="compile the fast kernels now (otherwise on first use), kept per user",
    )
    p.add_argument(
        "--preset",
        nargs="+",
        choices=PRESETS,
        default=list(PRESETS),
        metavar="PRESET",
        help="the pre-tokenizer presets to prepare: gpt2, cl100k, o200k (default: all three)",
    )
    add_quiet_option(p)
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from workbench.progress import STEPS, ProgressBars
    from workbench.session import startup

    started = time.perf_counter()
    with ProgressBars(quiet=args.quiet) as bars:

        def print_line(event: startup.StartupEvent) -> None:
            print(f"bpe-workbench: {event.line()}", file=sys.stderr, flush=True)

        printed = startup.seldom(print_line)  # a log keeps each line: not one a second

        def report(event: startup.StartupEvent) -> None:
            if bars.enabled:
                bars.show("preparing kernels", event.done, event.total, STEPS)
                if not event.tick:  # the bar shows the time going by; a line per stage
                    bars.note(f"  {event.line()}")
            elif not args.quiet:
                printed(event)

        done = startup.prepare(args.preset, report)
        if done:
            bars.show("preparing kernels", len(done), len(done), STEPS)
    where = startup.kernel_cache_dir()
    if done:
        seconds = time.perf_counter() - started
        print(f"prepared {len(done)} kernel stages in {seconds:.0f} s (kept in {where})")
    else:
        print(f"every kernel is prepared already (kept in {where})")
    return 0
