"""Reading a corpus: finding its files (`listing`), their identity (`identity`), opening them
whatever their compression (`opening`), packs of small plain files (`packs`), the text checks
(`text_checks`), JSONL records (`jsonl`), documents cut into text segments (`documents`), and
the bytes units the counters take (`units`: whole documents or stretches cut at safe points,
with their segments; `feed`: the corpus in order, packs read ahead by reader threads; `memory`:
the same units from documents in memory, strings, Datasets or arrow tables, each document a
record as in JSONL). Formats
beyond plain text and JSONL (Parquet, Arrow, saved datasets, compressed streams, URLs) are in
`readers/`.

Modules inside this package import each other directly, never this facade.
"""

from workbench.engine._facade import lazy_exports

__all__ = [
    "preview_text",
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
    "memory_units",
    "list_files",
    "open_binary",
    "read_chunks",
    "read_documents",
    "read_small_text",
    "read_text_pack",
    "read_whole",
    "safe_cut",
]

__getattr__, __dir__ = lazy_exports(
    __name__,
    {
        "CHUNK_CHARS": "documents",
        "CorpusFeed": "feed",
        "CorpusListing": "listing",
        "CorpusWalk": "listing",
        "Document": "documents",
        "PathList": "listing",
        "READ_BYTES": "opening",
        "Segmenter": "documents",
        "TextPack": "packs",
        "Unit": "units",
        "Utf8Decoder": "text_checks",
        "check_not_binary": "text_checks",
        "check_utf8": "text_checks",
        "corpus_record": "identity",
        "file_units": "units",
        "fingerprint": "identity",
        "is_jsonl": "opening",
        "jsonl_records": "jsonl",
        "jsonl_texts": "jsonl",
        "list_corpus": "listing",
        "memory_units": "memory",
        "list_files": "listing",
        "open_binary": "opening",
        "read_chunks": "opening",
        "read_documents": "documents",
        "read_small_text": "opening",
        "read_text_pack": "packs",
        "preview_text": "preview",
        "read_whole": "opening",
        "safe_cut": "documents",
    },
)
