"""The window's Qt-free parts: chart buffers, search parsing, preview, settings, clocks."""

from __future__ import annotations

import math

import numpy as np
import pytest

from workbench.engine.events import MergeBatch
from workbench.gui.buffers import MAX_LENGTH_BIN, ChartData, GrowingArray
from workbench.gui.merge_table import parse_search
from workbench.gui.status import clock


def batch(start: int, tokens: list[bytes], corpus_tokens: list[int]) -> MergeBatch:
    n = len(tokens)
    return MergeBatch(
        start_rank=start,
        left=np.zeros(n, dtype=np.int32),
        right=np.zeros(n, dtype=np.int32),
        new_id=np.arange(256 + start, 256 + start + n, dtype=np.int32),
        count=np.arange(n, 0, -1, dtype=np.int64),
        is_new=np.ones(n, dtype=np.bool_),
        ties=np.zeros(n, dtype=np.int64),
        corpus_tokens=np.array(corpus_tokens, dtype=np.int64),
        tokens=tuple(tokens),
        vocab_size=256 + start + n,
        seconds=0.01,
    )


def test_growing_array_doubles_and_keeps_values():
    a = GrowingArray(np.int64, capacity=2)
    for i in range(10):
        a.extend([i])
    a.extend(np.arange(10, 100))
    assert a.view().tolist() == list(range(100))
    assert a.capacity == 128  # 2 -> 4 -> ... -> 128: doubled, not grown per append


def test_chart_data_compression_lengths_and_rate():
    data = ChartData()
    data.reset(corpus_bytes=1000)
    data.add(batch(0, [b"ab", b"abc"], [800, 700]), now=0.0)
    data.add(batch(2, [b"x" * 100], [500]), now=1.0)
    assert data.rank.view().tolist() == [0, 1, 2]
    assert data.bytes_per_token.view().tolist() == [1.25, 1000 / 700, 2.0]
    assert data.length_counts[2] == 1 and data.length_counts[3] == 1
    assert data.length_counts[MAX_LENGTH_BIN] == 1  # 100 bytes: the overflow bar
    assert data.rate.view().tolist() == [1.0]  # one merge in the second second
    assert data.index_at(7.4) == 2 and data.index_at(-3) == 0


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("the", {"text": "the"}),
        (" the", {"text": " the"}),
        ("/^·t/", {"regex": "^·t"}),
        ("hex:e2 80", {"hex": "e2 80"}),
        ("0xe280", {"hex": "0xe280"}),
        ("id:300", {"id_range": (300, 300)}),
        ("#300", {"id_range": (300, 300)}),
        ("len:3-5", {"length_range": (3, 5)}),
        ("", {}),
    ],
)
def test_parse_search(text, expected):
    assert parse_search(text).kwargs == expected


def test_parse_search_rejects_a_bad_id():
    with pytest.raises(ValueError, match="id:300"):
        parse_search("id:abc")


def test_preview_shows_pieces_and_whitespace():
    pytest.importorskip("PySide6")
    from workbench.gui.corpus_panel import preview_html

    html = preview_html(["Hello world\n"], "gpt2")
    assert ">Hello</span>" in html and ">·world</span>" in html and "⏎" in html


def test_clock():
    assert clock(75.2) == "1:15"
    assert clock(3725) == "1:02:05"


def test_settings_round_trip(tmp_path):
    pytest.importorskip("PySide6")
    from PySide6.QtCore import QSettings

    from workbench.gui import settings

    qs = QSettings(str(tmp_path / "s.ini"), QSettings.Format.IniFormat)
    values = settings.load(qs)
    assert values.vocab_size == 2000 and values.recent == []
    values.vocab_size = 4096
    values.remember_corpus(["/a.txt"])
    values.remember_corpus(["/b", "/c.txt"])
    values.remember_corpus(["/a.txt"])
    settings.save(qs, values)
    again = settings.load(QSettings(str(tmp_path / "s.ini"), QSettings.Format.IniFormat))
    assert again.vocab_size == 4096
    assert again.recent == [["/a.txt"], ["/b", "/c.txt"]]
    assert again.corpus == ["/a.txt"]


def test_corrupt_settings_fall_back_to_defaults(tmp_path):
    pytest.importorskip("PySide6")
    from PySide6.QtCore import QSettings

    from workbench.gui import settings

    qs = QSettings(str(tmp_path / "s.ini"), QSettings.Format.IniFormat)
    qs.setValue("corpus/recent", "{not json")
    qs.setValue("train/vocab_size", "lots")
    qs.sync()
    values = settings.load(qs)
    assert values.recent == []
    assert isinstance(values.vocab_size, int)


def test_preview_takes_the_first_files_inside_folders(tmp_path):
    pytest.importorskip("PySide6")
    from workbench.gui.corpus_panel import first_files

    (tmp_path / "b").mkdir()
    for name in ("b/2.txt", "b/1.txt", "a.txt", "c.txt"):
        (tmp_path / name).write_text(name, encoding="utf-8")
    assert first_files([tmp_path], 3) == [
        tmp_path / "a.txt",
        tmp_path / "b/1.txt",
        tmp_path / "b/2.txt",
    ]


def test_a_burst_of_cheap_merges_draws_no_speed_spike():
    """+100 on a reopened run makes 100 cheap merges in a millisecond: no 100,000 merges/s
    point; a rate is drawn only over a stretch long enough to mean something."""
    data = ChartData()
    data.add(batch(0, [b"a"], [10]), now=10.0)
    data.add(batch(1, [b"b"] * 100, [10] * 100), now=10.001)
    assert data.rate.view().tolist() == []
    data.add(batch(101, [b"c"] * 10, [10] * 10), now=10.5)
    (rate,) = data.rate.view().tolist()
    assert rate == pytest.approx(10 / 0.499)  # over the last stretch, as live


def test_log_ticks_never_crowd():
    from workbench.gui.evaluate.plots import compact, log_ticks

    for low, high in ((256, 300), (256, 50_000), (256, 200_019), (1000, 10**7)):
        ticks = log_ticks(low, high)
        positions = [p for p, _ in ticks]
        assert positions == sorted(positions) and len(ticks) >= 2
        # 1, 2, 5 steps at least log10(2) apart (a narrow axis: its two ends)
        span = math.log10(high) - math.log10(low)
        gaps = [b - a for a, b in zip(positions, positions[1:], strict=False)]
        assert min(gaps) >= min(0.3, span * 0.9)
    wide = [label for _, label in log_ticks(256, 200_019)]
    assert wide[0] == "200" and wide[-1] == "200k" and all(w[0] in "125" for w in wide)
    assert [label for _, label in log_ticks(300, 10**7)] == ["1k", "10k", "100k", "1M", "10M"]
    assert [label for _, label in log_ticks(256, 50_000)][:3] == ["200", "500", "1k"]
    assert (compact(300), compact(2000), compact(50_000), compact(1_000_000)) == (
        "300",
        "2k",
        "50k",
        "1M",
    )
