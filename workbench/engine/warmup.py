"""Compiling the engine's Numba kernels ahead of use, stage by stage, with progress.

The first start on a machine compiles every kernel (tens of seconds of CPU); later starts load
them from Numba's disk cache in about a second. `warm_up(preset, progress)` does either, one stage
at a time in the order a training run needs them, and says "k of n" with the stage's name, so a
window can show "Preparing the fast kernels (first start only) — 2 of 5" instead of a frozen
"Reading the corpus". Compiling is single-threaded (Numba holds one lock per process), so when
several stages are missing from the cache the trainer's are compiled at the same time in a
helper process, which fills the shared cache; this process then loads them. Qt-free.

Every stage compiles under a lock file in the kernel cache (`stage_lock`, `compile_stage`), in
helpers and in-process alike, so two processes never compile the same stage at once: the second
finds it cached and loads it. `start_detached` starts a helper that outlives its command. This
module is the mechanics; when to compile and what to tell the user is `session.startup`'s.

    from workbench.engine.warmup import warm_up
    warm_up("gpt2", lambda done, total, stage: print(f"{done} of {total}: {stage}"))
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Sequence
from pathlib import Path

from workbench.engine._native import id_lists, utf8_text
from workbench.engine._native import libc_read as _libc_read
from workbench.engine.config import TrainConfig
from workbench.engine.encode import _merge, _scanned, _tables
from workbench.engine.errors import CancelledError
from workbench.engine.patterns.regexes import preset_name, resolve
from workbench.engine.pretokenize import scan as scanner
from workbench.engine.pretokenize.scan import fold as count_fold
from workbench.engine.pretokenize.words import WordTable
from workbench.engine.train import _given_merges
from workbench.engine.train import _kernels as _train_kernels

Progress = Callable[[int, int, str], None]

_SAMPLE = (
    "Hello, world! It's 2024: naïve café — 東京 ÅNGSTRÖM's 12345\r\n\n  x\tyellow aaaa ".encode()
)
_WORDS = {b"hello": 3, b"yellow": 2, b"aaaa": 2, b" world": 2}


def _pretokenizer(preset: str) -> None:
    table = scanner.count_pieces_arrays(_SAMPLE, preset)
    scanner.merge_count_tables([table, table])
    folded = count_fold.CountTable()
    folded.add(table)
    folded.add(table)
    _libc_read.compile_reader()


def _index(preset: str) -> None:
    from workbench.engine.train.trainer import BpeTrainer  # noqa: PLC0415 -- trainer imports warm_up

    BpeTrainer(WordTable.from_counts(_WORDS), TrainConfig(vocab_size=270))


def _merges(preset: str) -> None:
    from workbench.engine.train.trainer import BpeTrainer  # noqa: PLC0415

    for tie_break in ("lexicographic", "hf"):
        trainer = BpeTrainer(
            WordTable.from_counts(_WORDS), TrainConfig(vocab_size=270, tie_break=tie_break)
        )
        trainer.run()
    # parity-aware BPE's entries into the same loop (`_given_merges`): a few CPU seconds more
    # here, so a parity-aware run never compiles them unannounced
    from workbench.engine.train.parity import GroupWords  # noqa: PLC0415
    from workbench.engine.train.parity_kernels import KernelParityTrainer  # noqa: PLC0415

    words = WordTable.from_counts(_WORDS)
    config = TrainConfig(vocab_size=270, parity_by="lang")
    trainer = KernelParityTrainer(
        [GroupWords("a", words, words), GroupWords("b", words, words)], config
    )
    trainer.step(20)
    trainer.state_bytes()  # reads the states back (`_given_merges.state_at`)


def _encoder(preset: str) -> None:
    from workbench.engine.encode.tokenizer import Tokenizer  # noqa: PLC0415

    tokenizer = Tokenizer.from_merges([(b"l", b"l"), (b"ll", b"o")], resolve(preset))
    tokenizer.encode(_SAMPLE.decode())
    id_lists.fast_lists()  # the lists' kernel: the sample is too short to need it
    utf8_text.warm_up()  # encode_batch's texts' kernel, likewise


def _encoder_kernels(pattern: str) -> list:
    tables = [
        _tables.build_whole_table,
        _tables.collect_splits,
        _tables.build_pair_table,
        *id_lists.kernels(),
        *utf8_text.kernels(),
    ]
    if scanner.can_scan(resolve(pattern)):
        return [_scanned.ENCODE_SCANNED[scanner.preset_code(pattern)], _scanned.build_seed, *tables]
    return [_merge.encode_pieces, *tables]


# key: (name shown, what runs it, the kernels it compiles: their cache says whether it is ready)
_STAGES: dict[str, tuple[str, Callable[[str], None], Callable[[str], Sequence]]] = {
    "pretokenizer": (
        "pre-tokenizer",
        _pretokenizer,
        lambda p: [*scanner.counting_kernels(p), count_fold.fold_kernel, *_libc_read.kernels()],
    ),
    "index": ("trainer: pair index", _index, lambda p: [_train_kernels.init_pairs]),
    "merges": (
        "trainer: merge loop",
        _merges,
        lambda p: [_train_kernels.run_merges, *_given_merges.ENTRIES],
    ),
    "encoder": ("encoder", _encoder, _encoder_kernels),
}
# What the helper process takes when this one has other stages to compile: the trainer's two
# stages (about 16 s of CPU) against the pre-tokenizer and the encoder (about 19 s) here, so
# two cores finish all four in about the time of two. This process compiles its own stages
# first, then loads the helper's.
_HELPER_STAGES = ("index", "merges")
# A quick start (see `quick_start`) compiles everything in the helper, the trainer first: this
# process keeps its core and the GIL for counting and training in Python meanwhile.
_QUICK_ORDER = ("index", "merges", "pretokenizer", "encoder")
# Helpers compile at a lower priority: on a first start the user's run (counting with `regex`,
# training in Python) and the window need the cores more than the compile that follows them.
_HELPER_NICENESS = 5
# In a helper's arguments: the stages after it compile lowered (`start_detached(afterwards=)`).
_LOWER = "--then-lowered"


# Helper processes running now, so a closing app can stop them (`stop_compiling`), and those
# it stopped (a `warm_up` waiting for one then raises instead of compiling here).
_LIVE: set[subprocess.Popen] = set()
_STOPPED: set[subprocess.Popen] = set()
_DETACHED: list[subprocess.Popen] = []  # helpers started by `start_detached`


# Closed while a first start's helper compiles the encoder: threads that would encode wait
# for it (`wait_for_encoder`) instead of compiling the same kernels again in this process,
# where no one could stop them when the app closes.
_ENCODER_OPEN = threading.Event()
_ENCODER_OPEN.set()


def hold_encoder() -> None:
    """Make `wait_for_encoder` wait (a helper process is compiling the encoder)."""
    _ENCODER_OPEN.clear()


def release_encoder() -> None:
    _ENCODER_OPEN.set()


def encoder_open() -> bool:
    """Whether encoding now would not wait for a helper's compile."""
    return _ENCODER_OPEN.is_set()


def wait_for_encoder(cancel: threading.Event | None = None) -> bool:
    """Wait while a helper compiles the encoder; False if `cancel` was set meanwhile."""
    while not _ENCODER_OPEN.wait(0.1):
        if cancel is not None and cancel.is_set():
            return False
    return cancel is None or not cancel.is_set()


def stop_compiling() -> None:
    """Stop the helper processes compiling now (the app is closing): the `warm_up` calls
    waiting for them raise CancelledError instead of compiling here. The encoder stays held
    (`hold_encoder`), so waiting jobs end when their own cancel is set, compiling nothing."""
    for proc in list(_LIVE):
        if proc.poll() is None:
            _STOPPED.add(proc)
            proc.terminate()


def stages(pattern: str = "gpt2") -> list[str]:
    """The stages `warm_up` runs for a pattern (preset name or string), in order. A custom
    pattern has no scanner kernels: its pieces come from `regex`."""
    if not scanner.can_scan(resolve(pattern)):
        return [key for key in _STAGES if key != "pretokenizer"]
    return list(_STAGES)


def is_ready(stage: str, pattern: str = "gpt2") -> bool | None:
    """Whether the stage's kernels are compiled in this process or in Numba's disk cache for the
    current sources; None when that cannot be told (caching off, another Numba layout)."""
    answers = [_cached(kernel) for kernel in _STAGES[stage][2](pattern)]
    if all(answer is True for answer in answers):
        return True
    if any(answer is False for answer in answers):
        return False
    return None


def stage_two_ready() -> bool | None:
    """Whether SuperBPE's stage-2 counter (the scanner's stage-2 kernel and the bounded fold)
    is compiled or cached, as `is_ready` answers. Not a warm-up stage: few runs are SuperBPE
    runs, and its first compile (about 15 s of CPU) is paid by the first one that needs it."""
    kernels = (*scanner.counting_kernels(scanner.entry.STAGE2), count_fold.fold_table_capped)
    answers = [_cached(kernel) for kernel in kernels]
    if all(answer is True for answer in answers):
        return True
    return False if any(answer is False for answer in answers) else None


def warm_up(
    pattern: str = "gpt2",
    progress: Progress | None = None,
    helper: bool = True,
    only: Sequence[str] | None = None,
    helper_takes_all: bool = False,
) -> list[str]:
    """Compile or load every kernel a run with `pattern` needs (or the stages in `only`); returns
    the stages that were not ready (compiled now: empty on any start after the first).
    `progress(done, total, stage)` is called before each stage with done = stages finished, and
    once at the end. With `helper`, the trainer's stages, when missing and not alone, compile in
    a second process at the same time (this process then reports its own stages first).
    `helper_takes_all`: every missing stage compiles in the helper, the trainer's first, and
    this process only loads them (it is busy counting and training in Python meanwhile)."""
    keys = [key for key in stages(pattern) if only is None or key in only]
    if helper_takes_all:
        keys.sort(key=_QUICK_ORDER.index)
    missing = [key for key in keys if is_ready(key, pattern) is False]
    in_helper = [key for key in keys if key in missing and key in _HELPER_STAGES]
    if helper_takes_all:
        in_helper = missing
    proc = None
    if helper and in_helper and (helper_takes_all or len(missing) > len(in_helper)):
        proc = _start_helper(pattern, in_helper)
    if proc is not None:  # this process's own stages first, while the helper works
        keys = [key for key in keys if key not in in_helper] + in_helper
    total = len(keys)
    try:
        for done, key in enumerate(keys):
            name = _STAGES[key][0]
            if proc is not None and key in in_helper:
                _wait_for(proc, key, done, total, progress)
                if proc in _STOPPED:  # the app is closing: do not compile here instead
                    raise CancelledError("the app is closing: kernels are not prepared")
            elif progress is not None:
                progress(done, total, name)
            # Compiles (under the stage's lock: no other process compiles it meanwhile), or
            # loads what a helper, another command or an earlier start cached.
            compile_stage(key, pattern, _lock_folder())
    finally:
        if proc is not None:
            assert proc.stdout is not None
            proc.stdout.close()
            proc.wait()
            _LIVE.discard(proc)
            _STOPPED.discard(proc)
    if progress is not None:
        progress(total, total, "ready")
    return missing


def _cached(kernel: object) -> bool | None:
    if getattr(kernel, "overloads", None):
        return True
    cache_file = getattr(getattr(kernel, "_cache", None), "_cache_file", None)
    load_index = getattr(cache_file, "_load_index", None)
    if load_index is None:
        return None
    try:
        return bool(load_index())  # empty when absent or made from other sources
    except Exception:  # noqa: BLE001 -- a Numba detail we only peek at: unknown, not fatal
        return None


def _start_helper(pattern: str, keys: list[str]) -> subprocess.Popen | None:
    if getattr(sys, "frozen", False):
        return None  # a bundled app: sys.executable is the app, not a Python that takes -m
    argv = [sys.executable, "-m", "workbench.engine.warmup", pattern, *keys]
    try:
        proc = subprocess.Popen(
            argv, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True, bufsize=1
        )
    except OSError:
        return None  # no helper: this process compiles everything, as before
    _LIVE.add(proc)
    return proc


def _wait_for(proc: subprocess.Popen, key: str, done: int, total: int, progress) -> None:
    """Wait until the helper reports `key` compiled (or ends), reporting the stage meanwhile."""
    if progress is not None:
        progress(done, total, _STAGES[key][0])
    assert proc.stdout is not None
    for line in proc.stdout:  # at its end (the helper stopped) this process compiles the rest
        if line.strip() == key:
            return


def lock_name(stage: str, pattern: str) -> str:
    """The lock file's name for a stage: the trainer's kernels are the same for every pattern;
    the scanner's and the encoder's differ per preset (a custom pattern: by its digest)."""
    if stage in ("index", "merges"):
        return f"{stage}.lock"
    resolved = resolve(pattern)
    name = preset_name(resolved)
    if name is not None:
        return f"{stage}-{name}.lock"
    digest = hashlib.sha256(resolved.encode()).hexdigest()[:16]
    return f"{stage}-custom-{digest}.lock"


@contextlib.contextmanager
def stage_lock(folder: Path, stage: str, pattern: str, wait: bool = True):
    """Hold the stage's lock file in `folder` (fcntl.flock, released when the process ends,
    however it ends), so two processes never compile the same kernels at once. Yields False
    when `wait` is False and another process holds it; True otherwise (also where there are no
    file locks: Windows, a read-only cache: then it does not exclude anyone)."""
    try:
        import fcntl
    except ImportError:
        yield True
        return
    try:
        folder.mkdir(parents=True, exist_ok=True)
        handle = open(folder / lock_name(stage, pattern), "a+b")  # noqa: SIM115 -- held below
    except OSError:
        yield True
        return
    with handle:
        try:
            fcntl.flock(handle, fcntl.LOCK_EX | (0 if wait else fcntl.LOCK_NB))
        except BlockingIOError:
            yield False
            return
        except OSError:
            yield True
            return
        try:
            yield True
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def compile_stage(stage: str, pattern: str, lock_folder: Path | None) -> bool:
    """Compile one stage unless it is ready, under its lock; True if it compiled here. A process
    that waited for another's lock finds the kernels cached then, and only loads them."""
    if lock_folder is None:
        _STAGES[stage][1](pattern)
        return True
    with stage_lock(lock_folder, stage, pattern):
        compiled = is_ready(stage, pattern) is not True
        _STAGES[stage][1](pattern)
        return compiled


def _lock_folder() -> Path | None:
    """The stage locks' folder, beside the kernels in NUMBA_CACHE_DIR (`import workbench`
    sets it to the user cache unless the user did); None without one (no locking then)."""
    cache = os.environ.get("NUMBA_CACHE_DIR")
    return Path(cache) / "locks" if cache else None


def start_detached(
    work: Sequence[tuple[str, str]],
    log: Path,
    nice: bool = True,
    afterwards: Sequence[tuple[str, str]] = (),
) -> subprocess.Popen | None:
    """A helper process compiling `work` ((stage, pattern) pairs, in order), in its own session
    so it outlives the command that started it (Ctrl-C in the terminal does not reach it
    either), writing to `log`. `nice`: at a lower priority, for a caller that works meanwhile
    (training or encoding in Python); False when a person waits for it (on a busy machine a
    lowered compile would wait behind every other process). `afterwards`: stages the same
    helper compiles next, lowered, for a later command (nobody waits for them now). None where
    no helper can run (a bundled app, no fork): the caller then compiles in this process."""
    if getattr(sys, "frozen", False) or not (work or afterwards):
        return None
    argv = [sys.executable, "-m", "workbench.engine.warmup", "--lock" if nice else "--lock-now"]
    argv += [item for stage, pattern in work for item in (stage, pattern)]
    if afterwards:
        argv.append(_LOWER)
        argv += [item for stage, pattern in afterwards for item in (stage, pattern)]
    try:
        log.parent.mkdir(parents=True, exist_ok=True)
        with open(log, "ab") as out:
            proc = subprocess.Popen(
                argv,
                stdin=subprocess.DEVNULL,
                stdout=out,
                stderr=out,
                start_new_session=True,
                cwd=log.parent,
            )
    except OSError:
        return None
    # Kept for the life of this process: a helper is meant to outlive the job that started it,
    # and a Popen dropped while its process runs warns (ResourceWarning) when collected.
    _DETACHED.append(proc)
    return proc


def _helper_main(argv: list[str]) -> None:
    """`python -m workbench.engine.warmup PATTERN STAGE...` (the window's helper: prints each
    stage's key when its kernels are cached) or `--lock STAGE PATTERN [STAGE PATTERN...]` (a
    detached helper: a line per stage, with what it cost, for the log; `--lock-now` the same at
    the normal priority, for a job that only waits for it; stages after `--then-lowered` follow
    at the lower priority). Each stage compiles under its lock file in NUMBA_CACHE_DIR: one
    another process compiled is only loaded."""
    detached = argv[:1] in (["--lock"], ["--lock-now"])
    lowered_from = None  # the index in `work` of the first stage compiled lowered
    if detached:
        args = argv[1:]
        cut = args.index(_LOWER) if _LOWER in args else len(args)
        work = list(zip(args[:cut:2], args[1:cut:2], strict=True))
        lowered_from = len(work) if cut < len(args) else None
        work += list(zip(args[cut + 1 :: 2], args[cut + 2 :: 2], strict=True))
    else:
        work = [(key, argv[0]) for key in argv[1:]]
    folder = _lock_folder()
    if argv[:1] != ["--lock-now"]:
        _lower_priority()
    for at, (key, pattern) in enumerate(work):
        if at == lowered_from and argv[:1] == ["--lock-now"]:
            _lower_priority()
        wall, cpu = time.perf_counter(), time.process_time()
        compiled = compile_stage(key, pattern, folder)
        if not detached:
            print(key, flush=True)
            continue
        shown = preset_name(resolve(pattern)) or "a custom pattern"
        what = "compiled" if compiled else "already cached"
        wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
        print(f"{key} {shown}: {what} in {wall:.1f} s ({cpu:.1f} CPU s)", flush=True)


def _lower_priority() -> None:
    with contextlib.suppress(OSError, AttributeError):  # AttributeError: no nice on Windows
        os.nice(_HELPER_NICENESS)  # the app's own work (counting, the window) comes first


if __name__ == "__main__":
    _helper_main(sys.argv[1:])
