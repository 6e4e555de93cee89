"""Finding the files of a corpus: the files named and those under the folders named (walked
depth-first in sorted order, hidden entries and saved datasets' metadata passed over), with
their sizes, the problems met inside folders and the entries left out.

`list_corpus` lists here and now; `CorpusWalk` can list in a thread of its own while the files
already listed are read. Reading the files is left to `opening` and `packs`."""

from __future__ import annotations

import itertools
import operator
import os
import stat
import threading
from collections.abc import Callable, Iterable, Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

from workbench.engine.corpus.problems import not_regular, os_problem
from workbench.engine.corpus.readers import datasets, urls
from workbench.engine.errors import CorpusError


@dataclass
class CorpusListing:
    """The files to read (in order, by name, with their sizes when listed) and what was left out.

    `sizes[i]` is -1 when the listing was asked not to size the files it knows are regular
    (`list_corpus(..., sized=False)`): a stat costs as much as reading a small file.
    `problems`: entries inside folders that cannot be read (a broken or looping symbolic link,
    an unreadable folder): an error when bad files stop the run, else skipped and reported.
    `passed_over`: entries inside folders that are not corpus files (FIFOs, sockets, devices,
    a folder reached a second time through a link): always left out, always reported."""

    names: list[str] = field(default_factory=list)
    sizes: list[int] = field(default_factory=list)
    problems: list[CorpusError] = field(default_factory=list)
    passed_over: list[CorpusError] = field(default_factory=list)

    @property
    def files(self) -> list[Path]:
        return [Path(name) for name in self.names]


class PathList(Sequence[Path]):
    """Paths made from file names only when first asked for: counting needs the names alone,
    and 50,000 Path objects cost a tenth of a second."""

    def __init__(self, names: list[str]) -> None:
        self.names = names
        self._paths: list[Path] | None = None

    def _all(self) -> list[Path]:
        if self._paths is None:
            self._paths = [Path(name) for name in self.names]
        return self._paths

    def __len__(self) -> int:
        return len(self.names)

    def __getitem__(self, index):  # type: ignore[override]
        return self._all()[index]

    def __iter__(self) -> Iterator[Path]:
        return iter(self._all())

    def __eq__(self, other: object) -> bool:
        return list(self) == (list(other) if isinstance(other, Sequence) else other)

    def __repr__(self) -> str:
        return f"PathList({self.names!r})"


def list_corpus(paths: Iterable[str | os.PathLike], sized: bool = True) -> CorpusListing:
    """The files named or under the folders named, folders walked depth-first in sorted order.

    Hidden entries (a leading dot) inside a folder are passed over. Symbolic links are followed,
    folders included; a folder is read once however many links lead to it (by device and
    inode), so a link loop ends. A path named on the command line that is missing or not a
    file or folder raises CorpusError at once: the user asked for it by name. `sized=False`:
    files a folder listing shows are regular keep size -1 (no stat: their reader sizes them)."""
    walk = CorpusWalk(paths, sized)
    walk.run()
    return walk.listing


class _Stopped(Exception):
    """The walk was told to stop (its reader gave up)."""


class CorpusWalk:
    """Listing a corpus (as `list_corpus`), here or in a thread of its own while the files
    already listed are read: `listing` grows folder by folder, in order; `more` waits for it.

    The paths named are checked at once (a bad one raises CorpusError here, before anything is
    walked); the folders are walked by `run` or by the thread `start` starts."""

    def __init__(self, paths: Iterable[str | os.PathLike], sized: bool = False) -> None:
        self.listing = CorpusListing()
        self.sized = sized
        self.roots: list[tuple[str, os.stat_result]] = []
        for raw in urls.local_paths(paths):  # readers hook: fsspec URLs
            path = Path(raw)
            st = _stat_named(path)
            if not (stat.S_ISDIR(st.st_mode) or stat.S_ISREG(st.st_mode)):
                message = f"{not_regular(st.st_mode)}: name text files or folders"
                raise CorpusError(str(path), message)
            self.roots.append((str(path), st))
        self._changed = threading.Condition()
        self._finished = False
        self._stop = False
        self._error: BaseException | None = None
        self._thread: threading.Thread | None = None

    def run(self) -> None:
        seen: set[tuple[int, int]] = set()
        for root, st in self.roots:
            if stat.S_ISDIR(st.st_mode):
                _walk_folder(root, st, self.listing, seen, self.sized, self._add)
            else:
                self._add([root], [st.st_size])

    def _add(self, names: list[str], sizes: list[int]) -> None:
        """One folder's files (or a file named), less saved datasets' metadata."""
        if self._stop:
            raise _Stopped
        names, sizes = _without_dataset_metadata(names, sizes)
        with self._changed:  # sizes first: a reader takes the names' length as the bound
            self.listing.sizes += sizes
            self.listing.names += names
            self._changed.notify_all()

    def start(self) -> None:
        self._thread = threading.Thread(target=self._background, name="corpus walk", daemon=True)
        self._thread.start()

    def _background(self) -> None:
        try:
            self.run()
        except _Stopped:
            pass
        except BaseException as exc:  # handed to the reader by `more`/`finish`
            self._error = exc
        finally:
            with self._changed:
                self._finished = True
                self._changed.notify_all()

    def more(self, have: int) -> bool:
        """Whether the listing holds more than `have` files, waiting for the walk to list them
        or to end (then False)."""
        with self._changed:
            self._changed.wait_for(lambda: len(self.listing.names) > have or self._finished)
        if self._error is not None:
            raise self._error
        return len(self.listing.names) > have

    def finish(self) -> CorpusListing:
        """The whole listing, once the walk has ended."""
        while self.more(len(self.listing.names)):
            pass
        return self.listing

    def stop(self) -> None:
        """End the walk early (its reader failed or was cancelled) and wait for its thread."""
        self._stop = True
        if self._thread is not None:
            self._thread.join()


def _without_dataset_metadata(names: list[str], sizes: list[int]) -> tuple[list[str], list[int]]:
    """`names` (and their sizes) less saved datasets' JSON metadata (readers hook), asking only
    about the files whose names end like metadata (a C-speed scan): the hook keeps the rest."""
    suspects = (*datasets.METADATA, datasets.DICT_METADATA)
    joined = "\0".join(names) + "\0"  # "name NUL" found: a name ends so (no name holds a NUL)
    if not any(suspect + "\0" in joined for suspect in suspects):  # most folders: C speed
        return names, sizes
    ends = operator.methodcaller("endswith", suspects)
    maybe = list(itertools.compress(range(len(names)), map(ends, names)))
    if not maybe:
        return names, sizes
    kept = {str(p) for p in datasets.without_dataset_metadata([Path(names[k]) for k in maybe])}
    drop = {k for k in maybe if names[k] not in kept}
    if not drop:
        return names, sizes
    pairs = [p for k, p in enumerate(zip(names, sizes, strict=True)) if k not in drop]
    return [n for n, _ in pairs], [s for _, s in pairs]


def list_files(paths: Iterable[str | os.PathLike]) -> list[Path]:
    """`list_corpus(paths).files`, raising the first problem found inside a folder."""
    listing = list_corpus(paths)
    if listing.problems:
        raise listing.problems[0]
    return listing.files


def _walk_folder(
    root: str,
    root_stat: os.stat_result,
    listing: CorpusListing,
    seen: set[tuple[int, int]],
    sized: bool,
    emit: Callable[[list[str], list[int]], None],
) -> None:
    """Walk one folder named: each folder's files go to `emit` (which adds them to `listing`),
    its problems and passed-over entries straight to `listing`."""
    # An explicit stack, not recursion: a folder tree may be deeper than Python's stack. Names
    # are plain strings (a Path per file costs more than reading a small file).
    stack = [(root, root_stat)]
    # Files known regular from the folder listing alone: sized at the end, in one batch.
    unsized: list[int] = []
    while stack:
        folder, st = stack.pop()
        key = (st.st_dev, st.st_ino)
        if key in seen:
            listing.passed_over.append(CorpusError(folder, "folder already read (linked)"))
            continue
        seen.add(key)
        try:
            with os.scandir(folder) as it:
                entries = [e for e in it if e.name[0] != "."]
        except OSError as exc:
            problem = os_problem(Path(folder), exc, "list the folder")
            listing.problems.append(CorpusError(folder, problem))
            continue
        prefix = "" if folder == "." else os.path.join(folder, "")  # as pathlib joins them
        before = len(listing.names)
        if _all_plain(entries):  # a folder of plain files only: no loop of ours
            # `entry.path` is the folder and the name joined as `prefix` does, but for "."
            names = sorted(map(_PATH if prefix else _NAME, entries))
            emit(names, [-1] * len(names))
        else:
            folders = _folder_entries(prefix, entries, listing, emit)
            stack.extend(reversed(folders))
        if sized:
            sizes = listing.sizes
            unsized.extend(k for k in range(before, len(sizes)) if sizes[k] < 0)
    if unsized:
        _add_sizes(listing, unsized)


def _folder_entries(
    prefix: str,
    entries: list[os.DirEntry],
    listing: CorpusListing,
    emit: Callable[[list[str], list[int]], None],
) -> list[tuple[str, os.stat_result]]:
    """The files of a folder that holds more than plain files (to `emit`), its problems and
    passed-over entries (to `listing`), and its folders to walk, in sorted order."""
    names: list[str] = []
    sizes: list[int] = []
    folders = []
    # (name, entry): names are unique, so entries are never compared
    for name, entry in sorted([(e.name, e) for e in entries]):
        try:
            # A plain file (not a link) is known from the folder listing, with no system
            # call: its size comes later in one batch (`_add_sizes`), or from its reader.
            if entry.is_file(follow_symlinks=False):
                names.append(prefix + name)
                sizes.append(-1)
                continue
            est = entry.stat()  # follows symbolic links
        except OSError as exc:
            path = Path(prefix + name)
            listing.problems.append(CorpusError(str(path), os_problem(path, exc, "read")))
            continue
        if stat.S_ISDIR(est.st_mode):
            folders.append((prefix + name, est))
        elif stat.S_ISREG(est.st_mode):
            names.append(prefix + name)
            sizes.append(est.st_size)
        else:
            listing.passed_over.append(CorpusError(prefix + name, not_regular(est.st_mode)))
    emit(names, sizes)
    return folders


# Whether an entry is a regular file, not a link: known from the folder listing, no system call.
_PATH = operator.attrgetter("path")
_NAME = operator.attrgetter("name")


def _all_plain(entries: list[os.DirEntry]) -> bool:
    """Whether every entry is a regular file, not a link. Asked as "no link, and all files":
    with no link, `is_file()` is `is_file(follow_symlinks=False)`, and the calls without a
    keyword cost a third as much (the largest part of the walk's Python per file)."""
    try:
        return not any(map(os.DirEntry.is_symlink, entries)) and all(
            map(os.DirEntry.is_file, entries)
        )
    except OSError:  # the listing did not say (some file systems): the entry-by-entry way
        return False


def _add_sizes(listing: CorpusListing, unsized: list[int]) -> None:
    """Fill in the sizes of `listing.names[i]` for i in `unsized`, dropping (as problems) files
    gone since the listing. Two threads from a few thousand files: a stat is a system call that
    releases the GIL, and the calls are most of a walk over many small files."""
    names = [listing.names[i] for i in unsized]
    if len(names) < 4096:
        sizes = _sizes(names)
    else:
        half = len(names) // 2
        with ThreadPoolExecutor(2) as pool:
            first = pool.submit(_sizes, names[:half])
            sizes = _sizes(names[half:])
            sizes = first.result() + sizes
    gone = set()
    for i, size in zip(unsized, sizes, strict=True):
        if isinstance(size, OSError):
            path = Path(listing.names[i])
            listing.problems.append(CorpusError(str(path), os_problem(path, size, "read")))
            gone.add(i)
        else:
            listing.sizes[i] = size
    if gone:
        pairs = [
            p for i, p in enumerate(zip(listing.names, listing.sizes, strict=True)) if i not in gone
        ]
        listing.names, listing.sizes = [f for f, _ in pairs], [n for _, n in pairs]


def _sizes(names: list[str]) -> list[int | OSError]:
    out: list[int | OSError] = []
    for name in names:
        try:
            out.append(os.stat(name).st_size)
        except OSError as exc:
            out.append(exc)
    return out


def _stat_named(path: Path) -> os.stat_result:
    try:
        return path.stat()
    except OSError as exc:
        raise CorpusError(str(path), os_problem(path, exc, "read")) from None
    except ValueError:  # a NUL byte in the name
        raise CorpusError(repr(str(path)), "not a valid file name") from None
