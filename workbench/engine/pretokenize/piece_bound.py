"""A bound on the distinct pieces' bytes for the `regex` counter (SuperBPE's stage 2), held while
counting: what `scan.fold.CountTable` does for the scanner, over Counters of strings.

A new distinct piece is admitted while its UTF-8 bytes fit in the room left; pieces already
admitted go on being counted; every occurrence of a piece left out is tallied with its bytes.
A large file's counts wait in a Counter of their own until the file is known good; they take
their room as they come and give it back (and their loss) if the file is dropped.
"""

from __future__ import annotations

from collections import Counter


class PieceBound:
    def __init__(self, max_bytes: int) -> None:
        self.room = max_bytes
        self.dropped = 0  # piece occurrences left out
        self.dropped_bytes = 0  # their bytes
        self._held: dict[int, tuple[int, int, int]] = {}  # file key -> (room, dropped, bytes)

    def add(
        self, into: Counter[str], part: Counter[str], known: Counter[str] | None = None,
        key: int | None = None,
    ) -> None:  # fmt: skip
        """Count `part` into `into`, admitting new pieces while they fit. `known`: the corpus's
        counts, when `into` holds a file's counts until it is known good (a piece already
        counted there is no new piece); `key`: that file, whose share `release` can undo."""
        used = dropped = dropped_bytes = 0
        for piece, n in part.items():
            if piece in into or (known is not None and piece in known):
                into[piece] += n
                continue
            size = len(piece.encode("utf-8"))
            if size <= self.room:
                into[piece] = n
                self.room -= size
                used += size
            else:
                dropped += n
                dropped_bytes += size * n
        self.dropped += dropped
        self.dropped_bytes += dropped_bytes
        if key is not None:
            room, d, b = self._held.get(key, (0, 0, 0))
            self._held[key] = (room + used, d + dropped, b + dropped_bytes)

    def commit(self, key: int) -> None:
        """The file `key` is good: its share stays."""
        self._held.pop(key, None)

    def release(self, key: int) -> None:
        """The file `key` was dropped whole: its room comes back and its loss is no loss."""
        room, dropped, dropped_bytes = self._held.pop(key, (0, 0, 0))
        self.room += room
        self.dropped -= dropped
        self.dropped_bytes -= dropped_bytes
