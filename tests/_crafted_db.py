"""A small real run database to craft from, and the store's read paths a crafted one must pass
(shared by the crafted-database tests and their fuzzer)."""

from __future__ import annotations

import shutil
from pathlib import Path

from workbench.store import RunStore

TEXT = "low lower lowest newer newest wider widest " * 20


def make_db(path: Path) -> Path:
    """A database with one finished run (30 real merges, a special token, top pieces)."""
    import workbench

    workbench.train([TEXT, TEXT], 286, special_tokens=["<|endoftext|>"], db=path, name="crafted")
    return path


_TEMPLATE: dict[str, bytes] = {}


def fresh_db(folder: Path) -> Path:
    """A copy of the template database in `folder` (made once per test session)."""
    if "db" not in _TEMPLATE:
        made = make_db(folder / "template.db")
        _TEMPLATE["db"] = made.read_bytes()
        made.unlink()
        for extra in folder.glob("template.db-*"):
            extra.unlink()
    path = folder / "runs.db"
    path.write_bytes(_TEMPLATE["db"])
    return path


def read_everything(db: Path, out: Path) -> None:
    """Every read path the CLI and the window take, through store APIs; raises what they do."""
    from workbench.store.tokenizer_of_run import export_run, merge_counts, tokenizer_of_run

    with RunStore(db, read_only=True) as store:
        runs = store.list_runs()
        for run in runs[:3]:
            store.get_run(run.id)
            store.merges(run.id, limit=50)
            store.merge_count(run.id)
            store.merge_by_id(run.id, 260)
            store.merges_using(run.id, 108)
            store.search(run.id, text="low")
            store.search(run.id, regex="e+")
            store.search_count(run.id, text="we")
            store.top_pieces(run.id)
            merge_counts(store, run.id)
            tokenizer_of_run(store, run.id)
            shutil.rmtree(out, ignore_errors=True)
            export_run(store, run.id, "hf", out)
