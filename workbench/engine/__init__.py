"""The engine: pure Python + Numba, no Qt, no SQLite, no session (import-linter checks it).

One sub-package per stage, read top to bottom like a ladder; each imports only those above it:

    patterns/     the pre-tokenization patterns (presets, checked custom regexes), special
                  tokens, Unicode classes pinned to one version: what every stage agrees on
    corpus/       finding a corpus's files, opening them (one table of compressions), packs of
                  small files, JSONL and columnar records, documents and the bytes units fed to
                  the counters (`feed`); `readers/` for Parquet, Arrow, datasets, URLs
    pretokenize/  counting pieces into the word table: the scanner (`scan/`) for the presets,
                  `regex` in worker processes for custom patterns, counts files, Dask
    train/        the merge loop: `BpeTrainer` over Numba kernels (state, tables, heap), a
                  pure-Python trainer for a first start
    encode/       `Tokenizer`: encode and decode, exactly tiktoken's ids, over a private core
    formats/      tokenizer files: Hugging Face, GPT-2, tiktoken, minbpe; safe writing
    _native/      everything relying on Numba/CPython internals, libc or hand-written LLVM IR,
                  with a table of what each piece relies on and `BPE_WORKBENCH_PORTABLE=1` to
                  switch every piece to its fallback

Beside them: `config` (training settings, checked once), `events` (the merge batches the
trainer hands out), `errors` (one-line errors for bad input), `batching` (grouping texts into
runs), `byte_mapping` (GPT-2's byte-to-unicode map), `warmup` (compiling kernels ahead of use)
and `_facade` (stage facades that import on first use).
"""
