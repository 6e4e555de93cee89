"""Tokenizer files: `export(tokenizer, fmt, out_dir)` and `load(path)` with format detection.

One module per format (`hf_json`, `gpt2_files`, `tiktoken_file`, `minbpe_model`); each has
`export(tokenizer, out_dir) -> list[Path]` and a `load`. Files that carry no pattern (GPT-2 files
or a tiktoken file without their sidecar) take `pattern` (default: the gpt2 preset); a file's
own pattern always wins. SentencePiece `.model` files are not byte-level regex BPE and are refused.

Everything read from a file is checked before a tokenizer is built from it (ids: `ids.py`;
specials, merges, vocabulary: `Tokenizer.from_vocab_merges`); any problem is a one-line
`TokenizerFileError` naming the file. `check_can_hold` tells before training whether the chosen
formats can store the pattern and specials.

The work is in `files` (export, load, detection) over one module per format; names resolve on
first use (see `engine._facade`), so `formats.outputs` (staged writing) loads no encoder.
"""

from workbench.engine._facade import lazy_exports

__all__ = ["FORMATS", "check_can_hold", "export", "exporter", "load"]

__getattr__, __dir__ = lazy_exports(__name__, dict.fromkeys(__all__, "files"))
