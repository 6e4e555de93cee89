"""OpenAI's reference tokenizers (`gpt2`, `cl100k`, `o200k`), found offline.

Where the ranks come from, in order: the `bpe-openai` wheel, which ships cl100k and o200k as
`.tiktoken.gz` files (found without importing its 74 MB native module), then tiktoken's download
cache (`$TIKTOKEN_CACHE_DIR`, `$DATA_GYM_CACHE_DIR` or `<tmp>/data-gym-cache`, one file per URL,
named by the URL's SHA-1), checked against tiktoken's published SHA-256. Nothing is downloaded:
when neither has the file, `ReferenceError` says what to install or fetch.
"""

from __future__ import annotations

import gzip
import hashlib
import importlib.util
import os
import tempfile
from dataclasses import dataclass
from pathlib import Path

from workbench.engine.encode.tokenizer import Tokenizer
from workbench.engine.errors import WorkbenchError
from workbench.engine.formats import gpt2_files, tiktoken_file
from workbench.engine.python_encoder import PythonEncoder

_BLOB = "https://openaipublic.blob.core.windows.net/"


@dataclass(frozen=True)
class Reference:
    name: str
    pattern: str  # a preset name of `workbench.engine.patterns.regexes`
    specials: dict[str, int]
    wheel_file: str | None  # inside bpe_openai/data
    tiktoken_url: str | None  # a .tiktoken in tiktoken's cache, with its SHA-256
    tiktoken_sha256: str | None
    data_gym: tuple[tuple[str, str], tuple[str, str]] | None = None  # (vocab.bpe, encoder.json)


REFERENCES = {
    "gpt2": Reference(
        "gpt2",
        "gpt2",
        {"<|endoftext|>": 50256},
        None,
        _BLOB + "encodings/r50k_base.tiktoken",
        "306cd27f03c1a714eca7108e03d66b7dc042abe8c258b44c199a7ed9838dd930",
        (
            (
                _BLOB + "gpt-2/encodings/main/vocab.bpe",
                "1ce1664773c50f3e0cc8842619a93edc4624525b728b188a9e0be33b7726adc5",
            ),
            (
                _BLOB + "gpt-2/encodings/main/encoder.json",
                "196139668be63f3b5d6574427317ae82f612a97c5d1cdaf36ed2256dbf636783",
            ),
        ),
    ),
    "cl100k": Reference(
        "cl100k",
        "cl100k",
        {
            "<|endoftext|>": 100257,
            "<|fim_prefix|>": 100258,
            "<|fim_middle|>": 100259,
            "<|fim_suffix|>": 100260,
            "<|endofprompt|>": 100276,
        },
        "cl100k_base.tiktoken.gz",
        _BLOB + "encodings/cl100k_base.tiktoken",
        "223921b76ee99bde995b7ff738513eef100fb51d18c93597a113bcffe865b2a7",
    ),
    "o200k": Reference(
        "o200k",
        "o200k",
        {"<|endoftext|>": 199999, "<|endofprompt|>": 200018},
        "o200k_base.tiktoken.gz",
        _BLOB + "encodings/o200k_base.tiktoken",
        "446a9538cb6c348e3516120d7c08b09f57c36495e2acfffe59a5bf8b0cfb1a2d",
    ),
}


class ReferenceUnavailable(WorkbenchError):
    """The ranks of a reference tokenizer are on neither source."""


def tiktoken_cache_dir() -> Path | None:
    """tiktoken's cache folder, as tiktoken chooses it (None: caching turned off)."""
    for variable in ("TIKTOKEN_CACHE_DIR", "DATA_GYM_CACHE_DIR"):
        if variable in os.environ:
            value = os.environ[variable]
            return Path(value) if value else None
    return Path(tempfile.gettempdir()) / "data-gym-cache"


def _cached(url: str, sha256: str) -> bytes | None:
    folder = tiktoken_cache_dir()
    if folder is None:
        return None
    path = folder / hashlib.sha1(url.encode()).hexdigest()
    try:
        data = path.read_bytes()
    except OSError:
        return None
    return data if hashlib.sha256(data).hexdigest() == sha256 else None


def _wheel_data(name: str) -> bytes | None:
    try:
        spec = importlib.util.find_spec("bpe_openai")
    except (ImportError, ValueError):
        return None
    if spec is None or not spec.submodule_search_locations:
        return None
    for folder in spec.submodule_search_locations:
        path = Path(folder) / "data" / name
        if path.is_file():
            return gzip.decompress(path.read_bytes())
    return None


def _ranks_of(ref: Reference, data: bytes) -> dict[int, bytes]:
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / f"{ref.name}.tiktoken"
        path.write_bytes(data)
        return tiktoken_file.read_ranks(path)


def _from_tiktoken_bytes(ref: Reference, data: bytes) -> Tokenizer:
    return Tokenizer.from_ranks(_ranks_of(ref, data), ref.pattern, ref.specials)


def _tiktoken_data(ref: Reference) -> bytes | None:
    data = _wheel_data(ref.wheel_file) if ref.wheel_file else None
    if data is None and ref.tiktoken_url and ref.tiktoken_sha256:
        data = _cached(ref.tiktoken_url, ref.tiktoken_sha256)
    return data


def has_rank_file(name: str) -> bool:
    """Whether reference `name` is on this machine as a rank file (what `python_reference`
    reads), found without parsing it."""
    ref = REFERENCES.get(name)
    return ref is not None and _tiktoken_data(ref) is not None


def python_reference(name: str) -> PythonEncoder | None:
    """The reference `name` as a pure-Python encoder (no kernel compiled to load or use it),
    for a first use while the fast encoder compiles; None when its ranks are not on this
    machine as a rank file (then `load_reference` says why, or loads GPT-2's own files)."""
    ref = REFERENCES.get(name)
    data = _tiktoken_data(ref) if ref is not None else None
    if ref is None or data is None:
        return None
    from workbench.engine.patterns.regexes import resolve

    return PythonEncoder(_ranks_of(ref, data), resolve(ref.pattern), ref.specials)


def _from_data_gym(ref: Reference) -> Tokenizer | None:
    assert ref.data_gym is not None
    (merges_url, merges_hash), (vocab_url, vocab_hash) = ref.data_gym
    merges, vocab = _cached(merges_url, merges_hash), _cached(vocab_url, vocab_hash)
    if merges is None or vocab is None:
        return None
    with tempfile.TemporaryDirectory() as folder:
        vocab_path, merges_path = Path(folder) / "vocab.json", Path(folder) / "merges.txt"
        vocab_path.write_bytes(vocab)
        merges_path.write_bytes(merges)
        return gpt2_files.load(vocab_path, merges_path, ref.pattern)


def is_reference(name: str) -> bool:
    return name in REFERENCES


def load_reference(name: str) -> Tokenizer:
    """The tokenizer `name` (gpt2, cl100k, o200k), from the bpe-openai wheel or tiktoken's cache."""
    ref = REFERENCES[name]
    data = _tiktoken_data(ref)
    if data is not None:
        return _from_tiktoken_bytes(ref, data)
    if ref.data_gym is not None:
        tok = _from_data_gym(ref)
        if tok is not None:
            return tok
    where = "`pip install bpe-openai` (it ships cl100k and o200k) or " if ref.wheel_file else ""
    raise ReferenceUnavailable(
        f"the {name} ranks are not on this machine: {where}run "
        f"`python -c \"import tiktoken; tiktoken.get_encoding('{_TIKTOKEN_NAMES[name]}')\"` "
        f"once online to fill tiktoken's cache ({tiktoken_cache_dir()}), or name the "
        "tokenizer's own files (vocab.json + merges.txt, a .tiktoken) instead"
    )


_TIKTOKEN_NAMES = {"gpt2": "gpt2", "cl100k": "cl100k_base", "o200k": "o200k_base"}


def available(name: str) -> bool:
    """Whether `load_reference(name)` would find the ranks (a cheap look, nothing parsed)."""
    ref = REFERENCES[name]
    if ref.wheel_file:
        try:
            spec = importlib.util.find_spec("bpe_openai")
        except (ImportError, ValueError):
            spec = None
        if spec is not None and any(
            (Path(f) / "data" / ref.wheel_file).is_file()
            for f in spec.submodule_search_locations or ()
        ):
            return True
    folder = tiktoken_cache_dir()
    if folder is None:
        return False
    urls = [ref.tiktoken_url] if ref.tiktoken_url else []
    if any((folder / hashlib.sha1(u.encode()).hexdigest()).is_file() for u in urls):
        return True
    return ref.data_gym is not None and all(
        (folder / hashlib.sha1(u.encode()).hexdigest()).is_file() for u, _ in ref.data_gym
    )


def seed_gpt2_cache(vocab_json: Path, merges_txt: Path, cache: Path) -> None:
    """Put local GPT-2 files (`vocab.json` = encoder.json, `merges.txt` = vocab.bpe, the
    `#version` header added when missing) where tiktoken's cache `cache` keeps them, so `gpt2`
    loads offline. They are checked against tiktoken's hashes when loaded, as downloads are."""
    data_gym = REFERENCES["gpt2"].data_gym
    assert data_gym is not None
    (merges_url, _), (vocab_url, _) = data_gym
    merges = merges_txt.read_bytes()
    if not merges.startswith(b"#version"):
        merges = b"#version: 0.2\n" + merges
    cache.mkdir(parents=True, exist_ok=True)
    (cache / hashlib.sha1(merges_url.encode()).hexdigest()).write_bytes(merges)
    (cache / hashlib.sha1(vocab_url.encode()).hexdigest()).write_bytes(vocab_json.read_bytes())
