"""Helpers shared by the evaluation tests: a tiktoken cache holding GPT-2 built from the shared
corpora (nothing downloaded), and independent encoders to check counts against."""

from __future__ import annotations

import gzip
from pathlib import Path

from workbench.evaluate import references


def fill_gpt2_cache(corpora: Path, cache: Path) -> Path:
    """Put GPT-2's vocab.bpe and encoder.json where tiktoken's cache keeps them (by URL SHA-1)."""
    references.seed_gpt2_cache(corpora / "gpt2_vocab.json", corpora / "gpt2_merges.txt", cache)
    return cache


def wheel_ranks(name: str) -> dict[bytes, int]:
    """tiktoken's mergeable ranks of `cl100k_base` / `o200k_base`, read from the bpe-openai wheel
    by tiktoken's own loader."""
    import base64
    import importlib.util

    spec = importlib.util.find_spec("bpe_openai")
    assert spec is not None and spec.submodule_search_locations
    folder = Path(next(iter(spec.submodule_search_locations))) / "data"
    ranks = {}
    for line in gzip.decompress((folder / f"{name}.tiktoken.gz").read_bytes()).splitlines():
        if line:
            token, rank = line.split()
            ranks[base64.b64decode(token)] = int(rank)
    return ranks


def tiktoken_encoding(name: str):
    """tiktoken's Encoding of cl100k / o200k from the wheel's ranks (tiktoken's BPE and regex
    engine; the pattern string is the workbench's preset, which matches tiktoken's splits)."""
    import tiktoken
    from workbench.engine.patterns.regexes import resolve

    ref = references.REFERENCES[name]
    return tiktoken.Encoding(
        f"{name}-local",
        pat_str=resolve(ref.pattern),
        mergeable_ranks=wheel_ranks(f"{name}_base"),
        special_tokens=ref.specials,
    )
