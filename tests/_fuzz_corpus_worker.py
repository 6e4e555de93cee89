"""The fuzzer's worker process: trains on corpus files named on stdin, one JSON line of answer
per case, under the memory limit the test set (so a blow-up kills this process, not pytest).

Each case is run through `bpe-workbench train` in this process, on both pre-tokenizer paths, and
judged against a slow, obviously correct reading of the same bytes (`reference_texts`):
- the reference reads it: the command must succeed with the merges of training on `texts`;
- the reference refuses it: the command must fail, exit 1 or 2, one stderr line naming the file.
Anything else (a traceback, a wrong result) is reported back as a problem.
"""

from __future__ import annotations

import contextlib
import gzip
import io
import json
import sys
import traceback
from pathlib import Path

from workbench.engine.pretokenize.counting import count_texts
from workbench.engine.train.trainer import BpeTrainer

from workbench.cli import main
from workbench.engine import formats
from workbench.engine.config import TrainConfig

VOCAB = 300
SPECIALS = ("<|eot|>",)


def reference_texts(path: Path) -> list[str] | None:
    """The documents of a corpus file, read the plain way; None where the reader must refuse."""
    raw = path.read_bytes()
    name = path.name
    if name.endswith(".gz"):
        try:
            with gzip.GzipFile(fileobj=io.BytesIO(raw)) as stream:
                raw = stream.read()
        except (OSError, EOFError, Exception):
            return None
        name = name[: -len(".gz")]
    if name.endswith(".jsonl"):
        texts = []
        for number, line in enumerate(raw.split(b"\n")):
            if number == 0 and line.startswith(b"\xef\xbb\xbf"):
                line = line[3:]
            if not line.strip():
                continue
            try:
                record = json.loads(line.decode("utf-8"), parse_int=str)
                text = record["text"]
                if not isinstance(text, str):
                    return None
                text.encode("utf-8")  # a lone surrogate is not text
            except (ValueError, KeyError, TypeError, RecursionError, UnicodeError):
                return None
            texts.append(text)
        return texts
    if b"\0" in raw[:8192]:
        return None
    if raw.startswith(b"\xef\xbb\xbf"):
        raw = raw[3:]
    try:
        return [raw.decode("utf-8")]
    except UnicodeDecodeError:
        return None


def _merges(texts: list[str], config: TrainConfig) -> list[tuple[bytes, bytes]]:
    trainer = BpeTrainer(count_texts(texts, config), config)
    trainer.run()
    return trainer.merge_pairs()


def judge(path: Path, out: Path) -> str | None:
    """None when the workbench answered correctly, else what went wrong."""
    texts = reference_texts(path)
    expected = None
    if texts is not None and any(texts):
        config = TrainConfig(vocab_size=VOCAB, special_tokens=SPECIALS)
        pieces = [t for t in texts if t.replace(SPECIALS[0], "")]
        expected = _merges(pieces, config) if pieces else None
    for extra in ([], ["--regex-pretokenizer"]):
        target = out / ("regex" if extra else "scanner")
        args = ["train", str(path), "--vocab-size", str(VOCAB), "--out", str(target),
                "--no-db", "--quiet", "--special", SPECIALS[0], *extra]  # fmt: skip
        stdout, stderr = io.StringIO(), io.StringIO()
        try:
            with contextlib.redirect_stdout(stdout), contextlib.redirect_stderr(stderr):
                code = main(args)
        except BaseException:  # noqa: BLE001 - exactly what the fuzzer hunts
            return f"{extra}: raised\n{traceback.format_exc()}"
        err = stderr.getvalue()
        if "Traceback" in err:
            return f"{extra}: traceback on stderr\n{err}"
        if expected is None:
            lines = err.strip().splitlines()
            if code not in (1, 2) or len(lines) != 1 or path.name not in lines[0]:
                if code == 0 and texts is not None:
                    continue  # only specials or nothing: either answer is fine if it trained
                return f"{extra}: expected one line naming the file, got exit {code}: {err!r}"
        else:
            if code != 0:
                return f"{extra}: reference reads it, but exit {code}: {err!r}"
            got = formats.load(target).merge_bytes
            if got != expected:
                return f"{extra}: merges differ from training on the decoded text"
    return None


def serve() -> None:
    for line in sys.stdin:
        request = json.loads(line)
        try:
            problem = judge(Path(request["path"]), Path(request["out"]))
        except BaseException:  # noqa: BLE001 - the reference itself failed: say so
            problem = f"worker error\n{traceback.format_exc()}"
        sys.stdout.write(json.dumps({"problem": problem}) + "\n")
        sys.stdout.flush()


if __name__ == "__main__":
    serve()
