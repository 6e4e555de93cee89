"""Errors the engine raises for bad input: one line each, naming the file (and line)."""

from __future__ import annotations


class WorkbenchError(Exception):
    """A problem with the user's input, with a message fit to show as is."""


class CorpusError(WorkbenchError):
    """A corpus file that cannot be read as text (binary, invalid UTF-8, unreadable, bad JSONL)."""

    def __init__(self, path: str, message: str, line: int | None = None) -> None:
        self.path = path
        self.line = line
        where = f"{path}:{line}" if line is not None else path
        super().__init__(f"{where}: {message}")


class PatternError(WorkbenchError):
    """A pre-tokenization pattern that does not compile or can match the empty string."""


class ConfigError(WorkbenchError):
    """Training settings that cannot work (vocabulary below the alphabet, and so on)."""


class TokenizerError(WorkbenchError):
    """A tokenizer that cannot be built or asked for (bad merges, unknown id, bad prefix)."""


class TokenizerFileError(WorkbenchError):
    """A tokenizer file that is not byte-level BPE, is truncated, or is inconsistent."""

    def __init__(self, path: str, message: str) -> None:
        self.path = path
        super().__init__(f"{path}: {message}")


class CancelledError(WorkbenchError):
    """The user cancelled a long job; nothing it made is kept."""
