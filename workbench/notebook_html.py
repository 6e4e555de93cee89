"""What a notebook shows for a tokenizer or a training result: a summary and a coloured sample.

    tok            # in Jupyter: a small table (tokens, merges, specials, pattern) and
                   # SAMPLE cut into tokens by `render.tokens_div`, as the window colours them
    result         # the same, plus the corpus, the stop reason and the time per stage

Every text from outside (special tokens, a custom pattern) is escaped. The sample is short so
a notebook saved with outputs stays small. No Qt: `render`'s HTML path only.
"""

from __future__ import annotations

import html
from typing import TYPE_CHECKING

from workbench.engine.patterns.regexes import preset_name

if TYPE_CHECKING:
    from workbench.api import TrainResult
    from workbench.engine.encode.tokenizer import Tokenizer

SAMPLE = (
    "The quick brown fox can't jump 3,141 fences: naïve Zürich, 東京, 🙂!\n\tdef f(x): return x"
)
_LONGEST_SHOWN = 60  # characters of a custom pattern or a special token shown in the summary
_TABLE = "border-collapse:collapse;margin:4px 0"
_CELL = "text-align:left;padding:1px 10px 1px 0"


def _short(text: str) -> str:
    cut = text if len(text) <= _LONGEST_SHOWN else text[: _LONGEST_SHOWN - 1] + "…"
    return html.escape(cut)


def _rows(rows: list[tuple[str, str]]) -> str:
    """`rows` of (label, HTML already escaped) as a table."""
    body = "".join(
        f"<tr><th style='{_CELL}'>{html.escape(label)}</th><td style='{_CELL}'>{value}</td></tr>"
        for label, value in rows
    )
    return f"<table style='{_TABLE}'>{body}</table>"


def tokenizer_rows(tokenizer: Tokenizer) -> list[tuple[str, str]]:
    specials = ", ".join(_short(name) for name in tokenizer.special_tokens) or "none"
    pattern = preset_name(tokenizer.pattern)
    return [
        ("tokens", f"{tokenizer.vocab_size:,} ({len(tokenizer.special_tokens)} special)"),
        ("merges", f"{len(tokenizer.merges):,}"),
        ("pattern", pattern if pattern else f"<code>{_short(tokenizer.pattern)}</code>"),
        ("special tokens", specials),
    ]


def sample_html(tokenizer: Tokenizer, text: str = SAMPLE) -> str:
    """`text` cut by `tokenizer`, coloured, with its token count."""
    from workbench.token_html import token_groups, tokens_div

    groups = token_groups(tokenizer, text)
    count = sum(len(group.ids) for group in groups)
    return (
        f"<div style='margin-top:4px'>sample: {len(text)} characters, {count} tokens</div>"
        + tokens_div(groups, inline_style=True)
    )


def tokenizer_html(tokenizer: Tokenizer) -> str:
    return (
        f"<div><b>{html.escape(type(tokenizer).__name__)}</b>"
        f"{_rows(tokenizer_rows(tokenizer))}{sample_html(tokenizer)}</div>"
    )


def train_result_html(result: TrainResult) -> str:
    stats = result.stats
    times = ", ".join(f"{stage} {seconds:.2f} s" for stage, seconds in result.timings.items())
    rows = [
        *tokenizer_rows(result.tokenizer),
        (
            "corpus",
            f"{stats.documents:,} documents, {stats.bytes:,} bytes, "
            f"{stats.unique_pieces:,} unique pre-tokens",
        ),
        ("stopped", html.escape(result.stop_reason.words)),
        ("time", html.escape(times) or "-"),
    ]
    if result.run_id is not None:
        rows.append(("run", str(result.run_id)))
    return f"<div><b>TrainResult</b>{_rows(rows)}{sample_html(result.tokenizer)}</div>"
