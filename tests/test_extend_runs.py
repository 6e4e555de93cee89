"""An extension of a tokenizer as a stored run: trained by `RunSession` from the base's
vocabulary, its base recorded (spec + fingerprint), its tokenizer rebuilt from the store as
`workbench.extend` makes it (every GPT-2 id unchanged), its check kept in the stats; a base
gone or changed is one line; `extend --db` records it and `runs show` prints base and check."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

import workbench
from workbench.engine.config import TrainConfig
from workbench.session.counting import count_paths
from workbench.session.extension import extension_config, load_base
from workbench.session.run import RunSession
from workbench.session.states import RunState
from workbench.store import RunStore
from workbench.store.errors import StoreError
from workbench.store.tokenizer_of_run import export_run, tokenizer_of_run

ADDED = 300


@pytest.fixture(scope="module")
def gpt2_folder(corpora: Path, tmp_path_factory) -> Path:
    """GPT-2's files with `<|endoftext|>` = 50256, as a folder a run can name as its base."""
    folder = tmp_path_factory.mktemp("gpt2base")
    for name in ("vocab.json", "merges.txt"):
        (folder / name).write_bytes((corpora / f"gpt2_{name}").read_bytes())
    (folder / "bpe-workbench.json").write_text(
        '{"special_tokens": {"<|endoftext|>": 50256}}', encoding="utf-8"
    )
    return folder


@pytest.fixture(scope="module")
def new_text(corpora: Path, tmp_path_factory) -> Path:
    path = tmp_path_factory.mktemp("text") / "songs.txt"
    path.write_text((corpora / "taylorswift.txt").read_text(encoding="utf-8")[:30_000])
    return path


def extend_run(base_spec: str, text: Path, db: Path, vocab_size: int, db_of_base=None):
    base = load_base(base_spec, db_of_base)
    config = extension_config(base.tokenizer, TrainConfig(vocab_size=vocab_size))
    counted = count_paths([str(text)], config)
    batches = []
    with RunSession.start(counted, config, db, "ext", [batches.append], extends=base) as s:
        s.advance()
    return s, base, batches


def test_a_stored_extension_is_the_apis_and_keeps_every_gpt2_id(gpt2_folder, new_text, tmp_path):
    db = tmp_path / "runs.db"
    base = workbench.load(gpt2_folder)
    session, _, batches = extend_run(str(gpt2_folder), new_text, db, base.vocab_size + ADDED)
    assert session.state is RunState.DONE
    reference = workbench.extend(gpt2_folder, [new_text], base.vocab_size + ADDED, progress=False)
    assert reference.check.ok
    with RunStore(db) as store:
        run = store.get_run(session.run_id)
        tok = tokenizer_of_run(store, session.run_id)
        stored = store.merges(session.run_id, limit=10_000)
    assert tok == reference.tokenizer == session.tokenizer()
    assert all(tok.vocab[i] == b for i, b in base.vocab.items())
    assert tok.special_tokens == {"<|endoftext|>": 50256}
    assert tok.merges[: len(base.merges)] == base.merges
    # The store, the listeners and the window see the extended tokenizer's ids, ranks from 0.
    assert [m.rank for m in stored] == list(range(len(stored)))
    assert all(tok.vocab[m.new_id] == m.token for m in stored)
    assert all(tok.vocab[m.left_id] + tok.vocab[m.right_id] == m.token for m in stored)
    assert batches[0].new_id.min() >= 0 and int(batches[-1].new_id.max()) < tok.vocab_size
    assert {m.new_id for m in stored if m.is_new} == set(range(50257, 50257 + ADDED))
    assert run.vocab_size == base.vocab_size + ADDED
    assert run.settings["extends"]["spec"] == str(gpt2_folder.resolve())
    assert run.settings["pattern"] == base.pattern
    check = run.stats["extension"]
    assert check["ok"] and check["summary"] == (
        f"Extension check passed: 50,256 old ids unchanged, {ADDED} new tokens all reachable"
    )
    assert len(check["lines"]) == 7
    _, exported, files = export_run(RunStore(db), session.run_id, "hf", tmp_path / "out")
    assert workbench.load(files[0].parent) == reference.tokenizer


def test_a_base_changed_or_gone_is_one_line(gpt2_folder, new_text, tmp_path):
    base_copy = tmp_path / "base"
    base_copy.mkdir()
    for f in gpt2_folder.iterdir():
        (base_copy / f.name).write_bytes(f.read_bytes())
    db = tmp_path / "runs.db"
    session, _, _ = extend_run(str(base_copy), new_text, db, 50257 + 20)
    merges = base_copy / "merges.txt"  # the last two merges swapped: it loads, but differs
    lines = merges.read_bytes().rstrip(b"\n").split(b"\n")
    lines[-2], lines[-1] = lines[-1], lines[-2]
    merges.write_bytes(b"\n".join(lines) + b"\n")
    assert workbench.load(base_copy).vocab_size == 50257
    with RunStore(db) as store, pytest.raises(StoreError) as changed:
        tokenizer_of_run(store, session.run_id)
    assert "changed since the run was trained" in str(changed.value)
    assert "\n" not in str(changed.value)
    (base_copy / "merges.txt").unlink()
    with RunStore(db) as store, pytest.raises(StoreError) as gone:
        tokenizer_of_run(store, session.run_id)
    assert "its base" in str(gone.value) and "cannot be loaded any more" in str(gone.value)
    # A crafted record is refused, not followed.
    with RunStore(db) as store:
        store.conn.execute(
            "UPDATE runs SET settings = json_set(settings, '$.extends.spec', 'run:99')"
        )
        store.conn.commit()
        with pytest.raises(StoreError, match="is not older"):
            tokenizer_of_run(store, session.run_id)


def test_a_run_extends_a_run_and_grows_again(corpora, tmp_path):
    db = tmp_path / "runs.db"
    first = tmp_path / "en.txt"
    first.write_text((corpora / "corpus.en").read_text(encoding="utf-8")[:20_000])
    second = tmp_path / "de.txt"
    second.write_text((corpora / "german.txt").read_text(encoding="utf-8")[:20_000])
    trained = workbench.train([str(first)], 300, special_tokens="<|endoftext|>", db=db,
                              progress=False)  # fmt: skip
    spec = f"run:{trained.run_id}"
    session, base, _ = extend_run(spec, second, db, 360, db_of_base=db)
    reference = workbench.extend(spec, [second], 400, db=db, progress=False)
    with RunStore(db) as store:
        first_part = tokenizer_of_run(store, session.run_id)
    assert first_part.vocab_size == 360 and len(first_part.merges) > len(base.tokenizer.merges)
    assert first_part.merges == reference.tokenizer.merges[: len(first_part.merges)]
    # eval and diff name it as run:ID: the base's merges first, no merge counts by rank.
    from workbench.evaluate.specs import resolve

    cand = resolve(f"run:{session.run_id}", db)
    assert cand.tokenizer == first_part and cand.merge_counts is None
    diffed = cli("diff", spec, f"run:{session.run_id}", "--db", str(db), "--json")
    assert diffed.returncode == 0, diffed.stderr
    pair = json.loads(diffed.stdout)["pairs"][0]
    assert pair["b"]["merges"] == len(first_part.merges)  # the base's 44 and the new ones
    assert pair["compared_merges"] == len(base.tokenizer.merges)
    assert pair["first_divergence"] is None  # every base merge kept, in order
    # `runs continue`: the base loaded again, the merges replayed and checked, then more.
    with RunSession.resume(db, session.run_id, count_with, vocab_size=400) as again:
        again.advance()
    with RunStore(db) as store:
        grown = tokenizer_of_run(store, session.run_id)
        assert store.get_run(session.run_id).stats["extension"]["new_tokens"] == 100
    assert grown == reference.tokenizer


def count_with(paths, config):
    return count_paths(paths, config).result


def test_a_run_without_a_base_reads_as_before(corpora, tmp_path):
    db = tmp_path / "runs.db"
    trained = workbench.train([str(corpora / "address.txt")], 300, db=db, progress=False)
    with RunStore(db) as store:
        run = store.get_run(trained.run_id)
        assert "extends" not in run.settings and "extension" not in run.stats
        assert tokenizer_of_run(store, trained.run_id) == trained.tokenizer


def cli(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "workbench", *args], capture_output=True, text=True, check=False
    )


def test_cli_extend_records_the_run_and_runs_show_prints_base_and_check(
    gpt2_folder, new_text, tmp_path
):
    db = tmp_path / "runs.db"
    proc = cli("extend", str(gpt2_folder), str(new_text), "--vocab-size", "50300",
               "--db", str(db), "--json", "-q")  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    summary = json.loads(proc.stdout)
    assert summary["check_ok"] and summary["files"] == [] and summary["run_id"] == 1
    show = cli("runs", "show", "1", "--db", str(db), "--merges", "0")
    assert show.returncode == 0, show.stderr
    tail = show.stdout[show.stdout.rindex("\nextends ") :]
    assert f"extends {gpt2_folder.resolve()} (50,256 tokens, 50,000 merges)" in tail
    assert "Extension check passed: 50,256 old ids unchanged, 43 new tokens all reachable" in tail
    assert tail.count("\n  ok   ") == 7
    out = tmp_path / "out"
    exported = cli("runs", "export", "1", "--db", str(db), "--out-dir", str(out), "--format", "hf")
    assert exported.returncode == 0, exported.stderr
    reference = workbench.extend(gpt2_folder, [new_text], 50300, progress=False)
    assert workbench.load(out / "tokenizer.json") == reference.tokenizer
    bad = cli("extend", str(gpt2_folder), str(new_text), "--vocab-size", "50300", "--no-db")
    assert bad.returncode == 2 and "needs --out-dir" in bad.stderr
