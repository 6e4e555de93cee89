"""Training settings, checked once so every later stage can trust them."""

from __future__ import annotations

import operator
from dataclasses import dataclass, field

from workbench.engine.errors import ConfigError
from workbench.engine.patterns.regexes import compile_pattern, resolve
from workbench.engine.patterns.superbpe import STAGE2_PATTERN

# Token ids are 32-bit in the kernels and the files; counts are 64-bit.
MAX_VOCAB_SIZE = 2**31 - 1
# Where parity-aware BPE's groups come from (`corpus.groups`).
PARITY_BY = ("lang", "folder", "script")
MAX_MIN_FREQUENCY = 2**63 - 1
MAX_TOKEN_LENGTH = 2**31 - 1  # bytes; token lengths are 32-bit in the kernels
MAX_WORKERS = 1024  # threads or processes; more only costs memory
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
    `max_token_length`: no merge makes a token longer than this many bytes (0: no cap), as
    Hugging Face's `max_token_length`; training ends ("max_token_length") when every pair left
    would exceed it.
    `max_token_chars`: the same cap in characters (0: no cap), counted on the token's UTF-8
    bytes as `train.char_count` says (a character cut by a merge counts as one); both caps may
    be set, and the stop reason is "max_token_length" for either.
    `superbpe_transition`: 0 for classic BPE; else SuperBPE (`train.stages`): ordinary BPE up
    to this vocab size, then merges that may cross spaces up to `vocab_size`.
    `parity_by`: "" for classic BPE; else parity-aware BPE (`train.parity`) over documents grouped
    by `lang` (a record's field, else the script guess), `folder` or `script`. `parity_window`:
    0 for the paper's greedy rule; W for its moving-window variant, where a group chosen more
    than `parity_alpha` / groups of the last W merges gives way to the next worst.
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
    max_token_length: int = 0
    max_token_chars: int = 0
    superbpe_transition: int = 0
    parity_by: str = ""
    parity_window: int = 0
    parity_alpha: int = 2

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
        object.__setattr__(self, "vocab_size", whole_number("vocab size", self.vocab_size))
        object.__setattr__(self, "min_frequency", whole_number("min frequency", self.min_frequency))
        if self.min_frequency < 0:
            raise ConfigError("min frequency cannot be negative")
        if self.min_frequency > MAX_MIN_FREQUENCY:
            raise ConfigError(f"min frequency {self.min_frequency} is above {MAX_MIN_FREQUENCY:,}")
        cap = whole_number("max token length", self.max_token_length)
        object.__setattr__(self, "max_token_length", cap)
        if not 0 <= cap <= MAX_TOKEN_LENGTH:
            raise ConfigError(
                f"max token length must be from 0 (no cap) to {MAX_TOKEN_LENGTH:,} bytes, not {cap}"
            )
        chars = whole_number("max token chars", self.max_token_chars)
        object.__setattr__(self, "max_token_chars", chars)
        if not 0 <= chars <= MAX_TOKEN_LENGTH:
            raise ConfigError(
                f"max token chars must be from 0 (no cap) to {MAX_TOKEN_LENGTH:,} characters,"
                f" not {chars}"
            )
        if self.vocab_size > MAX_VOCAB_SIZE:
            raise ConfigError(
                f"vocab size {self.vocab_size} is too large: at most {MAX_VOCAB_SIZE:,}"
                " (token ids are 32-bit)"
            )
        floor = 256 + len(self.special_tokens)
        if self.vocab_size < floor:
            raise ConfigError(
                f"vocab size {self.vocab_size} is below the alphabet: 256 bytes"
                f" + {len(self.special_tokens)} special tokens = {floor}"
            )
        self._check_transition(floor)
        self._check_parity()
        compile_pattern(self.pattern)  # raises PatternError with a clear message

    def _check_transition(self, floor: int) -> None:
        t = whole_number("SuperBPE transition", self.superbpe_transition)
        object.__setattr__(self, "superbpe_transition", t)
        if t and not floor <= t < self.vocab_size:
            raise ConfigError(
                f"SuperBPE transition {t} must be from {floor} (the alphabet) to below the"
                f" vocab size {self.vocab_size} (0: classic BPE)"
            )

    def _check_parity(self) -> None:
        window = whole_number("parity window", self.parity_window)
        alpha = whole_number("parity alpha", self.parity_alpha)
        object.__setattr__(self, "parity_window", window)
        object.__setattr__(self, "parity_alpha", alpha)
        if window < 0 or alpha < 1:
            raise ConfigError("the parity window cannot be negative, nor the parity alpha below 1")
        if not self.parity_by:
            if window:
                raise ConfigError("a parity window needs parity-aware BPE (parity-by)")
            return
        if self.parity_by not in PARITY_BY:
            raise ConfigError(
                f"parity-by {self.parity_by!r}: use one of {', '.join(PARITY_BY)} (or none)"
            )
        if self.tie_break == "hf":
            raise ConfigError("parity-aware BPE breaks ties lexicographically only")
        if self.superbpe_transition:
            raise ConfigError("parity-aware BPE and SuperBPE cannot be combined yet")

    @property
    def pattern_string(self) -> str:
        return resolve(self.pattern)

    @property
    def encoding_pattern(self) -> str:
        """The pattern the trained tokenizer encodes with: SuperBPE's stage-2 split for a
        SuperBPE run (its superwords span the stage-1 pieces), else the training pattern."""
        return STAGE2_PATTERN if self.superbpe_transition else self.pattern_string

    @property
    def merged_token_target(self) -> int:
        """Distinct merged tokens to make: the vocab size less bytes and specials."""
        return self.vocab_size - 256 - len(self.special_tokens)


def whole_number(name: str, value: object) -> int:
    """`value` as an int (numpy integers too), or ConfigError naming the setting: a bool, a
    float or a string is refused rather than guessed at."""
    if isinstance(value, bool):
        raise ConfigError(f"{name} must be a whole number, not {value!r}")
    try:
        return operator.index(value)  # type: ignore[arg-type]
    except TypeError:
        raise ConfigError(f"{name} must be a whole number, not {value!r}") from None


def check_workers(workers: int | None) -> int | None:
    """Threads/processes for pre-tokenizing: None (one per core) or 1 to MAX_WORKERS."""
    if workers is None:
        return None
    workers = whole_number("workers", workers)
    if not 1 <= workers <= MAX_WORKERS:
        raise ConfigError(f"workers must be from 1 to {MAX_WORKERS}, not {workers}")
    return workers
