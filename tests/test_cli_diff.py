"""`bpe-workbench diff` as a user runs it: two runs, a run against its own exported file and a
reference, `--k` and `run:ID@k`, `--text` attribution checked against encoding, `--json` keys,
escaped names, and one-line errors with exit 1 (failed work) or 2 (usage)."""

from __future__ import annotations

import json

import pytest

from tests.evaluate_fixtures import fill_gpt2_cache
from workbench.cli import main
from workbench.engine import formats


@pytest.fixture(scope="module")
def runs(corpora, tmp_path_factory):
    """Run 1 on Taylor Swift's page, run 2 (named with a terminal escape) on Shakespeare."""
    folder = tmp_path_factory.mktemp("diff")
    db = folder / "runs.db"
    sources = (("taylorswift.txt", "swift"), ("tinyshakespeare.txt", "bard\x1b]0;x\x07"))
    for i, (name, run_name) in enumerate(sources, 1):
        code = main([
            "train", str(corpora / name), "--vocab-size", "400", "--out", str(folder / f"out{i}"),
            "--db", str(db), "--name", run_name, "--quiet",
        ])  # fmt: skip
        assert code == 0
    return folder, db


def cli(capsys, *args):
    code = main(list(args))
    out, err = capsys.readouterr()
    return code, out, err


def test_two_runs_table(runs, corpora, capsys):
    folder, db = runs
    code, out, err = cli(capsys, "diff", "run:1", "run:2", "--db", str(db), "--quiet",
                         "--text", str(corpora / "tinystories_sample.txt"))  # fmt: skip
    assert code == 0, err
    assert "first divergent rank: " in out and "overlap@k: " in out
    assert "only in A: " in out and "only in B: " in out
    assert "tokens, B " in out and "stretches cut differently" in out
    assert "\x1b" not in out and "bard\\x1b]0;x\\x07" in out  # the run's name, escaped


def test_json_matches_the_merges_and_encodings(runs, corpora, capsys):
    folder, db = runs
    text_file = corpora / "tinystories_sample.txt"
    code, out, err = cli(capsys, "diff", "run:1", "run:2", "--db", str(db), "--quiet",
                         "--text", str(text_file), "--json")  # fmt: skip
    assert code == 0, err
    result = json.loads(out)
    (pair,) = result["pairs"]
    a, b = formats.load(folder / "out1"), formats.load(folder / "out2")
    ma, mb = a.merge_bytes, b.merge_bytes
    n = min(len(ma), len(mb))
    want_rank = next((r for r in range(n) if ma[r] != mb[r]), None)
    assert pair["first_divergence"] == want_rank and pair["compared_merges"] == n
    for k, fraction in zip(pair["overlap"]["k"], pair["overlap"]["fraction"], strict=True):
        assert fraction == len(set(ma[:k]) & set(mb[:k])) / k
    assert pair["overlap"]["k"][-1] == n
    assert len(pair["only_in_a"]) == len(set(a.vocab.values()) - set(b.vocab.values()))
    assert len(pair["only_in_b"]) == len(set(b.vocab.values()) - set(a.vocab.values()))
    text = text_file.read_text("utf-8")
    t = pair["text"]
    assert t["tokens_a"] == len(a.encode(text, "all")) and t["tokens_b"] == len(
        b.encode(text, "all")
    )
    assert t["saved_by_a"] - t["saved_by_b"] == t["difference"] == t["tokens_b"] - t["tokens_a"]
    credited = sum(r["saved"] for r in t["credits_a"]) + t["merge_order_a"]
    assert credited == pytest.approx(t["saved_by_a"])
    for row in t["credits_a"]:
        assert a.merge_bytes[row["rank"]][0] + a.merge_bytes[row["rank"]][1] == a.vocab[row["id"]]


def test_run_against_its_own_file_and_prefixes(runs, capsys):
    folder, db = runs
    code, out, err = cli(capsys, "diff", "run:1", str(folder / "out1"), "--db", str(db), "-q",
                         "--json")  # fmt: skip
    assert code == 0, err
    (pair,) = json.loads(out)["pairs"]
    assert pair["first_divergence"] is None and pair["overlap_at_end"] == 1.0
    assert pair["only_in_a"] == [] == pair["only_in_b"]
    # --k cuts both; a spec's own @k wins over --k
    code, out, err = cli(capsys, "diff", "run:1@20", "run:2", "--k", "30", "--db", str(db), "-q",
                         "--json")  # fmt: skip
    assert code == 0, err
    (pair,) = json.loads(out)["pairs"]
    assert (pair["a"]["merges"], pair["b"]["merges"]) == (20, 30)
    assert pair["compared_merges"] == 20


def test_three_and_a_reference(runs, corpora, tmp_path, capsys, monkeypatch):
    folder, db = runs
    monkeypatch.setenv("TIKTOKEN_CACHE_DIR", str(fill_gpt2_cache(corpora, tmp_path / "cache")))
    code, out, err = cli(capsys, "diff", "run:1", "run:2", "gpt2", "--db", str(db), "-q", "--json")
    assert code == 0, err
    pairs = json.loads(out)["pairs"]
    assert [p["b"]["name"] for p in pairs] == ["run:2", "gpt2"]
    assert pairs[1]["b"]["vocab_size"] == 50257
    gpt2 = pairs[1]
    assert gpt2["compared_merges"] == 400 - 256  # the shorter list: the run's
    shared = 400 - len(gpt2["only_in_a"])  # tokens (by bytes) in both vocabularies
    assert len(gpt2["only_in_b"]) == 50256 - shared > 49_000


@pytest.mark.parametrize(
    ("args", "code", "said"),
    [
        (["run:1", "run:9"], 1, "no run with id 9"),
        (["run:1", "run:x"], 2, "write run:ID or run:ID@k"),
        (["run:1", "no/such/file"], 1, "no such file or folder"),
        (["run:1", "run:2", "--k", "99999"], 2, "--k 99999: run:1 has"),
        (["run:1", "run:2", "--k", "-1"], 2, "--k must be 0 or more"),
        (["run:1", "run:2", "--limit", "-1"], 2, "--limit must be 0 or more"),
        (["run:1"], 2, "at least two"),
        (["run:1", "run:1"], 2, "named twice"),
        (["run:1", "run:2", "--text", "no/such.txt"], 1, "no/such.txt: cannot read"),
    ],
)
def test_errors_are_one_line(runs, capsys, args, code, said):
    _, db = runs
    got, out, err = cli(capsys, "diff", *args, "--db", str(db), "-q")
    assert got == code and said in err
    assert len(err.strip().splitlines()) == 1 and "Traceback" not in err and out == ""


def test_text_that_is_not_utf8(runs, tmp_path, capsys):
    _, db = runs
    bad = tmp_path / "bad.txt"
    bad.write_bytes(b"ok \xff")
    code, _, err = cli(capsys, "diff", "run:1", "run:2", "--db", str(db), "-q", "--text", str(bad))
    assert code == 1 and "is not UTF-8 text" in err
