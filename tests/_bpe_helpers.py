"""Test helpers: a slow, obviously correct BPE trainer and the GPT-2 reference encoders."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

from hypothesis import settings
from reference_bpe import train_reference
from workbench.engine.patterns.regexes import GPT2, compile_pattern


def examples(factor: float = 1.0) -> int:
    """`factor` times the Hypothesis profile's example budget (see conftest.py)."""
    return max(1, int(settings.default.max_examples * factor))


EXAMPLES = examples(3)


# Pieces that trip encoders: scripts, joiners, combining marks, digit and whitespace runs, CRLF.
HARD_PARTS = [
    "Hello world, it's a test. ",
    "日本語のテキストと中文字符",
    "مرحبا بالعالم",
    "👩‍👩‍👧 👍🏽 🙂",
    "e\u0301 n\u0303 a\u0308\u0301",
    "def f(x):\n\treturn x**2  # comment\n",
    "1234567890" * 3,
    " " * 17,
    "\r\n\r\n",
    "<|endoftext|>",
    "\n\n\n   \t ",
]


def naive_merges(text: str, num_merges: int, pattern: str = GPT2) -> list[tuple[bytes, bytes]]:
    """Plain BPE on the pieces of `text`: the slow reference trainer (ties: greatest bytes)."""
    words = Counter(p.encode() for p in compile_pattern(pattern).findall(text))
    return train_reference(dict(words), 256 + num_merges)[0]


def gpt2_tiktoken(corpora: Path, tmp: Path):
    """tiktoken's Encoding from the GPT-2 files (merges.txt gets the header data_gym expects)."""
    import tiktoken
    import tiktoken.load

    merges = tmp / "merges_with_header.txt"
    merges.write_text("#version: 0.2\n" + (corpora / "gpt2_merges.txt").read_text("utf-8"), "utf-8")
    ranks = tiktoken.load.data_gym_to_mergeable_bpe_ranks(
        str(merges), str(corpora / "gpt2_vocab.json")
    )
    return tiktoken.Encoding(
        "gpt2-local", pat_str=GPT2, mergeable_ranks=ranks, special_tokens={"<|endoftext|>": 50256}
    )


def trained(corpus, config):
    """A finished `RunSession` (not recorded) on documents (strings) or paths (`Path`s): the
    path every caller takes. `.merges()`, `.trainer`, `.counted.stats`, `.tokenizer()`."""
    from workbench.session.counting import count_documents, count_paths
    from workbench.session.run import RunSession

    corpus = list(corpus)
    if corpus and all(isinstance(item, Path) for item in corpus):
        counted = count_paths(corpus, config)
    else:
        counted = count_documents(corpus, config)
    session = RunSession.start(counted, config)
    session.advance()
    session.end()
    return session
