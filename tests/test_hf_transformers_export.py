"""The `hf` export is transformers-ready: `AutoTokenizer.from_pretrained(folder)` loads it, gives
our ids and pads, on the installed transformers and (slow, when that venv exists) on 4.46."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

import workbench
from workbench.cli import main
from workbench.engine.encode.special_roles import choose_roles
from workbench.engine.encode.tokenizer import Tokenizer
from workbench.engine.errors import TokenizerError

transformers = pytest.importorskip("transformers")

TEXTS = ["Hello world, the theory.", "the", "<|endoftext|> and then", "naïve 東京 🙂\r\n\tx"]
MERGES = [(b"t", b"h"), (b"th", b"e"), (b" ", b"the"), (b"o", b"r"), (b"e", b"or")]
# An older transformers (4.4x) in a venv of its own: `python -m venv /work/venv-tf4 &&
# /work/venv-tf4/bin/pip install "transformers==4.46.*"` (checked also with 4.44 and 4.57).
OLD_PYTHON = Path(os.environ.get("WORKBENCH_TF4_PYTHON", "/work/venv-tf4/bin/python"))


@pytest.fixture(scope="module")
def gpt_like() -> Tokenizer:
    return Tokenizer.from_merges(MERGES, "gpt2", ["<|endoftext|>"])


def _auto(folder: Path):
    return transformers.AutoTokenizer.from_pretrained(str(folder))


def test_auto_tokenizer_loads_the_export_and_pads(gpt_like: Tokenizer, tmp_path: Path) -> None:
    written = gpt_like.export("hf", tmp_path)
    assert sorted(p.name for p in written) == [
        "special_tokens_map.json",
        "token_bytes.npy",
        "tokenizer.json",
        "tokenizer_config.json",
    ]
    fast = _auto(tmp_path)
    assert [fast.encode(t) for t in TEXTS] == gpt_like.encode_batch(TEXTS, allowed_special="all")
    assert fast.eos_token == fast.bos_token == fast.pad_token == "<|endoftext|>"
    batch = fast(TEXTS, padding=True)
    width = max(map(len, batch["input_ids"]))
    assert all(len(row) == width for row in batch["input_ids"])
    assert batch["input_ids"][1][-1] == gpt_like.eot_token and batch["attention_mask"][1][-1] == 0
    assert fast.decode(fast.encode(TEXTS[3])) == TEXTS[3]  # no clean-up of spaces


def test_roles_are_found_by_name_or_given(tmp_path: Path) -> None:
    tok = Tokenizer.from_merges(MERGES, "gpt2", ["<s>", "</s>", "<pad>", "<mask>"])
    tok.export("hf", tmp_path / "auto")
    fast = _auto(tmp_path / "auto")
    assert (fast.bos_token, fast.eos_token, fast.pad_token) == ("<s>", "</s>", "<pad>")
    tok.export("hf", tmp_path / "given", bos=None, eos="<mask>", pad="<s>", model_max_length=8)
    config = json.loads((tmp_path / "given" / "tokenizer_config.json").read_text("utf-8"))
    assert config["eos_token"] == "<mask>" and "bos_token" not in config
    fast = _auto(tmp_path / "given")
    assert (fast.bos_token, fast.eos_token, fast.pad_token) == (None, "<mask>", "<s>")
    assert fast.model_max_length == 8


def test_choose_roles_by_name() -> None:
    assert choose_roles([]).as_dict() == {}
    one = choose_roles(["<|im_end|>"])
    assert (one.bos, one.eos, one.pad, one.unk) == ("<|im_end|>",) * 3 + (None,)
    llama = choose_roles(["<|begin_of_text|>", "<|end_of_text|>", "<|eot_id|>"])
    assert (llama.bos, llama.eos, llama.pad) == (
        "<|begin_of_text|>",
        "<|end_of_text|>",
        "<|end_of_text|>",
    )
    told = choose_roles(["<|endoftext|>"], pad=None).note
    assert "pad=-" in told and "bos, eos defaulted" in told and "\n" not in told
    assert "defaulted" not in choose_roles(["a"], bos="a", eos="a", pad="a").note


def test_a_bad_role_writes_nothing(gpt_like: Tokenizer, tmp_path: Path) -> None:
    with pytest.raises(TokenizerError, match=r"pad token '<pad>' is not a special token"):
        gpt_like.export("hf", tmp_path / "out", pad="<pad>")
    with pytest.raises(TokenizerError, match="unknown hf export options: colour"):
        gpt_like.export("hf", tmp_path / "out", colour="red")
    with pytest.raises(TokenizerError, match="format 'gpt2' takes no options"):
        gpt_like.export("gpt2", tmp_path / "out", pad="<|endoftext|>")
    assert not (tmp_path / "out").exists()


def test_no_specials_no_roles(tmp_path: Path) -> None:
    bare = Tokenizer.from_merges(MERGES, "gpt2")
    bare.export("hf", tmp_path)
    fast = _auto(tmp_path)
    assert fast.pad_token is None and fast.encode("the other") == bare.encode("the other")


def test_the_cli_takes_roles_and_prints_the_choice(
    gpt_like: Tokenizer, tmp_path: Path, capsys
) -> None:
    source = tmp_path / "src"
    gpt_like.export("hf", source)
    out = tmp_path / "out"
    argv = ["export", "--tokenizer", str(source), "--format", "hf", "--out", str(out)]
    assert main([*argv, "--bos", ""]) == 0
    captured = capsys.readouterr()
    assert "bos=- eos=<|endoftext|> pad=<|endoftext|>" in captured.err
    assert "tokenizer_config.json" in captured.out
    assert _auto(out).bos_token is None
    assert main([*argv, "--pad", "<pad>"]) == 2
    assert capsys.readouterr().err.count("\n") == 1
    gpt2_argv = [*argv[:4], "gpt2", "--out", str(tmp_path / "g"), "--eos", "<|endoftext|>"]
    assert main(gpt2_argv) == 2
    assert "only for --format hf" in capsys.readouterr().err


_OLD_SCRIPT = """
import json, sys
from transformers import AutoTokenizer
import transformers
folder, texts = sys.argv[1], json.loads(sys.argv[2])
fast = AutoTokenizer.from_pretrained(folder)
batch = fast(texts, padding=True)
print(json.dumps({"version": transformers.__version__, "ids": [fast.encode(t) for t in texts],
                  "padded": batch["input_ids"], "pad": fast.pad_token}))
"""


@pytest.mark.slow
@pytest.mark.skipif(not OLD_PYTHON.is_file(), reason=f"no transformers 4.x venv at {OLD_PYTHON}")
def test_an_older_transformers_loads_the_export(tmp_path: Path, corpora: Path) -> None:
    text = (corpora / "tinystories_sample.txt").read_text("utf-8")
    tok = workbench.train([text], 600, special_tokens=["<|endoftext|>"], progress=False).tokenizer
    tok.export("hf", tmp_path)
    texts = [*TEXTS, *text.splitlines()[:20]]
    done = subprocess.run(
        [str(OLD_PYTHON), "-c", _OLD_SCRIPT, str(tmp_path), json.dumps(texts)],
        capture_output=True,
        text=True,
        timeout=300,
        env={k: v for k, v in os.environ.items() if k != "PYTHONPATH"},
    )
    assert done.returncode == 0, done.stderr[-2000:]
    found = json.loads(done.stdout.strip().splitlines()[-1])
    assert found["version"].startswith("4."), found["version"]
    assert found["ids"] == tok.encode_batch(texts, allowed_special="all")
    assert found["pad"] == "<|endoftext|>"
    assert len({len(row) for row in found["padded"]}) == 1
    print(f"transformers {found['version']} in {OLD_PYTHON}: ids equal", file=sys.stderr)
