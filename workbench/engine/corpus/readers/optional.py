"""Optional packages: imported on first use, with a one-line way out when one is missing.

`require("pyarrow", "parquet")` returns the module, or raises a `WorkbenchError` that says
`pip install "bpe-workbench[parquet]"`; the engine imports nothing optional at module level.
"""

from __future__ import annotations

import importlib
from types import ModuleType

from workbench.engine.errors import WorkbenchError


class MissingPackageError(WorkbenchError):
    """An optional package this input or option needs is not installed."""


def require(module: str, extra: str, why: str = "") -> ModuleType:
    try:
        return importlib.import_module(module)
    except ImportError:
        top = module.split(".")[0]
        reason = f" ({why})" if why else ""
        raise MissingPackageError(
            f'{top} is not installed{reason}: pip install "bpe-workbench[{extra}]"'
        ) from None
