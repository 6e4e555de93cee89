"""Which special token plays which role for `transformers`: bos, eos, pad, unk.

    roles = choose_roles({"<|endoftext|>": 256})
    roles.eos, roles.pad  # "<|endoftext|>", "<|endoftext|>"
    roles.note            # "special token roles: bos=<|endoftext|> ... (defaulted; choose with ...)"

A role left to default (`AUTO`) is taken from the special tokens by name (`<|endoftext|>`, `</s>`,
`<eos>` ... for eos; `<s>`, `<bos>` ... for bos; a name holding "pad" for pad); bos and pad fall
back to eos, as GPT-2 does (so `padding=True` works), and unk stays unset (byte-level BPE has no
unknown text). A role must name one of the tokenizer's special tokens: transformers would
otherwise add the string as a new token with a new id, and ids would no longer match ours.

Not here: the files transformers reads (`formats/hf_transformers.py`), the transformers object
(`handoff.py`).
"""

from __future__ import annotations

import enum
import logging
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Final

from workbench.engine.errors import TokenizerError

LOG = logging.getLogger("workbench")  # the roles chosen by default are told here (INFO)


class _Auto(enum.Enum):
    AUTO = "auto"


AUTO: Final = _Auto.AUTO  # "choose from the special tokens' names" (None means: no such token)
Role = str | None | _Auto

# Lower-cased names (or parts of names) that say a special token's role, most telling first.
_EOS_NAMES = ("<|endoftext|>", "<|end_of_text|>", "</s>", "<eos>", "[eos]", "<|eot_id|>", "eos")
_BOS_NAMES = ("<|begin_of_text|>", "<|startoftext|>", "<s>", "<bos>", "[bos]", "bos")
_PAD_NAMES = ("<pad>", "[pad]", "<|pad|>", "pad")
ROLES = ("bos", "eos", "pad", "unk")


@dataclass(frozen=True)
class SpecialRoles:
    """The special token playing each role (None: none), and which were defaulted."""

    bos: str | None = None
    eos: str | None = None
    pad: str | None = None
    unk: str | None = None
    defaulted: tuple[str, ...] = field(default=())

    def as_dict(self) -> dict[str, str]:
        """`{"bos_token": ..., ...}` for the roles that are set."""
        return {f"{role}_token": name for role in ROLES if (name := getattr(self, role))}

    @property
    def note(self) -> str:
        """One line saying the choice, for a log or the command line."""
        shown = " ".join(f"{role}={getattr(self, role) or '-'}" for role in ROLES)
        if not self.defaulted:
            return f"special token roles: {shown}"
        told = "/".join(f"{role}=" for role in self.defaulted)
        return f"special token roles: {shown} ({', '.join(self.defaulted)} defaulted; choose with {told})"


def choose_roles(
    specials: Iterable[str],
    bos: Role = AUTO,
    eos: Role = AUTO,
    pad: Role = AUTO,
    unk: Role = None,
) -> SpecialRoles:
    """The roles: each given one checked, each AUTO one found by name (see the docstring)."""
    names = list(specials)
    given = {"bos": bos, "eos": eos, "pad": pad, "unk": unk}
    for role, name in given.items():
        if name is not AUTO and name is not None and name not in names:
            listed = ", ".join(map(repr, names)) or "none"
            raise TokenizerError(
                f"{role} token {name!r} is not a special token of this tokenizer (it has: {listed})"
            )
    chosen: dict[str, str | None] = {
        role: None if name is AUTO else name  # type: ignore[misc]
        for role, name in given.items()
    }
    if eos is AUTO:
        chosen["eos"] = _by_name(names, _EOS_NAMES) or (names[0] if len(names) == 1 else None)
    if bos is AUTO:
        chosen["bos"] = _by_name(names, _BOS_NAMES) or chosen["eos"]
    if pad is AUTO:
        chosen["pad"] = _by_name(names, _PAD_NAMES) or chosen["eos"]
    defaulted = tuple(role for role in ROLES if given[role] is AUTO)
    return SpecialRoles(defaulted=defaulted, **chosen)


def _by_name(names: list[str], wanted: tuple[str, ...]) -> str | None:
    """The first special whose lower-cased name is, then contains, a wanted name."""
    lowered = {name.lower(): name for name in names}
    for want in wanted:
        if want in lowered:
            return lowered[want]
    for want in wanted:
        found = next((name for low, name in lowered.items() if want in low), None)
        if found is not None:
            return found
    return None
