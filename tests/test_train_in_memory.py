"""Training from documents in memory: strings, batches of strings, rows as dicts, Datasets,
IterableDatasets and arrow tables give the same counts and merges as the same documents written
as a JSONL file (each document a record, no piece crossing into the next), through the same
scanner; cancelling stops between units; bad items are named."""

from __future__ import annotations

import _thread
import json
import subprocess
import sys
import threading
from pathlib import Path

import pyarrow as pa
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import workbench
from workbench.engine.config import TrainConfig
from workbench.engine.corpus import memory, units
from workbench.engine.errors import CancelledError, ConfigError, CorpusError
from workbench.engine.pretokenize.counting import count_corpus, count_in_memory
from workbench.engine.pretokenize.scan import can_scan

SPECIAL = "<|endoftext|>"
DOCS = [
    "The cat sat on the mat.",
    "the end",  # a document ending in a letter: its last piece must not run into the next
    "and then",
    "",
    "  spaces   before and after  ",
    f"one{SPECIAL}two {SPECIAL} three",
    "naïve café — 日本語のテキスト 123 4567",
    "line one\nline two\r\n\ttabbed",
    "x" * 50 + " y",
]


def _jsonl(tmp_path: Path, docs: list[str]) -> Path:
    path = tmp_path / "docs.jsonl"
    path.write_text("".join(json.dumps({"text": d}) + "\n" for d in docs), encoding="utf-8")
    return path


def _counts(result) -> dict[bytes, int]:
    return result.words.to_dict()


def _from_file(tmp_path: Path, docs: list[str], config: TrainConfig) -> dict[bytes, int]:
    return _counts(count_corpus([_jsonl(tmp_path, docs)], config, workers=2))


@pytest.fixture(params=["gpt2", "cl100k", "o200k"])
def config(request) -> TrainConfig:
    return TrainConfig(vocab_size=300, pattern=request.param, special_tokens=(SPECIAL,))


def _kinds(docs: list[str]) -> dict[str, object]:
    datasets = pytest.importorskip("datasets")
    table = pa.table({"id": list(range(len(docs))), "text": docs})
    return {
        "list": list(docs),
        "generator": (d for d in docs),
        "batches": [docs[i : i + 4] for i in range(0, len(docs), 4)],
        "tuples": iter([tuple(docs)]),
        "rows": [{"text": d, "n": 1} for d in docs],
        "table": table,
        "chunked": pa.concat_tables([table.slice(0, 3), table.slice(3)]),
        "record batch": table.to_batches()[0] if len(docs) else table,
        "large strings": pa.array(docs, pa.large_string()),
        "dataset": datasets.Dataset.from_dict({"text": docs, "n": list(range(len(docs)))}),
        "iterable dataset": datasets.Dataset.from_dict({"text": docs}).to_iterable_dataset(),
        "generated iterable": datasets.IterableDataset.from_generator(
            _rows, gen_kwargs={"docs": docs}
        ),
    }


def _rows(docs: list[str]):
    for d in docs:
        yield {"text": d}


KINDS = [
    "list",
    "generator",
    "batches",
    "tuples",
    "rows",
    "table",
    "chunked",
    "record batch",
    "large strings",
    "dataset",
    "iterable dataset",
    "generated iterable",
]


@pytest.mark.parametrize("kind", KINDS)
def test_each_input_kind_counts_as_the_jsonl_file(tmp_path, config, kind) -> None:
    want = _from_file(tmp_path, DOCS, config)
    got = count_in_memory(_kinds(DOCS)[kind], config, workers=2)
    assert _counts(got) == want
    assert got.stats.documents == len(DOCS)
    # the document boundary cuts: "end" and "and" are never joined into one piece
    assert b"endand" not in want and b" end" in want


@pytest.mark.parametrize("kind", ["list", "dataset", "table"])
def test_units_are_bounded_and_large_documents_cut_as_files_are(
    tmp_path, config, kind, monkeypatch
) -> None:
    """With tiny units every path is taken: packs cut between documents, slices of an arrow
    block, a document larger than a unit cut at safe points (counted in parallel); no unit is
    much larger than a unit however large the corpus."""
    monkeypatch.setattr(units, "UNIT_BYTES", 64)
    docs = [*DOCS, "word " * 200 + SPECIAL + " tail", "Zebra " * 30, *DOCS]
    want = _from_file(tmp_path, docs, config)
    sizes: list[int] = []
    original = units.records_unit

    def spy(data, offsets, specials):
        sizes.append(len(data))
        return original(data, offsets, specials)

    monkeypatch.setattr(units, "records_unit", spy)
    got = count_in_memory(_kinds(docs)[kind], config, workers=2)
    assert _counts(got) == want
    assert got.stats.documents == len(docs)
    if can_scan(config.pattern_string):  # (BPE_WORKBENCH_PORTABLE=1: the regex path, no units)
        assert len(sizes) > 3 and max(sizes) < 64 + 60  # packs close once a unit's worth is in


def test_train_gives_the_same_merges_as_the_file(tmp_path) -> None:
    datasets = pytest.importorskip("datasets")
    docs = [
        f"document {i}: the quick brown fox jumps over the lazy dog {i * 7}" for i in range(300)
    ]
    args = dict(vocab_size=320, special_tokens=[SPECIAL], progress=False)
    want = workbench.train(_jsonl(tmp_path, docs), **args)
    for corpus, column in (
        (docs, "text"),
        (iter([docs[:100], docs[100:]]), "text"),
        (datasets.Dataset.from_dict({"body": docs}), "body"),
        (pa.table({"body": docs}), "body"),
    ):
        got = workbench.train(corpus, text_column=column, **args)
        assert got.merges == want.merges
        assert got.stats.documents == want.stats.documents == 300
        assert got.stats.pieces == want.stats.pieces


def test_a_custom_pattern_keeps_the_regex_path(tmp_path) -> None:
    config = TrainConfig(vocab_size=300, pattern=r"\w+|\s+|[^\w\s]+", special_tokens=(SPECIAL,))
    want = _from_file(tmp_path, DOCS, config)
    for kind in ("list", "batches", "table", "dataset"):
        assert _counts(count_in_memory(_kinds(DOCS)[kind], config)) == want, kind


@settings(
    max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    docs=st.lists(
        st.lists(
            st.sampled_from(["ab", " Z", "\n", "\t", ".", ",", "'s", " 1", "é", "日", " ", SPECIAL])
            | st.text(max_size=4),
            max_size=12,
        ).map("".join),
        min_size=1,
        max_size=12,
    ),
    unit=st.sampled_from([8, 33, 1 << 21]),
)
def test_random_documents_count_as_the_jsonl_file(tmp_path_factory, docs, unit) -> None:
    config = TrainConfig(vocab_size=300, pattern="gpt2", special_tokens=(SPECIAL,))
    tmp = tmp_path_factory.mktemp("h")
    try:  # the file is the reference: where it holds no text (empty, or specials only), so must memory
        want = _from_file(tmp, docs, config)
    except CorpusError:
        want = None
    saved = units.UNIT_BYTES
    units.UNIT_BYTES = unit
    try:
        if want is None:
            with pytest.raises(CorpusError, match="no text"):
                count_in_memory(docs, config, workers=2)
            return
        assert _counts(count_in_memory(docs, config, workers=2)) == want
        assert _counts(count_in_memory(pa.array(docs), config, workers=2)) == want
    finally:
        units.UNIT_BYTES = saved


def test_cancel_stops_between_units(monkeypatch) -> None:
    monkeypatch.setattr(units, "UNIT_BYTES", 256)
    config = TrainConfig(vocab_size=300)
    read = 0

    def docs():
        nonlocal read
        for i in range(100_000):
            read += 1
            yield f"text number {i} "

    asked = 0

    def cancel() -> bool:
        nonlocal asked
        asked += 1
        return asked > 3

    before = threading.active_count()
    with pytest.raises(CancelledError):
        count_in_memory(docs(), config, cancel=cancel, workers=2)
    assert read < 1000  # stopped after a few units, not at the end of the stream
    assert threading.active_count() == before


def test_ctrl_c_inside_the_documents_stops_with_no_thread_left(monkeypatch) -> None:
    monkeypatch.setattr(units, "UNIT_BYTES", 256)

    def docs():
        for i in range(10_000):
            if i == 500:
                raise KeyboardInterrupt
            yield f"text number {i} "

    before = threading.active_count()
    with pytest.raises(KeyboardInterrupt):
        count_in_memory(docs(), TrainConfig(vocab_size=300), workers=2)
    assert threading.active_count() == before


def test_progress_counts_documents() -> None:
    seen: list[int] = []
    count_in_memory(["a b"] * 5000, TrainConfig(vocab_size=300), progress=seen.append)
    assert seen and seen[-1] == 5000 and seen == sorted(seen)


@pytest.mark.parametrize(
    ("corpus", "message"),
    [
        (["fine", 3], "item 2 is int, not str"),
        ([["fine", b"bytes"]], "item 1, element 1 is bytes, not str"),
        ([{"body": "x"}], 'item 1 has no "text"'),
        (["ok", "bad \ud800 here"], r"document 2 holds a lone surrogate \(\\ud800\)"),
        (pa.table({"text": ["a", None]}), "row 1: the text is null"),
        (pa.table({"text": [1, 2]}), "holds int64, not strings"),
    ],
)
def test_bad_items_are_named(corpus, message) -> None:
    with pytest.raises(CorpusError, match=message):
        count_in_memory(corpus, TrainConfig(vocab_size=300))


def test_a_missing_column_or_a_dataset_dict_is_a_usage_error() -> None:
    datasets = pytest.importorskip("datasets")
    with pytest.raises(ConfigError, match='no column "text" \\(columns: body\\)'):
        workbench.train(pa.table({"body": ["x"]}), 300, progress=False)
    unknown = datasets.IterableDataset.from_generator(_body_rows)  # columns unknown until read
    assert unknown.column_names is None
    with pytest.raises(ConfigError, match='no column "text" \\(columns: body\\)'):
        workbench.train(unknown, 300, progress=False)
    splits = datasets.DatasetDict({"train": datasets.Dataset.from_dict({"text": ["a"]})})
    with pytest.raises(ConfigError, match="holds splits \\('train'\\)"):
        workbench.train(splits, 300, progress=False)
    assert memory.row_count(splits) is None


def test_a_shuffled_or_selected_dataset_counts_its_own_rows(tmp_path, config) -> None:
    datasets = pytest.importorskip("datasets")
    whole = datasets.Dataset.from_dict({"text": DOCS})
    picked = whole.shuffle(seed=3).select(range(5))
    want = _from_file(tmp_path, list(picked["text"]), config)
    assert _counts(count_in_memory(picked, config, workers=2)) == want


STREAM_SCRIPT = """
import json, random, resource, sys
from workbench.engine.config import TrainConfig
from workbench.engine.pretokenize.counting import count_in_memory
rng = random.Random(1)
vocab = ["".join(rng.choice("abcdefghij") for _ in range(rng.randint(2, 9))) for _ in range(3000)]
block = [" ".join(rng.choice(vocab) for _ in range(14)) for _ in range(8000)]  # ~1 MB
def documents():
    for _ in range(int(sys.argv[1])):
        yield from block
result = count_in_memory(documents(), TrainConfig(vocab_size=300), workers=2)
print(json.dumps({"unique": len(result.words), "pieces": result.stats.pieces,
                  "rss": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024}))
"""


def test_a_stream_of_documents_is_counted_in_bounded_memory() -> None:
    """Twice the documents from a generator (the same unique pieces) must not raise the peak
    resident memory: units are packed and counted as they come, never all joined."""
    peaks = []
    for megabytes in (24, 48):
        out = subprocess.run(
            [sys.executable, "-c", STREAM_SCRIPT, str(megabytes)],
            capture_output=True,
            text=True,
            check=True,
        )
        peaks.append(json.loads(out.stdout))
    a, b = peaks
    assert a["unique"] == b["unique"] and b["pieces"] > 1.9 * a["pieces"]
    assert b["rss"] - a["rss"] < 12 << 20, (a, b)


def _body_rows():
    yield {"body": "hello world"}


def test_ctrl_c_while_counting_a_stream_stops_train(monkeypatch) -> None:
    """A real Ctrl-C (SIGINT's KeyboardInterrupt in the main thread) during counting of an
    endless stream: `train` stops between units and leaves no counting thread running."""
    monkeypatch.setattr(units, "UNIT_BYTES", 4096)
    produced = 0

    def endless():
        nonlocal produced
        while True:
            produced += 1
            yield f"text number {produced} and more "

    before = threading.active_count()
    timer = threading.Timer(0.5, _thread.interrupt_main)
    timer.start()
    with pytest.raises(KeyboardInterrupt):
        workbench.train(endless(), 300, progress=False)
    timer.join()
    assert produced > 0
    assert threading.active_count() == before
