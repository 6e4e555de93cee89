"""The fast export path writes exactly what the plain one did: the tokenizer taken from the
trainer's tables equals the one rebuilt from its byte pairs, and vocab.json is byte for byte
`json.dumps(..., ensure_ascii=False, indent=1)`."""

from __future__ import annotations

import json

import pytest
from workbench.engine.encode.tokenizer import Tokenizer

import workbench
from workbench.engine import formats

TEXTS = [
    "aaabdaaabac " * 20,
    'the cat sat on the mat; "quoted" \\ back\\slash \t tab \u2028 café 東京 ' * 10,
    "abab ababab aaaa " * 15,
]


@pytest.fixture(scope="module")
def result():
    return workbench.train(TEXTS, vocab_size=300, special_tokens=["<|endoftext|>", "x"])


def test_tokenizer_from_trainer_tables_equals_rebuilt_from_bytes(result):
    rebuilt = Tokenizer.from_merges(result.merges, result.tokenizer.pattern, ["<|endoftext|>", "x"])
    assert result.tokenizer == rebuilt
    assert result.tokenizer.merge_results == rebuilt.merge_results
    for k in (0, 5, len(result.merges)):
        assert result.tokenizer.prefix(k) == rebuilt.prefix(k)
    sample = "".join(TEXTS)
    assert result.tokenizer.encode(sample) == rebuilt.encode(sample)


@pytest.mark.parametrize("fmt", ["gpt2", "hf"])
def test_json_files_are_what_json_dumps_writes(result, tmp_path, fmt):
    for path in formats.export(result.tokenizer, fmt, tmp_path):
        if path.suffix == ".json":
            text = path.read_text("utf-8")
            assert text == json.dumps(json.loads(text), ensure_ascii=False, indent=1) + "\n"
    assert formats.load(tmp_path) == result.tokenizer
