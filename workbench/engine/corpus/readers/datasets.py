"""Folders written by Hugging Face `datasets.save_to_disk`, read without `datasets` itself.

Such a folder holds `data-00000-of-000NN.arrow` files (Arrow IPC streams, one record per row)
beside `state.json` (which lists them, in order, under `_data_files`) and `dataset_info.json`; a
`DatasetDict` is a folder of such folders plus `dataset_dict.json`. Walking the folder already
finds the `.arrow` files in their sorted (= saved) order; what is left is to leave the JSON
metadata out, which would otherwise be read as a text document.
"""

from __future__ import annotations

import json
from pathlib import Path

METADATA = ("state.json", "dataset_info.json")
DICT_METADATA = "dataset_dict.json"


def is_dataset_folder(folder: Path) -> bool:
    """A folder with a `state.json` that lists Arrow data files."""
    try:
        state = json.loads((folder / "state.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return False
    files = state.get("_data_files") if isinstance(state, dict) else None
    return isinstance(files, list) and all(
        isinstance(f, dict) and str(f.get("filename", "")).endswith(".arrow") for f in files
    )


def _is_dict_metadata(path: Path) -> bool:
    try:
        record = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return False
    return isinstance(record, dict) and isinstance(record.get("splits"), list)


def without_dataset_metadata(files: list[Path]) -> list[Path]:
    """`files` less the metadata of saved datasets (their Arrow files stay, in order)."""
    folders: dict[Path, bool] = {}

    def dataset(folder: Path) -> bool:
        if folder not in folders:
            folders[folder] = is_dataset_folder(folder)
        return folders[folder]

    kept = []
    for path in files:
        name = path.name
        if name in METADATA and dataset(path.parent):
            continue
        if name == DICT_METADATA and _is_dict_metadata(path):
            continue
        kept.append(path)
    return kept
