"""Pre-tokenizing: a corpus counted into unique pieces (the word table), on all cores.

- `counting.count_corpus` / `count_in_memory` / `count_texts`: the entry points (files and
  folders; documents in memory, counted as JSONL records are; strings, one process). Preset patterns go through the
  scanner (`scan/`: a hand-written pre-tokenizer over UTF-8 bytes and its piece table); custom
  patterns through `regex` in worker processes (`_regex_worker`).
- `words.WordTable`: unique pieces as one flat byte buffer + offsets + int64 counts, what the
  trainer takes. `results`: the table with the corpus statistics.
- `counts_file`: a word table saved as Parquet (count anywhere, train here); `dask_count`: the
  same table counted on a Dask cluster.

The documents come from `engine.corpus`; the patterns and special tokens from `engine.patterns`.
Names resolve on first use (see `engine._facade`).
"""

from workbench.engine._facade import lazy_exports

__all__ = [
    "CorpusStats",
    "CountsFileError",
    "PretokenizeResult",
    "WordTable",
    "count_corpus",
    "count_in_memory",
    "count_on_dask",
    "count_texts",
    "read_counts",
    "write_counts",
]

__getattr__, __dir__ = lazy_exports(
    __name__,
    {
        "CorpusStats": "results",
        "CountsFileError": "counts_file",
        "PretokenizeResult": "results",
        "WordTable": "words",
        "count_corpus": "counting",
        "count_in_memory": "counting",
        "count_on_dask": "dask_count",
        "count_texts": "counting",
        "read_counts": "counts_file",
        "write_counts": "counts_file",
    },
)
