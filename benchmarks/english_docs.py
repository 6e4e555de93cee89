"""About 100 MB of real English text from this machine's Debian documentation, for the
variant benchmarks (`variants.py --text`): no download, the same text on any Debian machine
with the same packages.

    python benchmarks/english_docs.py OUT.txt [--mb 100] [--held-out HELD.txt]

Text files under /usr/share/doc (gzipped or not; changelogs, READMEs, copyright notices, NEWS),
each distinct file once (packages ship the same changelog under several names), valid UTF-8
only, no markup or binary formats; then the English manual pages (sections 1-8) rendered to
plain text by `man` until the size is reached. Every 50th document goes to the held-out file
instead. Documents are separated by a blank line.
"""

from __future__ import annotations

import argparse
import gzip
import hashlib
import os
import subprocess
from collections.abc import Iterator
from pathlib import Path

SKIP = (".pdf", ".ps", ".tar", ".json", ".html", ".htm", ".png", ".jpg", ".gif", ".svg", ".js",
        ".css", ".xml", ".py", ".c", ".h", ".pl", ".sh", ".bz2", ".xz", ".zip", ".woff")  # fmt: skip


def _doc_texts() -> Iterator[bytes]:
    for root, dirs, files in os.walk("/usr/share/doc"):
        dirs.sort()
        for name in sorted(files):
            path = Path(root, name)
            stem = name[:-3] if name.endswith(".gz") else name
            if stem.lower().endswith(SKIP) or path.is_symlink():
                continue
            try:
                raw = path.read_bytes()
                yield gzip.decompress(raw) if name.endswith(".gz") else raw
            except (OSError, EOFError, gzip.BadGzipFile):
                continue


def _man_texts() -> Iterator[bytes]:
    env = {**os.environ, "MANWIDTH": "80", "LC_ALL": "C.UTF-8", "MAN_KEEP_FORMATTING": ""}
    for section in range(1, 9):
        folder = Path(f"/usr/share/man/man{section}")
        for path in sorted(folder.glob("*")) if folder.is_dir() else ():
            done = subprocess.run(
                ["man", "-l", "-P", "cat", str(path)], capture_output=True, env=env, check=False
            )
            if done.returncode == 0:
                yield _plain(done.stdout)


def _plain(rendered: bytes) -> bytes:
    """Overstrike (bold `X\\bX`, underline `_\\bX`) removed, as `col -b` does."""
    out = bytearray()
    for byte in rendered:
        if byte == 8:
            if out:
                out.pop()
            continue
        out.append(byte)
    return bytes(out)


def _usable(text: bytes) -> bool:
    try:
        decoded = text.decode("utf-8")
    except UnicodeDecodeError:
        return False
    return len(decoded) > 200 and "\x00" not in decoded


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("out", type=Path)
    parser.add_argument("--mb", type=float, default=100.0)
    parser.add_argument("--held-out", type=Path)
    args = parser.parse_args()
    limit = int(args.mb * 1e6)
    seen: set[bytes] = set()
    size = 0
    number = 0
    held = args.held_out.open("wb") if args.held_out else None
    with args.out.open("wb") as out:
        for source in (_doc_texts(), _man_texts()):
            for text in source:
                digest = hashlib.sha1(text).digest()
                if digest in seen or not _usable(text):
                    continue
                seen.add(digest)
                number += 1
                if held is not None and number % 50 == 0:
                    held.write(text.rstrip(b"\n") + b"\n\n")
                    continue
                out.write(text.rstrip(b"\n") + b"\n\n")
                size += len(text) + 2
                if size >= limit:
                    break
            if size >= limit:
                break
    if held is not None:
        held.close()
    print(f"{args.out}: {size / 1e6:.1f} MB from {number:,} documents")


if __name__ == "__main__":
    main()
