"""Export a tokenizer and prove the files read back the same: no Qt, used by the export dialog.

For each format the files go to `<folder>/<format>/`; then the workbench's own loader reads
them back, and where the owning library is installed (Hugging Face `tokenizers` for
tokenizer.json, `tiktoken` for .tiktoken) that library reads them too. Each reader must give
the same ids as the tokenizer being exported on the sample text, and `decode(encode(s)) == s`.
"""

from __future__ import annotations

import base64
from dataclasses import dataclass
from pathlib import Path

from workbench.engine import formats
from workbench.engine.encode.tokenizer import Tokenizer

# Emoji, CJK, a combining mark, CRLF, a long digit run, trailing whitespace: the usual breakers.
TRICKY = "Héllo wörld 😀👍🏽 中文字 e\u0301 tab\there\r\nline 12345678901234  \n  end   "


@dataclass
class CheckResult:
    fmt: str
    files: list[Path]
    ok: bool
    lines: list[str]


def _ids_check(name: str, expected: list[int], got: list[int]) -> tuple[bool, str]:
    if got == expected:
        return True, f"  ✓ {name}: {len(got):,} ids identical"
    first = next((i for i, (a, b) in enumerate(zip(expected, got, strict=False)) if a != b), None)
    where = f"first difference at token {first}" if first is not None else "lengths differ"
    return False, f"  ✗ {name}: ids differ ({len(expected):,} vs {len(got):,}; {where})"


def _library_ids(fmt: str, files: list[Path], tok: Tokenizer, text: str) -> list[int] | None:
    """Ids from the library that owns the format, or None when it is not installed."""
    if fmt == "hf":
        try:
            from tokenizers import Tokenizer as HfTokenizer
        except ImportError:
            return None
        path = next(p for p in files if p.name.endswith(".json"))
        return HfTokenizer.from_file(str(path)).encode(text, add_special_tokens=False).ids
    if fmt == "tiktoken":
        try:
            import tiktoken
        except ImportError:
            return None
        path = next(p for p in files if p.suffix == ".tiktoken")
        ranks = {}
        for line in path.read_text().splitlines():  # read it ourselves: no tiktoken path cache
            if line:
                token, rank = line.split()
                ranks[base64.b64decode(token)] = int(rank)
        enc = tiktoken.Encoding(
            "roundtrip",
            pat_str=tok.pattern,
            mergeable_ranks=ranks,
            special_tokens=dict(tok.special_tokens),
        )
        return enc.encode(text, allowed_special="all")
    return None


def export_and_check(tok: Tokenizer, fmt: str, folder: Path, sample: str) -> CheckResult:
    """Write `tok` as `fmt` under `folder/fmt` and check the round trip on `sample` + TRICKY."""
    text = sample + TRICKY
    out = folder / fmt
    try:
        files = formats.export(tok, fmt, out)
    except Exception as exc:  # the exporter's message says why (e.g. ids not in merge order)
        return CheckResult(fmt, [], False, [f"{fmt}: not written: {exc}"])
    lines = [f"{fmt}: wrote " + ", ".join(p.name for p in files) + f" to {out}"]
    expected = tok.encode(text, allowed_special="all")
    ok = True
    try:
        back = formats.load(out)
        good, line = _ids_check(
            "workbench reload", expected, back.encode(text, allowed_special="all")
        )
        ok &= good
        lines.append(line)
        if back.decode(back.encode(text, allowed_special="all")) != text:
            ok = False
            lines.append("  ✗ decode(encode(text)) != text after reload")
        library = _library_ids(fmt, files, tok, text)
        if library is not None:
            good, line = _ids_check("library reload", expected, library)
            ok &= good
            lines.append(line)
    except Exception as exc:
        ok = False
        lines.append(f"  ✗ reading back failed: {type(exc).__name__}: {exc}")
    lines.append(f"  round trip {'OK' if ok else 'FAILED'} on {len(text):,} characters")
    return CheckResult(fmt, files, ok, lines)
