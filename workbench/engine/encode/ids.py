"""Token ids from files and users: what a valid id is, checked before any array is sized by one.

- An id is a Python `int` (not `bool`, not `float`), 0 <= id < 2**31: the kernels hold ids as
  int32, so a larger id would be cut to 32 bits (2**32 + 300 would read as 300).
- Ordinary ids are dense enough: the largest is below 4 x (the number of ordinary tokens) + 1024.
  Tables are indexed by these ids, so this bounds their size by the file's size, whatever ids it
  claims (an id of 2**31 - 5 in a 300-token file is refused, not a 24 GB allocation). Real files
  are far denser (GPT-2: 50,257 ids for 50,257 tokens). Special ids index no table, so they only
  need to be valid ids: minbpe's own `train.py` gives a 512-token model specials at 100257.
- Written in a text file, an id is ASCII digits only: `str.isdigit()` also accepts `²` and `٣`.

`check_id(True, "x")` raises; `parse_id("²", "x")` raises; `parse_id("42", "x") -> 42`.
"""

from __future__ import annotations

from collections.abc import Iterable

import regex

from workbench.engine.errors import TokenizerError

MAX_ID = 2**31 - 1
DENSITY = 4
SLACK = 1024
_ASCII_ID = regex.compile(r"[0-9]{1,10}")


def check_id(value: object, what: str) -> int:
    """`value` as an id, or a TokenizerError naming `what` (e.g. "token 'ab'")."""
    if isinstance(value, bool) or not isinstance(value, int):
        raise TokenizerError(f"{what} has id {_short(value)}, which is not an integer")
    if value < 0:
        raise TokenizerError(f"{what} has a negative id ({value})")
    if value > MAX_ID:
        raise TokenizerError(f"{what} has id {_short(value)}, above the largest id {MAX_ID}")
    return value


def parse_id(text: str, what: str) -> int:
    """An id written in a text file: ASCII digits only, then `check_id`."""
    if _ASCII_ID.fullmatch(text) is None:
        raise TokenizerError(f"{what}: {_short(text)} is not an id (ASCII digits)")
    return check_id(int(text), what)


def check_dense(ids: Iterable[int], count: int) -> None:
    """Refuse ids so sparse that tables indexed by id would dwarf the file (see module doc)."""
    largest = max(ids, default=-1)
    limit = DENSITY * count + SLACK
    if largest >= limit:
        raise TokenizerError(
            f"id {largest} is too large for {count} tokens (ids must stay below"
            f" {DENSITY} x tokens + {SLACK} = {limit})"
        )


def _short(value: object, limit: int = 30) -> str:
    text = repr(value)
    return text if len(text) <= limit else text[:limit] + "..."
