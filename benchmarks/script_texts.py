"""Hand-run helper: assemble one UTF-8 text per script (Thai, Arabic, Indic, Cyrillic, CJK) from
the translated messages of the gettext catalogs a Debian machine has (/usr/share/locale/*/
LC_MESSAGES/*.mo): real sentences of user interfaces, as tokenizers for those languages meet.

Run `python benchmarks/script_texts.py [--out /work/bench-data/scripts] [--mb 1]`; it prints the
files it wrote, for `encode_matrix.py --text ...` and `encode_stages.py`. The texts stay outside
the repository (never committed).
"""

from __future__ import annotations

import argparse
import gettext
from pathlib import Path

SCRIPTS = {
    "thai": ("th",),
    "arabic": ("ar", "fa"),
    "indic": ("hi", "bn", "ta", "te", "mr", "gu", "pa", "kn", "ml"),
    "cyrillic": ("ru", "uk", "bg"),
    "cjk": ("ja", "zh_CN", "ko"),
}


def messages(language: str) -> list[str]:
    """The translated messages of every catalog of `language`, in a stable order."""
    found: list[str] = []
    folder = Path("/usr/share/locale") / language / "LC_MESSAGES"
    for path in sorted(folder.glob("*.mo")):
        try:
            with path.open("rb") as f:
                catalog = gettext.GNUTranslations(f)
        except (OSError, UnicodeDecodeError, ValueError):
            continue
        found.extend(
            text for key, text in catalog._catalog.items() if key and isinstance(text, str)
        )
    return found


def assemble(out: Path, languages: tuple[str, ...], megabytes: float) -> int:
    """Write about `megabytes` MB of the languages' messages, interleaved line by line so a
    cut keeps every language; returns the bytes written."""
    lists = [messages(language) for language in languages]
    budget = int(megabytes * 1e6)
    lines, size, i = [], 0, 0
    while size < budget and any(i < len(m) for m in lists):
        for m in lists:
            if i < len(m):
                lines.append(m[i])
                size += len(m[i].encode("utf-8")) + 1
        i += 1
    data = "\n".join(lines).encode("utf-8")
    out.write_bytes(data[:budget].decode("utf-8", "ignore").encode("utf-8"))
    return min(len(data), budget)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--out", type=Path, default=Path("/work/bench-data/scripts"))
    parser.add_argument("--mb", type=float, default=1.0)
    args = parser.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    for name, languages in SCRIPTS.items():
        path = args.out / f"{name}-{args.mb:g}.txt"
        size = assemble(path, languages, args.mb)
        print(f"{path} {size / 1e6:.2f} MB")


if __name__ == "__main__":
    main()
