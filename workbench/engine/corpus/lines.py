"""The lines of a corpus, read by the same readers as training (so `.gz`, `.jsonl` and every
other input the trainer takes are read as text the same way), for tools that search it.

    for path, line in corpus_lines(["docs/"]):      # "hello world\\n", ...
        ...

A file that cannot be read as text yields one `CorpusError` in place of its lines (the caller
reports it and goes on); JSONL records are documents, so their lines come from the text field.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Iterator
from pathlib import Path

from workbench.engine.corpus.documents import Segmenter, read_documents
from workbench.engine.corpus.listing import list_files
from workbench.engine.errors import CorpusError

_LINE_ENDS = ("\n", "\r")


def corpus_lines(
    paths: Iterable[str | os.PathLike],
) -> Iterator[tuple[Path, str | CorpusError]]:
    """(file, line with its line ending) for every line of every document under `paths`."""
    segmenter = Segmenter((), cut_inside=False)  # no specials: segments are the text itself
    for path in list_files(paths):
        try:
            for document in read_documents(path, segmenter):
                pending = ""
                for segment in document.segments:
                    lines = (pending + segment).splitlines(keepends=True)
                    pending = lines.pop() if lines and not lines[-1].endswith(_LINE_ENDS) else ""
                    for line in lines:
                        yield path, line
                if pending:
                    yield path, pending
        except CorpusError as exc:
            yield path, exc
