"""Reading a corpus: finding its files (`listing`), their identity (`identity`), opening them
whatever their compression (`opening`), packs of small plain files (`packs`), the text checks
(`text_checks`), JSONL records (`jsonl`), documents cut into text segments (`documents`), and
the bytes units the counters take (`units`: whole documents or stretches cut at safe points,
with their segments; `feed`: the corpus in order, packs read ahead by reader threads). Formats
beyond plain text and JSONL (Parquet, Arrow, saved datasets, compressed streams, URLs) are in
`readers/`.

Modules inside this package import each other directly, never this facade.
"""

from workbench.engine.corpus.documents import (
    CHUNK_CHARS,
    Document,
    Segmenter,
    read_documents,
    safe_cut,
)
from workbench.engine.corpus.feed import CorpusFeed
from workbench.engine.corpus.identity import corpus_record, fingerprint
from workbench.engine.corpus.jsonl import jsonl_records, jsonl_texts
from workbench.engine.corpus.listing import (
    CorpusListing,
    CorpusWalk,
    PathList,
    list_corpus,
    list_files,
)
from workbench.engine.corpus.opening import (
    READ_BYTES,
    is_jsonl,
    open_binary,
    read_chunks,
    read_small_text,
    read_whole,
)
from workbench.engine.corpus.packs import TextPack, read_text_pack
from workbench.engine.corpus.text_checks import Utf8Decoder, check_not_binary, check_utf8
from workbench.engine.corpus.units import Unit, file_units

__all__ = [
    "CHUNK_CHARS",
    "READ_BYTES",
    "CorpusFeed",
    "CorpusListing",
    "CorpusWalk",
    "Document",
    "PathList",
    "Segmenter",
    "TextPack",
    "Unit",
    "Utf8Decoder",
    "check_not_binary",
    "check_utf8",
    "corpus_record",
    "file_units",
    "fingerprint",
    "is_jsonl",
    "jsonl_records",
    "jsonl_texts",
    "list_corpus",
    "list_files",
    "open_binary",
    "read_chunks",
    "read_documents",
    "read_small_text",
    "read_text_pack",
    "read_whole",
    "safe_cut",
]
