"""The pure-Python encoder a first use runs while the fast encoder compiles gives the compiled
encoder's ids exactly, on real and awkward text, for each reference rank file on this machine."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from workbench.engine.python_encoder import PythonEncoder
from workbench.evaluate import references
from workbench.evaluate.specs import python_candidates, resolve

AWKWARD = [
    "",
    "hello world",
    "  leading and trailing spaces   \n\n\t\r\n",
    "numbers 1234567 3.14159 and 2024-11-27, 100000000000",
    "don't it's WE'LL I'M they've",
    "naïve café — 東京 ÅNGSTRÖM's 12345 😀👍🏽 🇫🇷 \u0301e\u0301",
    "Привет мир! مرحبا بالعالم नमस्ते दुनिया สวัสดีชาวโลก",
    "a<|endoftext|>b <|endoftext|><|endoftext|> <|endofprompt|>x",
    "lone \ud800 surrogate and a pair \ud83d\ude00",
    "x" * 3000 + " " + "ab" * 500,
    "if (x == 0) {\n\treturn -1;\n}\n" * 20,
]


def _available(name: str) -> PythonEncoder:
    encoder = references.python_reference(name)
    if encoder is None:
        pytest.skip(
            f"the {name} rank file is not on this machine (bpe-openai ships cl100k and o200k;"
            " gpt2's is r50k_base.tiktoken in tiktoken's cache)"
        )
    return encoder


@pytest.fixture(scope="module", params=["cl100k", "o200k", "gpt2"])
def pair(request):
    python = _available(request.param)
    return python, references.load_reference(request.param)


def _same(python: PythonEncoder, compiled, text: str) -> None:
    expected = compiled.encode_array(text, "all")
    got = python.encode_array(text, "all")
    assert got.dtype == np.int32
    assert got.tolist() == expected.tolist(), text[:80]


def test_python_ids_equal_the_compiled_encoders_on_awkward_text(pair):
    python, compiled = pair
    for text in AWKWARD:
        _same(python, compiled, text)
    # What evaluation reads off a tokenizer is the same too.
    assert python.vocab_size == compiled.vocab_size
    assert python.merge_count == len(compiled.merges)
    assert python.special_tokens == compiled.special_tokens
    assert python.pattern == compiled.pattern


def test_python_ids_equal_on_real_corpora(pair, corpora: Path):
    python, compiled = pair
    for name in ("corpus.en", "german.txt", "taylorswift.txt", "tinystories_sample.txt"):
        text = (corpora / name).read_text(encoding="utf-8")
        _same(python, compiled, text)
    # Again with a full piece cache that had to start afresh.
    python._cache.update({f"no piece {i}": (0,) for i in range(1 << 18)})  # noqa: SLF001
    _same(python, compiled, (corpora / "corpus.en").read_text(encoding="utf-8"))


@given(st.text(alphabet=st.characters(blacklist_categories=("Cs",)), max_size=200))
def test_python_ids_equal_on_random_text(text):
    python = _available("cl100k")
    compiled = _compiled("cl100k")
    _same(python, compiled, text)


_LOADED: dict = {}


def _compiled(name: str):
    if name not in _LOADED:
        _LOADED[name] = references.load_reference(name)
    return _LOADED[name]


def test_only_the_all_specials_mode_is_offered():
    python = _available("cl100k")
    with pytest.raises(ValueError, match="all"):
        python.encode_array("x", frozenset())


def test_candidates_in_python_read_as_the_loaded_ones():
    found = python_candidates(["cl100k"])
    if found is None:
        pytest.skip("the cl100k rank file is not on this machine")
    loaded = resolve("cl100k")
    (quick,) = found
    assert (quick.name, quick.kind, quick.label) == (loaded.name, loaded.kind, loaded.label)
    assert (quick.vocab_size, quick.id_space) == (loaded.vocab_size, loaded.id_space)
    assert quick.merge_count == loaded.merge_count
    assert python_candidates(["cl100k", "run:1"]) is None
    assert python_candidates(["cl100k", "cl100k"]) is None


def test_eval_on_a_first_use_starts_in_python_with_the_same_figures(
    corpora, tmp_path, capsys, monkeypatch
):
    from workbench.cli import main
    from workbench.engine import warmup
    from workbench.evaluate import specs
    from workbench.session import startup

    _available("cl100k")
    _compiled("cl100k").encode_array("warm", "all")  # the compiled encoder, in this process
    text = str(corpora / "taylorswift.txt")
    assert main(["eval", "--tokenizer", "cl100k", text, "--json", str(tmp_path / "w.json")]) == 0
    assert "Python" not in capsys.readouterr().err  # warm: the compiled encoder, silently
    # A first use: the encoder not compiled (and no helper started by a test).
    monkeypatch.setattr(startup, "missing", lambda wanted: list(wanted))
    monkeypatch.setattr(warmup, "start_detached", lambda *args: None)
    used: list = []
    real = specs.python_candidates
    monkeypatch.setattr(specs, "python_candidates", lambda s: used.append(s) or real(s))
    assert main(["eval", "--tokenizer", "cl100k", text, "--json", str(tmp_path / "c.json")]) == 0
    said = capsys.readouterr().err
    assert used == [["cl100k"]]
    assert "preparing the cl100k encoder in the background (first use, about" in said
    assert "encoding starts at once in Python" in said
    assert (tmp_path / "c.json").read_text() == (tmp_path / "w.json").read_text()
    # Token health reads the tokenizer's tables: that job waits for the compiled encoder.
    monkeypatch.setattr(startup, "ensure", lambda *args, **kwargs: [])
    used.clear()
    argv = ["eval", "--tokenizer", "cl100k", text, "--health", "--json", str(tmp_path / "h.json")]
    assert main(argv) == 0
    assert used == [] and "Python" not in capsys.readouterr().err
