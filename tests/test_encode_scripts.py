"""Multilingual text through the fused encoder (issue 31, item 2): Thai, Arabic, Indic, Cyrillic,
CJK and mixed text, as sentences and as random long pieces, gives tiktoken's ids for each preset
with its own ranks (GPT-2's, cl100k's, o200k's); the filters in front of the pair and
whole-token tables never turn a key of the table away; the merging kernels' disk caches follow
the table code they compile in."""

from __future__ import annotations

import base64
import gzip
import importlib.resources

import numpy as np
import pytest
import tiktoken
from _bpe_helpers import EXAMPLES
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from workbench.engine import formats
from workbench.engine._native.cache_keys import kernels_of, sources_digest
from workbench.engine.encode import _chars, _merge, _tables
from workbench.engine.encode.tokenizer import Tokenizer
from workbench.engine.patterns.regexes import CL100K, GPT2, O200K

SENTENCES = {
    "thai": "ระบบจะบันทึกไฟล์โดยอัตโนมัติทุกห้านาที หากต้องการยกเลิกให้กดปุ่มหยุดก่อนปิดหน้าต่าง",
    "arabic": "لا يمكن فتح الملف المطلوب، تأكد من وجوده ومن صلاحيات القراءة ثم حاول مرة أخرى.",
    "persian": "برای ادامه نصب، لطفاً شرایط مجوز را بخوانید و دکمهٔ پذیرش را بزنید.",
    "hindi": "फ़ाइल को सहेजा नहीं जा सका क्योंकि डिस्क पर पर्याप्त स्थान उपलब्ध नहीं है।",
    "bengali": "নেটওয়ার্ক সংযোগ বিচ্ছিন্ন হয়েছে, অনুগ্রহ করে আবার চেষ্টা করুন।",
    "tamil": "கோப்பைத் திறக்க முடியவில்லை: அனுமதி மறுக்கப்பட்டது.",
    "russian": "Не удалось подключиться к серверу: превышено время ожидания ответа.",
    "ukrainian": "Налаштування збережено, зміни наберуть чинності після перезапуску програми.",
    "chinese": "无法打开配置文件，请检查路径是否正确以及当前用户是否具有读取权限。",
    "japanese": "設定ファイルを読み込めませんでした。パスとアクセス権を確認してください。",
    "korean": "설정 파일을 열 수 없습니다. 경로와 읽기 권한을 확인하십시오.",
    "mixed": "Error 404: 页面未找到 — страница не найдена (ไม่พบหน้า) صفحه یافت نشد 42×",
}

# Script blocks for random pieces: whole runs of letters become one piece (cl100k's `\p{L}+`),
# so long random runs reach the heap merger (over 64 bytes) and the uncached pieces (255).
BLOCKS = {
    "thai": (0x0E01, 0x0E5B),
    "devanagari": (0x0900, 0x097F),
    "arabic": (0x0600, 0x06FF),
    "cyrillic": (0x0400, 0x04FF),
    "han": (0x4E00, 0x9FFF),
    "hangul": (0xAC00, 0xD7A3),
    "kana": (0x3040, 0x30FF),
}

runs = st.sampled_from(sorted(BLOCKS)).flatmap(
    lambda name: st.text(
        alphabet=st.characters(min_codepoint=BLOCKS[name][0], max_codepoint=BLOCKS[name][1]),
        min_size=1,
        max_size=160,
    )
)
texts = st.lists(runs | st.sampled_from([" ", "\n", ", ", "1", "a"]), max_size=6).map("".join)


def _openai_ranks(name: str) -> dict[int, bytes]:
    """rank -> bytes from the `bpe-openai` wheel (the `test` extra), never from the network."""
    pytest.importorskip("bpe_openai")
    path = importlib.resources.files("bpe_openai") / "data" / f"{name}.tiktoken.gz"
    ranks: dict[int, bytes] = {}
    with gzip.open(str(path), "rt", encoding="ascii") as handle:
        for line in handle:
            token, rank = line.split()
            ranks[int(rank)] = base64.b64decode(token)
    return ranks


@pytest.fixture(scope="module")
def encoders(corpora) -> dict[str, tuple[Tokenizer, tiktoken.Encoding]]:
    """Per preset: ours (the scanner path) and tiktoken on the same ranks."""
    gpt2 = formats.load(corpora / "gpt2_vocab.json", pattern=GPT2)
    out = {"gpt2": (gpt2, {token: tid for tid, token in gpt2.vocab.items()}, GPT2)}
    for name, pattern in (("cl100k", CL100K), ("o200k", O200K)):
        ranks = _openai_ranks(f"{name}_base")
        out[name] = (
            Tokenizer.from_ranks(ranks, pattern),
            {b: r for r, b in ranks.items()},
            pattern,
        )
    built = {}
    for name, (ours, ranks, pattern) in out.items():
        assert ours.splitter == "scanner"
        enc = tiktoken.Encoding(name, pat_str=pattern, mergeable_ranks=ranks, special_tokens={})
        built[name] = (ours, enc)
    return built


@pytest.mark.parametrize("preset", ["gpt2", "cl100k", "o200k"])
def test_sentences_of_every_script_equal_tiktoken(encoders, preset: str) -> None:
    ours, enc = encoders[preset]
    for script, sentence in SENTENCES.items():
        for text in (sentence, sentence.replace(" ", "") * 6, "\n".join([sentence] * 3)):
            want = enc.encode_ordinary(text)
            # A new instance (empty piece cache) and the same one again (its pieces cached).
            fresh = ours.with_splitter("auto")
            assert fresh.encode_ordinary(text) == want, (preset, script)
            assert fresh.encode_array(text, disallowed_special=()).tolist() == want
    everything = " ".join(SENTENCES.values())
    assert ours.with_splitter("auto").encode_ordinary(everything) == enc.encode_ordinary(everything)


@settings(max_examples=EXAMPLES, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(texts)
def test_random_long_pieces_equal_tiktoken(encoders, text: str) -> None:
    for preset, (ours, enc) in encoders.items():
        assert ours.with_splitter("auto").encode_ordinary(text) == enc.encode_ordinary(text), preset
        # The regex path merges through the same kernels, piece by piece.
        assert ours.with_splitter("regex").encode_ordinary(text) == enc.encode_ordinary(text)


def test_filters_keep_every_key_and_turn_most_others_away(encoders) -> None:
    rng = np.random.default_rng(7)
    for preset, (ours, _) in encoders.items():
        tables = ours._core.tables
        whole, pairs, pair_bits, whole_bits = tables[4], tables[5], tables[8], tables[9]
        for table, bits in ((pairs[:, 0], pair_bits), (whole[whole[:, 1] >= 0, 0], whole_bits)):
            keys = table[table != -1]
            assert _in_filter_all(bits, keys).all(), preset
            absent = rng.integers(0, 2**62, 20_000)
            absent = absent[~np.isin(absent, keys)]
            assert _in_filter_all(bits, absent).mean() < 0.15, preset  # a filter, not all ones


def _in_filter_all(bits: np.ndarray, keys: np.ndarray) -> np.ndarray:
    """`_tables.in_filter` of many keys at once (its Python body works on arrays)."""
    with np.errstate(over="ignore"):
        spread = keys.astype(np.uint64) * _tables._GOLDEN
    return _tables.in_filter.py_func(bits, spread)


def test_every_merging_kernel_is_keyed_on_the_table_code() -> None:
    """`merge_piece` and its helpers inline `_tables`' probes, `_chars.char_token` and the
    unchecked reads (`unchecked`, `scan_ir`): an edit to those must not load their old machine
    code into a caller compiled afresh."""
    digest = sources_digest((_tables, _chars, _merge.unchecked, _merge.scan_ir))
    kernels = kernels_of(_merge)
    assert {"merge_piece", "_merge_short", "_merge_long", "encode_pieces"} <= {
        kernel.__name__ for kernel in kernels
    }
    for kernel in kernels:
        cache_file = getattr(getattr(kernel, "_cache", None), "_cache_file", None)
        if cache_file is None:
            pytest.skip("Numba caching is off")
        assert cache_file._source_stamp[1] == digest, kernel.__name__
