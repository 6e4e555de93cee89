"""The texts the encoding benchmarks measure (`encode_matrix.py`, `encode_stages.py`,
`merge_micro.py`): the same three options and the same meaning in each.

- `--text A.txt en-2 cjk-1 ...`: each item a UTF-8 file as it is, or a name: `NAME.txt` in
  `--data` or one folder below it (`script_texts.py` writes `cjk-1.txt` and the like into
  `--data`/scripts). A name `en-N`, `multi-N` or `c-N` not found there is assembled into
  `--data` first (about N MB; see below). Each is labelled by its file's stem (`en-2`).
- no `--text`: `en-MB`, `multi-MB` and `c-MB` (`--mb`), labelled "English docs",
  "multilingual" and "C code" (the labels of the docs' tables).
- `--data DIR` (default /work/bench-data): where names are found and assembled, outside the
  repository (never committed).

Assembled from what a Debian machine has: English from /usr/share/doc, multilingual from the
ja/ko/zh/it/ru manual pages in /usr/share/man, C from the headers in /usr/include.
"""

from __future__ import annotations

import argparse
import gzip
import re
from pathlib import Path

from workbench.bench.train import make_corpus

DATA = Path("/work/bench-data")
KINDS = {"en": "English docs", "multi": "multilingual", "c": "C code"}
_ASSEMBLED = re.compile(r"(en|multi|c)-(\d+(?:\.\d+)?)")
_LANGUAGES = ("ja", "ko", "zh_CN", "zh_TW", "it", "ru")


def add_text_options(parser: argparse.ArgumentParser, mb: float = 8.0) -> None:
    """`--text`, `--data` and `--mb` (default `mb`), as the module's docstring says."""
    parser.add_argument(
        "--text",
        nargs="+",
        metavar="FILE_OR_NAME",
        help="UTF-8 files, or names of texts in --data (en-2, multi-2, c-2, cjk-1, ...; en/multi/c"
        " are assembled when missing), instead of the three assembled texts",
    )
    parser.add_argument(
        "--data", type=Path, default=DATA, help="where named texts are found and assembled"
    )
    parser.add_argument(
        "--mb", type=float, default=mb, help="size of the three texts measured without --text"
    )


def chosen_texts(args: argparse.Namespace) -> dict[str, str]:
    """label -> text of what `--text` names, or of the three assembled texts."""
    if not args.text:
        return {
            label: named_path(args.data, f"{kind}-{args.mb:g}").read_text("utf-8")
            for kind, label in KINDS.items()
        }
    paths = [_path_of(item, args.data) for item in args.text]
    return {path.stem: path.read_text("utf-8") for path in paths}


def _path_of(item: str, data: Path) -> Path:
    path = Path(item)
    if path.is_file():
        return path
    if "/" in item or item.endswith(".txt"):  # a path, not a name: it should have been there
        raise SystemExit(f"--text: {item} not found")
    return named_path(data, item)


def named_path(data: Path, name: str) -> Path:
    """`name`.txt in `data` or one folder below; an `en|multi|c-MB` one is assembled if absent."""
    found = [data / f"{name}.txt", *sorted(data.glob(f"*/{name}.txt"))]
    for path in found:
        if path.is_file():
            return path
    assembled = _ASSEMBLED.fullmatch(name)
    if assembled is None:
        raise SystemExit(f"--text: no {name}.txt in {data} or a folder below it")
    data.mkdir(parents=True, exist_ok=True)
    kind, megabytes = assembled[1], float(assembled[2])
    out = data / f"{name}.txt"
    if kind == "en":
        make_corpus(out, megabytes, [Path("/usr/share/doc")])
    elif kind == "multi":
        man = Path("/usr/share/man")
        files = sorted(p for lang in _LANGUAGES for p in (man / lang).rglob("*") if p.is_file())
        _gather(out, megabytes, files)
    else:
        _gather(out, megabytes, sorted(Path("/usr/include").rglob("*.h")))
    return out


def _gather(out: Path, megabytes: float, files) -> None:
    budget = int(megabytes * 1e6)
    parts, size = [], 0
    for path in files:
        try:
            data = gzip.decompress(path.read_bytes()) if path.suffix == ".gz" else path.read_bytes()
            data.decode("utf-8")
        except (OSError, EOFError, gzip.BadGzipFile, UnicodeDecodeError):
            continue
        parts.append(data)
        size += len(data)
        if size >= budget:
            break
    blob = b"\n".join(parts)
    if not blob:
        raise SystemExit(f"no text found for {out.name}")
    out.write_bytes((blob * (budget // len(blob) + 1))[:budget].rsplit(b"\n", 1)[0])
