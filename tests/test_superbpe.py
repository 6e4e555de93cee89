"""SuperBPE against the slow reference (`reference_superbpe`), its stage-2 split against the
authors' regex, the memory bound, and the run session's handling of it."""

from __future__ import annotations

import json
import random

import numpy as np
import pytest
from reference_superbpe import stage2_pieces, train_superbpe_reference

from workbench.engine.config import TrainConfig
from workbench.engine.errors import ConfigError
from workbench.engine.patterns.regexes import compile_pattern
from workbench.engine.patterns.superbpe import STAGE2_PATTERN, is_superword, stage2_allows
from workbench.engine.pretokenize.counting import count_texts
from workbench.engine.pretokenize.stage_two import stage2_config
from workbench.engine.pretokenize.words import WordTable


def superbpe(texts: list[str], **settings):
    """Merges of a SuperBPE run through the run session, as the API and CLI train it."""
    from _bpe_helpers import trained

    session = trained(texts, TrainConfig(**settings))
    return session


def generated(seed: int, lines: int = 120) -> str:
    """Lines of few words (many ties), punctuation runs, digits, colons and a long line."""
    rng = random.Random(seed)
    vocab = ["a", "ab", "ba", "the", "cat", "de", "x:", "y.", "z,", "--", "12", "7", "é", "中文"]
    out = []
    for _ in range(lines):
        words = [rng.choice(vocab) for _ in range(rng.randint(1, 9))]
        sep = rng.choice([" ", " ", " ", "  ", "\t"])
        out.append(sep.join(words) + rng.choice(["\n", " \n", "\n\n", ".\n"]))
    out.append(" ".join(rng.choice(vocab) for _ in range(600)) + "\n")  # a long word (>1024)
    return "".join(out)


def test_stage2_pattern_is_the_authors_split():
    split = compile_pattern(STAGE2_PATTERN)
    rng = random.Random(7)
    alphabet = list("ab .,:;!?/-\n\r\t12 3  é中")
    for _ in range(3000):
        text = "".join(rng.choice(alphabet) for _ in range(rng.randint(0, 40)))
        assert split.findall(text) == stage2_pieces(text), repr(text)


def test_stage2_rules():
    assert stage2_allows(b" of the") and stage2_allows(b"a b c d") and stage2_allows(b" a b c d ")
    assert not stage2_allows(b"a b c d e") and not stage2_allows(b"note: ")
    assert is_superword(b" of the") and not is_superword(b" the") and not is_superword(b"the\n")


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_generated_text_matches_the_reference(seed):
    text = generated(seed)
    session = superbpe([text], vocab_size=400, superbpe_transition=280)
    expected = train_superbpe_reference([text], "gpt2", 400, 280)
    assert session.merges() == expected
    assert session.trainer.transition_rank == 280 - 256
    assert any(is_superword(a + b) for a, b in expected[24:])  # stage 2 crossed spaces


def test_real_text_matches_the_reference(corpora):
    text = (corpora / "taylorswift.txt").read_text("utf-8")[:15000]
    session = superbpe([text], vocab_size=480, superbpe_transition=380, pattern="cl100k")
    merges = session.merges()
    assert merges == train_superbpe_reference([text], "cl100k", 480, 380)
    assert any(is_superword(a + b) for a, b in merges[380 - 256 :])


def test_stage_one_runs_out_of_pairs_before_the_transition():
    text = "ab ab ab\nab ab\n"  # stage 1 makes `ab`, ` ab` and stops; stage 2 goes on
    session = superbpe([text], vocab_size=270, superbpe_transition=265)
    assert session.merges() == train_superbpe_reference([text], "gpt2", 270, 265)
    assert session.trainer.transition_rank == 2


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_hf_tie_break_matches_the_reference(seed):
    text = generated(seed)
    session = superbpe([text], vocab_size=400, superbpe_transition=280, tie_break="hf")
    ties: list[int] = []
    expected = train_superbpe_reference([text], "gpt2", 400, 280, "hf", ties)
    assert session.merges() == expected
    assert session.trainer.transition_rank == 280 - 256
    stage_two_ties = ties[280 - 256 :]
    assert sum(n > 1 for n in stage_two_ties) >= 10  # the order of ties decided many merges
    assert expected != train_superbpe_reference([text], "gpt2", 400, 280)  # not lex's order


def test_hf_tie_break_on_real_text_matches_the_reference(corpora):
    text = (corpora / "tinyshakespeare.txt").read_text("utf-8")[:12000]
    session = superbpe([text], vocab_size=460, superbpe_transition=360, tie_break="hf")
    merges = session.merges()
    assert merges == train_superbpe_reference([text], "gpt2", 460, 360, "hf")
    assert any(is_superword(a + b) for a, b in merges[360 - 256 :])


def test_stage_one_is_classic_bpe_in_both_tie_breaks():
    from workbench.engine.train.trainer import BpeTrainer

    text = generated(5)
    for tie_break in ("lexicographic", "hf"):
        config = TrainConfig(vocab_size=400, superbpe_transition=330, tie_break=tie_break)
        session = superbpe([text], **{**vars(config)})
        classic = BpeTrainer(count_texts([text], config), TrainConfig(330, tie_break=tie_break))
        classic.run()
        assert session.merges()[: len(classic.merges)] == classic.merge_pairs()
        assert len(session.merges()) > len(classic.merges)
        assert all(stage2_allows(a + b) for a, b in session.merges()[len(classic.merges) :])


def test_ids_and_tokenizer_of_a_superbpe_run():
    text = generated(3)
    session = superbpe([text], vocab_size=400, superbpe_transition=300)
    tokenizer = session.tokenizer()
    assert tokenizer.vocab_size == session.trainer.vocab_size
    assert tokenizer.decode(tokenizer.encode(text)) == text
    # it encodes with the stage-2 split, so its superwords are used
    assert tokenizer.pattern == STAGE2_PATTERN
    assert any(is_superword(tokenizer.vocab[i]) for i in tokenizer.encode(text))
    # ids go on from stage 1's: the first stage-2 merge made the next id
    rank = session.trainer.transition_rank
    assert session.trainer.merge_ids[rank] == 256 + rank


def test_stage2_counting_cuts_long_files_only_after_newlines(tmp_path):
    from workbench.engine.pretokenize import counting

    text = generated(9, lines=4000)
    path = tmp_path / "big.txt"
    path.write_text(text, "utf-8")
    config = stage2_config(TrainConfig(vocab_size=300))
    old = counting.BATCH_CHARS
    counting.BATCH_CHARS = 1 << 12  # stream it in many small tasks
    try:
        streamed = counting.count_corpus([path], config, workers=1).words.to_dict()
    finally:
        counting.BATCH_CHARS = old
    assert streamed == count_texts([text], config).to_dict()


def test_one_pass_documents_are_refused_by_name():
    from workbench.session.counting import count_documents

    config = TrainConfig(vocab_size=300, superbpe_transition=280)
    with pytest.raises(ConfigError, match="twice"):
        count_documents((text for text in ["a b c"]), config)


def test_settings_are_checked():
    with pytest.raises(ConfigError, match="SuperBPE transition"):
        TrainConfig(vocab_size=300, superbpe_transition=300)
    with pytest.raises(ConfigError, match="SuperBPE transition"):
        TrainConfig(vocab_size=300, superbpe_transition=100)
    with pytest.raises(ConfigError, match="whole number"):
        TrainConfig(vocab_size=300, superbpe_transition=280.5)


@pytest.mark.parametrize("first_vocab", [280, 320])  # stopped in stage 1, in stage 2
def test_a_superbpe_run_is_stored_and_continued(tmp_path, first_vocab):
    from workbench.engine.pretokenize.counting import count_corpus
    from workbench.session.counting import count_paths
    from workbench.session.run import RunSession
    from workbench.store import RunStore

    text = generated(4)
    corpus = tmp_path / "corpus.txt"
    corpus.write_text(text, "utf-8")
    # the first run aims at 360 and is stopped at `first_vocab`
    config = TrainConfig(vocab_size=360, superbpe_transition=290)
    db = tmp_path / "runs.db"
    session = RunSession.start(count_paths([corpus], config), config, store_path=db)
    session.advance(target_vocab_size=first_vocab)
    session.end()
    with RunStore(db) as store:
        run = store.get_run(session.run_id)
    assert run.settings["superbpe_transition"] == 290
    assert run.stats["superbpe"]["dropped_pieces"] == 0
    stage_two = run.stats["superbpe"].get("transition_rank")
    assert stage_two == (None if first_vocab <= 290 else session.trainer.transition_rank)
    again = RunSession.resume(db, session.run_id, count_corpus, 400)
    again.advance()
    again.end()
    assert again.merges() == train_superbpe_reference([text], "gpt2", 400, 290)
    with RunStore(db) as store:
        run = store.get_run(session.run_id)
        assert store.merges_as_pairs(session.run_id) == again.merges()
    assert run.stats["superbpe"]["transition_rank"] == again.trainer.transition_rank
    assert run.stats["bytes"] == len(text.encode())  # the rest of the statistics kept


def test_cli_and_api_train_superbpe(tmp_path, capsys):
    from _harden_helpers import assert_one_line_error, run_cli

    import workbench

    text = generated(6)
    corpus = tmp_path / "corpus.txt"
    corpus.write_text(text, "utf-8")
    expected = train_superbpe_reference([text], "gpt2", 330, 290)
    code, out, _ = run_cli(
        capsys, "train", str(corpus), "--vocab-size", "330", "--superbpe-transition", "290",
        "--out-dir", str(tmp_path / "out"), "--no-db", "--format", "minbpe", "--json",
    )  # fmt: skip
    assert code == 0
    summary = json.loads(out)
    assert summary["superbpe"]["transition"] == 290 and summary["merges"] == len(expected)
    assert summary["superbpe"]["dropped_pieces"] == 0 and summary["superbpe"]["transition_rank"]
    loaded = workbench.load(tmp_path / "out")
    assert loaded.merge_bytes == expected and loaded.pattern == STAGE2_PATTERN
    result = workbench.train(corpus, 330, superbpe_transition=290, progress=False)
    assert result.merges == expected
    code, _, err = run_cli(
        capsys, "train", "--from-counts", str(corpus), "--vocab-size", "330",
        "--superbpe-transition", "290", "--out-dir", str(tmp_path / "o2"),
    )  # fmt: skip
    assert_one_line_error(code, err, "--superbpe-transition")
    code, _, err = run_cli(
        capsys, "train", str(corpus), "--vocab-size", "330", "--superbpe-transition", "400",
        "--out-dir", str(tmp_path / "o3"), "--no-db",
    )  # fmt: skip
    assert_one_line_error(code, err, "SuperBPE transition")


def test_a_trainer_started_from_a_vocabulary_holds_what_the_trainer_made():
    # Stage 2's set-up: a StartVocab with the merges made so far, reported as the trainer's own.
    from workbench.engine.train.start_vocab import StartVocab
    from workbench.engine.train.trainer import BpeTrainer

    words = count_texts([generated(8)], TrainConfig(vocab_size=400))
    made = BpeTrainer(words, TrainConfig(vocab_size=400))
    made.step(60)
    ids = made.state.wsym.copy()
    lengths = made.state.wrec[:, 1]
    starts = made.state.wrec[:, 0]
    flat = np.concatenate([ids[s : s + n] for s, n in zip(starts, lengths, strict=True)])
    offsets = np.concatenate([[0], np.cumsum(lengths)])
    start = StartVocab(
        list(made.vocab), flat, offsets, made.state.wrec[:, 2].copy(), list(made.merges),
        list(made.merge_ids),
    )  # fmt: skip
    again = BpeTrainer(start, TrainConfig(vocab_size=400))
    n = made.n_tokens
    assert np.array_equal(again.state.tok_hash[:n], made.state.tok_hash[:n])
    assert np.array_equal(again.state.tok_key[:n], made.state.tok_key[:n])
    assert again.corpus_tokens == made.corpus_tokens and again.merges == made.merges
    made.run()
    again.run()
    assert again.merge_pairs() == made.merge_pairs() and again.merge_ids == made.merge_ids


def test_starting_merges_are_checked():
    from workbench.engine.train.start_vocab import StartVocab

    tokens = [bytes([b]) for b in range(256)] + [b"ab"]
    words = (np.array([256]), np.array([0, 1]), np.array([1]))
    StartVocab(tokens, *words, [(97, 98)], [256])
    for merges, made, message in [
        ([(97, 98)], [], "result id"),
        ([(97, 300)], [256], "outside"),
        ([(98, 97)], [256], "joined"),
    ]:
        with pytest.raises(ConfigError, match=message):
            StartVocab(tokens, *words, merges, made)


def test_api_documents_exports_and_handoffs_encode_alike(tmp_path):
    import workbench

    docs = [generated(11), generated(12)]
    result = workbench.train(docs, 380, superbpe_transition=290, progress=False)
    assert result.merges == train_superbpe_reference(docs, "gpt2", 380, 290)
    tokenizer = result.tokenizer
    sample = generated(13)
    ours = tokenizer.encode(sample)
    assert tokenizer.to_tiktoken().encode_ordinary(sample) == ours
    assert tokenizer.to_tokenizers().encode(sample).ids == ours
    for fmt in ("hf", "tiktoken", "gpt2", "minbpe"):
        tokenizer.export(fmt, tmp_path / fmt)
        back = workbench.load(tmp_path / fmt)
        assert back.pattern == STAGE2_PATTERN and back.encode(sample) == ours, fmt
    with pytest.raises(ConfigError, match="twice"):
        workbench.train(iter(docs), 380, superbpe_transition=290, progress=False)


def test_a_refused_pair_leaves_the_next_merges_tie_count_whole():
    from workbench.engine.patterns.superbpe import MAX_WORDS
    from workbench.engine.train.trainer import BpeTrainer

    # `: ` has the top count and the greatest bytes but is refused; `34` and `12` then tie.
    words = WordTable.from_counts({b": ": 5, b"12": 5, b"34": 5})
    trainer = BpeTrainer(words, TrainConfig(vocab_size=260), max_words=MAX_WORDS)
    batch = trainer.step(2)
    assert batch.tokens == (b"34", b"12")
    assert list(batch.ties) == [1, 0]
    assert trainer.step(5).tokens == () and trainer.stop_reason == "no_pairs"


def test_a_refused_pair_is_neither_a_tie_nor_the_runner_up():
    from workbench.engine.patterns.superbpe import MAX_WORDS
    from workbench.engine.train.trainer import BpeTrainer

    # `zz` beats the refused `: ` on bytes at count 5: no tie, and `ab` (2) is the runner-up.
    words = WordTable.from_counts({b"zz": 5, b": ": 5, b"ab": 2})
    trainer = BpeTrainer(words, TrainConfig(vocab_size=270), max_words=MAX_WORDS)
    batch = trainer.step(3)
    assert batch.tokens == (b"zz", b"ab")
    assert batch.ties.tolist() == [0, 0] and batch.runner_up.tolist() == [2, 0]
    assert trainer.stop_reason == "no_pairs" and trainer.max_words == MAX_WORDS


def _stage2_explained_reference(text, transition, merges):
    """(ties, runner-ups) of each stage-2 merge from a recount of the pairs stage 2 may make,
    the lexicographic tie-break's; also asserts each merge was the best such pair."""
    from reference_bpe import _apply
    from reference_superbpe import allowed

    table: dict[tuple, int] = {}
    for piece in stage2_pieces(text):
        key = tuple(bytes([b]) for b in piece.encode())
        table[key] = table.get(key, 0) + 1
    rank = transition - 256
    for pair in merges[:rank]:
        table = _apply(table, pair)
    ties, runner_ups = [], []
    for pair in merges[rank:]:
        counts: dict[tuple[bytes, bytes], int] = {}
        for word, n in table.items():
            for p in zip(word, word[1:], strict=False):
                if allowed(p[0] + p[1]):
                    counts[p] = counts.get(p, 0) + n
        assert pair == max(counts, key=lambda p: (counts[p], p))
        top = counts.pop(pair)
        tied = sum(1 for n in counts.values() if n == top)
        ties.append(min(tied, 100))
        runner_ups.append(top if tied else max(counts.values(), default=0))
        table = _apply(table, pair)
    return ties, runner_ups


@pytest.mark.parametrize("seed", [20, 21])
def test_stage2_ties_and_runner_ups_count_only_pairs_it_may_merge(seed):
    from workbench.engine.train.stages import SuperBpeTrainer

    text = generated(seed) + "note: a b: c d: e\n" * 7 + "a b c d e f\n" * 9
    config = TrainConfig(vocab_size=380, superbpe_transition=290)
    trainer = SuperBpeTrainer(
        count_texts([text], config), count_texts([text], stage2_config(config)), config
    )
    batches = list(trainer.batches(batch_seconds=None))
    ties = np.concatenate([b.ties for b in batches]).tolist()
    runner_ups = np.concatenate([b.runner_up for b in batches]).tolist()
    rank = trainer.transition_rank
    expected = _stage2_explained_reference(text, 290, trainer.merge_pairs())
    assert (ties[rank:], runner_ups[rank:]) == expected
    assert any(t > 0 for t in ties[rank:])
