"""Characters in a token's bytes, for the max token length in characters (`max_token_chars`).

A token is bytes, and a merge may cut a character's UTF-8 bytes in two, so "characters" needs a
rule for the parts. The rule, the same in the kernels (`_kernels._chars_within`) and here:

- each byte that starts a character counts one: an ASCII byte, or a lead byte with the
  continuation bytes its form allows after it (C0-DF: one, E0-EF: two, F0-F7: three), so a whole
  character is one however many bytes it takes and a character cut short is one too;
- a token that begins with continuation bytes (the rest of a character begun in the token
  before it) counts up to three of them as one character;
- any other byte counts one on its own (a continuation byte past what its lead allows, a byte
  F8-FF): on valid UTF-8 text these never occur, and counting them keeps every character at
  most 4 bytes, so a cap of N characters is at most 4N bytes.

So for text the count is the number of characters whose bytes the token holds, whole or in
part: `"héllo"` is 5, `"é"`'s first byte alone is 1, and a merge of the two halves of one
character is 1.
"""

from __future__ import annotations

LEADING_PART = 3  # continuation bytes that may open a token as one (cut) character


def utf8_chars(token: bytes) -> int:
    """The token's characters under the rule above."""
    chars = 0
    room = 0  # continuation bytes the current character may still take
    for i, b in enumerate(token):
        if b & 0xC0 == 0x80 and room > 0:
            room -= 1
            continue
        chars += 1
        room = continuation_room(b, first=i == 0)
    return chars


def continuation_room(b: int, first: bool) -> int:
    """How many continuation bytes may follow byte `b` within its character."""
    if b & 0xC0 == 0x80:  # a character's rest: one only at a token's start
        return LEADING_PART - 1 if first else 0
    if b < 0xC0 or b >= 0xF8:
        return 0
    return 1 if b < 0xE0 else 2 if b < 0xF0 else 3
