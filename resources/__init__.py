"""Installed as the package `workbench.resources`: the app icon and the demo corpus's prose.

The folder stays at the top of the repository (the screenshots, the PyInstaller spec and the
packaging files read it there); pyproject's `package-dir` maps it into the package, so a wheel,
`pip install --user` and an editable install all find it with `importlib.resources`.
"""
