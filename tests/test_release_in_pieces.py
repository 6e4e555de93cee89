"""Large temporaries are emptied a piece at a time (no single free holds the GIL for long),
and what they held lives on where it is referenced elsewhere."""

from __future__ import annotations

import pytest

from workbench.engine.release import release_in_pieces


@pytest.mark.parametrize("kind", [list, set, dict])
def test_a_container_is_emptied_and_its_items_referenced_elsewhere_survive(kind):
    kept = [(i, bytes([i % 256])) for i in range(20_000)]
    items = {k: v for k, v in kept} if kind is dict else kind(kept)
    release_in_pieces(items, piece=1000)
    assert len(items) == 0 and type(items) is kind
    assert kept[19_999] == (19_999, bytes([19_999 % 256]))  # the items themselves live on


def test_an_empty_container_and_a_short_one():
    for items in ([], set(), {}, [1], {2}, {3: 4}):
        release_in_pieces(items)
        assert not items
