"""Batches and the piece cache that outlives a call (issue 12 item 4): `encode_batch`,
`encode_batch_arrays` and `bpe-workbench encode` with several files give exactly `encode`'s ids,
and later calls that reuse (or restart, or grow) a thread's cache change nothing. The helper
threads a batch keeps between calls end when the tokenizer is closed or collected."""

from __future__ import annotations

import gc
import multiprocessing
import random
import threading

import numpy as np
import pytest
from _bpe_helpers import examples
from hypothesis import given, settings
from hypothesis import strategies as st

from workbench.cli import main
from workbench.engine import formats
from workbench.engine._native import portable
from workbench.engine.batching import RunPool
from workbench.engine.encode.validation import DisallowedSpecialError

EOT = "<|endoftext|>"
WORDS = ["the", " cat", " sat", "\n", "  ", "你好世界", " était", "int main(void) {", "—", "🙂"]


@pytest.fixture(scope="module")
def gpt2(corpora):
    with formats.load(corpora / "gpt2_vocab.json") as tokenizer:
        yield tokenizer  # closed after the module: no helper thread outlives it


def _texts(count: int, seed: int) -> list[str]:
    """Texts of varied length and content, many pieces shared between them, some new."""
    rng = random.Random(seed)
    out = []
    for i in range(count):
        words = [rng.choice(WORDS) for _ in range(rng.randrange(0, 400))]
        words += [f" {i}x{rng.randrange(10**6)}" for _ in range(10)]  # pieces no other text has
        out.append("".join(words))
    return out


def test_batch_is_encode_of_each_text(gpt2):
    texts = _texts(300, seed=1)  # over 64K characters: runs of texts go to the threads
    assert sum(map(len, texts)) > 1 << 16
    expected = [gpt2.with_splitter("regex").encode(t) for t in texts]
    assert gpt2.encode_batch(texts, num_threads=2) == expected
    assert gpt2.encode_batch(texts, num_threads=1) == expected
    arrays = gpt2.encode_batch_arrays(texts, num_threads=2)
    assert all(a.dtype == np.int32 for a in arrays)
    assert [a.tolist() for a in arrays] == expected
    assert gpt2.encode_batch([]) == []


def _helpers() -> list[threading.Thread]:
    return [t for t in threading.enumerate() if t.name.startswith("bpe-encode")]


def _real_documents(corpora) -> list[str]:
    """Real text cut at random places (mid-character too: cuts are in characters), with empty
    documents and runs of tiny ones between the long ones."""
    rng = random.Random(5)
    text = "\n".join(
        (corpora / name).read_text("utf-8")
        for name in ("taylorswift.txt", "german.txt", "corpus.en", "tinystories_sample.txt")
    )
    docs, i = [], 0
    while i < len(text):
        size = rng.choice([0, 1, 2, 7, 300, 5000, 40000])
        docs.append(text[i : i + size])
        docs += [text[j : j + 1] for j in range(i, i + rng.randrange(3))] + [""]
        i += size
    return docs


def test_batch_of_real_text_and_tiny_texts_is_encode_of_each(gpt2, corpora):
    """Every doc through both threads and one, and then again (the helpers' caches are warm and
    sized for the batch); arrays too. The empty and one-character texts are in the runs."""
    docs = _real_documents(corpora)
    assert "" in docs and sum(map(len, docs)) > 4 << 16
    expected = [gpt2.with_splitter("regex").encode(d, disallowed_special=()) for d in docs]
    with gpt2.with_splitter("auto") as tok:
        for _ in range(2):
            assert tok.encode_batch(docs, num_threads=2, disallowed_special=()) == expected
            arrays = tok.encode_batch_arrays(docs, num_threads=3, disallowed_special=())
            assert [a.tolist() for a in arrays] == expected
        assert tok.encode_batch(docs, num_threads=1, disallowed_special=()) == expected
        tiny = [d for d in docs if len(d) <= 7] * 1000  # ~100k texts of 0-7 characters
        assert sum(map(len, tiny)) > 1 << 16
        one = {d: gpt2.encode(d, disallowed_special=()) for d in set(tiny)}
        assert tok.encode_batch(tiny, num_threads=2, disallowed_special=()) == [
            one[d] for d in tiny
        ]


def test_batch_with_specials_inside_and_across_texts(gpt2):
    """Allowed specials are split out of each text; one cut in two by the end of a text is two
    texts of ordinary text, never a special (the texts of a run are encoded in one call)."""
    texts = _texts(400, seed=7)
    for i in range(0, 400, 9):
        texts[i] = texts[i][:50] + EOT + texts[i][50:] + EOT
        texts[i + 1] += EOT[:5]
        texts[i + 2] = EOT[5:] + texts[i + 2]
        texts[i + 3] = EOT
    one = gpt2.with_splitter("regex")
    for allowed in ("all", "none"):
        expected = [one.encode(t, allowed_special=allowed) for t in texts]
        for splitter in ("auto", "regex"):
            tok = gpt2.with_splitter(splitter)
            with tok:
                assert tok.encode_batch(texts, num_threads=2, allowed_special=allowed) == expected
                arrays = tok.encode_batch_arrays(texts, num_threads=2, allowed_special=allowed)
                assert [a.tolist() for a in arrays] == expected
    assert EOT not in texts[1] and EOT not in texts[2]
    assert gpt2.encode_batch(texts[1:3], disallowed_special="all") == [
        one.encode(t) for t in texts[1:3]
    ]


def test_helper_threads_end_when_closed_or_collected(gpt2):
    texts = _texts(300, seed=6)
    gpt2.close()  # the module's tokenizer, used by the tests before
    assert _helpers() == []
    tok = gpt2.with_splitter("auto")
    with tok:
        first = tok.encode_batch(texts, num_threads=2)
        assert len(_helpers()) == 1  # the caller is the second thread
        assert tok.encode_batch(texts, num_threads=2) == first
        assert len(_helpers()) == 1  # kept between calls, not started again
    assert _helpers() == []
    assert tok.encode_batch(texts, num_threads=3) == first  # a closed tokenizer starts anew
    assert len(_helpers()) == 2
    left = _helpers()
    del tok
    gc.collect()
    for thread in left:
        thread.join(timeout=30)
    assert _helpers() == []


@pytest.mark.skipif(
    "fork" not in multiprocessing.get_all_start_methods(), reason="no fork on this system"
)
@pytest.mark.filterwarnings("ignore:.*fork.*:DeprecationWarning")  # 3.12: fork with threads
def test_batch_in_a_forked_child_after_the_parent_started_helpers(gpt2):
    """A forked child inherits the pool but not its threads: it must start its own, not wait
    for ever on helpers that do not exist."""
    texts = _texts(300, seed=8)
    expected = gpt2.encode_batch(texts, num_threads=2)
    assert _helpers()
    context = multiprocessing.get_context("fork")
    answers = context.SimpleQueue()

    def child() -> None:
        answers.put(gpt2.encode_batch(texts, num_threads=2) == expected)

    process = context.Process(target=child, daemon=True)
    process.start()
    process.join(timeout=60)
    alive = process.is_alive()
    if alive:
        process.kill()
    assert not alive and process.exitcode == 0 and answers.get() is True


def test_run_pool_keeps_order_and_raises_the_first_failure():
    pool = RunPool("bpe-encode-test")
    done: list[int] = []

    def work(run: int) -> int:
        if run in (7, 30):
            raise ValueError(run)
        done.append(run)
        return run * run

    try:
        assert pool.map(lambda r: r * r, list(range(50)), threads=4) == [r * r for r in range(50)]
        assert pool.map(lambda r: r, [], threads=4) == []
        with pytest.raises(ValueError, match="^7$"):
            pool.map(work, list(range(50)), threads=4)
        assert set(range(7)) <= set(done)  # every run before the failing one was done
    finally:
        pool.close()
    assert not [t for t in threading.enumerate() if t.name.startswith("bpe-encode-test")]


_PARTS = st.sampled_from([*WORDS, EOT, EOT[:4], EOT[4:], " ", "\r\n", "\ud800", "x" * 300, ""])


@settings(max_examples=examples(0.5))
@given(st.lists(st.lists(_PARTS, max_size=12).map("".join), max_size=30), st.booleans())
def test_batch_of_random_texts_is_encode_of_each(gpt2, texts, allow):
    """Empty texts, lone surrogates, specials whole and cut across texts: one run, one kernel
    call, cut back into texts at the end marks."""
    allowed = "all" if allow else "none"
    reference = gpt2.with_splitter("regex")
    expected = [reference.encode(t, allowed_special=allowed) for t in texts]
    assert gpt2.encode_batch(texts, num_threads=2, allowed_special=allowed) == expected
    arrays = gpt2.encode_batch_arrays(texts, allowed_special=allowed)
    assert [a.tolist() for a in arrays] == expected


def test_batch_raises_for_a_refused_special(gpt2):
    texts = _texts(300, seed=2)
    texts[200] += EOT
    with pytest.raises(DisallowedSpecialError):
        gpt2.encode_batch(texts, num_threads=2)
    ids = gpt2.encode_batch(texts, num_threads=2, allowed_special="all")
    assert ids[200][-1] == gpt2.special_tokens[EOT]
    assert ids[:200] == gpt2.encode_batch(texts[:200], num_threads=2)


def test_piece_cache_kept_between_calls_changes_no_id(gpt2):
    """A small cache (short texts) fills up and restarts, then grows for a long text; a prefix
    (another rank cutoff) keeps its own cache."""
    fresh = gpt2.with_splitter("auto")
    reference = gpt2.with_splitter("regex")
    texts = _texts(40, seed=3)
    texts.insert(20, "".join(texts))  # the long one grows the cache mid-way
    for text in texts + texts:
        assert fresh.encode(text) == reference.encode(text)
    small = fresh.prefix(300)
    for text in texts[:5]:
        assert small.encode(text) == reference.prefix(300).encode(text)
        assert fresh.encode(text) == reference.encode(text)


def test_cli_encodes_several_files(gpt2, corpora, tmp_path, capsys):
    """Many files, enough text for the batch to use both threads, one of them empty: the output
    is each file's own `encode` (`--threads 1` prints the same)."""
    paths = []
    texts = _texts(120, seed=4) + [""]
    for i, text in enumerate(texts):
        paths.append(tmp_path / f"t{i}.txt")
        paths[-1].write_text(text, "utf-8")
    assert sum(map(len, texts)) > 1 << 16
    tokenizer = str(corpora / "gpt2_vocab.json")
    assert main(["encode", "--tokenizer", tokenizer, "--threads", "2", *map(str, paths)]) == 0
    out = capsys.readouterr().out
    lines = out.split("\n")[:-1]  # an empty file prints an empty line
    assert lines[0::2] == [f"==> {p} <==" for p in paths]
    for path, line in zip(paths, lines[1::2], strict=True):
        assert [int(x) for x in line.split()] == gpt2.encode(path.read_text("utf-8"))
    assert main(["encode", "--tokenizer", tokenizer, "--threads", "1", *map(str, paths)]) == 0
    assert capsys.readouterr().out == out
    paths = paths[:3]
    paths[1].write_text("ok " + EOT, "utf-8")
    assert main(["encode", "--tokenizer", tokenizer, *map(str, paths)]) == 1
    captured = capsys.readouterr()
    assert captured.out == "" and captured.err.count("\n") == 1 and str(paths[1]) in captured.err
    assert main(["encode", "--tokenizer", tokenizer, "--threads", "0", str(paths[0])]) == 2
    assert "--threads" in capsys.readouterr().err


OUTER = "the cat sat on the mat. " * 40
INNER = "你好世界, était int main(void) { return 0; } " * 30


def _nesting(tok, monkeypatch, before_scan: bool):
    """`tok._scan_segments` patched to run one encode of INNER on the same thread inside the
    outer call, as a finalizer run by the garbage collector at an allocation would: after the
    kernel (the outer ids still unread) or before it (the outer text not yet read)."""
    real = tok._scan_segments
    nested: list = []
    inside = []  # the nested call's own scan runs unpatched

    def scan(*args):
        if before_scan and not inside:
            inside.append(True)
            nested.append(tok.encode_batch([INNER, INNER[::-1]], num_threads=1))
        ids = real(*args)
        if not before_scan and not inside:
            inside.append(True)
            nested.append(tok.encode(INNER))
        return ids

    monkeypatch.setattr(tok, "_scan_segments", scan)
    return nested


OUTER_CALLS = {
    "encode": lambda tok: tok.encode(OUTER),
    "encode_array": lambda tok: tok.encode_array(OUTER).tolist(),
    "encode_with_spans": lambda tok: [span[0] for span in tok.encode_with_spans(OUTER)],
    "encode_batch": lambda tok: tok.encode_batch([OUTER, OUTER[:7]], num_threads=1),
    "encode_batch_arrays": lambda tok: [
        a.tolist() for a in tok.encode_batch_arrays([OUTER, OUTER[:7]], num_threads=1)
    ],
}


# These four check the fused scanner path's reused buffers and its one compiled encoder; under
# BPE_WORKBENCH_PORTABLE=1 the scanner is off, so there is none to check.
scanner_path = pytest.mark.skipif(portable(), reason="the portable switch turns the scanner off")


@scanner_path
@pytest.mark.parametrize("method", OUTER_CALLS)
def test_an_encode_nested_after_the_kernel_leaves_the_outer_ids_alone(gpt2, monkeypatch, method):
    tok = gpt2.with_splitter("auto")  # a thread's buffers of its own
    call = OUTER_CALLS[method]
    expected, inner = call(tok), tok.encode(INNER)  # the buffers exist and are warm
    nested = _nesting(tok, monkeypatch, before_scan=False)
    assert call(tok) == expected
    assert nested == [inner]
    monkeypatch.undo()
    assert call(tok) == expected  # and the buffers still serve later calls


@scanner_path
@pytest.mark.parametrize("method", ["encode_batch", "encode_batch_arrays"])
def test_a_batch_nested_before_the_kernel_leaves_the_outer_text_alone(gpt2, monkeypatch, method):
    tok = gpt2.with_splitter("auto")
    call = OUTER_CALLS[method]
    expected = call(tok)
    inner = tok.encode_batch([INNER, INNER[::-1]], num_threads=1)
    nested = _nesting(tok, monkeypatch, before_scan=True)
    assert call(tok) == expected
    assert nested == [inner]


@scanner_path
@pytest.mark.parametrize("method", OUTER_CALLS)
def test_a_thread_keeps_its_buffers_from_call_to_call(gpt2, method):
    """Taking a buffer out of the thread's keeping must not make each call map a new one."""
    tok = gpt2.with_splitter("auto")
    OUTER_CALLS[method](tok)
    kept = dict(tok._local.__dict__)
    OUTER_CALLS[method](tok)
    names = ["out", "text"] if method.startswith("encode_batch") else ["out"]
    for name in names:
        assert tok._local.__dict__[name] is kept[name]


@scanner_path
def test_every_encode_path_compiles_one_encoder(gpt2):
    """encode (bytes) and encode_batch (its reused text buffer) give the kernel the same array
    type, so the warm-up's compilation serves both: a writable buffer would be a second
    compilation of the whole encoder on a user's first batch."""
    from workbench.engine.encode import _scanned

    texts = _texts(3, seed=9)
    gpt2.encode(texts[0])
    gpt2.encode_batch(texts, num_threads=1)
    gpt2.encode_batch_arrays(texts, num_threads=1, allowed_special="all")
    kernel = _scanned.ENCODE_SCANNED[0]
    assert {str(signature[0]) for signature in kernel.signatures} == {
        "readonly array(uint8, 1d, C)"
    }
