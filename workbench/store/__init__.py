"""The run store: every training run, its settings and every merge, in one SQLite file.

No Qt here, and the engine never imports this package; the worker feeds it the same merge
batches the charts get. Typical use (what `train --db FILE` and the window do)::

    from workbench.store import RunStore

    store = RunStore(db_path)                    # None -> default_db_path(); migrates, and
                                                 # marks runs of dead processes `interrupted`
    run_id = store.create_run("wiki-32k", settings=config, corpus={...}, stats={...})
    with store.writer(run_id) as writer:         # RunWriter: its own connection, use it in
        try:                                     # the training thread only
            for batch in BpeTrainer(words, config).batches():
                writer.write(batch)              # one transaction per MergeBatch
            writer.set_state("done", stop_reason="vocab size reached", timings={...})
        except Exception as exc:
            writer.set_state("failed", error=str(exc))
            raise

    store.merges(run_id, after_rank=-1, limit=500)      # keyset pages for the merge list
    store.search(run_id, text="the", length_range=(3, None))
    pairs = store.merges_as_pairs(run_id)               # -> Tokenizer.from_merges(...)

Readers (RunStore, in any thread or process) are never blocked by the writer: WAL mode, short
transactions. `readable(token)` is the display form the merge list and search share.
"""

from workbench.store.connection import default_db_path
from workbench.store.errors import RunNotFound, StoreError
from workbench.store.models import RunInfo, StoredMerge
from workbench.store.readable import readable
from workbench.store.runs import RunStore
from workbench.store.schema import SCHEMA_VERSION, init_db
from workbench.store.writer import RunWriter

__all__ = [
    "SCHEMA_VERSION",
    "RunInfo",
    "RunNotFound",
    "RunStore",
    "RunWriter",
    "StoreError",
    "StoredMerge",
    "default_db_path",
    "init_db",
    "readable",
]
