"""The package's version, written once (in pyproject.toml) and read from the installed metadata.

A checkout run through `PYTHONPATH` has no metadata, so there the version is read from the
`pyproject.toml` beside the package, or is "unknown" when that is missing too. Stdlib only and
cheap: `--version` and `import workbench` must not pay for anything heavy.

    version() -> "0.1.0"
"""

from __future__ import annotations

import importlib.metadata
import tomllib
from pathlib import Path

DISTRIBUTION = "bpe-workbench"


def version() -> str:
    source = _checkout_version()  # a checkout on PYTHONPATH wins over an older install
    if source is not None:
        return source
    try:
        return importlib.metadata.version(DISTRIBUTION)
    except importlib.metadata.PackageNotFoundError:
        return "unknown"


def _checkout_version() -> str | None:
    """The version in the `pyproject.toml` of the repository this package sits in, if any."""
    pyproject = Path(__file__).resolve().parents[1] / "pyproject.toml"
    try:
        with pyproject.open("rb") as f:
            project = tomllib.load(f).get("project", {})
    except (OSError, tomllib.TOMLDecodeError):
        return None
    if project.get("name") != DISTRIBUTION:
        return None
    found = project.get("version")
    return found if isinstance(found, str) else None
