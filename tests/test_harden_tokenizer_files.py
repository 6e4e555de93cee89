"""Tokenizer files from anywhere: every bad file is one line naming it, never a crash or a silent
wrong tokenizer (issue 11: items 1-4, 9, 12 and 14 on the loading side)."""

from __future__ import annotations

import base64
import json
from pathlib import Path

import pytest

from workbench.cli import main
from workbench.engine import formats
from workbench.engine.encode.tokenizer import Tokenizer
from workbench.engine.errors import ConfigError, PatternError, TokenizerError, TokenizerFileError
from workbench.engine.patterns.regexes import NO_SPLIT, PRESETS, compile_pattern

MERGES = [(b"a", b"b"), (b"ab", b"c"), (b" ", b"ab"), (b"h", b"e"), (b"he", b"l")]


def small(pattern: str = "gpt2", specials: tuple[str, ...] = ("<|endoftext|>",)) -> Tokenizer:
    return Tokenizer.from_merges(MERGES, pattern, specials)


def one_line_error(capsys: pytest.CaptureFixture[str], argv: list[str], *needles: str) -> str:
    """Run the CLI; it must fail with exit 1 (failed work) and one line of stderr holding every needle."""
    assert main(argv) == 1
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "Traceback" not in err, err
    for needle in needles:
        assert needle in err, err
    return err


def hf_doc(tok: Tokenizer) -> dict:
    return formats.hf_json.to_json(tok)


def write_json(path: Path, doc: object) -> Path:
    path.write_text(json.dumps(doc), "utf-8")
    return path


# --- 1. specials that would reach the encoder unchecked -------------------------------------


def test_empty_special_in_a_tiktoken_sidecar_is_refused(tmp_path, capsys):
    """The issue's repro: an empty special matched at every byte and corrupted memory."""
    small().export("tiktoken", tmp_path)
    side = tmp_path / "tokenizer.tiktoken.json"
    side.write_text('{"special_tokens":{"":300}}', "utf-8")
    text = tmp_path / "in.txt"
    text.write_text("hello abc\n", "utf-8")
    argv = ["encode", "--tokenizer", str(tmp_path / "tokenizer.tiktoken"), str(text)]
    one_line_error(capsys, argv, str(side), "empty")


@pytest.mark.parametrize(
    "specials, needle",
    [
        ({"": 300}, "empty"),
        ({"<a>": 300, "<b>": 300}, "share id 300"),
        ({"<a>": 97}, "already a token's id"),
        ({"<a>": "300"}, "not an integer"),
        ({"<a>": True}, "not an integer"),
        ({"<a>": 300.0}, "not an integer"),
        ({"<a>": -1}, "negative"),
        ({"<a>": 2**32 + 300}, "above the largest id"),
        ({"<a>": 2**40}, "above the largest id"),
        ({"<a>": 2**63}, "above the largest id"),
    ],
)
def test_bad_specials_in_every_sidecar(tmp_path, specials, needle):
    """Item 3: 2**32 + 300 used to encode as 300, -1 as plain text."""
    tok = small(specials=())
    tok.export("tiktoken", tmp_path / "tt")
    tok.export("gpt2", tmp_path / "g2")
    for side, target in [
        (tmp_path / "tt" / "tokenizer.tiktoken.json", tmp_path / "tt"),
        (tmp_path / "g2" / "bpe-workbench.json", tmp_path / "g2"),
    ]:
        write_json(side, {"pattern": "gpt2", "special_tokens": specials})
        with pytest.raises(TokenizerFileError, match=needle) as caught:
            formats.load(target)
        assert str(side) in str(caught.value) or str(target) in str(caught.value)


def test_a_far_special_id_is_fine(tmp_path):
    """minbpe's own train.py gives a 512-token model `<|endoftext|>` = 100257."""
    path = tmp_path / "tokenizer.model"
    path.write_text(f"minbpe v1\n{PRESETS['gpt2']}\n1\n<|endoftext|> 100257\n97 98\n", "utf-8")
    tok = formats.load(path)
    assert tok.encode("ab<|endoftext|>", allowed_special="all") == [256, 100257]
    assert tok.decode([256, 100257]) == "ab<|endoftext|>"


def test_bad_added_tokens_in_tokenizer_json(tmp_path):
    tok = small()
    for added, needle in [
        ({"content": "", "id": 400}, "empty"),
        ({"content": "<x>", "id": 2**32 + 300}, "above the largest id"),
        ({"content": "<x>", "id": -1}, "negative"),
        ({"content": "<x>", "id": None}, "not an integer"),
        ({"content": 5, "id": 400}, "content"),
        ({"content": "<x>", "id": 400, "lstrip": True}, "lstrip"),
    ]:
        doc = hf_doc(tok)
        doc["added_tokens"] = [added]
        path = write_json(tmp_path / "tokenizer.json", doc)
        with pytest.raises(TokenizerFileError, match=needle):
            formats.load(path)


# --- 2. ids that would size arrays or overflow ------------------------------------------------


@pytest.mark.parametrize(
    "bad_id, needle",
    [
        (2**31 + 5, "above the largest id"),
        (10**12, "above the largest id"),
        (2**63, "above the largest id"),
        (10**40, "above the largest id"),
        (-1, "negative"),
        (3.0, "not an integer"),
        (True, "not an integer"),
        ("7", "not an integer"),
        (None, "not an integer"),
        (2**31 - 5, "too large"),  # valid as an id, but 24 GB of tables for a 300-token file
    ],
)
def test_huge_or_odd_ids_in_tokenizer_json(tmp_path, capsys, bad_id, needle):
    doc = hf_doc(small())
    vocab = doc["model"]["vocab"]
    token = next(t for t, i in vocab.items() if i == 260)  # the last merged token
    vocab[token] = bad_id
    path = write_json(tmp_path / "tokenizer.json", doc)
    text = tmp_path / "in.txt"
    text.write_text("abc", "utf-8")
    one_line_error(capsys, ["encode", "--tokenizer", str(path), str(text)], str(path), needle)


def test_huge_ids_in_gpt2_vocab(tmp_path):
    small().export("gpt2", tmp_path)
    vocab_path = tmp_path / "vocab.json"
    vocab = json.loads(vocab_path.read_text("utf-8"))
    for bad in (2**31 + 5, 2**63, -3, 1.5):
        vocab["Ġab"] = bad
        write_json(vocab_path, vocab)
        with pytest.raises(TokenizerFileError, match=str(vocab_path)):
            formats.load(tmp_path)


def test_two_tokens_sharing_an_id(tmp_path):
    doc = hf_doc(small())
    doc["model"]["vocab"]["Ġab"] = doc["model"]["vocab"]["abc"]
    path = write_json(tmp_path / "tokenizer.json", doc)
    with pytest.raises(TokenizerFileError, match="share id"):
        formats.load(path)


def test_giant_json_number_and_deep_nesting(tmp_path):
    path = tmp_path / "tokenizer.json"
    path.write_text('{"model": {"vocab": {"a": 1' + "0" * 5000 + "}}}", "utf-8")
    with pytest.raises(TokenizerFileError, match="bad JSON"):
        formats.load(path)
    path.write_text("[" * 100_000 + "]" * 100_000, "utf-8")
    with pytest.raises(TokenizerFileError, match="nested too deeply"):
        formats.load(path)


def test_minbpe_self_doubling_merges_do_not_allocate_terabytes(tmp_path):
    lines = ["minbpe v1", PRESETS["gpt2"], "0", "97 97"]
    lines += [f"{256 + r} {256 + r}" for r in range(60)]
    path = tmp_path / "tokenizer.model"
    path.write_text("\n".join(lines) + "\n", "utf-8")
    with pytest.raises(TokenizerFileError, match="MiB"):
        formats.load(path)


# --- 14. ids in text files: ASCII digits only --------------------------------------------------


@pytest.mark.parametrize("digits", ["²", "٣", "１", "+5", "-1", " ", "0x10", "99999999999"])
def test_unicode_or_odd_digits_are_not_ids(tmp_path, digits):
    tok = small(specials=())
    tok.export("tiktoken", tmp_path / "tt")
    path = tmp_path / "tt" / "tokenizer.tiktoken"
    lines = path.read_text("utf-8").splitlines()
    lines[3] = lines[3].split(" ")[0] + " " + digits
    path.write_text("\n".join(lines) + "\n", "utf-8")
    with pytest.raises(TokenizerFileError, match=f"{path}:4"):
        formats.load(path)
    tok.export("minbpe", tmp_path / "mb")
    path = tmp_path / "mb" / "tokenizer.model"
    lines = path.read_text("utf-8").splitlines()
    lines[3] = f"97 {digits}"
    path.write_text("\n".join(lines) + "\n", "utf-8")
    with pytest.raises(TokenizerFileError, match=f"{path}:4"):
        formats.load(path)


# --- 4. long tokens load (the loader was quadratic in token length) ---------------------------


def test_a_long_run_token_loads_back_in_every_format(tmp_path):
    """A 64 KB token: loading used to cost seconds per 64 KB and minutes at 256 KB."""
    merges = [(b"a", b"a")]
    token = b"aa"
    while len(token) < 65536:
        merges.append((token, token))
        token += token
    tok = Tokenizer.from_merges(merges, "gpt2")
    for fmt in formats.FORMATS:
        tok.export(fmt, tmp_path / fmt)
        back = formats.load(tmp_path / fmt)
        assert back.vocab == tok.vocab
        assert back.encode("a" * 65536) == [max(tok.vocab)]


# --- 9. the default output round-trips ---------------------------------------------------------


@pytest.mark.parametrize("pattern", ["cl100k", "o200k", r"\p{L}+|\p{N}+|\s+|[^\s\p{L}\p{N}]+"])
def test_gpt2_files_keep_the_pattern(tmp_path, pattern):
    tok = small(pattern)
    tok.export("gpt2", tmp_path)
    assert (tmp_path / "bpe-workbench.json").is_file()
    back = formats.load(tmp_path)
    assert back.pattern == tok.pattern and back == tok
    # Without the sidecar the files carry no pattern: the default (or the one given) is used.
    (tmp_path / "bpe-workbench.json").unlink()
    assert formats.load(tmp_path).pattern == PRESETS["gpt2"]


@pytest.mark.parametrize("special", ["###", "\n\n", "<|endoftext|>", "[SEP]", "x", "é"])
def test_any_special_round_trips_through_every_format(tmp_path, special):
    tok = small(specials=(special,))
    for fmt in formats.FORMATS:
        if fmt == "minbpe" and special.isspace():
            continue
        tok.export(fmt, tmp_path / fmt)
        back = formats.load(tmp_path / fmt)
        assert back.special_tokens == tok.special_tokens, fmt
        text = f"abc{special}he"
        assert back.encode(text, allowed_special="all") == tok.encode(text, allowed_special="all")


def test_gpt2_files_without_sidecar_take_only_known_specials(tmp_path):
    small(specials=("<|endoftext|>",)).export("gpt2", tmp_path / "known")
    (tmp_path / "known" / "bpe-workbench.json").unlink()
    assert formats.load(tmp_path / "known").special_tokens == {"<|endoftext|>": 261}
    small(specials=("<custom>",)).export("gpt2", tmp_path / "odd")
    (tmp_path / "odd" / "bpe-workbench.json").unlink()
    with pytest.raises(TokenizerFileError, match="no merge in merges.txt makes it"):
        formats.load(tmp_path / "odd")


def test_check_can_hold_refuses_before_training(tmp_path, capsys):
    formats.check_can_hold(["gpt2", "hf", "tiktoken"], PRESETS["gpt2"], ["\n\n", "a b"])
    with pytest.raises(TokenizerError, match="minbpe cannot store"):
        formats.check_can_hold(["minbpe"], PRESETS["gpt2"], ["a b"])
    with pytest.raises(TokenizerError, match="line break"):
        formats.check_can_hold(["minbpe"], "a|\n|b", [])
    corpus = tmp_path / "c.txt"
    corpus.write_text("hello world " * 50, "utf-8")
    out = tmp_path / "out"
    argv = ["train", str(corpus), "--vocab-size", "300", "--out", str(out), "--no-db"]
    one_line_error(capsys, [*argv, "--format", "minbpe", "--special", "a b"], "minbpe")
    assert not out.exists()  # refused before counting, nothing written


def test_minbpe_basic_tokenizer_means_no_pre_tokenization(tmp_path):
    path = tmp_path / "tokenizer.model"
    path.write_text("minbpe v1\n\n0\n32 97\n256 98\n", "utf-8")  # ' a', ' ab'
    tok = formats.load(path)
    assert tok.pattern == NO_SPLIT
    # One piece: " ab" merges across what the gpt2 pattern would split (" a" + "b" stays " ab").
    assert tok.encode("x ab ab") == [ord("x"), 257, 257]
    tok.export("minbpe", tmp_path / "again")
    assert (tmp_path / "again" / "tokenizer.model").read_text("utf-8").split("\n")[1] == ""


def test_hf_options_that_change_encoding_are_refused(tmp_path):
    for change, needle in [
        (lambda d: d["model"].__setitem__("dropout", 0.1), "dropout"),
        (lambda d: d["model"].__setitem__("continuing_subword_prefix", "##"), "prefix"),
        (lambda d: d["model"].__setitem__("end_of_word_suffix", "</w>"), "suffix"),
        (lambda d: d["model"].__setitem__("byte_fallback", True), "byte fallback"),
        (lambda d: d.__setitem__("normalizer", {"type": "NFKC"}), "normalizer"),
        (lambda d: d.__setitem__("pre_tokenizer", {"type": "Whitespace"}), "Whitespace"),
        (lambda d: d.__setitem__("pre_tokenizer", {"type": "Sequence"}), "pretokenizers"),
        (
            lambda d: d.__setitem__("pre_tokenizer", {"type": "Sequence", "pretokenizers": [1]}),
            "object",
        ),
    ]:
        doc = hf_doc(small())
        change(doc)
        path = write_json(tmp_path / "tokenizer.json", doc)
        with pytest.raises(TokenizerFileError, match=needle):
            formats.load(path)


def test_duplicate_merges_are_refused(tmp_path):
    doc = hf_doc(small())
    doc["model"]["merges"].append(doc["model"]["merges"][0])
    path = write_json(tmp_path / "tokenizer.json", doc)
    with pytest.raises(TokenizerFileError, match="listed twice"):
        formats.load(path)
    small().export("gpt2", tmp_path / "g")
    merges = tmp_path / "g" / "merges.txt"
    merges.write_text(merges.read_text("utf-8") + "a b\n", "utf-8")
    with pytest.raises(TokenizerFileError, match="listed twice"):
        formats.load(tmp_path / "g")


# --- 12. patterns from files: coverage and catastrophic backtracking ---------------------------


def test_a_pattern_that_drops_characters_is_refused_everywhere(tmp_path, capsys):
    with pytest.raises(PatternError, match="does not cover every character"):
        compile_pattern(r"\p{L}+")
    from workbench.engine.config import TrainConfig

    with pytest.raises((ConfigError, PatternError), match="does not cover"):
        TrainConfig(pattern=r"\p{L}+")
    doc = hf_doc(small())
    doc["pre_tokenizer"]["pretokenizers"][0]["pattern"]["Regex"] = r"\p{L}+"
    path = write_json(tmp_path / "tokenizer.json", doc)
    text = tmp_path / "in.txt"
    text.write_text("Hello, world 123!", "utf-8")
    one_line_error(capsys, ["encode", "--tokenizer", str(path), str(text)], str(path), "'!'")


def test_a_pattern_that_drops_text_only_in_context_refuses_the_text(tmp_path, capsys):
    # Covers every probe character (alone and in the probe), yet skips a space before a digit:
    # what a damaged minbpe file's pattern did. Encoding must refuse, not drop the space.
    pattern = r"\S+|\s+(?![0-9])"
    compile_pattern(pattern)
    tok = Tokenizer.from_merges([(b"a", b"b")], pattern)
    assert tok.decode(tok.encode("ab cd")) == "ab cd"
    with pytest.raises(TokenizerError, match=r"no piece at character 2 of the text \(' 12'\)"):
        tok.encode("ab 12")
    with pytest.raises(TokenizerError, match="no piece at character 2"):
        tok.encode_batch(["x y", "ab 12"])  # the second text
    lines = ["minbpe v1", pattern, "0", "97 98", ""]
    model = tmp_path / "tokenizer.model"
    model.write_text("\n".join(lines), "utf-8")
    text = tmp_path / "in.txt"
    text.write_text("Hello wörld 123", "utf-8")
    one_line_error(capsys, ["encode", "--tokenizer", str(model), str(text)], "pattern", "' 123'")


def test_a_catastrophic_pattern_does_not_hang_encode(tmp_path, capsys, monkeypatch):
    from workbench.engine.encode import pieces

    monkeypatch.setattr(pieces, "TIMEOUT_BASE", 0.5)
    doc = hf_doc(small())
    doc["pre_tokenizer"]["pretokenizers"][0]["pattern"]["Regex"] = r"(a|aa)+$|\S|\s"
    path = write_json(tmp_path / "tokenizer.json", doc)
    text = tmp_path / "in.txt"
    text.write_text("a" * 41 + "!", "utf-8")
    argv = ["encode", "--tokenizer", str(path), str(text)]
    one_line_error(capsys, argv, "(a|aa)+$", "backtracks", "aaaa")


def test_tiktoken_file_garbage_lines(tmp_path):
    path = tmp_path / "x.tiktoken"
    good = [f"{base64.b64encode(bytes([b])).decode()} {b}" for b in range(256)]
    for bad in ["!!!! 256", "YQ== 256 7", "YQ==", "YWI= 100"]:  # (a gap, as "YWI= 300", is fine)
        path.write_text("\n".join([*good, bad]) + "\n", "utf-8")
        with pytest.raises(TokenizerFileError, match=f"{path}"):
            formats.load(path)


def test_a_trained_run_reloads_with_its_pattern_and_specials(tmp_path, capsys):
    """The issue: `--pattern o200k` reloaded as gpt2, and `###` made `encode` fail."""
    corpus = tmp_path / "c.txt"
    corpus.write_text("Hello world ### it's 2024\n\n" * 40, "utf-8")
    out = tmp_path / "out"
    argv = ["train", str(corpus), "--vocab-size", "300", "--out", str(out), "--no-db"]
    assert main([*argv, "--pattern", "o200k", "--special", "###", "--special", "\n\n"]) == 0
    tok = formats.load(out)
    assert tok.pattern == PRESETS["o200k"]
    assert set(tok.special_tokens) == {"###", "\n\n"}
    capsys.readouterr()
    assert main(["encode", "--tokenizer", str(out), "--allow-special", str(corpus)]) == 0
    ids = [int(x) for x in capsys.readouterr().out.split()]
    assert tok.decode(ids) == corpus.read_text("utf-8")
    assert tok.special_tokens["###"] in ids
