"""Counting on Dask: the planner's byte ranges and row groups, the in-order tree sum, and a real
LocalCluster (2 worker processes) giving the counts file of the local count, with no process left."""

from __future__ import annotations

import time

import psutil
import pytest
from _corpus_formats import (
    SPECIAL,
    compress,
    documents,
    jsonl_bytes,
    write_parquet_shards,
    write_saved_dataset,
)
from workbench.engine.patterns.specials import specials_bytes_regex
from workbench.engine.pretokenize.counting import count_corpus
from workbench.engine.pretokenize.dask_count import (
    Partial,
    combine_file,
    combine_files,
    count_task,
    next_cut,
    plan,
)

from workbench.cli import main
from workbench.engine.config import TrainConfig
from workbench.engine.errors import ConfigError, CorpusError, WorkbenchError
from workbench.engine.pretokenize import dask_count

pytestmark = pytest.mark.dask

CONFIG = TrainConfig(vocab_size=400, special_tokens=(SPECIAL,))


def _big_text(path, seed=3, n=400):
    """One document of many lines, special tokens included, ~40 KB."""
    path.write_text("\n".join(documents(n, seed)), encoding="utf-8")
    return path


def _spawned_children() -> set[int]:
    found = set()
    for child in psutil.Process().children(recursive=True):
        try:
            if "spawn_main" in " ".join(child.cmdline()):
                found.add(child.pid)
        except psutil.Error:
            pass
    return found


def test_next_cut_is_the_first_safe_point_outside_special_tokens(tmp_path):
    path = tmp_path / "t.txt"
    data = b"ab cd<|endoftext|> ef\tgh\n"
    path.write_bytes(data)
    specials = specials_bytes_regex((SPECIAL,))
    cuts = [next_cut(path, at, len(data), specials, len(SPECIAL)) for at in range(1, len(data) + 1)]
    # the letter-then-whitespace points are 2, 21 and 24; the one inside "<|endoftext|>" (none
    # here: "endoftext" is followed by "|") and the file's end
    assert sorted(set(cuts)) == [2, 21, 24, len(data)]
    inside = tmp_path / "s.txt"
    inside.write_bytes(b"xx <|a b|> yy")
    tight = specials_bytes_regex(("<|a b|>",))
    assert next_cut(inside, 3, 13, tight, 7) == 13  # "a b" inside the special is no cut


@pytest.mark.parametrize("task_bytes", [700, 2000, 9000])
def test_ranges_counted_apart_and_summed_in_order_equal_the_whole(tmp_path, task_bytes):
    path = _big_text(tmp_path / "big.txt")
    (tasks,) = plan([path], CONFIG, task_bytes)
    assert len(tasks) > 2 and tasks[0].start == 0 and tasks[-1].end == path.stat().st_size
    parts = [count_task(t, CONFIG) for t in tasks]
    whole = combine_files(combine_file(*parts), stop_on_bad=True)
    expected = count_corpus([path], CONFIG, workers=1)
    from workbench.engine.pretokenize.words import WordTable

    assert WordTable.from_arrays(*whole.table).to_dict() == expected.words.to_dict()
    assert whole.documents == 1


def test_a_bad_byte_in_a_later_range_names_the_files_line(tmp_path):
    path = _big_text(tmp_path / "big.txt")
    data = path.read_bytes()
    at = data.index(b"\n", len(data) * 3 // 4) + 1
    path.write_bytes(data[:at] + b"\xff" + data[at:])
    with pytest.raises(CorpusError) as local:
        count_corpus([path], CONFIG)
    (tasks,) = plan([path], CONFIG, 1000)
    part = combine_file(*[count_task(t, CONFIG) for t in tasks])
    assert str(CorpusError(*part.error)) == str(local.value)
    skipped = combine_files(part, Partial(), stop_on_bad=False)
    assert skipped.skipped == [str(local.value)] and skipped.fatal_error is None
    assert combine_files(Partial(), part, stop_on_bad=True).fatal_error == part.error


def test_a_custom_pattern_or_no_dask_gives_a_clear_message(tmp_path, monkeypatch):
    path = _big_text(tmp_path / "big.txt", n=5)
    with pytest.raises(ConfigError, match="preset pattern"):
        dask_count.count_on_dask([path], TrainConfig(vocab_size=300, pattern=r"\w+|\W+"), "local:1")
    dask_count._distributed.cache_clear()
    monkeypatch.setitem(__import__("sys").modules, "distributed", None)
    try:
        with pytest.raises(WorkbenchError, match=r'pip install "bpe-workbench\[dask\]"'):
            dask_count.count_on_dask([path], CONFIG, "local:1")
    finally:
        dask_count._distributed.cache_clear()


@pytest.fixture(scope="module")
def mixed(tmp_path_factory):
    root = tmp_path_factory.mktemp("mixed")
    _big_text(root / "a-big.txt")
    write_parquet_shards(root / "b-parquet", documents(90, 5), shards=2, rows_per_group=4)
    (root / "c.jsonl.zst").write_bytes(compress(jsonl_bytes(documents(20, 6)), ".zst"))
    write_saved_dataset(root / "d-saved", documents(30, 8))
    return root


def test_local_cluster_counts_what_the_local_reader_counts(mixed, tmp_path, capsys):
    count_corpus(
        [mixed / "c.jsonl.zst"], CONFIG
    )  # compile the kernels here: workers load the cache
    before = _spawned_children()
    started = time.monotonic()
    local, remote = tmp_path / "local.parquet", tmp_path / "dask.parquet"
    assert main(["count", str(mixed), "--out", str(local), "--special", SPECIAL]) == 0
    argv = ["count", str(mixed), "--out", str(remote), "--special", SPECIAL, "--dask", "local:2"]
    assert main([*argv, "--dask-task-bytes", "3000"]) == 0
    assert remote.read_bytes() == local.read_bytes()
    assert "documents        141 in 6 files" in capsys.readouterr().out
    deadline = time.monotonic() + 15
    while _spawned_children() - before and time.monotonic() < deadline:
        time.sleep(0.2)
    assert not _spawned_children() - before, "worker processes outlived the cluster"
    assert time.monotonic() - started < 120


def test_bad_files_on_the_cluster_are_skipped_or_stop_the_count(mixed, tmp_path, capsys):
    bad = tmp_path / "bad"
    bad.mkdir()
    (bad / "fine.txt").write_text("fine words here")
    (bad / "broken.jsonl").write_text('{"text": "ok"}\nnot json\n')
    argv = ["count", str(bad), "--out", str(tmp_path / "c.parquet"), "--dask", "local:1"]
    assert main(argv) == 2
    assert "broken.jsonl:2: not valid JSON" in capsys.readouterr().err
    assert main([*argv, "--skip-bad-files"]) == 0
    assert "skipped          " in capsys.readouterr().out
