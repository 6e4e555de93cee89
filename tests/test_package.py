"""The package as pip builds and installs it: one version, resources, user paths, sdist and wheel.

The build tests run `python -m build` into `tmp_path` (setuptools is fetched into build's own
isolated environment, so they need the package index CI installs from) and list the archives;
one installs the wheel into a folder and asks a fresh interpreter where its resources are, so the
check holds for `pip install --user` and any non-editable install, not only a checkout.
"""

from __future__ import annotations

import importlib.util
import os
import re
import subprocess
import sys
import tarfile
import tomllib
import zipfile
from pathlib import Path

import pytest

import workbench
from workbench.gui.resources import demo_corpus, icon_path, resource_dir
from workbench.store.connection import default_db_path

ROOT = Path(__file__).resolve().parents[1]
PYPROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
VERSION = PYPROJECT["project"]["version"]
DESKTOP_ID = "io.github.bpe_workbench.BpeWorkbench"


def test_the_version_is_written_once_in_pyproject() -> None:
    assert workbench.__version__ == VERSION
    # Anywhere else a literal version would drift: the code must read it, not repeat it.
    written = re.compile(r"""(__version__\s*=\s*["']|setApplicationVersion\(\s*["'])""")
    offenders = [
        str(path.relative_to(ROOT))
        for folder in ("workbench", "packaging")
        for path in (ROOT / folder).rglob("*.py")
        if written.search(path.read_text(encoding="utf-8"))
    ]
    assert offenders == []


def test_resources_are_found_in_a_checkout() -> None:
    assert icon_path().is_file()
    assert (resource_dir() / "icons" / "bpe-workbench.png").is_file()
    assert resource_dir() / "demo" / "about_bpe.txt" in demo_corpus()


def test_the_run_store_stays_where_it_was_on_linux(monkeypatch, tmp_path: Path) -> None:
    if not sys.platform.startswith("linux"):
        pytest.skip("the old location was written for Linux here")
    monkeypatch.delenv("BPE_WORKBENCH_DB", raising=False)
    monkeypatch.delenv("XDG_DATA_HOME", raising=False)
    monkeypatch.setenv("HOME", str(tmp_path))
    assert default_db_path() == tmp_path / ".local" / "share" / "bpe-workbench" / "runs.db"


def test_project_metadata_names_urls_classifiers_and_license_file() -> None:
    project = PYPROJECT["project"]
    assert project["license"] == "MIT" and project["license-files"] == ["LICENSE"]
    assert {"Homepage", "Source", "Issues", "Changelog"} <= project["urls"].keys()
    assert any(c.startswith("Topic ::") for c in project["classifiers"])
    assert any(d.startswith("platformdirs") for d in project["dependencies"])
    assert "MIT License" in (ROOT / "LICENSE").read_text(encoding="utf-8")
    assert f"## [{VERSION}]" in (ROOT / "CHANGELOG.md").read_text(encoding="utf-8")


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    if importlib.util.find_spec("build") is None:
        pytest.skip("the `build` package is not installed (it is in the test extra)")
    out = tmp_path_factory.mktemp("dist")
    done = subprocess.run(
        [sys.executable, "-m", "build", "--outdir", str(out), str(ROOT)],
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    (wheel,) = out.glob("*.whl")
    (sdist,) = out.glob("*.tar.gz")
    return {"wheel": wheel, "sdist": sdist}


@pytest.mark.slow
def test_the_wheel_holds_the_resources_license_and_metadata(built: dict[str, Path]) -> None:
    with zipfile.ZipFile(built["wheel"]) as wheel:
        names = set(wheel.namelist())
        dist_info = f"bpe_workbench-{VERSION}.dist-info"
        metadata = wheel.read(f"{dist_info}/METADATA").decode("utf-8")
    assert {
        "workbench/resources/__init__.py",
        "workbench/resources/icons/bpe-workbench.svg",
        "workbench/resources/icons/bpe-workbench.png",
        "workbench/resources/demo/about_bpe.txt",
        f"{dist_info}/licenses/LICENSE",
        "workbench/cli/__init__.py",
        "workbench/engine/__init__.py",
    } <= names
    assert not [n for n in names if "screenshots" in n]  # README pictures stay out of installs
    assert not [n for n in names if n.startswith(("tests/", "benchmarks/", "packaging/"))]
    assert f"Version: {VERSION}" in metadata
    assert "License-Expression: MIT" in metadata
    assert "Project-URL: Source, " in metadata and "Classifier: Topic ::" in metadata


@pytest.mark.slow
def test_the_sdist_holds_packaging_docs_license_and_changelog(built: dict[str, Path]) -> None:
    with tarfile.open(built["sdist"]) as sdist:
        top = f"bpe_workbench-{VERSION}/"
        names = {m.name.removeprefix(top) for m in sdist.getmembers()}
    expected = {
        "LICENSE",
        "CHANGELOG.md",
        "README.md",
        "setup.py",
        "packaging/bpe-workbench.spec",
        "packaging/hidden_imports.py",
        "packaging/build.sh",
        f"packaging/{DESKTOP_ID}.desktop",
        f"packaging/{DESKTOP_ID}.metainfo.xml",
        f"packaging/{DESKTOP_ID}.svg",
        "resources/icons/bpe-workbench.svg",
        "docs/how-it-works.md",
        "docs/command-line.md",
    }
    assert expected <= names, expected - names
    assert not [n for n in names if "__pycache__" in n]


@pytest.mark.slow
def test_an_installed_wheel_finds_its_resources_and_version(
    built: dict[str, Path], tmp_path: Path
) -> None:
    """A non-editable install (as `pip install --user` makes) away from the checkout."""
    site = tmp_path / "site"
    subprocess.run(
        [sys.executable, "-m", "pip", "install", "--quiet", "--no-deps", "--no-index",
         "--target", str(site), str(built["wheel"])],
        check=True,
        capture_output=True,
    )  # fmt: skip
    probe = (
        "import workbench\n"
        "from workbench.gui.resources import demo_corpus, icon_path\n"
        "print(workbench.__file__)\n"
        "print(icon_path())\n"
        "print(demo_corpus()[0])\n"
        "print(workbench.__version__)\n"
    )
    env = {**os.environ, "PYTHONPATH": str(site)}
    done = subprocess.run(
        [sys.executable, "-c", probe], cwd=tmp_path, env=env, capture_output=True, text=True
    )
    assert done.returncode == 0, done.stderr
    module, icon, prose, version = done.stdout.splitlines()
    assert Path(module).is_relative_to(site)
    assert Path(icon) == site / "workbench" / "resources" / "icons" / "bpe-workbench.svg"
    assert Path(icon).is_file()
    assert Path(prose) == site / "workbench" / "resources" / "demo" / "about_bpe.txt"
    assert version == VERSION  # from the installed metadata: no pyproject.toml beside it
