"""Test helpers: the same documents written as text files, compressed JSONL, Parquet shards
(several row groups) and a folder laid out as `datasets.save_to_disk` writes it."""

from __future__ import annotations

import bz2
import json
import lzma
import random
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import zstandard

SPECIAL = "<|endoftext|>"
WORDS = [
    "the",
    "quick",
    "brown",
    "fox",
    "jumps",
    "over",
    "lazy",
    "dogs",
    "and",
    "cats",
    "while",
    "über",
    "naïve",
    "café",
    "résumé",
    "東京",
    "日本語",
    "😀",
    "🎉",
    "I'm",
    "you're",
    "they'll",
    "it's",
    "12345",
    "3.14159",
    "foo_bar",
    "x=y+1;",
]


def documents(n: int = 120, seed: int = 7) -> list[str]:
    """Documents with Unicode, digits, contractions, odd whitespace and special tokens."""
    rng = random.Random(seed)
    docs = []
    for i in range(n):
        words = [rng.choice(WORDS) for _ in range(rng.randint(0, 60))]
        seps = [
            rng.choice([" ", " ", " ", "  ", "\n", "\t", "\r\n", "\n\n", SPECIAL]) for _ in words
        ]
        text = "".join(w + s for w, s in zip(words, seps, strict=True))
        if i % 7 == 0:
            text = "   " + text + "  "  # leading and trailing whitespace
        docs.append(text)
    return docs


def write_text_folder(folder: Path, docs: list[str]) -> Path:
    folder.mkdir(parents=True)
    for i, doc in enumerate(docs):
        (folder / f"{i:04d}.txt").write_bytes(doc.encode("utf-8"))
    return folder


def jsonl_bytes(docs: list[str], field: str = "text") -> bytes:
    return "".join(json.dumps({field: d, "id": i}) + "\n" for i, d in enumerate(docs)).encode()


def compress(data: bytes, suffix: str) -> bytes:
    if suffix == ".zst":
        return zstandard.ZstdCompressor().compress(data)
    if suffix == ".xz":
        return lzma.compress(data)
    if suffix == ".bz2":
        return bz2.compress(data)
    raise ValueError(suffix)


def write_parquet_shards(
    folder: Path, docs: list[str], shards: int = 3, rows_per_group: int = 9, column: str = "text"
) -> Path:
    folder.mkdir(parents=True)
    step = -(-len(docs) // shards)
    for s in range(shards):
        part = docs[s * step : (s + 1) * step]
        table = pa.table({"id": list(range(len(part))), column: part})
        pq.write_table(table, folder / f"shard-{s:03d}.parquet", row_group_size=rows_per_group)
    return folder


def write_saved_dataset(
    folder: Path, docs: list[str], files: int = 2, batch_rows: int = 10
) -> Path:
    """The layout of `Dataset.save_to_disk`: IPC stream files, state.json, dataset_info.json."""
    folder.mkdir(parents=True)
    step = -(-len(docs) // files)
    names = []
    schema = pa.schema([("text", pa.string()), ("id", pa.int64())])
    for f in range(files):
        name = f"data-{f:05d}-of-{files:05d}.arrow"
        names.append(name)
        part = docs[f * step : (f + 1) * step]
        with pa.OSFile(str(folder / name), "wb") as sink, pa.ipc.new_stream(sink, schema) as writer:
            for b in range(0, len(part), batch_rows):
                chunk = part[b : b + batch_rows]
                writer.write_batch(
                    pa.record_batch([pa.array(chunk), pa.array(range(len(chunk)))], schema=schema)
                )
    state = {
        "_data_files": [{"filename": n} for n in names],
        "_fingerprint": "0123456789abcdef",
        "_format_columns": None,
        "_format_kwargs": {},
        "_format_type": None,
        "_output_all_columns": False,
        "_split": "train",
    }
    (folder / "state.json").write_text(json.dumps(state, indent=2))
    (folder / "dataset_info.json").write_text(
        json.dumps({"features": {"text": {"dtype": "string"}}})
    )
    return folder


def write_all_formats(root: Path, docs: list[str]) -> dict[str, Path]:
    """name -> path of each form of the same documents."""
    forms = {"txt": write_text_folder(root / "txt", docs)}
    for suffix in (".zst", ".xz", ".bz2"):
        path = root / f"docs.jsonl{suffix}"
        path.write_bytes(compress(jsonl_bytes(docs), suffix))
        forms[f"jsonl{suffix}"] = path
    forms["parquet"] = write_parquet_shards(root / "parquet", docs)
    forms["arrow"] = write_saved_dataset(root / "saved", docs)
    return forms
