"""The engine's layout holds: one sub-package per stage, each a facade with `__all__` whose names
all resolve, facades that load nothing heavy on import, and no module too long to read."""

from __future__ import annotations

import importlib
import subprocess
import sys
from pathlib import Path

import pytest

import workbench.engine

ENGINE = Path(workbench.engine.__file__).parent
STAGES = [
    "workbench.engine.patterns",
    "workbench.engine.corpus",
    "workbench.engine.pretokenize",
    "workbench.engine.pretokenize.scan",
    "workbench.engine.train",
    "workbench.engine.encode",
    "workbench.engine.formats",
]
LONGEST = 600  # lines a module may have (generated tables aside)
GENERATED = {"_unicode_data.py"}


@pytest.mark.parametrize("package", STAGES)
def test_each_stage_is_a_facade_whose_names_resolve(package: str) -> None:
    module = importlib.import_module(package)
    assert module.__doc__ and module.__doc__.strip() != "TODO"
    names = module.__all__
    assert names and len(names) == len(set(names))
    for name in names:
        assert getattr(module, name) is not None, f"{package}.{name}"


def test_no_engine_module_is_too_long_to_read() -> None:
    long = {
        str(path.relative_to(ENGINE)): n
        for path in ENGINE.rglob("*.py")
        if path.name not in GENERATED and (n := len(path.read_text().splitlines())) > LONGEST
    }
    assert long == {}


def test_every_engine_module_says_what_it_does() -> None:
    silent = [
        str(path.relative_to(ENGINE))
        for path in ENGINE.rglob("*.py")
        if not path.read_text().lstrip().startswith(('"""', 'r"""'))
    ]
    assert silent == []


@pytest.mark.parametrize(
    "package",
    ["workbench.engine.train", "workbench.engine.pretokenize", "workbench.engine.corpus"],
)
def test_a_lazy_facade_loads_no_numba_on_import(package: str) -> None:
    code = f"import sys, {package}; print('numba' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"
