"""The desktop build's inputs: the spec ships every command; the desktop files validate.

PyInstaller is not needed: the spec's hidden imports come from `packaging/hidden_imports.py`,
which the spec calls and these tests call the same way. A build once left out `count` and
`eval`, which the command line imports by name where PyInstaller cannot see it.
"""

from __future__ import annotations

import argparse
import ast
import configparser
import re
import shutil
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

from workbench.cli import build_parser

ROOT = Path(__file__).resolve().parents[1]
PACKAGING = ROOT / "packaging"
APP_ID = "io.github.bpe_workbench.BpeWorkbench"
sys.path.insert(0, str(PACKAGING))
from hidden_imports import hidden_imports  # noqa: E402

sys.path.remove(str(PACKAGING))


def _command_modules() -> dict[str, str]:
    """Each registered command (and `runs` action) → the module of the function it runs."""
    found = {}
    parsers = [("", build_parser())]
    while parsers:
        prefix, parser = parsers.pop()
        for action in parser._actions:
            if isinstance(action, argparse._SubParsersAction):
                for name, sub in action.choices.items():
                    parsers.append((f"{prefix} {name}".strip(), sub))
        func = parser.get_default("func")
        if func is not None:
            found[prefix] = getattr(func, "__wrapped__", func).__module__
    return found


def test_the_spec_takes_its_hidden_imports_from_the_package_tree() -> None:
    call = _spec_keyword("hiddenimports")
    assert isinstance(call, ast.Call) and getattr(call.func, "id", None) == "hidden_imports"


def test_every_command_the_cli_registers_is_a_hidden_import() -> None:
    commands = _command_modules()
    assert {"train", "count", "encode", "export", "render", "eval", "bench", "runs list"} <= set(
        commands
    )
    hidden = set(hidden_imports(ROOT))
    missing = {name: module for name, module in commands.items() if module not in hidden}
    assert missing == {}
    # Loaded by name, never by an import statement PyInstaller could follow.
    assert {"workbench.gui.app", "workbench.cli"} <= hidden
    assert all(m.startswith("workbench") and "__pycache__" not in m for m in hidden)


def _spec_keyword(name: str) -> ast.expr:
    tree = ast.parse((PACKAGING / "bpe-workbench.spec").read_text(encoding="utf-8"))
    calls = [n for n in ast.walk(tree) if isinstance(n, ast.Call)]
    for call in calls:
        if getattr(call.func, "id", None) == "Analysis":
            for keyword in call.keywords:
                if keyword.arg == name:
                    return keyword.value
    raise AssertionError(f"the spec has no Analysis({name}=...)")


def test_the_spec_excludes_no_required_dependency() -> None:
    excluded = set(ast.literal_eval(_spec_keyword("excludes")))
    project = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    required = list(project["dependencies"]) + list(
        project.get("optional-dependencies", {}).get("gui", [])
    )
    modules = {
        re.split(r"[<>=!\[ ;]", spec, maxsplit=1)[0].lower().replace("-", "_") for spec in required
    }
    # Distribution names that differ from the module they install.
    modules = {
        {"pyside6_essentials": "PySide6", "sqlite_utils": "sqlite_utils"}.get(m, m) for m in modules
    }
    assert modules & excluded == set()
    assert "PySide6" in modules and "numba" in modules


def test_hidden_imports_follow_the_source_tree(tmp_path: Path) -> None:
    for relative in ("workbench/__init__.py", "workbench/cli/__init__.py", "workbench/cli/new.py"):
        (tmp_path / relative).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / relative).write_text("")
    (tmp_path / "workbench/__pycache__").mkdir()
    (tmp_path / "workbench/__pycache__/x.py").write_text("")
    assert hidden_imports(tmp_path) == ["workbench", "workbench.cli", "workbench.cli.new"]


def test_the_desktop_entry_names_the_launcher_and_the_icon_the_deb_installs() -> None:
    entry = configparser.ConfigParser(interpolation=None)
    entry.optionxform = str  # keys are case-sensitive
    entry.read(PACKAGING / f"{APP_ID}.desktop", encoding="utf-8")
    desktop = entry["Desktop Entry"]
    assert desktop["Exec"].split()[0] == "bpe-workbench"
    assert desktop["Icon"] == APP_ID and (PACKAGING / f"{APP_ID}.svg").is_file()
    script = (PACKAGING / "build.sh").read_text(encoding="utf-8")
    assert "/usr/bin/bpe-workbench" in script and "hicolor/scalable/apps/$APP_ID.svg" in script
    assert "usr/share/applications/$APP_ID.desktop" in script
    assert "usr/share/metainfo/$APP_ID.metainfo.xml" in script


def test_build_script_is_valid_bash() -> None:
    done = subprocess.run(
        ["bash", "-n", str(PACKAGING / "build.sh")], capture_output=True, text=True
    )
    assert done.returncode == 0, done.stderr


def _validator(name: str) -> str:
    found = shutil.which(name)
    if found is None:
        pytest.skip(f"{name} is not installed (apt-get install desktop-file-utils appstream)")
    return found


def test_the_desktop_entry_validates() -> None:
    tool = _validator("desktop-file-validate")
    done = subprocess.run(
        [tool, str(PACKAGING / f"{APP_ID}.desktop")], capture_output=True, text=True
    )
    assert done.returncode == 0 and done.stdout.strip() == "", done.stdout + done.stderr


def test_the_appstream_metainfo_validates() -> None:
    tool = _validator("appstreamcli")
    done = subprocess.run(
        [tool, "validate", "--no-net", str(PACKAGING / f"{APP_ID}.metainfo.xml")],
        capture_output=True,
        text=True,
    )
    assert done.returncode == 0, done.stdout + done.stderr
