"""The engine: corpus reading, pre-tokenization, training and tokenizing.

Pure Python + Numba. Nothing here imports Qt or SQLite (a test checks it).
"""
