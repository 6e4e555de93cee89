"""Hugging Face `tokenizer.json` with the byte-level recipe, written and read.

Written: Split(Regex(pattern), "Isolated") + ByteLevel(add_prefix_space=false, use_regex=false),
ByteLevel decoder and post-processor, specials in `added_tokens` only (not in the model vocab,
so no piece can look them up), and `ignore_merges: true`, which makes Hugging Face look a whole
piece up first, as tiktoken and our encoder do.

Merges are listed in the rank order of the token they make (stable). Normally that is the
original order. Where two merges make the same bytes (`ab`+`c` and later `a`+`bc`), the later
one moves up next to the first: our encoder (tiktoken's rule) ranks a pair by the token it makes,
Hugging Face by the pair's line, so this order is what makes the two agree. What still differs,
in that corner only: two overlapping pairs making the same token (`ab a ba` -> `aba`), where
tiktoken takes the leftmost and Hugging Face the earlier line; and a pair that makes a token
without being listed at all, which tiktoken merges and Hugging Face does not. Such a file
re-imports with the same vocabulary and encoding but its merges in the moved order.

Read: model BPE over the byte-level alphabet; the pattern comes from a Split(Regex) or from
ByteLevel(use_regex=true) (GPT-2's pattern); normalizers, prefix spaces, byte fallback, word
prefixes/suffixes, dropout (random merges) and added tokens that strip spaces or match single
words change encoding in ways we do not reproduce, so they are refused, as is any value of the
wrong type (every field read is checked: the file may come from anywhere).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from workbench.engine.encode.tokenizer import Tokenizer
from workbench.engine.errors import TokenizerError, TokenizerFileError
from workbench.engine.formats import hf_transformers
from workbench.engine.formats._common import (
    as_file_error,
    file_id,
    mapped_vocab,
    plain_ids,
    read_json,
    split_pairs,
    unmapped,
    unmapped_all,
    write_atomic,
)
from workbench.engine.patterns.regexes import GPT2, resolve

FILE = "tokenizer.json"


def _byte_level(use_regex: bool, trim_offsets: bool) -> dict[str, Any]:
    return {
        "type": "ByteLevel",
        "add_prefix_space": False,
        "trim_offsets": trim_offsets,
        "use_regex": use_regex,
    }


def to_json(tokenizer: Tokenizer) -> dict[str, Any]:
    """The tokenizer.json document for `tokenizer`."""
    results = tokenizer.merge_results  # a property that copies: read it once, not per merge
    order = sorted(range(len(results)), key=lambda r: tokenizer.token_rank(results[r]))
    pairs = tokenizer.merges
    mapped = mapped_vocab(tokenizer)
    added = [
        {
            "id": tid,
            "content": name,
            "single_word": False,
            "lstrip": False,
            "rstrip": False,
            "normalized": False,
            "special": True,
        }
        for name, tid in sorted(tokenizer.special_tokens.items(), key=lambda item: item[1])
    ]
    split = {
        "type": "Split",
        "pattern": {"Regex": tokenizer.pattern},
        "behavior": "Isolated",
        "invert": False,
    }
    return {
        "version": "1.0",
        "truncation": None,
        "padding": None,
        "added_tokens": added,
        "normalizer": None,
        "pre_tokenizer": {"type": "Sequence", "pretokenizers": [split, _byte_level(False, True)]},
        "post_processor": _byte_level(False, False),
        "decoder": _byte_level(True, True),
        "model": {
            "type": "BPE",
            "dropout": None,
            "unk_token": None,
            "continuing_subword_prefix": None,
            "end_of_word_suffix": None,
            "fuse_unk": False,
            "byte_fallback": False,
            "ignore_merges": True,
            "vocab": {token: tid for tid, token in mapped.items()},
            # "left right" strings, not pairs: tokenizers before 0.20 (transformers 4.40-4.44)
            # read only these, later ones both; a mapped token never holds a space.
            "merges": [f"{mapped[pairs[r][0]]} {mapped[pairs[r][1]]}" for r in order],
        },
    }


def export(tokenizer: Tokenizer, out_dir: Path, **roles: Any) -> list[Path]:
    """tokenizer.json, plus the two files transformers reads (`hf_transformers`); `roles`:
    `bos`, `eos`, `pad`, `unk`, `model_max_length`, else defaulted from the specials."""
    others = hf_transformers.transformers_files(tokenizer.special_tokens, **roles)
    text = json.dumps(to_json(tokenizer), ensure_ascii=False, indent=1)
    written = [write_atomic(out_dir / FILE, text + "\n")]
    return written + [write_atomic(out_dir / name, body) for name, body in others.items()]


def _pattern(path: Path, pre: Any) -> str | None:
    """The pre-tokenization regex of a byte-level pre_tokenizer, refusing what we cannot copy."""
    steps = pre.get("pretokenizers") if pre.get("type") == "Sequence" else [pre]
    if not isinstance(steps, list):
        raise TokenizerFileError(str(path), "pre_tokenizer Sequence has no 'pretokenizers' list")
    pattern: str | None = None
    byte_level = False
    for step in steps:
        if not isinstance(step, dict):
            raise TokenizerFileError(str(path), "a pre-tokenizer is not a JSON object")
        kind = step.get("type")
        if kind == "Split":
            spec = step.get("pattern")
            regex = spec.get("Regex") if isinstance(spec, dict) else None
            if (
                not isinstance(regex, str)
                or step.get("behavior") != "Isolated"
                or step.get("invert")
            ):
                raise TokenizerFileError(
                    str(path), "only Split(Regex, 'Isolated') pre-tokenizers are supported"
                )
            if pattern is not None:
                raise TokenizerFileError(str(path), "has two Split pre-tokenizers")
            pattern = regex
        elif kind == "ByteLevel":
            byte_level = True
            if step.get("add_prefix_space"):
                raise TokenizerFileError(str(path), "adds a prefix space, which we cannot copy")
            if step.get("use_regex", True):
                if pattern is not None:
                    raise TokenizerFileError(str(path), "splits with two patterns")
                pattern = GPT2
        else:
            raise TokenizerFileError(
                str(path), f"pre-tokenizer {str(kind)[:40]!r} is not supported"
            )
    if not byte_level:
        raise TokenizerFileError(str(path), "has no ByteLevel pre-tokenizer: not byte-level BPE")
    return pattern


def _check_model(path: Path, doc: Any) -> dict[str, Any]:
    if not isinstance(doc, dict) or not isinstance(doc.get("model"), dict):
        raise TokenizerFileError(str(path), "has no 'model' object: not a tokenizer.json")
    model = doc["model"]
    if model.get("type", "BPE") != "BPE":
        raise TokenizerFileError(str(path), f"model is {str(model.get('type'))[:40]!r}, not BPE")
    if model.get("dropout") not in (None, 0, 0.0):
        raise TokenizerFileError(
            str(path), "sets BPE dropout (merges skipped at random): encodings would not repeat"
        )
    if model.get("byte_fallback") or model.get("continuing_subword_prefix"):
        raise TokenizerFileError(str(path), "uses byte fallback or subword prefixes")
    if model.get("end_of_word_suffix"):
        raise TokenizerFileError(str(path), "uses an end-of-word suffix")
    if doc.get("normalizer") is not None:
        kind = doc["normalizer"].get("type") if isinstance(doc["normalizer"], dict) else "?"
        raise TokenizerFileError(
            str(path), f"has a normalizer ({str(kind)[:40]}), which we do not apply"
        )
    if not isinstance(doc.get("pre_tokenizer"), dict):
        raise TokenizerFileError(str(path), "has no pre_tokenizer: not byte-level BPE")
    if not isinstance(model.get("vocab"), dict) or not isinstance(model.get("merges"), list):
        raise TokenizerFileError(str(path), "model has no vocab object or merges list")
    return model


def _merge_pair(path: Path, rank: int, entry: Any) -> tuple[str, str]:
    parts = entry.split(" ") if isinstance(entry, str) else entry
    if not isinstance(parts, list) or len(parts) != 2 or not all(isinstance(p, str) for p in parts):
        raise TokenizerFileError(str(path), f"merge {rank} is not a pair: {str(entry)[:60]!r}")
    return parts[0], parts[1]


def _specials(path: Path, added: Any) -> dict[str, int]:
    """`added_tokens` as name -> id; options that change matching are refused."""
    if added is None:
        return {}
    if not isinstance(added, list):
        raise TokenizerFileError(str(path), "'added_tokens' is not a list")
    specials: dict[str, int] = {}
    for entry in added:
        if not isinstance(entry, dict) or not isinstance(entry.get("content"), str):
            raise TokenizerFileError(str(path), "an added token has no 'content' string")
        name = entry["content"]
        tid = file_id(path, entry.get("id"), f"added token {name[:40]!r}")
        for option in ("lstrip", "rstrip", "single_word"):
            if entry.get(option):
                raise TokenizerFileError(
                    str(path), f"added token {name[:40]!r} sets {option}, which we do not apply"
                )
        if name in specials and specials[name] != tid:
            raise TokenizerFileError(str(path), f"added token {name[:40]!r} is listed twice")
        specials[name] = tid
    return specials


def _vocab_one_by_one(
    path: Path, model: dict[str, Any], special_ids: set[int]
) -> tuple[dict[int, bytes], dict[str, int]]:
    """(id -> bytes, mapped token -> id) of the model's vocab, less the specials' ids; a file
    error names the first token at fault."""
    vocab: dict[int, bytes] = {}
    by_mapped: dict[str, int] = {}
    for token, tid in model["vocab"].items():
        file_id(path, tid, f"token {token[:40]!r}")
        if tid in special_ids:
            continue
        if tid in vocab:
            raise TokenizerFileError(str(path), f"two tokens share id {tid}")
        by_mapped[token] = tid
        vocab[tid] = unmapped(path, token)
    return vocab, by_mapped


def _vocab_at_once(
    path: Path, model: dict[str, Any], special_ids: set[int]
) -> tuple[dict[int, bytes], dict[str, int]] | None:
    """`_vocab_one_by_one` done at once (o200k: 0.05 s, not 0.5), or None when a check fails."""
    if not plain_ids(list(model["vocab"].values())):
        return None
    items = [(token, tid) for token, tid in model["vocab"].items() if tid not in special_ids]
    tokens = [token for token, _ in items]
    ids = [tid for _, tid in items]
    if len(set(ids)) != len(ids):
        return None
    return dict(zip(ids, unmapped_all(path, tokens), strict=True)), dict(items)


def _merges_one_by_one(
    path: Path, entries: list, by_mapped: dict[str, int]
) -> list[tuple[int, int]]:
    """The merges as pairs of ids; a file error names the first merge at fault."""
    merges: list[tuple[int, int]] = []
    for rank, entry in enumerate(entries):
        left, right = _merge_pair(path, rank, entry)
        for part in (left, right):
            if part not in by_mapped:
                raise TokenizerFileError(
                    str(path), f"merge {rank}: part {part[:40]!r} is not in the vocab"
                )
        merges.append((by_mapped[left], by_mapped[right]))
    return merges


def _merges_at_once(entries: list, by_mapped: dict[str, int]) -> list[tuple[int, int]] | None:
    """`_merges_one_by_one` without a call per merge (o200k: 0.1 s, not 0.4), or None when a
    check fails. Merges are all "left right" strings (`split_pairs`) or all [left, right]."""
    kinds = {type(entry) for entry in entries}
    if kinds == {str}:
        split = split_pairs(entries)
        if split is None:
            return None
        lefts, rights = split
    elif kinds == {list}:
        if {len(pair) for pair in entries} != {2}:
            return None
        lefts, rights = [pair[0] for pair in entries], [pair[1] for pair in entries]
        if {type(part) for part in lefts} | {type(part) for part in rights} != {str}:
            return None
    else:
        return None if entries else []
    try:
        ids = by_mapped.__getitem__
        return list(zip(map(ids, lefts), map(ids, rights), strict=True))
    except KeyError:
        return None


def load(path: Path, pattern: str | None = None) -> Tokenizer:
    return from_document(read_json(path), path, pattern)


def from_document(doc: Any, path: Path, pattern: str | None = None) -> Tokenizer:
    """The tokenizer of a parsed tokenizer.json (`path`: named in errors)."""
    model = _check_model(path, doc)
    file_pattern = _pattern(path, doc["pre_tokenizer"])
    specials = _specials(path, doc.get("added_tokens"))
    special_ids = set(specials.values())
    found = _vocab_at_once(path, model, special_ids)
    vocab, by_mapped = found if found else _vocab_one_by_one(path, model, special_ids)
    merges = _merges_at_once(model["merges"], by_mapped)
    if merges is None:
        merges = _merges_one_by_one(path, model["merges"], by_mapped)
    try:
        pattern = file_pattern or resolve(pattern)
        return Tokenizer.from_vocab_merges(vocab, merges, pattern, specials)
    except TokenizerError as exc:
        raise as_file_error(path, exc) from None
