"""examples/notebook.ipynb runs from top to bottom in a real kernel (nbclient) and shows what it
promises: progress bars, the HTML repr of the result, the hand-off to transformers."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

EXAMPLES = Path(__file__).resolve().parents[1] / "examples"


def test_the_notebook_runs_and_shows_progress_and_html(monkeypatch) -> None:
    nbformat = pytest.importorskip("nbformat")
    nbclient = pytest.importorskip("nbclient")
    pytest.importorskip("ipykernel")
    pytest.importorskip("transformers")
    notebook = nbformat.read(EXAMPLES / "notebook.ipynb", as_version=4)
    assert not any(cell.get("outputs") for cell in notebook.cells), "saved with outputs"
    root = str(EXAMPLES.parent)  # the kernel imports this checkout's workbench
    path = os.pathsep.join(p for p in (root, os.environ.get("PYTHONPATH", "")) if p)
    client = nbclient.NotebookClient(
        notebook,
        timeout=600,
        kernel_name="python3",
        resources={"metadata": {"path": str(EXAMPLES)}},
    )
    monkeypatch.setenv("PYTHONPATH", path)
    client.execute()
    outputs = [out for cell in notebook.cells for out in cell.get("outputs", [])]
    errors = "".join(out.get("text", "") for out in outputs if out.get("name") == "stderr")
    widgets = [
        out for out in outputs if "application/vnd.jupyter.widget-view+json" in out.get("data", {})
    ]
    assert ("merging" in errors and "100%" in errors) or widgets, errors[-500:]
    shown = [out["data"]["text/html"] for out in outputs if "text/html" in out.get("data", {})]
    assert any("TrainResult" in page and "data-all-ids" in page for page in shown)
    assert any(page.startswith("<div><b>Tokenizer</b>") for page in shown)
    printed = "".join(out.get("text", "") for out in outputs if out.get("name") == "stdout")
    assert "tokenizer_config.json" in printed and "TrainResult(" in printed
