"""Only what pyproject.toml cannot say: the package list.

It is every package found under `workbench/` plus `workbench.resources` (and its data folders), which lives at the top
of the repository (`resources/`, mapped by pyproject's `package-dir`); a `packages.find` table
cannot add a package from outside the folder it searches. Everything else is in pyproject.toml.
"""

from setuptools import find_packages, setup

RESOURCES = ["workbench.resources", "workbench.resources.icons", "workbench.resources.demo"]

setup(packages=[*find_packages(include=["workbench", "workbench.*"]), *RESOURCES])
