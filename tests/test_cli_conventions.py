"""The command line as Unix users expect it: --version, exit statuses, help on every option, one
name per idea, --json shapes, completion, a fast --help, runs delete asking first, names with
terminal codes escaped, CSV cells that cannot be formulas, a full disk that replaces nothing."""

from __future__ import annotations

import argparse
import csv
import errno
import json
import os
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests._harden_helpers import run_cli
from workbench.cli import COMMAND_MODULES, build_parser, main
from workbench.store import RunStore

ROOT = Path(__file__).resolve().parents[1]
NASTY = "doc\x1b]0;PWNED\x07\x1b[2J.txt"
ESCAPED = "doc\\x1b]0;PWNED\\x07\\x1b[2J.txt"
ENV = {**os.environ, "PYTHONPATH": str(ROOT)}


def _cli(*args: str, env: dict | None = None, **kwargs) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "workbench", *args],
        cwd=ROOT,
        env=env or ENV,
        capture_output=True,
        text=True,
        timeout=600,
        **kwargs,
    )


def _parsers() -> list[tuple[str, argparse.ArgumentParser]]:
    """(name, parser) of every command and `runs` action."""
    found = []

    def walk(name: str, parser: argparse.ArgumentParser) -> None:
        found.append((name, parser))
        for action in parser._actions:
            if isinstance(action, argparse._SubParsersAction):
                for sub, subparser in action.choices.items():
                    walk(f"{name} {sub}".strip(), subparser)

    walk("", build_parser())
    return found


def test_version_comes_from_the_metadata(capsys, monkeypatch):
    from importlib import metadata

    monkeypatch.setattr(metadata, "version", lambda name: "9.8.7")
    with pytest.raises(SystemExit) as exited:
        main(["--version"])
    assert exited.value.code == 0 and capsys.readouterr().out == "bpe-workbench 9.8.7\n"

    def missing(name):
        raise metadata.PackageNotFoundError(name)

    monkeypatch.setattr(metadata, "version", missing)
    with pytest.raises(SystemExit):
        main(["--version"])
    assert "(not installed)" in capsys.readouterr().out


def test_every_option_and_argument_has_help():
    bare = [
        f"{name or 'bpe-workbench'} {'/'.join(a.option_strings) or a.dest}"
        for name, parser in _parsers()
        for a in parser._actions
        if a.help is None and not isinstance(a, argparse._SubParsersAction)
    ]
    assert bare == []


def test_one_name_per_idea_with_the_old_names_hidden():
    shown: dict[str, set[str]] = {}
    for name, parser in _parsers():
        for action in parser._actions:
            if action.help == argparse.SUPPRESS:
                continue
            for option in action.option_strings:
                shown.setdefault(option, set()).add(name)
    assert "--workers" not in shown and "--text-file" not in shown
    assert shown["--out-dir"] == {"train", "extend", "export", "runs export", "runs continue"}
    assert shown["--out"] == {"count", "render"}  # a file (or - for standard output)
    assert {"train", "count", "encode", "eval"} <= shown["--threads"]
    assert {"train", "count", "eval", "runs continue"} <= shown["--quiet"]
    assert {"train", "count", "runs list", "runs show", "eval"} <= shown["--json"]
    assert {"encode", "export", "render", "eval"} <= shown["--tokenizer"]


def test_old_option_names_still_work(tmp_path):
    parser = build_parser()
    args = parser.parse_args(
        ["train", "c.txt", "--vocab-size", "300", "--out", "o", "--workers", "2"]
    )
    assert (args.out_dir, args.threads) == (Path("o"), 2)
    args = parser.parse_args(["render", "--tokenizer", "t", "--text-file", "x", "--out", "a.html"])
    assert args.text_file == "x"


def test_lists_kept_in_the_cli_match_the_engine():
    from workbench.cli import export, train
    from workbench.engine import formats
    from workbench.engine.config import TIE_BREAKS

    assert train.TIE_BREAKS == TIE_BREAKS
    assert tuple(sorted(formats.FORMATS)) == export.FORMATS


def test_help_is_quick_and_loads_no_numba_or_numpy():
    proc = subprocess.run(
        [sys.executable, "-X", "importtime", "-m", "workbench", "--help"],
        cwd=ROOT, env=ENV, capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert proc.returncode == 0 and "train" in proc.stdout
    modules = {line.split("|")[-1].strip() for line in proc.stderr.splitlines()}
    heavy = {m for m in modules if m.split(".")[0] in ("numba", "numpy", "sqlite_utils", "PySide6")}
    assert heavy == set()
    started = time.perf_counter()
    assert _cli("--help").returncode == 0
    # 0.2 s measured alone; the bound leaves room for a loaded CI machine.
    assert time.perf_counter() - started < 2.0


@pytest.mark.parametrize("shell", ["bash", "zsh", "fish"])
def test_completion_scripts_name_every_command(shell, capsys):
    assert main(["completion", shell]) == 0
    script = capsys.readouterr().out
    for module in COMMAND_MODULES:
        assert module.rpartition(".")[2] in script
    assert "--out-dir" in script and "--workers" not in script
    if shell == "bash":
        assert subprocess.run(["bash", "-n"], input=script, text=True).returncode == 0


def test_no_display_is_one_line_and_exit_2_before_qt():
    env = {
        k: v for k, v in ENV.items() if k not in ("DISPLAY", "WAYLAND_DISPLAY", "QT_QPA_PLATFORM")
    }
    proc = _cli(env=env)
    assert proc.returncode == 2
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and "DISPLAY" in lines[0] and "train --help" in lines[0]


# A child interpreter where PySide6 and pyqtgraph cannot be imported: the slim install.
NO_QT = """
import sys
class NoQt:
    def find_spec(self, name, path=None, target=None):
        if name.split(".")[0] in ("PySide6", "pyqtgraph", "shiboken6"):
            raise ImportError(f"No module named {name!r} (hidden by the test)")
        return None
sys.meta_path.insert(0, NoQt())
from workbench.cli import main
code = main(sys.argv[1:])
assert not any(m.startswith(("PySide6", "pyqtgraph")) for m in sys.modules), "Qt was loaded"
sys.exit(code)
"""


def _no_qt(*args: str, env: dict | None = None) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-c", NO_QT, *args],
        cwd=ROOT, env=env or ENV, capture_output=True, text=True, timeout=600,
    )  # fmt: skip


def test_without_qt_the_window_says_how_to_get_it():
    proc = _no_qt(env={**ENV, "DISPLAY": ":0"})
    assert proc.returncode == 2
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and 'pip install "bpe-workbench[gui]"' in lines[0]


def test_commands_run_without_qt(tmp_path, corpora):
    db = tmp_path / "runs.db"
    out = tmp_path / "tok"
    proc = _no_qt("train", str(corpora / "german.txt"), "--vocab-size", "300", "--out-dir",
                  str(out), "--db", str(db), "--json")  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout)["vocab_size"] == 300
    text = tmp_path / "t.txt"
    text.write_text("Guten Tag", encoding="utf-8")
    for args in (
        ["encode", "--tokenizer", "run:1", "--db", str(db), str(text)],
        ["render", "--tokenizer", str(out), str(text), "--out", str(tmp_path / "r.html")],
        ["runs", "list", "--json", "--db", str(db)],
        ["export", "--tokenizer", "run:1", "--db", str(db), "--format", "hf", "--out-dir",
         str(tmp_path / "hf")],
    ):  # fmt: skip
        proc = _no_qt(*args)
        assert proc.returncode == 0, (args, proc.stderr)
    assert (tmp_path / "hf" / "tokenizer.json").is_file()
    proc = _no_qt("render", "--tokenizer", str(out), str(text), "--out", str(tmp_path / "r.png"))
    assert proc.returncode == 2 and proc.stderr.count("\n") == 1 and "[gui]" in proc.stderr


def _trained(tmp_path: Path, corpora: Path, name: str | None = None) -> Path:
    db = tmp_path / "runs.db"
    args = ["train", str(corpora / "german.txt"), "--vocab-size", "280", "--out-dir",
            str(tmp_path / "tok"), "--db", str(db), "--quiet"]  # fmt: skip
    assert main([*args, "--name", name] if name else args) == 0
    return db


def test_train_runs_and_count_speak_json(tmp_path, corpora, capsys):
    db = tmp_path / "runs.db"
    code, out, err = run_cli(capsys, "train", str(corpora / "german.txt"), "--vocab-size", "280",
                             "--out-dir", str(tmp_path / "tok"), "--db", str(db), "--json")  # fmt: skip
    assert code == 0, err
    summary = json.loads(out)
    assert summary["run_id"] == 1 and summary["merges"] == 24 and summary["files"] == 1
    assert {"documents", "bytes", "pre_tokens", "unique_pieces", "stop_reason", "seconds",
            "skipped", "written", "bytes_per_token", "vocab_size"} <= set(summary)  # fmt: skip
    code, out, _ = run_cli(capsys, "runs", "list", "--json", "--db", str(db))
    (run,) = json.loads(out)
    assert (run["id"], run["merges"], run["vocab_size"]) == (1, 24, 280)
    code, out, _ = run_cli(capsys, "runs", "show", "1", "--json", "--merges", "3", "--db", str(db))
    shown = json.loads(out)  # one object, nothing after it
    assert shown["id"] == 1 and len(shown["first_merges"]) == 3
    assert shown["first_merges"][0]["rank"] == 0
    code, out, err = run_cli(capsys, "count", str(corpora / "german.txt"), "--out",
                             str(tmp_path / "c.parquet"), "--json")  # fmt: skip
    assert code == 0, err
    counted = json.loads(out)
    assert counted["bytes"] == summary["bytes"] and counted["wrote"] == str(tmp_path / "c.parquet")


def test_runs_continue_writes_files(tmp_path, corpora, capsys):
    db = _trained(tmp_path, corpora)
    out = tmp_path / "more"
    code, stdout, err = run_cli(capsys, "runs", "continue", "1", "--vocab-size", "300",
                                "--out-dir", str(out), "--format", "hf", "--db", str(db))  # fmt: skip
    assert code == 0, err
    vocab = json.loads((out / "tokenizer.json").read_text("utf-8"))["model"]["vocab"]
    assert len(vocab) == 300


def test_runs_delete_asks_on_a_terminal_and_needs_y_without_one(tmp_path, corpora, capsys,
                                                                  monkeypatch):  # fmt: skip
    db = _trained(tmp_path, corpora)

    def count() -> int:
        with RunStore(db, read_only=True) as store:
            return len(store.list_runs())

    code, _, err = run_cli(capsys, "runs", "delete", "1", "--db", str(db))  # stdin: not a tty
    assert code == 2 and "-y" in err and count() == 1
    monkeypatch.setattr(sys.stdin, "isatty", lambda: True, raising=False)
    monkeypatch.setattr("builtins.input", lambda prompt: "n")
    code, _, err = run_cli(capsys, "runs", "delete", "1", "--db", str(db))
    assert code == 2 and "nothing deleted" in err and count() == 1
    monkeypatch.setattr("builtins.input", lambda prompt: "y")
    assert run_cli(capsys, "runs", "delete", "1", "--db", str(db))[0] == 0 and count() == 0
    _trained(tmp_path, corpora)
    monkeypatch.setattr("builtins.input", lambda prompt: pytest.fail("asked despite -y"))
    assert run_cli(capsys, "runs", "delete", "2", "-y", "--db", str(db))[0] == 0


def test_names_with_terminal_codes_are_printed_escaped(tmp_path, corpora, capsys):
    db = _trained(tmp_path, corpora, name=NASTY)
    code, out, _ = run_cli(capsys, "runs", "list", "--db", str(db))
    assert code == 0 and ESCAPED in out and "\x1b" not in out and "\x07" not in out
    for args in (
        ["runs", "show", "1"],
        ["runs", "show", "1", "--json"],
        ["runs", "list", "--json"],
    ):
        code, out, _ = run_cli(capsys, *args, "--db", str(db))
        assert code == 0 and "\x1b" not in out and "\x07" not in out
    assert (
        json.loads(run_cli(capsys, "runs", "list", "--json", "--db", str(db))[1])[0]["name"]
        == NASTY
    )
    missing = tmp_path / NASTY
    code, out, err = run_cli(capsys, "encode", "--tokenizer", str(tmp_path / "tok"), str(missing))
    assert code == 1 and ESCAPED in err and "\x1b" not in err and err.count("\n") == 1
    bad = tmp_path / NASTY
    bad.write_bytes(b"\xff\xfe")
    code, out, err = run_cli(capsys, "count", str(bad), str(corpora / "german.txt"), "--out",
                             str(tmp_path / "c.parquet"), "--skip-bad-files")  # fmt: skip
    assert code == 0 and ESCAPED in out and "\x1b" not in out


def test_many_skipped_files_are_counted_not_listed(tmp_path, corpora, capsys):
    folder = tmp_path / "corpus"
    folder.mkdir()
    (folder / "good.txt").write_text((corpora / "german.txt").read_text("utf-8"), "utf-8")
    for i in range(12):
        (folder / f"bad{i:02}.txt").write_bytes(b"\xff\xfe\x00")
    args = ["count", str(folder), "--out", str(tmp_path / "c.parquet"), "--skip-bad-files"]
    code, out, err = run_cli(capsys, *args)
    assert code == 0, err
    assert "skipped          12 files" in out and "and 7 more (--verbose" in out
    assert sum("bad" in line for line in out.splitlines()) == 5
    code, out, _ = run_cli(capsys, *args, "--verbose")
    assert sum("bad" in line for line in out.splitlines()) == 12


def test_csv_cells_that_look_like_formulas_are_quoted(tmp_path, corpora, capsys):
    from workbench.evaluate.report import csv_cell

    for risky in ("=1+1", "+1", "-1", "@SUM(A1)", "\tx", "\rx"):
        assert csv_cell(risky) == "'" + risky
    assert csv_cell(-1.5) == -1.5 and csv_cell("plain") == "plain"
    db = _trained(tmp_path, corpora)
    texts = tmp_path / "texts.jsonl"
    rows = [{"text": "Guten Tag", "lang": '=HYPERLINK("http://x")'},
            {"text": "Hallo Welt", "lang": "@cmd"}, {"text": "Tschüss", "lang": "-2+3"}]  # fmt: skip
    texts.write_text("".join(json.dumps(r) + "\n" for r in rows), "utf-8")
    out = tmp_path / "r.csv"
    code, _, err = run_cli(capsys, "eval", "--db", str(db), "--tokenizer", "run:1", str(texts),
                           "--group-by", "field:lang", "--csv", str(out))  # fmt: skip
    assert code == 0, err
    with out.open(encoding="utf-8") as handle:
        groups = {row["group"] for row in csv.DictReader(handle)}
    assert groups == {'\'=HYPERLINK("http://x")', "'@cmd", "'-2+3", "total"}
    assert out.read_text("utf-8").startswith('"tokenizer"')  # every cell quoted


def test_eval_reads_a_run_from_a_read_only_database(tmp_path, corpora, capsys, monkeypatch):
    db = _trained(tmp_path, corpora)
    from workbench.store import runs as store_runs

    real_connect = store_runs.connect

    def read_only_disk(path, read_only=False):  # a read-write open fails, as on a ro mount
        if not read_only:
            raise sqlite3.OperationalError("attempt to write a readonly database")
        return real_connect(path, read_only=True)

    monkeypatch.setattr(store_runs, "connect", read_only_disk)
    before = db.read_bytes()
    capsys.readouterr()
    code, out, err = run_cli(capsys, "eval", "--db", str(db), "--tokenizer", "run:1",
                             str(corpora / "german.txt"), "--json", "-")  # fmt: skip
    assert code == 0, err
    assert json.loads(out)["tokenizers"][0]["name"] == "run:1"  # stdout holds the JSON alone
    assert db.read_bytes() == before


def _full_disk(monkeypatch) -> None:
    def full(*args, **kwargs):
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(os, "replace", full)


@pytest.mark.parametrize("option", ["--json", "--html", "--csv"])
def test_eval_on_a_full_disk_replaces_nothing(tmp_path, corpora, capsys, monkeypatch, option):
    db = _trained(tmp_path, corpora)
    out = tmp_path / "report"
    out.write_text("the old report")
    _full_disk(monkeypatch)
    code, _, err = run_cli(capsys, "eval", "--db", str(db), "--tokenizer", "run:1",
                           str(corpora / "german.txt"), option, str(out))  # fmt: skip
    assert code == 1 and err.count("\n") == 1 and "disk is full" in err
    assert out.read_text() == "the old report"
    assert [p.name for p in tmp_path.iterdir() if p.name.startswith(".")] == []  # no temp left


def test_count_and_render_on_a_full_disk_replace_nothing(tmp_path, corpora, capsys, monkeypatch):
    _trained(tmp_path, corpora)
    counts = tmp_path / "c.parquet"
    page = tmp_path / "p.html"
    counts.write_bytes(b"old counts")
    page.write_text("old page")
    _full_disk(monkeypatch)
    code, _, err = run_cli(capsys, "count", str(corpora / "german.txt"), "--out", str(counts))
    assert code == 1 and err.count("\n") == 1 and "disk is full" in err
    text = tmp_path / "t.txt"
    text.write_text("Guten Tag " * 1000, "utf-8")
    code, _, err = run_cli(capsys, "render", "--tokenizer", str(tmp_path / "tok"), str(text),
                           "--out", str(page))  # fmt: skip
    assert code == 1 and err.count("\n") == 1 and "disk is full" in err
    assert counts.read_bytes() == b"old counts" and page.read_text() == "old page"
    assert sorted(p.name for p in tmp_path.iterdir()) == [
        "c.parquet", "p.html", "runs.db", "t.txt", "tok"
    ]  # fmt: skip


def test_dash_is_standard_output_and_dev_stdout_is_never_replaced(tmp_path, corpora):
    tok = tmp_path / "tok"
    assert main(["train", str(corpora / "german.txt"), "--vocab-size", "280", "--out-dir",
                 str(tok), "--no-db", "--quiet"]) == 0  # fmt: skip
    text = tmp_path / "t.txt"
    text.write_text("Guten Tag", "utf-8")
    proc = _cli("render", "--tokenizer", str(tok), str(text), "--out", "-")
    assert proc.returncode == 0 and proc.stdout.startswith("<!DOCTYPE html>")
    link = tmp_path / "stdout"  # as /dev/stdout: a link to the process's standard output
    link.symlink_to("/proc/self/fd/1")
    proc = _cli("render", "--tokenizer", str(tok), str(text), "--out", str(link))
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.startswith("<!DOCTYPE html>") and link.is_symlink()
    proc = _cli("render", "--tokenizer", str(tok), str(text), "--out", "/dev/stdout")
    assert proc.returncode == 0 and proc.stdout.startswith("<!DOCTYPE html>")
    assert Path("/dev/stdout").is_symlink()
    proc = subprocess.run(
        [sys.executable, "-m", "workbench", "count", str(corpora / "german.txt"), "--out", "-"],
        cwd=ROOT, env=ENV, capture_output=True, timeout=600,
    )  # fmt: skip
    assert proc.returncode == 0 and proc.stdout.startswith(b"PAR1")  # a Parquet file, whole
    assert b"wrote            standard output" in proc.stderr


def test_runs_list_words_a_state_as_the_window_does(tmp_path):
    """`runs list` says "finished (reached vocabulary size)", the window's words, not "done"."""
    import subprocess
    import sys

    corpus = tmp_path / "c.txt"
    corpus.write_text("the cat sat on the mat\n" * 50, encoding="utf-8")
    db = tmp_path / "runs.db"
    run = [sys.executable, "-m", "workbench"]
    done = subprocess.run(
        [*run, "train", str(corpus), "--vocab-size", "262", "--db", str(db), "--out-dir",
         str(tmp_path / "o"), "--quiet"],
        capture_output=True, text=True, timeout=600,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    listed = subprocess.run(
        [*run, "runs", "list", "--db", str(db)], capture_output=True, text=True, timeout=600
    )
    assert "finished (reached vocabulary size)" in listed.stdout, listed.stdout
    assert " done " not in listed.stdout
