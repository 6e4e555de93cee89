"""Token health on tokenizers built by hand to hold known cases."""

from __future__ import annotations

import numpy as np
from workbench.engine.encode.tokenizer import Tokenizer

from workbench.evaluate import health
from workbench.evaluate.run import Options, evaluate
from workbench.evaluate.specs import Candidate
from workbench.evaluate.texts import Doc


def _ids(rows):
    return [r.id for r in rows]


def test_unreachable_by_merges_and_by_pre_tokenizer():
    # bc first, then ab, cd, and ab+cd: the merges make a|bc|d of "abcd" (no abc, no bcd), so
    # abcd appears only where a whole pre-token is "abcd" (" abcd" or "abcde" never use it)
    merges = [(b"b", b"c"), (b"a", b"b"), (b"c", b"d"), (b"ab", b"cd")]
    # "x y" is merged across the space, but the GPT-2 pattern splits "x y" into "x", " y"
    merges += [(b"x", b" "), (b"x ", b"y")]
    tok = Tokenizer.from_merges(merges, "gpt2")
    rows = health.unreachable(tok)
    assert tok.encode("abcd") == [259] and 259 not in tok.encode(" abcd")
    assert _ids(rows) == [259, 260, 261]  # abcd; "x " and "x y" (the pattern splits both)
    assert rows[0].reason.startswith("merges")
    assert all(r.reason.startswith("pre-tokenizer") for r in rows[1:])
    assert [r.text for r in rows] == ["abcd", "x·", "x·y"]


def test_reachable_tokens_are_not_listed():
    tok = Tokenizer.from_merges([(b"t", b"h"), (b"th", b"e"), (b" ", b"the")], "gpt2")
    assert health.unreachable(tok) == []


def test_tokens_that_never_complete_a_character():
    merges = [
        (b"\xc3", b"\xa9"),  # é: valid
        (b"a", b"\xc3"),  # a + lead byte: completes (aé)
        (b"\x80", b"\x80"),  # two continuations: E1 80 80 completes them
        (b"\x80\x80", b"\x80"),  # three: F1 80 80 80
        (b"\x80\x80\x80", b"\x80"),  # four continuations: no lead byte takes four
        (b"\xc0", b"\x80"),  # C0 is never valid UTF-8
        (b"\xed", b"\xa0"),  # the start of a surrogate: no ending makes it valid
        (b"\xe2", b"\x82"),  # start of € (E2 82 AC): completes
    ]
    tok = Tokenizer.from_merges(merges, "gpt2")
    rows = health.never_completes(tok)
    assert [tok.vocab[r.id] for r in rows] == [b"\x80" * 4, b"\xc0\x80", b"\xed\xa0"]
    assert health.completes_a_character(b"\xa9")
    assert not health.completes_a_character(b"\xff")


def _candidate(tok: Tokenizer, counts=None) -> Candidate:
    return Candidate("t", "t", tok, "run" if counts is not None else "file", 1, counts)


def test_never_emitted_rare_and_residue_lists():
    # ab is made early with a high count, then eaten by abc: a residue, never emitted on "abc"s
    merges = [(b"a", b"b"), (b"ab", b"c"), (b"x", b"y"), (b"q", b"q")]
    tok = Tokenizer.from_merges(merges, "gpt2")
    counts = np.array([1000, 900, 50, 400], dtype=np.int64)
    text = "abc " * 200 + "xy xy ab qq"
    options = Options(health=True, rare_below=3, residue_ratio=0.05, residue_min_count=100)
    result = evaluate([_candidate(tok, counts)], [Doc(text, "all")], options)
    lists = result["health"]["t"]
    ab, xy, qq = 256, 258, 259
    assert _ids(lists["never_emitted"]) == []
    assert [(r.id, r.emitted) for r in lists["rare"]] == [(ab, 1), (qq, 1), (xy, 2)]
    residues = lists["residues"]
    assert [(r.id, r.merge_count, r.emitted) for r in residues] == [(ab, 1000, 1), (qq, 400, 1)]
    assert residues[0].ratio == 1 / 1000 and residues[1].ratio == 1 / 400
    assert lists["emitted_on"] == "given text"

    result = evaluate([_candidate(tok, counts)], [Doc("abc abc", "all")], options)
    assert _ids(result["health"]["t"]["never_emitted"]) == [ab, xy, qq]


def test_residues_on_the_training_corpus_when_it_is_there(tmp_path):
    corpus = tmp_path / "train.txt"
    corpus.write_text("abc " * 300, "utf-8")
    tok = Tokenizer.from_merges([(b"a", b"b"), (b"ab", b"c")], "gpt2")
    cand = _candidate(tok, np.array([300, 300], dtype=np.int64))
    cand.corpus_paths = [str(corpus)]
    options = Options(health=True, residue_min_count=10)
    lists = evaluate([cand], [Doc("ab ab ab", "all")], options)["health"]["t"]
    assert lists["emitted_on"] == "training corpus"
    assert _ids(lists["never_emitted_training"]) == [256]
    assert [(r.id, r.emitted, r.merge_count) for r in lists["residues"]] == [(256, 0, 300)]
    assert _ids(lists["never_emitted"]) == [257]  # on the given text, abc never came


def test_partial_character_never_built_is_unreachable():
    # E2 82 AC is €; "82 AC" first, then E2+82: the merges make E2|82AC of E2 82, not E2 82
    tok = Tokenizer.from_merges([(b"\x82", b"\xac"), (b"\xe2", b"\x82")], "gpt2")
    rows = health.unreachable(tok)
    assert _ids(rows) == []  # E2 82 alone: BPE with merge 0 leaves E2|82, two parts: built
    tok = Tokenizer.from_merges(
        [(b"\x82", b"\xac"), (b"\xe2", b"\x82"), (b"\xe2\x82", b"\xac")], "gpt2"
    )
    # € = E2 82 AC: earlier merges give E2|82AC (two parts, not E2 82 + AC): still built
    assert health.unreachable(tok) == []


def test_rebuilt_merges():
    tok = Tokenizer.from_merges([(b"b", b"c"), (b"a", b"b"), (b"c", b"d"), (b"ab", b"cd")], "gpt2")
    assert tok.rebuilt_merges() == [(98, 99), (97, 98), (99, 100), None]


def test_a_changed_training_corpus_is_not_used(tmp_path):
    from workbench.engine.corpus import fingerprint, list_files

    corpus = tmp_path / "train.txt"
    corpus.write_text("abc " * 300, "utf-8")
    tok = Tokenizer.from_merges([(b"a", b"b"), (b"ab", b"c")], "gpt2")
    cand = _candidate(tok, np.array([300, 300], dtype=np.int64))
    cand.corpus_paths = [str(corpus)]
    cand.corpus_fingerprint = fingerprint(list_files([corpus]))
    corpus.write_text("something else entirely", "utf-8")
    lists = evaluate([cand], [Doc("ab abc", "all")], Options(health=True))["health"]["t"]
    assert lists["emitted_on"] == "given text"
    assert "changed since the run" in lists["training_corpus"]
    assert "never_emitted_training" not in lists
