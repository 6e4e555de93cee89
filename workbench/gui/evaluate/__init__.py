"""Pieces of the Evaluate tab (`workbench/gui/evaluate_tab.py`): the pickers, the table models,
the plots and the runner that keeps evaluations off the UI thread."""
