"""A vocabulary and its merges are checked at once (`validation._results_at_once`), and a
tokenizer.json or a vocab.json + merges.txt pair read at once (`hf_json._vocab_at_once`,
`_merges_at_once`; `gpt2_files._pairs_at_once`; `_common.unmapped_all`): o200k's tokenizer.json
loads in about half the time. The one-by-one paths stay for whatever the fast ones refuse, so an
error still names its merge, token or line: the answer (the tokenizer, or the error's words)
must be the one the slow path gives."""

from __future__ import annotations

import json

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from workbench.engine.byte_mapping import to_mapped
from workbench.engine.encode import validation
from workbench.engine.errors import TokenizerError, TokenizerFileError
from workbench.engine.formats import _common, gpt2_files, hf_json

_TEXT = (
    "Byte pair encoding merges the most frequent adjacent pair of symbols, again and again, "
    "until the vocabulary reaches the size asked for; the merges are then replayed in order "
    "on new text. Tokenizers for programming languages, manual pages and prose differ in "
    "which pairs come first, whether spaces join the words after them, and how digits split."
) * 3


def _base() -> tuple[dict[int, bytes], list[tuple[int, int]]]:
    """A vocabulary made by 60 merges on `_TEXT` (merge r makes id 256 + r)."""
    vocab = {b: bytes([b]) for b in range(256)}
    merges: list[tuple[int, int]] = []
    words = [list(w.encode()) for w in _TEXT.split(" ") if w]
    while len(merges) < 60:
        counts: dict[tuple[int, int], int] = {}
        for word in words:
            for pair in zip(word, word[1:], strict=False):
                counts[pair] = counts.get(pair, 0) + 1
        if not counts:
            break
        best = max(counts, key=lambda p: (counts[p], p))
        new = 256 + len(merges)
        vocab[new] = vocab[best[0]] + vocab[best[1]]
        merges.append(best)
        for k, word in enumerate(words):
            out, i = [], 0
            while i < len(word):
                if i + 1 < len(word) and (word[i], word[i + 1]) == best:
                    out.append(new)
                    i += 2
                else:
                    out.append(word[i])
                    i += 1
            words[k] = out
    return vocab, merges


def _check(vocab: dict, merges: list, slow: bool, monkeypatch) -> object:
    """`check_vocab_merges`' results, or the error's text."""
    with monkeypatch.context() as patch:
        if slow:
            patch.setattr(validation, "_results_at_once", lambda *args: None)
        try:
            return validation.check_vocab_merges(dict(vocab), list(merges), {})
        except TokenizerError as exc:
            return f"error: {exc}"


def _mutated(vocab, merges, kind: str, at: int, other: int):
    """The vocabulary and merges with one thing changed (or none)."""
    vocab, merges = dict(vocab), list(merges)
    at %= len(merges)
    other %= len(merges)
    if kind == "twice":
        merges.insert(at + 1, merges[at])
    elif kind == "unknown id":
        merges[at] = (merges[at][0], 10_000)
    elif kind == "negative id":
        merges[at] = (-1, merges[at][1])
    elif kind == "bool":
        merges[at] = (True, merges[at][1])
    elif kind == "string":
        merges[at] = ("a", merges[at][1])
    elif kind == "list pair":
        merges[at] = list(merges[at])
    elif kind == "three":
        merges[at] = (*merges[at], 1)
    elif kind == "swap":  # a merge before the one that makes its part: used before made
        merges[at], merges[other] = merges[other], merges[at]
    elif kind == "result missing":
        del vocab[256 + at]
        vocab[5000] = b"\x00\x01\x02\x03\x04"
    elif kind == "out of id order":  # valid, but merge r no longer makes id 256 + r
        a, b = 256 + at, 256 + other
        vocab[a], vocab[b] = vocab[b], vocab[a]
        swap = {a: b, b: a}
        merges = [(swap.get(x, x), swap.get(y, y)) for x, y in merges]
    elif kind == "late":  # the first merge moved last: a later one uses its token before
        merges.append(merges.pop(0))
    elif kind == "orphan":
        vocab[400] = b"zzqq"
    elif kind == "dropped":
        del merges[at]
    return vocab, merges


_KINDS = [
    "none", "twice", "unknown id", "negative id", "bool", "string", "list pair", "three", "swap",
    "result missing", "out of id order", "orphan", "dropped", "late",
]  # fmt: skip


def test_a_real_vocabulary_is_checked_the_same_at_once(monkeypatch) -> None:
    vocab, merges = _base()
    ids = _sides(list(vocab)).reshape(-1)
    assert validation._results_by_bytes(vocab, ids, _sides(merges), max(vocab)) is not None
    fast = _check(vocab, merges, False, monkeypatch)
    assert len(merges) == 60 and fast == [256 + r for r in range(60)]
    assert fast == _check(vocab, merges, True, monkeypatch)


def _sides(merges):
    import numpy as np  # noqa: PLC0415

    return np.array(merges, dtype=np.int64)


@pytest.mark.parametrize("kind", _KINDS)
@settings(
    max_examples=15, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(at=st.integers(0, 200), other=st.integers(0, 200))
def test_each_kind_of_fault_gives_the_slow_paths_answer(kind, at, other, monkeypatch) -> None:
    vocab, merges = _mutated(*_base(), kind, at, other)
    fast = _check(vocab, merges, False, monkeypatch)
    assert fast == _check(vocab, merges, True, monkeypatch)
    if kind in ("none", "list pair", "out of id order"):
        assert not str(fast).startswith("error")


def test_the_fast_check_refuses_what_the_slow_one_does(monkeypatch) -> None:
    """Mutation check: each fault is caught by the fast path itself (it returns None), not only
    by the slow path behind it."""
    vocab, merges = _base()
    made = {t for t, b in vocab.items() if len(b) == 1}
    id_of = {b: t for t, b in vocab.items()}
    assert validation._results_at_once(vocab, merges, id_of, set(made)) is not None
    for kind in ("twice", "unknown id", "late", "result missing", "bool", "three", "string"):
        bad_vocab, bad_merges = _mutated(vocab, merges, kind, 7, 3)
        bad_id_of = {b: t for t, b in bad_vocab.items()}
        assert validation._results_at_once(bad_vocab, bad_merges, bad_id_of, set(made)) is None


# tokenizer.json and vocab.json + merges.txt


def _hf_doc(vocab, merges, *, list_merges: bool = False) -> dict:
    mapped = {to_mapped(token): tid for tid, token in vocab.items()}
    pairs = [[to_mapped(vocab[a]), to_mapped(vocab[b])] for a, b in merges]
    doc = {
        "model": {
            "type": "BPE",
            "vocab": mapped,
            "merges": pairs if list_merges else [" ".join(p) for p in pairs],
        },
        "pre_tokenizer": {"type": "ByteLevel", "add_prefix_space": False, "use_regex": True},
        "added_tokens": [{"id": 9000, "content": "<|end|>", "special": True}],
    }
    return doc


def _load_hf(doc, slow: bool, monkeypatch, tmp_path) -> object:
    with monkeypatch.context() as patch:
        if slow:
            patch.setattr(hf_json, "_vocab_at_once", lambda *args: None)
            patch.setattr(hf_json, "_merges_at_once", lambda *args: None)
        try:
            tok = hf_json.from_document(json.loads(json.dumps(doc)), tmp_path / "tokenizer.json")
        except TokenizerFileError as exc:
            return f"error: {exc}"
        return tok.vocab, tok.merges, tok.special_tokens


_HF_FAULTS = [
    ("none", lambda m: None),
    ("a character outside the alphabet", lambda m: m["vocab"].update({"a b": 700})),
    ("two tokens share an id", lambda m: m["vocab"].update({"zq": 260})),
    ("an id that is not an int", lambda m: m["vocab"].update({"zq": "7"})),
    ("a bool id", lambda m: m["vocab"].update({"zq": True})),
    ("a negative id", lambda m: m["vocab"].update({"zq": -3})),
    ("a merge of three", lambda m: m["merges"].__setitem__(3, "a b c")),
    ("a merge without a space", lambda m: m["merges"].__setitem__(3, "ab")),
    ("a part not in the vocab", lambda m: m["merges"].__setitem__(3, "a Ġzz")),
    ("an empty part", lambda m: m["merges"].__setitem__(3, "a ")),
    ("a merge that is a number", lambda m: m["merges"].__setitem__(3, 5)),
    ("a list merge among strings", lambda m: m["merges"].__setitem__(3, ["a", "b"])),
]


@pytest.mark.parametrize(("what", "fault"), _HF_FAULTS, ids=[w for w, _ in _HF_FAULTS])
def test_a_tokenizer_json_loads_as_one_by_one(what, fault, monkeypatch, tmp_path) -> None:
    doc = _hf_doc(*_base())
    fault(doc["model"])
    fast = _load_hf(doc, False, monkeypatch, tmp_path)
    assert fast == _load_hf(doc, True, monkeypatch, tmp_path)
    assert str(fast).startswith("error") == (what != "none"), fast


def test_list_merges_load_as_strings_do(monkeypatch, tmp_path) -> None:
    vocab, merges = _base()
    as_lists = _load_hf(_hf_doc(vocab, merges, list_merges=True), False, monkeypatch, tmp_path)
    assert as_lists == _load_hf(_hf_doc(vocab, merges), False, monkeypatch, tmp_path)
    assert as_lists[1] == merges and as_lists[2] == {"<|end|>": 9000}


def test_the_fast_readers_run_and_refuse_on_their_own(tmp_path) -> None:
    """Mutation check: the fast paths answer for a good file and return None (not a wrong
    answer) for each fault they must hand on."""
    vocab, merges = _base()
    model = _hf_doc(vocab, merges)["model"]
    found = hf_json._vocab_at_once(tmp_path, model, {9000})
    assert found is not None and found[0] == vocab
    ids = found[1]
    assert hf_json._merges_at_once(model["merges"], ids) == merges
    for bad in (
        ["a b c"],
        ["ab"],
        ["a Ġzz"],
        ["a "],
        [["a", 1]],
        [["a", "b", "c"]],
        ["a b", ["a", "b"]],
    ):
        assert hf_json._merges_at_once(bad, ids) is None, bad
    assert hf_json._vocab_at_once(tmp_path, {"vocab": {**model["vocab"], "zq": 260}}, set()) is None
    assert (
        hf_json._vocab_at_once(tmp_path, {"vocab": {**model["vocab"], "zq": True}}, set()) is None
    )
    with pytest.raises(TokenizerFileError, match="'a b' is not in the byte-level alphabet"):
        _common.unmapped_all(tmp_path, ["Ġthe", "a b", "x"])
    assert _common.unmapped_all(tmp_path, ["Ġthe", "", "ĊĠ"]) == [b" the", b"", b"\n "]


def _gpt2_files(tmp_path, vocab, merges, merges_text: str | None = None):
    mapped = {to_mapped(token): tid for tid, token in vocab.items()}
    (tmp_path / "vocab.json").write_text(json.dumps(mapped), encoding="utf-8")
    lines = [f"{to_mapped(vocab[a])} {to_mapped(vocab[b])}" for a, b in merges]
    text = merges_text if merges_text is not None else "#version: 0.2\n" + "\n".join(lines) + "\n"
    (tmp_path / "merges.txt").write_text(text, encoding="utf-8", newline="")
    return tmp_path / "vocab.json", tmp_path / "merges.txt"


def _load_gpt2(paths, slow: bool, monkeypatch) -> object:
    with monkeypatch.context() as patch:
        if slow:
            patch.setattr(gpt2_files, "_pairs_at_once", lambda *args: None)
            patch.setattr(gpt2_files, "_ordinary_at_once", lambda *args: None)
        try:
            tok = gpt2_files.load(*paths, "gpt2")
        except TokenizerFileError as exc:
            return f"error: {exc}"
        return tok.vocab, tok.merges


@pytest.mark.parametrize(
    "change",
    ["none", "crlf", "blank line", "three parts", "no header", "empty part", "unknown part"],
)
def test_a_vocab_json_and_merges_txt_load_as_line_by_line(change, monkeypatch, tmp_path) -> None:
    vocab, merges = _base()
    lines = [f"{to_mapped(vocab[a])} {to_mapped(vocab[b])}" for a, b in merges]
    header = ["#version: 0.2"]
    if change == "crlf":
        text = "\r\n".join(header + lines) + "\r\n"
    else:
        if change == "blank line":
            lines.insert(5, "")
        elif change == "three parts":
            lines[5] += " x"
        elif change == "no header":
            header = []
        elif change == "empty part":
            lines[5] = " " + lines[5].split(" ")[1]
        elif change == "unknown part":
            lines[5] = "Ġzz " + lines[5].split(" ")[1]
        text = "\n".join(header + lines) + "\n"
    paths = _gpt2_files(tmp_path, vocab, merges, text)
    fast = _load_gpt2(paths, False, monkeypatch)
    assert fast == _load_gpt2(paths, True, monkeypatch)
    good = change in ("none", "crlf", "no header")
    assert str(fast).startswith("error") != good, fast
    if good:
        assert fast == (vocab, merges)


@pytest.mark.parametrize(
    ("extra", "sidecar", "good"),
    [
        ({"<|endoftext|>": 9000}, None, True),  # a known special, no sidecar
        ({"<|endoftext|>": 9000}, {"<|endoftext|>": 9000}, True),  # listed in both
        ({"<|endoftext|>": 9000}, {}, False),  # a sidecar that does not list it
        ({"Ġzzq": 9001}, None, False),  # not a byte, no merge makes it
        ("shared id", None, False),
        ({"Ā": 9002}, None, False),  # a byte listed twice under another id: refused later
    ],
    ids=[
        "known special",
        "sidecar special",
        "unlisted special",
        "unmade",
        "shared id",
        "byte twice",
    ],
)
def test_a_vocab_json_s_tokens_sort_as_one_by_one(extra, sidecar, good, monkeypatch, tmp_path):
    vocab, merges = _base()
    vocab_path, merges_path = _gpt2_files(tmp_path, vocab, merges)
    mapped = json.loads(vocab_path.read_text(encoding="utf-8"))
    if extra == "shared id":  # a made token given another made token's id
        extra = {to_mapped(vocab[257]): 258}
    mapped.update(extra)
    vocab_path.write_text(json.dumps(mapped), encoding="utf-8")
    if sidecar is not None:
        sidecar_file = gpt2_files.sidecar_path(vocab_path)
        sidecar_file.write_text(json.dumps({"special_tokens": sidecar}), encoding="utf-8")
    paths = (vocab_path, merges_path)
    fast = _load_gpt2(paths, False, monkeypatch)
    assert fast == _load_gpt2(paths, True, monkeypatch)
    assert str(fast).startswith("error") != good, fast
