"""SuperBPE's stage-2 counting: the scanner's pieces against `regex` with `STAGE2_PATTERN` (real
text, golden cases, Hypothesis text over every Unicode category the pattern sees), counting a
corpus with it, and the memory bound held while counting (the table's size measured, not RSS).
"""

from __future__ import annotations

import random
from collections import Counter
from pathlib import Path

import numpy as np
import pytest
from _bpe_helpers import examples
from hypothesis import given, settings
from hypothesis import strategies as st

from workbench.engine.config import TrainConfig
from workbench.engine.patterns.regexes import compile_pattern
from workbench.engine.patterns.superbpe import STAGE2_PATTERN
from workbench.engine.pretokenize import scan as scanner
from workbench.engine.pretokenize.counting import count_texts
from workbench.engine.pretokenize.scan.fold import CountTable
from workbench.engine.pretokenize.stage_two import (
    cap_pieces,
    count_stage_two,
    count_stage_two_documents,
    stage2_config,
)
from workbench.engine.pretokenize.words import WordTable

STAGE2 = scanner.entry.STAGE2
SCRIPTS = Path("/work/bench-data/scripts")  # the scripts' benchmark texts, where present


def expected(text: str) -> list[str]:
    return compile_pattern(STAGE2_PATTERN).findall(text)


def scanned(text: str) -> list[str]:
    return [piece.decode("utf-8") for piece in scanner.pieces(text.encode("utf-8"), STAGE2)]


def assert_same(text: str, label: str) -> None:
    got, want = scanned(text), expected(text)
    if got == want:
        return
    k = next((k for k, (a, b) in enumerate(zip(got, want, strict=False)) if a != b), None)
    k = min(len(got), len(want)) if k is None else k
    window = slice(max(0, k - 3), k + 3)
    pytest.fail(f"{label}: first difference at piece {k}: {got[window]!r} != {want[window]!r}")


GOLDEN = [
    ("Hello world, this is a test.\n", ["Hello world, this is a test.\n"]),
    ("in 12345 ways", ["in ", "123", "45", " ways"]),
    ("a   b", ["a", "  ", " b"]),  # ` +(?!\S)` gives its last space to the next piece
    ("a  \n", ["a", "  ", "\n"]),
    ("end ", ["end", " "]),
    ("wait... what?!\r\n", ["wait", "...", " what", "?!\r\n"]),
    ("x !!/\r/\ny", ["x", " !!/\r/\n", "y"]),  # `[\r/]*` then one `\n`
    ("note: a\n\nb", ["note: a\n", "\n", "b"]),
    ("tab\tinside\tline\n", ["tab\tinside\tline\n"]),  # only spaces are special
    ("a\u00a0 b", ["a\u00a0 b"]),  # NBSP is \s: one space before it is no split
    ("x \u00a0y", ["x", " ", "\u00a0y"]),  # ...but a space before it is
    ("½ and ٣", ["½", " and ", "٣"]),  # \p{N} is every number, not only 0-9
    ("e\u0301\u0301!", ["e", "\u0301\u0301!"]),  # marks are "other": three in a row split
]


@pytest.mark.parametrize(("text", "want"), GOLDEN)
def test_golden(text: str, want: list[str]) -> None:
    assert expected(text) == want  # the golden case is what the regex gives
    assert scanned(text) == want


def _real_texts(corpora: Path) -> list[tuple[str, str]]:
    paths = sorted(corpora.iterdir()) + (sorted(SCRIPTS.glob("*.txt")) if SCRIPTS.is_dir() else [])
    out = []
    for path in paths:
        try:
            out.append((path.name, path.read_text("utf-8")))
        except (UnicodeDecodeError, IsADirectoryError):
            continue
    return out


def test_real_text_gives_the_regex_pieces(corpora):
    texts = _real_texts(corpora)
    assert len(texts) >= 8
    for name, text in texts:
        assert_same(text, name)
        assert_same(text.replace("\n", "\r\n"), f"{name} (CRLF)")


# One or more characters of every category and kind the pattern tells apart: letters of each
# case (Lu Ll Lt Lm Lo), marks (Mn Mc Me: not \p{L}), numbers (Nd Nl No), every whitespace
# (space, tab, \r, \n, VT, FF, NEL, NBSP, ogham, em space, line and paragraph separators,
# ideographic space), punctuation and symbols (incl. `/` and `:`), format and control
# characters, private use, emoji, CJK, and a code point `regex` classes by an older Unicode.
ALPHABET = list(
    "aZǅʰ中ßΩж"
    "\u0301\u0903\u20dd"
    "07٣½Ⅻ²"
    " \t\r\n\x0b\x0c\x85\xa0\u1680\u2003\u2028\u2029\u3000"
    ".,:;!?/-'\"()[]$+<=>^`|~§"
    "\u200b\u00ad\x00\x7f\ue000"
    "😀🇫🇷"
    "\U0001e030"
)
WEIGHTED = [" "] * 8 + ["a", "b", "1", ".", "\n", "/"] * 2 + ALPHABET
TEXTS = st.lists(st.sampled_from(WEIGHTED), max_size=80).map("".join)


@settings(max_examples=examples(10), deadline=None)
@given(TEXTS)
def test_generated_text_gives_the_regex_pieces(text: str) -> None:
    assert_same(text, "generated")


@settings(max_examples=examples(10), deadline=None)
@given(st.text(st.characters(exclude_categories=["Cs"]), max_size=60))
def test_any_characters_give_the_regex_pieces(text: str) -> None:
    assert_same(text, "any characters")


def test_long_random_text_gives_the_regex_pieces() -> None:
    """Long lines and long runs, past the scanner's 8-byte steps and its blocks of starts."""
    rng = random.Random(5)
    parts = ["word", " ", "  ", "...", "12345", "\n", "\r\n", " !!", "é", "中文", "\t", "a" * 300]
    text = "".join(rng.choice(parts) for _ in range(60_000))
    assert_same(text, "long random")


# --- counting a corpus ---------------------------------------------------------------------------


def test_counting_scans_and_matches_the_regex_path(tmp_path, monkeypatch):
    """Files counted for stage 2 (the scanner, long files cut after a newline only) give the
    regex path's table; a file is cut into many units here, never inside a piece."""
    from workbench.engine.corpus import units

    monkeypatch.setattr(units, "UNIT_BYTES", 1 << 12)
    rng = random.Random(2)
    words = ["the", "cat", "sat", "on", "a", "mat:", "12", "x--y", "é"]
    lines = [
        rng.choice([" ", "  "]).join(rng.choice(words) for _ in range(rng.randint(1, 12)))
        + rng.choice(["\n", " \n", "\n\n", ".\n"])
        for _ in range(3000)
    ]
    text = "".join(lines)
    (tmp_path / "big.txt").write_text(text, "utf-8")
    (tmp_path / "small.txt").write_text("tiny file, two words\n", "utf-8")
    config = TrainConfig(vocab_size=300, superbpe_transition=280)
    capped, result = count_stage_two([tmp_path], config, workers=2)
    want = count_texts([text, "tiny file, two words\n"], stage2_config(config)).to_dict()
    assert capped.words.to_dict() == want
    assert (capped.dropped_pieces, capped.dropped_bytes) == (0, 0)
    assert capped.total_bytes == len(text.encode()) + 21 == result.stats.bytes
    # documents in memory: one long document cut into units after newlines
    in_memory, _ = count_stage_two_documents([text], config)
    assert in_memory.words.to_dict() == count_texts([text], stage2_config(config)).to_dict()


# --- the memory bound ----------------------------------------------------------------------------


def _distinct_long_lines(n: int, length: int, seed: int = 0) -> list[bytes]:
    rng = random.Random(seed)
    letters = "abcdefghij"
    return [("".join(rng.choice(letters) for _ in range(length)) + "\n").encode() for _ in range(n)]


def test_the_bound_holds_while_counting_and_the_loss_is_reported():
    """Many distinct long pieces, counted unit by unit into a bounded table: its unique bytes
    never pass the bound and its arrays stay a small multiple of it, where the unbounded table
    grows with the input; admitted pieces go on being counted; the loss is exact."""
    bound = 50_000
    lines = _distinct_long_lines(4000, 99)  # 400 kB of distinct pieces, 8x the bound
    frequent = b"a frequent line\n"
    units = [b"".join([frequent, *lines[k : k + 200], frequent]) for k in range(0, 4000, 200)]
    capped, full = CountTable(bound), CountTable()
    biggest = 0
    for unit in units:
        table = scanner.count_pieces_arrays(unit, STAGE2)
        capped.add(table)
        full.add(table)
        assert capped.unique_bytes <= bound
        biggest = max(biggest, capped.nbytes)
    assert full.unique_bytes == 4000 * 100 + len(frequent)
    assert biggest <= 6 * bound  # slots, offsets and counts beside the bytes themselves
    assert full.nbytes > 2 * biggest
    buf, offsets, counts = capped.table()
    kept = WordTable.from_arrays(buf, offsets, counts).to_dict()
    assert kept[frequent] == 2 * len(units)  # admitted first, counted to the end
    everything = Counter({frequent: 2 * len(units), **dict.fromkeys(lines, 1)})
    left_out = {piece: n for piece, n in everything.items() if piece not in kept}
    assert capped.dropped == sum(left_out.values()) > 0
    assert capped.dropped_bytes == sum(len(p) * n for p, n in left_out.items())
    assert sum(map(len, kept)) <= bound
    # the same pieces as applying the bound to the whole table afterwards (the regex path)
    whole = WordTable.from_arrays(*full.table())
    after = cap_pieces(whole, bound)
    assert after.words.to_dict() == kept
    assert (after.dropped_pieces, after.dropped_bytes) == (capped.dropped, capped.dropped_bytes)


def test_counting_a_corpus_within_a_bound(tmp_path):
    lines = _distinct_long_lines(3000, 60, seed=1)
    text = b"".join(lines) * 2  # each piece twice
    (tmp_path / "lines.txt").write_bytes(text)
    config = TrainConfig(vocab_size=300, superbpe_transition=280)
    capped, result = count_stage_two([tmp_path], config, workers=1, max_distinct_bytes=30_000)
    assert int(capped.words.offsets[-1]) <= 30_000
    assert capped.total_bytes == len(text)
    assert capped.dropped_bytes == len(text) - capped.words.total_bytes > 0
    assert capped.dropped_pieces == 2 * 3000 - capped.words.total_pieces
    assert set(capped.words.counts.tolist()) == {2}  # an admitted piece keeps all its counts
    regex_config = TrainConfig(vocab_size=300, superbpe_transition=280, pretokenizer="regex")
    by_regex, _ = count_stage_two([tmp_path], regex_config, max_distinct_bytes=30_000)
    assert by_regex.words.to_dict() == capped.words.to_dict()
    assert by_regex.dropped_bytes == capped.dropped_bytes


def test_cap_pieces_keeps_pieces_in_order_of_first_occurrence():
    words = WordTable.from_counts({b"aaaa": 1, b"bb": 5, b"ccc": 5, b"d": 2})
    capped = cap_pieces(words, max_distinct_bytes=7)
    assert capped.words.to_dict() == {b"aaaa": 1, b"bb": 5, b"d": 2}  # ccc no longer fits
    assert (capped.dropped_pieces, capped.dropped_bytes, capped.total_bytes) == (5, 15, 31)
    assert cap_pieces(words).words is words and cap_pieces(words).dropped_pieces == 0


# --- encoding the stage-2 pieces with stage 1's merges -------------------------------------------


def test_stage_two_pieces_encode_as_each_piece_alone(corpora, monkeypatch):
    """`encode_pieces` (one kernel call per chunk of pieces) gives each piece's ids as
    encoding it on its own does, across chunk ends (tiny chunks here) and for long pieces."""
    from workbench.engine.encode import piece_ids
    from workbench.engine.encode.tokenizer import Tokenizer
    from workbench.engine.errors import TokenizerError
    from workbench.engine.patterns.regexes import NO_SPLIT
    from workbench.engine.train.stages import encode_pieces
    from workbench.engine.train.trainer import BpeTrainer

    text = (corpora / "tinyshakespeare.txt").read_text("utf-8")[:40000]
    config = TrainConfig(vocab_size=600)
    first = BpeTrainer(count_texts([text], config), config)
    first.run()
    pieces = count_texts([text + "x" * 5000 + "\n"], stage2_config(config))
    monkeypatch.setattr(piece_ids, "PIECES_CHUNK", 64)
    ids, offsets = encode_pieces(pieces, first.vocab, first.merges, first.merge_ids)
    alone = Tokenizer.from_trainer(first.vocab, first.merges, first.merge_ids, NO_SPLIT)
    data = pieces.data.tobytes()
    edges = pieces.offsets.tolist()
    assert offsets.shape == (len(pieces) + 1,) and offsets[-1] == ids.size
    for k in range(len(pieces)):
        want = alone.encode_ordinary(data[edges[k] : edges[k + 1]].decode("utf-8"))
        assert ids[offsets[k] : offsets[k + 1]].tolist() == want
    with pytest.raises(TokenizerError, match="offsets"):
        alone.encode_pieces(pieces.data, np.array([0, 5, 3], dtype=np.int64))


# --- the stage-2 counter's first compile ---------------------------------------------------------


def test_a_small_corpus_is_counted_by_regex_while_the_stage_two_counter_is_not_compiled(
    tmp_path, monkeypatch
):
    from workbench.engine import warmup
    from workbench.session import counting, startup

    corpus = tmp_path / "c.txt"
    corpus.write_text("a b c, d e\n" * 50, "utf-8")
    config = TrainConfig(vocab_size=300, superbpe_transition=280)
    used: list[str] = []
    real = counting.count_stage_two

    def spy(paths, cfg, *args):
        used.append(cfg.pretokenizer)
        return real(paths, cfg, *args)

    monkeypatch.setattr(counting, "count_stage_two", spy)
    monkeypatch.setattr(warmup, "stage_two_ready", lambda: True)
    warm = counting.count_paths([corpus], config)
    monkeypatch.setattr(warmup, "stage_two_ready", lambda: False)
    cold = counting.count_paths([corpus], config)
    assert used == ["auto", "regex"]
    assert cold.stage_two.words.to_dict() == warm.stage_two.words.to_dict()
    monkeypatch.setattr(startup, "small_corpus", lambda paths: False)  # now it compiles
    assert not counting.stage_two_compiles([corpus])


def test_the_window_says_when_the_stage_two_counter_compiles(tmp_path, monkeypatch):
    from workbench.engine import warmup
    from workbench.gui import worker
    from workbench.session import startup

    config = TrainConfig(vocab_size=300, superbpe_transition=280)
    paths = (str(tmp_path),)
    monkeypatch.setattr(warmup, "stage_two_ready", lambda: True)
    assert worker._superbpe_reading_words(paths, config).endswith("then stage 2)")
    monkeypatch.setattr(warmup, "stage_two_ready", lambda: False)
    monkeypatch.setattr(startup, "small_corpus", lambda paths: False)
    assert "compiling the stage-2 counter" in worker._superbpe_reading_words(paths, config)
    monkeypatch.setattr(startup, "small_corpus", lambda paths: True)  # `regex` counts it
    assert worker._superbpe_reading_words(paths, config).endswith("then stage 2)")


def test_the_regex_path_holds_the_bound_while_counting(tmp_path, monkeypatch):
    """The `regex` counter, a large file streamed in many tasks and a bad file dropped whole:
    the same table and loss as the bound applied to the whole count afterwards."""
    from workbench.engine.corpus import documents, opening
    from workbench.engine.pretokenize import counting

    # files read, cut and counted in small pieces: many tasks per file, a bad byte found late
    monkeypatch.setattr(counting, "BATCH_CHARS", 1 << 12)
    monkeypatch.setattr(opening, "READ_BYTES", 1 << 10)
    monkeypatch.setattr(documents, "CHUNK_CHARS", 1 << 11)
    lines = _distinct_long_lines(2000, 40, seed=3)
    text = b"".join(lines[:1000]) + b"".join(lines) + b"a common line\n" * 50
    (tmp_path / "a.txt").write_bytes(text)
    (tmp_path / "b.txt").write_bytes(b"".join(lines[500:1500]))
    # a file that turns out bad after its first tasks were counted: left out whole
    (tmp_path / "c.txt").write_bytes(b"".join(_distinct_long_lines(300, 40, seed=4)) + b"\xff")
    config = TrainConfig(
        vocab_size=300, superbpe_transition=280, pretokenizer="regex", on_bad_file="skip"
    )
    capped, result = count_stage_two([tmp_path], config, workers=1, max_distinct_bytes=30_000)
    assert len(result.stats.skipped) == 1 and "c.txt" in result.stats.skipped[0]
    assert int(capped.words.offsets[-1]) <= 30_000
    stage2 = stage2_config(config)
    whole = count_texts([text.decode(), b"".join(lines[500:1500]).decode()], stage2)
    after = cap_pieces(whole, 30_000)
    assert capped.words.to_dict() == after.words.to_dict()
    assert (capped.dropped_pieces, capped.dropped_bytes) == (
        after.dropped_pieces,
        after.dropped_bytes,
    )
    assert capped.words.to_dict()[b"a common line\n"] == 50
    # documents in memory, through `regex`: the same
    in_memory, _ = count_stage_two_documents(
        [text.decode(), b"".join(lines[500:1500]).decode()], config, max_distinct_bytes=30_000
    )
    assert in_memory.words.to_dict() == after.words.to_dict()
    assert in_memory.dropped_bytes == after.dropped_bytes
