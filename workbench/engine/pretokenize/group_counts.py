"""Counting a corpus in groups (parity-aware BPE) in bounded memory: each group's training and
held-out word tables, fed a document at a time, each document in passages of any size.

A document's lines are split as they come: every `HELD_OUT_EVERY`-th line of a group (counted
across its documents in order) goes to its held-out part, the rest to its training part; each
part of a document stays one document (its kept lines joined), so its pieces are exactly those
of counting the parts whole. A part's text is handed on from the open document only cut where
the pattern promises no piece spans (`Segmenter.cut`, as the classic count streams a large
file), so a large document is never held whole either (a custom pattern that promises no cut
point holds its parts whole). The parts' text is buffered per (group, part) and counted a chunk
at a time (`count_in_memory`: the scanner on all cores for a preset, else `regex`) into a
growing table of unique pieces. So memory holds the buffers (at most `BUFFERED_CHARS`
characters in all), a chunk of the open document, and the unique pieces of each group's parts:
never the corpus.

The documents of a file are counted apart until the file is known good (`commit`), so a file
that turns out bad is left out whole (`rollback`), its lines not counted either.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Iterable
from dataclasses import replace

from workbench.engine.config import TrainConfig
from workbench.engine.errors import ConfigError
from workbench.engine.pretokenize.counting import count_in_memory, segmenter_for
from workbench.engine.pretokenize.scan import can_scan
from workbench.engine.pretokenize.words import WordTable

HELD_OUT_EVERY = 10  # every tenth line of a group is held out to measure its compression
CHUNK_CHARS = 4 << 20  # a (group, part)'s text counted at a time (characters)
BUFFERED_CHARS = 32 << 20  # all parts' buffered text together at most (then all are counted)

Key = tuple[str, bool]  # (group, held out)


def split_lines(text: str, number: int) -> tuple[str, str, int]:
    """(kept lines, held-out lines, lines so far) of one document whose group had `number`
    lines before it: line n of the group (from 1) is held out when n % HELD_OUT_EVERY == 0."""
    kept: list[str] = []
    held: list[str] = []
    for line in text.splitlines(keepends=True):
        number += 1
        (held if number % HELD_OUT_EVERY == 0 else kept).append(line)
    return "".join(kept), "".join(held), number


def scans(config: TrainConfig) -> bool:
    """Whether `config`'s pieces are counted by the scanner (and summed in its tables)."""
    return config.pretokenizer == "auto" and can_scan(config.pattern_string)


def pooled(tables: Iterable[WordTable], scanning: bool) -> WordTable:
    """The tables' words in one table, counts summed (order: first occurrence)."""
    tally = _Tally(scanning)
    for table in tables:
        tally.add(table)
    return tally.words()


class _Tally:
    """Unique pieces and their summed counts: the scanner's growing table (a preset counted by
    the scanner), else a dict (`regex` counting: no kernel to compile on a first start)."""

    def __init__(self, scanning: bool) -> None:
        if scanning:
            from workbench.engine.pretokenize.scan.fold import CountTable

            self._table: object = CountTable()
        else:
            self._table = Counter()

    def add(self, words: WordTable) -> None:
        if isinstance(self._table, Counter):
            self._table.update(words.to_dict())
        else:
            self._table.add((words.data, words.offsets, words.counts))  # type: ignore[attr-defined]

    def add_all(self, other: _Tally) -> None:
        if isinstance(self._table, Counter):
            self._table.update(other._table)  # type: ignore[arg-type]
        else:
            self._table.add_all(other._table)  # type: ignore[attr-defined]

    def words(self) -> WordTable:
        if isinstance(self._table, Counter):
            return WordTable.from_counts(self._table)
        return WordTable.from_arrays(*self._table.table())  # type: ignore[attr-defined]


class _Buffer:
    """Documents' text of one (group, part) not counted yet."""

    def __init__(self) -> None:
        self.texts: list[str] = []
        self.size = 0  # characters: a bound on work, not an exact byte figure

    def take(self, other: _Buffer) -> None:
        self.texts += other.texts
        self.size += other.size


_LINE_ENDS = frozenset("\n\r\x0b\x0c\x1c\x1d\x1e\x85\u2028\u2029")  # `str.splitlines`'s


class _OpenDocument:
    """The document being fed: where its lines are and its parts' text not handed on yet."""

    def __init__(self, group: str, lines: int) -> None:
        self.group = group
        self.lines = lines  # the group's lines so far
        self.at_start = True  # the next text starts a line
        self.held = False  # whether the current line is held out
        self.carried = ""  # a "\r" at the end of the last text: a "\n" may follow
        self.parts: dict[Key, _Buffer] = {}
        self.next_cut: dict[Key, int] = {}  # a part's size at which to look for a cut again


class GroupCounter:
    """Documents in, one at a time (`add`), each group's (training, held-out) word tables out
    (`tables`); `commit` after each file's documents, or `rollback` to leave the file out.

    A file's text waits in buffers of its own until the file is committed, then in the
    committed buffers, so many small files are counted together, a chunk at a time; a large
    file's own buffer is counted into tables of its own as it fills, folded in at the commit."""

    def __init__(
        self,
        config: TrainConfig,
        cancel: Callable[[], bool] | None = None,
        workers: int | None = None,
        chunk_chars: int = CHUNK_CHARS,
        buffered_chars: int = BUFFERED_CHARS,
    ) -> None:
        self._config = replace(config, parity_by="", parity_window=0)  # each part: plain BPE
        self._scanning = scans(config)
        self._cancel = cancel
        self._workers = workers
        self._chunk = chunk_chars
        self._most = buffered_chars
        self.documents = 0
        self._done: dict[Key, _Tally] = {}
        self._ready: dict[Key, _Buffer] = {}  # committed text not counted yet
        self._lines: dict[str, int] = {}
        self._has_text: set[Key] = set()
        # this file's, until commit or rollback
        self._pending: dict[Key, _Tally] = {}
        self._buffers: dict[Key, _Buffer] = {}
        self._pending_lines: dict[str, int] = {}
        self._pending_text: set[Key] = set()
        self._pending_documents = 0
        self._buffered = 0  # characters in all buffers, committed or not
        self._segmenter = segmenter_for(config)
        self._open: _OpenDocument | None = None

    def add(self, group: str, text: str) -> None:
        """One document of `group`, whole."""
        self.start(group)
        self.feed(text)
        self.finish()

    def start(self, group: str) -> None:
        """A new document of `group` (the open one, if any, finished): its text comes by `feed`."""
        self.finish()
        self._open = _OpenDocument(group, self._pending_lines.get(group, self._lines.get(group, 0)))
        self._pending_documents += 1

    def feed(self, text: str) -> None:
        """More text of the open document (`start`), cut anywhere."""
        document = self._open
        if document is None:
            raise ValueError("feed before start")
        text = document.carried + text
        document.carried = "\r" if text.endswith("\r") else ""  # "\r\n" may be cut in two
        self._route(document, text[:-1] if document.carried else text)

    def _route(self, document: _OpenDocument, text: str) -> None:
        """Each line of `text` to its part (held out or not) of the open document."""
        parts: tuple[list[str], list[str]] = ([], [])  # (kept, held out)
        number, held = document.lines, document.held
        for line in text.splitlines(keepends=True):
            if document.at_start:
                number += 1
                held = number % HELD_OUT_EVERY == 0
            parts[held].append(line)
            document.at_start = line[-1] in _LINE_ENDS
        document.lines, document.held = number, held
        for held_out, texts in enumerate(parts):
            if texts:
                self._hold(document, (document.group, bool(held_out)), "".join(texts))
        if self._buffered >= self._most:
            self._count_all()

    def _hold(self, document: _OpenDocument, key: Key, text: str) -> None:
        """The open document's text of one part: handed on to its buffer up to the last point
        where it may be cut, once a chunk of it is held."""
        if key not in self._pending_text and not text.isspace():
            self._pending_text.add(key)
        part = document.parts.setdefault(key, _Buffer())
        part.texts.append(text)
        part.size += len(text)
        if part.size < document.next_cut.get(key, self._chunk):
            return
        whole = "".join(part.texts)
        cut = self._segmenter.cut(whole)
        if cut == 0:  # no cut point yet: look again when a chunk more has come
            part.texts = [whole]
            document.next_cut[key] = part.size + self._chunk
            return
        self._put(key, whole[:cut])
        part.texts, part.size = [whole[cut:]], len(whole) - cut
        document.next_cut.pop(key, None)

    def finish(self) -> None:
        """The open document (if any) is whole: its held text handed on."""
        document, self._open = self._open, None
        if document is None:
            return
        if document.carried:  # the "\r" carried ends the last line after all
            self._route(document, document.carried)
        self._pending_lines[document.group] = document.lines
        for key, part in document.parts.items():
            text = "".join(part.texts)
            if text:
                self._put(key, text)

    def _put(self, key: Key, part: str) -> None:
        buffer = self._buffers.get(key)
        if buffer is None:
            buffer = self._buffers[key] = _Buffer()
        buffer.texts.append(part)
        buffer.size += len(part)
        self._buffered += len(part)
        if buffer.size >= self._chunk:  # a large file: counted apart as it comes
            self._count(self._buffers, key, self._pending)

    def _count(self, buffers: dict[Key, _Buffer], key: Key, into: dict[Key, _Tally]) -> None:
        buffer = buffers.pop(key)
        self._buffered -= buffer.size
        words = count_in_memory(
            buffer.texts, self._config, cancel=self._cancel, workers=self._workers
        ).words
        del buffer
        tally = into.get(key)
        if tally is None:
            tally = into[key] = _Tally(self._scanning)
        tally.add(words)

    def _count_all(self) -> None:
        for key in list(self._buffers):
            self._count(self._buffers, key, self._pending)
        for key in list(self._ready):
            self._count(self._ready, key, self._done)

    def commit(self) -> None:
        """The documents added since the last commit (a file's) are good: count them in."""
        self.finish()
        for key, tally in self._pending.items():
            done = self._done.get(key)
            if done is None:
                self._done[key] = tally
            else:
                done.add_all(tally)
        for key, buffer in self._buffers.items():
            ready = self._ready.get(key)
            if ready is None:
                ready = self._ready[key] = _Buffer()
            ready.take(buffer)
            if ready.size >= self._chunk:
                self._count(self._ready, key, self._done)
        self._buffers = {}  # taken: not dropped from the count of buffered text
        self._lines.update(self._pending_lines)
        self._has_text |= self._pending_text
        self.documents += self._pending_documents
        self.rollback()

    def rollback(self) -> None:
        """Forget the documents added since the last commit (a file that turned out bad)."""
        self._open = None
        self._buffered -= sum(b.size for b in self._buffers.values())
        self._pending, self._buffers = {}, {}
        self._pending_lines, self._pending_text = {}, set()
        self._pending_documents = 0

    def tables(self) -> dict[str, tuple[WordTable, WordTable]]:
        """Each group's (training, held-out) word tables, groups in name order. ConfigError for
        a group too small to hold a line out or to train on."""
        for key in list(self._ready):
            self._count(self._ready, key, self._done)
        groups = sorted({group for group, _ in self._done} | set(self._lines))
        if not groups:
            raise ConfigError("parity-aware BPE needs at least one group of documents")
        out = {}
        for name in groups:
            if (name, True) not in self._has_text or (name, False) not in self._has_text:
                raise ConfigError(
                    f"group {name!r} is too small for parity-aware BPE: it needs at least"
                    f" {HELD_OUT_EVERY} lines with text, every {HELD_OUT_EVERY}th held out"
                )
            out[name] = (self._done[(name, False)].words(), self._done[(name, True)].words())
        return out
