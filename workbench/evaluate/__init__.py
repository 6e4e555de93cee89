"""Evaluating tokenizers on held-out text: which one is better for my data (no Qt here).

`specs` turns `run:ID@k`, a file or `gpt2`/`cl100k`/`o200k` into a named tokenizer
(`references` finds OpenAI's ranks offline); `texts` reads documents with the corpus readers and
groups them; `metrics` counts and compares; `health` finds wasted tokens; `curves` traces
compression against the number of merges; `report` writes JSON, CSV and HTML; `compare` and
`diff` set two merge lists side by side (`bpe-workbench diff`); `plan` prices each prefix k with a
serving-cost model (`eval --plan`). `evaluate.run`
ties them together as a cancellable job that the CLI and the window share.
"""
