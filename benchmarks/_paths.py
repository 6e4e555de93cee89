"""Where the benchmarks find their inputs: given, never guessed from where the package lives.

`BPE_WORKBENCH_CORPORA` names the folder of reference corpora (the repository's sibling
`../shared/corpora` when unset, as in a checkout); `BPE_WORKBENCH_GPT2` a GPT-2 tokenizer folder.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent


def corpora() -> Path:
    folder = Path(
        os.environ.get("BPE_WORKBENCH_CORPORA", HERE.parent.parent / "shared" / "corpora")
    )
    if not folder.is_dir():
        sys.exit(f"corpora folder {folder} not found: set BPE_WORKBENCH_CORPORA")
    return folder
