"""Training settings, checked once so every later stage can trust them."""

from __future__ import annotations

from dataclasses import dataclass, field

from workbench.engine.errors import ConfigError
from workbench.engine.patterns import compile_pattern, resolve

TIE_BREAKS = ("lexicographic", "hf")
BAD_FILE_POLICIES = ("stop", "skip")
PRETOKENIZERS = ("auto", "regex")


@dataclass(frozen=True)
class TrainConfig:
    """What to train. `vocab_size` counts the 256 bytes, the merged tokens and the specials.

    `pattern` is a preset name (`gpt2`, `cl100k`, `o200k`) or a custom regex.
    `tie_break`: among pairs with equal counts, `lexicographic` takes the greatest
    `(left bytes, right bytes)` (the CS336 reference); `hf` takes what Hugging Face's BpeTrainer
    takes. `min_frequency` stops training when the best pair is seen fewer times (0: no floor).
    `on_bad_file`: `stop` the run at an unreadable file, or `skip` it and report it at the end.
    `pretokenizer`: `auto` uses the Numba scanner for the presets (same pieces, far faster) and
    the `regex` package otherwise; `regex` forces the regex package.
    `text_column` / `jsonl_field`: where a record's text is in Parquet/Arrow files and in JSONL.
    """

    vocab_size: int = 1000
    pattern: str = "gpt2"
    special_tokens: tuple[str, ...] = field(default_factory=tuple)
    tie_break: str = "lexicographic"
    min_frequency: int = 0
    on_bad_file: str = "stop"
    pretokenizer: str = "auto"
    text_column: str = "text"
    jsonl_field: str = "text"

    def __post_init__(self) -> None:
        object.__setattr__(self, "special_tokens", tuple(dict.fromkeys(self.special_tokens)))
        if self.tie_break not in TIE_BREAKS:
            raise ConfigError(f"tie-break must be one of {', '.join(TIE_BREAKS)}")
        if self.on_bad_file not in BAD_FILE_POLICIES:
            raise ConfigError(f"on_bad_file must be one of {', '.join(BAD_FILE_POLICIES)}")
        if self.pretokenizer not in PRETOKENIZERS:
            raise ConfigError(f"pretokenizer must be one of {', '.join(PRETOKENIZERS)}")
        if any(token == "" for token in self.special_tokens):
            raise ConfigError("a special token cannot be empty")
        if not self.text_column or not self.jsonl_field:
            raise ConfigError("the text column and the JSONL field need a name")
        if self.min_frequency < 0:
            raise ConfigError("min frequency cannot be negative")
        floor = 256 + len(self.special_tokens)
        if self.vocab_size < floor:
            raise ConfigError(
                f"vocab size {self.vocab_size} is below the alphabet: 256 bytes"
                f" + {len(self.special_tokens)} special tokens = {floor}"
            )
        compile_pattern(self.pattern)  # raises PatternError with a clear message

    @property
    def pattern_string(self) -> str:
        return resolve(self.pattern)

    @property
    def merged_token_target(self) -> int:
        """Distinct merged tokens to make: the vocab size less bytes and specials."""
        return self.vocab_size - 256 - len(self.special_tokens)
