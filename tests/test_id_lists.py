"""Lists of ids made by the kernel that fills them through CPython's C API (`id_lists`): the same
lists as numpy's way, the ready-made ints themselves, kept for the process so that lists hold
them without counting (and numpy's way's counts exactly right)."""

from __future__ import annotations

import ctypes
import gc
import sys
import weakref
from concurrent.futures import ThreadPoolExecutor

import numpy as np
import pytest

from workbench.engine._native import id_lists
from workbench.engine._native.id_lists import ReadyInts
from workbench.engine.encode.tokenizer import Tokenizer


@pytest.fixture(params=[True, False], ids=["kernel", "numpy"])
def way(request, monkeypatch):
    """Both ways of making lists; the kernel's must really be in use on this CPython."""
    if request.param:
        assert id_lists.fast_lists()
    monkeypatch.setattr(id_lists, "fast_lists", lambda: request.param)
    return request.param


def _bounds(rng, size: int, count: int) -> tuple[np.ndarray, np.ndarray]:
    cuts = np.sort(rng.integers(0, size + 1, size=2 * count))
    return cuts[0::2].astype(np.int64), cuts[1::2].astype(np.int64)


def test_lists_equal_tolist_and_hold_the_ready_ints(way):
    rng = np.random.default_rng(7)
    ready = ReadyInts(5000)
    ids = rng.integers(0, 5000, size=20_000).astype(np.int32)
    starts, ends = _bounds(rng, ids.size, 40)  # empty lists and overlapping ones included
    lists = ready.lists(ids, starts, ends)
    assert lists == [ids[a:b].tolist() for a, b in zip(starts, ends, strict=True)]
    assert all(x is ready.objects[x] for lst in lists for x in lst)
    assert ready.one_list(ids) == ids.tolist()


def test_an_id_without_a_ready_int_gives_its_list_by_tolist(way):
    """A special's id above the ordinary ids: its list is still right, and so are the others."""
    ready = ReadyInts(300)
    ids = np.arange(600, dtype=np.int32) % 300
    ids[150] = 100_257
    ids[450] = 300  # just past the ready ints
    starts = np.array([0, 100, 200, 400, 500], dtype=np.int64)
    ends = np.array([100, 200, 400, 500, 600], dtype=np.int64)
    lists = ready.lists(ids, starts, ends)
    assert lists == [ids[a:b].tolist() for a, b in zip(starts, ends, strict=True)]
    assert lists[1][50] == 100_257 and lists[3][50] == 300


def test_reference_counts_rise_by_each_use_and_fall_back_on_numpys_way(monkeypatch):
    """Where the kernel is not in use the ints are ordinary objects, counted as usual."""
    monkeypatch.setattr(id_lists, "fast_lists", lambda: False)
    ready = ReadyInts(1000)
    probe = ready.objects[777]
    before = sys.getrefcount(probe)
    assert before < 100
    ids = np.full(5000, 777, dtype=np.int32)
    ids[::7] = 3
    lists = ready.lists(ids, np.array([0, 2500], np.int64), np.array([2500, 5000], np.int64))
    assert sys.getrefcount(probe) == before + int(np.count_nonzero(ids == 777))
    del lists
    assert sys.getrefcount(probe) == before


def test_the_kernels_ready_ints_are_kept_however_many_lists_drop_them():
    """Lists take the kept ints without counting a reference each: dropping far more lists than
    an ordinary count could pay for frees none of them (a freed int would be reused, its value
    and address changing under the set)."""
    assert id_lists.fast_lists()
    ready = ReadyInts(1000)
    probes = [ready.objects[t] for t in (300, 777, 999)]
    assert all(sys.getrefcount(p) >= id_lists._KEPT for p in probes)
    ids = np.tile(np.array([300, 777, 999, 5], dtype=np.int32), 5000)
    for _ in range(100):  # 2 million references dropped
        made = ready.lists(
            ids, np.array([0, 10_000], np.int64), np.array([10_000, 20_000], np.int64)
        )
        assert made[1][:4] == [300, 777, 999, 5]
        del made
    gc.collect()
    assert [x for x in ready.objects[[300, 777, 999]]] == [300, 777, 999]
    assert all(a is b for a, b in zip(ready.objects[[300, 777, 999]], probes, strict=True))
    assert ready.addresses[[300, 777, 999]].tolist() == [id(p) for p in probes]
    assert all(sys.getrefcount(p) >= id_lists._KEPT for p in probes)


def test_keeping_forever_sets_the_count_each_version_expects():
    """3.11: the count raised by 2**60; 3.12-3.14: the low 32 bits set to 3 << 30 (immortal),
    the high ones left (3.14's flags), an immortal object left alone. Checked on objects made
    for the test (on 3.11 either way only leaves a high count)."""
    made = [int(x) + 10**12 for x in "0123"]
    id_lists._NEVER_RELEASED.append(made)
    counts = [ctypes.c_int64.from_address(id(x)) for x in made]
    base = [c.value for c in counts]
    id_lists._keep_forever(np.array([id(made[0])], np.int64), False)
    assert counts[0].value == base[0] + (1 << 60)
    counts[2].value = (7 << 32) | base[2]  # as if flags were set in the high half
    counts[3].value = 0xFFFFFFFF  # 3.12's immortal count
    id_lists._keep_forever(np.array([id(x) for x in made[1:]], np.int64), True)
    assert counts[1].value == 3 << 30
    assert counts[2].value == (7 << 32) | (3 << 30)
    assert counts[3].value == 0xFFFFFFFF


@pytest.mark.parametrize(
    ("starts", "ends"),
    [([-1], [3]), ([0], [11]), ([5], [4]), ([0, 2], [3])],
    ids=["before", "past", "reversed", "unequal"],
)
def test_bounds_outside_the_ids_are_refused_before_the_kernel(starts, ends):
    ready = ReadyInts(10)
    ids = np.arange(10, dtype=np.int32)
    with pytest.raises(ValueError, match="ReadyInts.lists"):
        ready.lists(ids, np.array(starts, np.int64), np.array(ends, np.int64))


def test_encode_and_encode_batch_lists_are_the_same_either_way(way):
    """Through the public API, with an allowed special (an id past the ordinary ones)."""
    tok = Tokenizer.from_merges(
        [(b"t", b"h"), (b"th", b"e"), (b" ", b"the")], "gpt2", special_tokens=["<|end|>"]
    )
    end = tok.special_tokens["<|end|>"]
    texts = [("the cat and the dog " * 40 + "<|end|>") * (k % 3 + 1) for k in range(30)]
    arrays = tok.encode_batch_arrays(texts, num_threads=2, allowed_special="all")
    lists = tok.encode_batch(texts, num_threads=2, allowed_special="all")
    assert lists == [a.tolist() for a in arrays]
    assert tok.encode(texts[4], allowed_special="all") == arrays[4].tolist()
    assert end in lists[0] and end >= len(tok.vocab)  # no ready-made int: the numpy way
    tok.close()


def test_ints_not_kept_turn_the_fast_way_off(monkeypatch):
    """Were keeping the ints to fail (a layout not as expected), the first-use check sees their
    counts still low and the lists come from numpy; the check's ints stay referenced."""
    monkeypatch.setattr(id_lists, "_keep_forever", lambda addresses, immortal: None)
    kept = len(id_lists._NEVER_RELEASED)  # not replaced for the test: what it keeps stays kept
    assert not id_lists.fast_lists.__wrapped__()
    (ints,) = id_lists._NEVER_RELEASED[kept:]
    assert ints == [10**9, 10**9 + 1, 10**9 + 2]


def test_threads_making_lists_at_once_get_exact_lists():
    """The items are set without the GIL while another thread makes its lists with it: every
    list is right, and every int stays kept."""
    ready = ReadyInts(3000)
    rng = np.random.default_rng(11)
    batches = [rng.integers(0, 3000, size=30_000).astype(np.int32) for _ in range(8)]
    probes = [ready.objects[t] for t in (300, 1777, 2999)]
    before = [sys.getrefcount(p) for p in probes]
    assert min(before) >= id_lists._KEPT
    starts, ends = np.arange(0, 30_000, 3000), np.arange(3000, 30_001, 3000)

    def work(ids: np.ndarray) -> list[list[int]]:
        return [ready.lists(ids, starts, ends) for _ in range(20)][-1]

    with ThreadPoolExecutor(2) as pool:
        made = list(pool.map(work, batches))
    for ids, lists in zip(batches, made, strict=True):
        assert lists == [ids[a:b].tolist() for a, b in zip(starts, ends, strict=True)]
    del made, lists
    gc.collect()
    assert all(sys.getrefcount(p) >= id_lists._KEPT for p in probes)
    assert [ready.objects[t] for t in (300, 1777, 2999)] == [300, 1777, 2999]


@pytest.mark.parametrize("failing", ["_new_lists", "_fill_items"])
def test_a_failure_between_the_kernels_shows_no_half_made_list(failing, monkeypatch):
    """Out of memory making the lists, or an interrupt before their items are set: no list with
    unset items is left where code could see it, and the next call's lists are right."""
    assert id_lists.fast_lists()
    ready = ReadyInts(100)
    ids = (np.arange(500) % 100).astype(np.int32)
    starts, ends = np.array([0, 250], np.int64), np.array([250, 500], np.int64)
    kernel = getattr(id_lists, failing)

    def broken(*args):
        if failing == "_new_lists":
            # as when memory runs out: (some) lists made, items unset, -1
            assert kernel(*args) == 0
            return -1
        raise KeyboardInterrupt

    monkeypatch.setattr(id_lists, failing, broken)
    with pytest.raises(MemoryError if failing == "_new_lists" else KeyboardInterrupt) as raised:
        ready.lists(ids, starts, ends)
    frames = [entry.frame.f_locals for entry in raised.traceback]
    # cleared, not half-set (lengths only: a list with unset items must not even be compared)
    assert [len(scope["out"]) for scope in frames if "out" in scope] == [0, 0]
    monkeypatch.undo()
    lists = ready.lists(ids, starts, ends)
    assert lists == [ids[:250].tolist(), ids[250:].tolist()]
    assert lists[0][42] is ready.objects[42]


def test_lists_are_back_in_the_garbage_collectors_sight():
    """They are made out of its sight (items unset); once returned a cycle through one is freed."""
    assert id_lists.fast_lists()
    ready = ReadyInts(500)
    ids = (np.arange(1000) % 500).astype(np.int32)
    lists = ready.lists(ids, np.array([0, 500], np.int64), np.array([500, 1000], np.int64))
    assert all(gc.is_tracked(lst) for lst in lists)
    watcher = weakref.ref(holder := type("Holder", (), {})())
    holder.items = lists[0]
    lists[0].append(holder)  # a cycle: holder -> list -> holder
    del holder, lists
    gc.collect()
    assert watcher() is None


def test_lists_are_out_of_the_collectors_sight_while_their_items_are_set(monkeypatch):
    """Code that walks every object the garbage collector knows (`gc.get_objects()`, in another
    thread while the items are set without the GIL) never meets a list with unset items."""
    assert id_lists.fast_lists()
    ready = ReadyInts(100)
    ids = (np.arange(1000) % 100).astype(np.int32)
    made_at: list[int] = []
    visible: list[int] = []
    new_lists, fill_items = id_lists._new_lists, id_lists._fill_items

    def making(*args):
        status = new_lists(*args)
        made_at.extend(args[4].tolist())  # the new lists' addresses
        return status

    def filling(*args):
        known = {id(obj) for obj in gc.get_objects()}  # addresses only: items never read
        visible.extend(at for at in made_at if at in known)
        return fill_items(*args)

    monkeypatch.setattr(id_lists, "_new_lists", making)
    monkeypatch.setattr(id_lists, "_fill_items", filling)
    lists = ready.lists(ids, np.array([0, 400], np.int64), np.array([400, 1000], np.int64))
    assert len(made_at) == 2 and visible == []
    assert sorted(map(id, lists)) == sorted(made_at)
    assert all(gc.is_tracked(lst) for lst in lists)


def test_ready_int_addresses_are_their_ids():
    """The addresses read from the object array's items are `id()` of each int (CPython)."""
    ready = ReadyInts(70_000)
    assert ready.addresses.tolist() == [id(x) for x in ready.objects]
    assert ready.objects[65_000] == 65_000 and type(ready.objects[65_000]) is int
    assert ReadyInts(0).addresses.shape == (0,)


def test_tokenizers_share_one_set_of_ready_ints(monkeypatch):
    """A new tokenizer makes no ints of its own: the process's set serves it while large enough,
    and is replaced by a larger one holding the same ints first (lists made before keep
    working)."""
    monkeypatch.setattr(id_lists, "_shared", None)
    small = id_lists.shared_ready_ints(1000)
    assert id_lists.shared_ready_ints(500) is small
    assert id_lists.shared_ready_ints(1000) is small
    old_list = small.one_list(np.arange(5000, dtype=np.int32) % 1000)
    larger = id_lists.shared_ready_ints(3000)
    assert larger is not small and larger.objects.shape[0] == 3000
    assert all(a is b for a, b in zip(larger.objects[:1000], small.objects, strict=True))
    assert larger.objects[2999] == 2999 and larger.addresses[1500] == id(larger.objects[1500])
    assert id_lists.shared_ready_ints(1000) is larger
    assert old_list == (np.arange(5000) % 1000).tolist()
    tok = Tokenizer.from_merges([(b"a", b"b")], r"\S+|\s+")
    again = Tokenizer.from_merges([(b"a", b"b"), (b"ab", b"c")], r"\S+|\s+")
    assert tok._core.ready_ints is again._core.ready_ints is larger
    assert tok.encode("ab" * 3000) == [256] * 3000
