"""`bpe-workbench eval` as a user runs it: runs, prefixes, files and references compared; JSON
keys and counts; grouping; health and curves; one-line errors and nothing half-written."""

from __future__ import annotations

import csv
import json

import pytest

from tests.evaluate_fixtures import fill_gpt2_cache
from workbench.cli import main
from workbench.engine import formats


@pytest.fixture(scope="module")
def sweep(corpora, tmp_path_factory):
    """Two runs of one corpus (vocab 300 and 420) in a fresh store."""
    folder = tmp_path_factory.mktemp("sweep")
    db = folder / "runs.db"
    for size in (300, 420):
        code = main([
            "train", str(corpora / "taylorswift.txt"), "--vocab-size", str(size),
            "--out", str(folder / f"out{size}"), "--db", str(db), "--quiet",
        ])  # fmt: skip
        assert code == 0
    return folder, db


def test_json_keys_and_counts(sweep, corpora, tmp_path, capsys, monkeypatch):
    folder, db = sweep
    monkeypatch.setenv("TIKTOKEN_CACHE_DIR", str(fill_gpt2_cache(corpora, tmp_path / "cache")))
    held = corpora / "tinystories_sample.txt"
    out = tmp_path / "r.json"
    code = main([
        "eval", "--db", str(db), "--tokenizer", "run:1", "--tokenizer", "run:2",
        "--tokenizer", "run:2@50", "--tokenizer", str(folder / "out420"), "--tokenizer", "gpt2",
        str(held), "--json", str(out), "--csv", str(tmp_path / "r.csv"),
        "--html", str(tmp_path / "r.html"),
    ])  # fmt: skip
    assert code == 0
    printed = capsys.readouterr().out
    assert "bytes_per_token" in printed and "gpt2" in printed
    data = json.loads(out.read_text("utf-8"))
    rows = data["tokenizers"]
    assert [r["name"] for r in rows] == ["run:1", "run:2", "run:2@50", str(folder / "out420"), "gpt2"]  # fmt: skip
    assert [r["vocab_size"] for r in rows] == [300, 420, 306, 420, 50257]
    for r in rows:
        (g,) = r["groups"]
        for key in ("name", "bytes", "tokens", "bytes_per_token", "chars_per_token",
                    "tokens_per_word", "renyi_2_5", "vocab_used"):  # fmt: skip
            assert key in g
        assert g["bytes_per_token"] == g["bytes"] / g["tokens"]
    text = held.read_text("utf-8")
    exported = formats.load(folder / "out420")
    assert rows[1]["groups"][0]["tokens"] == len(exported.encode(text))
    assert rows[3]["groups"][0]["tokens"] == rows[1]["groups"][0]["tokens"]  # same tokenizer
    assert rows[2]["groups"][0]["tokens"] == len(exported.prefix(50).encode(text))
    with open(tmp_path / "r.csv", encoding="utf-8") as handle:
        table = list(csv.DictReader(handle))
    assert len(table) == 5 * 2 and table[0]["tokenizer"] == "run:1"
    assert "<table>" in (tmp_path / "r.html").read_text("utf-8")


def test_group_by_jsonl_field_and_parity(sweep, tmp_path, capsys):
    _, db = sweep
    docs = tmp_path / "docs.jsonl"
    docs.write_text(
        "\n".join(json.dumps(r, ensure_ascii=False) for r in [
            {"text": "The cat sat on the mat.", "lang": "en"},
            {"text": "Die Katze saß auf der Matte.", "lang": "de"},
            {"text": "고양이가 매트 위에 앉았다.", "lang": "ko"},
            {"text": "The dog sat too.", "lang": "en"},
        ]), "utf-8")  # fmt: skip
    out = tmp_path / "g.json"
    code = main(["eval", "--db", str(db), "--tokenizer", "run:2", str(docs),
                 "--group-by", "field:lang", "--json", str(out)])  # fmt: skip
    assert code == 0
    row = json.loads(out.read_text("utf-8"))["tokenizers"][0]
    assert [g["name"] for g in row["groups"]] == ["en", "de", "ko"]
    assert [g["documents"] for g in row["groups"]] == [2, 1, 1]
    per_byte = [g["tokens"] / g["bytes"] for g in row["groups"]]
    assert row["parity"]["max_over_min"] == pytest.approx(max(per_byte) / min(per_byte))
    assert row["parity"]["costliest_group"] == "ko"
    assert "parity across groups" in capsys.readouterr().out


def test_health_and_curves_print_their_findings(sweep, corpora, tmp_path, capsys, monkeypatch):
    _, db = sweep
    monkeypatch.setenv("TIKTOKEN_CACHE_DIR", str(fill_gpt2_cache(corpora, tmp_path / "cache")))
    out = tmp_path / "h.csv"
    code = main([
        "eval", "--db", str(db), "--tokenizer", "run:2", "--tokenizer", "gpt2",
        str(corpora / "taylorswift.txt"), "--health", "--curves", "--curve-points", "8",
        "--health-csv", str(out),
    ])  # fmt: skip
    assert code == 0
    printed = capsys.readouterr().out
    assert "run:2: the smallest k within 1% of the final compression" in printed
    assert "run:2: never matches gpt2 on this text" in printed
    assert "token health of run:2:" in printed
    assert "residues (emitted on the training corpus vs count at merge)" in printed
    with open(out, encoding="utf-8") as handle:
        rows = list(csv.DictReader(handle))
    assert {r["list"] for r in rows} >= {"never_emitted", "rare"}


def test_health_alone_needs_no_text(sweep, capsys):
    _, db = sweep
    assert main(["eval", "--db", str(db), "--tokenizer", "run:1", "--health"]) == 0
    assert "unreachable" in capsys.readouterr().out


@pytest.mark.parametrize(
    "args, message, status",
    [  # 1: what was named is not there; 2: a wrong option value
        (["--tokenizer", "run:99"], "no run with id 99", 1),
        (["--tokenizer", "run:1@100000"], "run:1@100000: the run has", 2),
        (["--tokenizer", "run:x"], "write run:ID or run:ID@k", 2),
        (["--tokenizer", "nope/nothing.json"], "no such file or folder", 1),
        (["--tokenizer", "run:1", "--group-by", "lang"], "--group-by 'lang'", 2),
        (["--tokenizer", "run:1", "--tokenizer", "run:1"], "named twice", 2),
    ],
)
def test_mistakes_are_one_line(sweep, corpora, tmp_path, capsys, args, message, status):
    _, db = sweep
    out = tmp_path / "never.json"
    code = main(["eval", "--db", str(db), *args, str(corpora / "german.txt"), "--json", str(out)])
    err = capsys.readouterr().err
    assert code == status and message in err and len(err.strip().splitlines()) == 1
    assert not out.exists()


def test_bad_text_file_names_the_file(sweep, tmp_path, capsys):
    _, db = sweep
    bad = tmp_path / "bad.txt"
    bad.write_bytes(b"fine\n\xff\xfe")
    out = tmp_path / "never.json"
    code = main(["eval", "--db", str(db), "--tokenizer", "run:1", str(bad), "--json", str(out)])
    err = capsys.readouterr().err
    assert code == 1 and "bad.txt" in err and "UTF-8" in err
    assert not out.exists()
    assert main(["eval", "--db", str(db), "--tokenizer", "run:1"]) == 2
    assert "give text" in capsys.readouterr().err


def test_a_sweep_is_compared_run_by_run(corpora, tmp_path):
    db = tmp_path / "runs.db"
    code = main(["train", str(corpora / "german.txt"), str(corpora / "taylorswift.txt"),
                 "--vocab-size", "280,300,320", "--out", str(tmp_path / "out"), "--db", str(db),
                 "--quiet"])  # fmt: skip
    assert code == 0
    from workbench.evaluate.specs import sweep_of
    from workbench.store import RunStore

    with RunStore(db) as store:
        runs = store.list_runs()
    (sweep,) = {sweep_of(r) for r in runs}
    out = tmp_path / "s.json"
    code = main(["eval", "--db", str(db), "--tokenizer", f"sweep:{sweep}",
                 str(corpora / "tinystories_sample.txt"), "--json", str(out)])  # fmt: skip
    assert code == 0
    rows = json.loads(out.read_text("utf-8"))["tokenizers"]
    assert [r["vocab_size"] for r in rows] == [280, 300, 320]
    assert main(["eval", "--db", str(db), "--tokenizer", "sweep:nope", str(out)]) == 1
