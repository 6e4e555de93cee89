"""The first characters of a corpus file that is not plain text (compressed, Parquet, Arrow), for
the window's corpus preview; plain files are previewed as they are."""

from __future__ import annotations

from pathlib import Path

from workbench.engine.corpus.opening import open_binary  # every compression's opener
from workbench.engine.corpus.readers import is_columnar, streams_only
from workbench.engine.corpus.readers.columnar import record_texts
from workbench.engine.errors import WorkbenchError


def preview_text(path: Path, chars: int) -> str | None:
    """The first `chars` characters of a compressed, Parquet or Arrow file's text (records
    joined by blank lines), for a preview; None for other files (read them as they are)."""
    if not streams_only(path):
        return None
    try:
        if is_columnar(path):
            parts, size = [], 0
            for text in record_texts(path, "text"):
                parts.append(text)
                size += len(text)
                if size >= chars:
                    break
            return "\n\n".join(parts)[:chars]
        with open_binary(path) as stream:
            return stream.read(chars * 4).decode("utf-8", "replace")[:chars]
    except (OSError, EOFError, WorkbenchError) as exc:
        return f"(cannot preview {path.name}: {exc})"
