"""Extending a tokenizer: the base's merges replayed exactly on a new corpus (checked against
tiktoken's own encoding of each piece), the new merges those of the slow reference from that
segmentation, and the extension check (old ids, specials and merges unchanged, new tokens
reachable, pieces with no new merge encoded as before) passing on GPT-2, cl100k and o200k."""

from __future__ import annotations

import pytest
from reference_bpe import train_reference_from

from workbench import Tokenizer
from workbench.engine.config import TrainConfig
from workbench.engine.errors import ConfigError
from workbench.engine.extending import extend_tokenizer
from workbench.engine.pretokenize.counting import count_texts
from workbench.evaluate.extension_check import check_extension


def words_for(base: Tokenizer, text: str):
    config = TrainConfig(pattern=base.pattern, special_tokens=tuple(base.special_tokens))
    return count_texts([text], config)


def test_gpt2_extended_with_two_thousand_merges_keeps_everything(gpt2_with_eot, corpora):
    base = gpt2_with_eot
    text = (corpora / "tinyshakespeare.txt").read_text(encoding="utf-8")
    words = words_for(base, text)
    ext = extend_tokenizer(base, words, base.vocab_size + 2000)
    tok = ext.tokenizer
    assert tok.vocab_size == base.vocab_size + 2000 and ext.stop_reason == "vocab_size"
    assert sorted(ext.added_tokens) == list(range(50257, 50257 + 2000))
    check = check_extension(ext, words)
    assert check.ok, check.lines()
    assert check.old_tokens == 50256 and check.old_merges == 50000 and check.new_tokens == 2000
    assert check.pieces_without_new_merge > 0 and all(
        line.startswith("ok") for line in check.lines()
    )
    # The trainer's count of the corpus is what the extended encoder gives, to the token.
    assert len(tok.encode(text)) == ext.tokens_after < ext.tokens_before == len(base.encode(text))
    assert tok.decode(tok.encode(text)) == text
    assert tok.special_tokens == {"<|endoftext|>": 50256}


def test_replay_is_tiktokens_and_new_merges_are_the_references(gpt2_with_eot, corpora):
    tiktoken = pytest.importorskip("tiktoken")
    base = Tokenizer.from_merges(gpt2_with_eot.merge_bytes[:3000], "gpt2", ["<|endoftext|>"])
    enc = base.to_tiktoken()
    assert isinstance(enc, tiktoken.Encoding)
    text = (corpora / "corpus.en").read_text(encoding="utf-8")[:60_000]
    words = words_for(base, text)
    # The obviously correct replay: tiktoken encodes each piece alone, as bytes.
    table: dict[tuple[bytes, ...], int] = {}
    for i in range(len(words)):
        key = tuple(enc.decode_single_token_bytes(t) for t in enc._encode_bytes(words.word(i)))
        table[key] = table.get(key, 0) + int(words.counts[i])
    vocab = base.vocab_size + 150
    expected, counts, _ = train_reference_from(table, set(base.vocab.values()), vocab, n_specials=1)
    ext = extend_tokenizer(base, words, vocab)
    assert ext.new_merges == expected and ext.counts == counts
    assert check_extension(ext, words).ok


@pytest.mark.parametrize("name", ["cl100k", "o200k"])
def test_ranked_bases_extend_too(name, tmp_path, corpora):
    from workbench.evaluate.references import available, load_reference

    if not available(name):
        pytest.skip(f"{name} ranks are not on this machine")
    base = load_reference(name)
    text = (corpora / "corpus.en").read_text(encoding="utf-8")
    words = words_for(base, text)
    ext = extend_tokenizer(base, words, base.vocab_size + 300)
    check = check_extension(ext, words)
    assert check.ok, check.lines()
    first = max([*base.vocab, *base.special_tokens.values()]) + 1
    assert ext.first_new_id == first and min(ext.added_tokens) == first
    assert len(ext.tokenizer.encode(text)) == ext.tokens_after
    # As a tiktoken file (ranks only: the merges are rebuilt from them when loaded), the same ids.
    import workbench

    ext.tokenizer.export("tiktoken", tmp_path)
    again = workbench.load(tmp_path / "tokenizer.tiktoken")
    assert again.vocab == ext.tokenizer.vocab and again.encode(text) == ext.tokenizer.encode(text)


def test_a_cap_and_the_tie_breaks_apply_to_the_new_merges(gpt2_with_eot, corpora):
    base = Tokenizer.from_merges(gpt2_with_eot.merge_bytes[:500], "gpt2")
    words = words_for(base, (corpora / "taylorswift.txt").read_text(encoding="utf-8"))
    for tie_break in ("lexicographic", "hf"):
        ext = extend_tokenizer(base, words, 756 + 300, tie_break=tie_break, max_token_length=5)
        assert max(map(len, ext.added_tokens.values())) <= 5
        assert check_extension(ext, words).ok


def test_the_check_catches_a_changed_tokenizer(gpt2_with_eot, corpora):
    from dataclasses import replace

    base = Tokenizer.from_merges(gpt2_with_eot.merge_bytes[:400], "gpt2")
    words = words_for(base, (corpora / "taylorswift.txt").read_text(encoding="utf-8"))
    ext = extend_tokenizer(base, words, 656 + 50)
    assert check_extension(ext, words).ok
    # Held against a base with one merge more, which the extension does not have.
    longer = Tokenizer.from_merges(gpt2_with_eot.merge_bytes[:401], "gpt2")
    broken = check_extension(replace(ext, base=longer), words)
    assert not broken.ok and not broken.merges_unchanged
    assert any(line.startswith("FAIL") for line in broken.lines())


def test_special_tokens_are_never_merged_into_new_tokens(gpt2_with_eot):
    base = Tokenizer.from_merges(gpt2_with_eot.merge_bytes[:300], "gpt2", ["<|endoftext|>"])
    text = "hello<|endoftext|>world, hello<|endoftext|>there " * 40
    words = words_for(base, text)
    ext = extend_tokenizer(base, words, base.vocab_size + 40)
    assert ext.tokenizer.special_tokens == base.special_tokens == {"<|endoftext|>": 556}
    assert all(b"<|" not in token and b"|>" not in token for token in ext.added_tokens.values())
    ids = ext.tokenizer.encode(text, allowed_special="all")
    assert ids.count(556) == 80 and ext.tokenizer.decode(ids) == text
    assert check_extension(ext, words).ok


def test_bad_requests_are_refused(gpt2_with_eot):
    base = Tokenizer.from_merges(gpt2_with_eot.merge_bytes[:10], "gpt2")
    words = words_for(base, "some text")
    with pytest.raises(ConfigError, match="below the base"):
        extend_tokenizer(base, words, 200)
    with pytest.raises(ConfigError, match="no text"):
        extend_tokenizer(base, words_for(base, ""), 300)


# -- the front ends -------------------------------------------------------------------------------


def test_api_extends_a_stored_run(tmp_path, corpora):
    import workbench

    db = tmp_path / "runs.db"
    first = (corpora / "corpus.en").read_text(encoding="utf-8")[:20_000]
    trained = workbench.train([first], 300, special_tokens="<|endoftext|>", db=db, progress=False)
    second = (corpora / "taylorswift.txt").read_text(encoding="utf-8")[:30_000]
    result = workbench.extend(f"run:{trained.run_id}", [second], 400, db=db, progress=False)
    assert result.check.ok, result.check.lines()
    assert result.tokenizer.vocab_size == 400
    old = trained.tokenizer
    assert all(result.tokenizer.vocab[i] == b for i, b in old.vocab.items())
    assert result.tokenizer.special_tokens == old.special_tokens
    assert result.new_merges and "check passed" in repr(result)
    # With db= the extension is a run of its own, as `extend --db` records it.
    from workbench.store import RunStore
    from workbench.store.tokenizer_of_run import tokenizer_of_run

    assert result.run_id is not None and result.run_id != trained.run_id
    with RunStore(db) as store:
        run = store.get_run(result.run_id)
        assert run.settings["extends"]["spec"] == f"run:{trained.run_id}"
        assert run.stats["extension"]["ok"]
        assert tokenizer_of_run(store, result.run_id) == result.tokenizer


def test_api_records_no_run_without_db_and_refuses_an_unnamed_base_with_one(tmp_path, corpora):
    import workbench

    text = (corpora / "corpus.en").read_text(encoding="utf-8")[:20_000]
    base = workbench.train([text[:10_000]], 300, progress=False).tokenizer
    result = workbench.extend(base, [text[10_000:]], 340, progress=False, max_token_chars=3)
    assert result.run_id is None and result.check.ok
    from workbench.engine.train.char_count import utf8_chars

    assert max(map(utf8_chars, result.extension.added_tokens.values())) == 3
    with pytest.raises(ConfigError, match="names its base"):
        workbench.extend(base, [text], 340, db=tmp_path / "runs.db", progress=False)
    assert not (tmp_path / "runs.db").exists()


def test_cli_extends_gpt2_files_shows_the_check_and_writes(tmp_path, corpora, gpt2_with_eot):
    import subprocess
    import sys

    import workbench

    base = tmp_path / "gpt2"
    base.mkdir()
    for name in ("vocab.json", "merges.txt"):
        (base / name).write_bytes((corpora / f"gpt2_{name}").read_bytes())

    def cli(*args: str) -> subprocess.CompletedProcess:  # every run kept in a test database
        return subprocess.run(
            [sys.executable, "-m", "workbench", *args, "--db", str(tmp_path / "runs.db")],
            capture_output=True,
            text=True,
        )

    out = tmp_path / "out"
    proc = cli("extend", str(base), str(corpora / "corpus.en"), "--vocab-size", "50557",
               "-o", str(out), "--format", "gpt2,hf", "-q")  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    assert "every new token reachable" in proc.stdout
    assert proc.stdout.count("  ok   ") == 7 and "FAIL" not in proc.stdout
    extended = workbench.load(out / "tokenizer.json")
    assert extended.vocab_size == 50557 and (out / "token_bytes.npy").is_file()
    assert workbench.load(out) == extended
    old = workbench.load(base)
    assert extended.merges[: len(old.merges)] == old.merges
    too_small = cli("extend", str(base), str(corpora / "corpus.en"), "--vocab-size", "1000",
                    "-o", str(tmp_path / "o2"), "-q")  # fmt: skip
    assert too_small.returncode == 2 and "below the base" in too_small.stderr
    assert "Traceback" not in too_small.stderr and not (tmp_path / "o2").exists()
    bad_base = cli("extend", str(tmp_path / "nothing"), str(corpora / "corpus.en"),
                   "--vocab-size", "60000", "-o", str(tmp_path / "o3"), "-q")  # fmt: skip
    assert bad_base.returncode == 1 and bad_base.stderr.count("\n") == 1
    assert "the base" in bad_base.stderr and "no such file" in bad_base.stderr
