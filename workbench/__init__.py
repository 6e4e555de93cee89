"""BPE Workbench: train byte-level BPE tokenizers and watch every merge arrive."""

__version__ = "0.1.0"
