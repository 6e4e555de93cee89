"""Shared test set-up: Qt runs offscreen, Hypothesis profiles, corpora from ../shared/corpora."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from hypothesis import HealthCheck, settings

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")

# Property tests in two tiers: `ci` (the default, a few minutes for the whole suite) and `long`
# (twenty times the examples, for a nightly-style run): HYPOTHESIS_PROFILE=long python -m pytest.
# A module asks for a share of the profile's budget with `_bpe_helpers.examples(factor)`.
_COMMON = {"deadline": None, "suppress_health_check": [HealthCheck.too_slow]}
settings.register_profile("ci", max_examples=100, **_COMMON)
settings.register_profile("long", max_examples=2000, **_COMMON)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "ci"))

CORPORA = Path(__file__).resolve().parents[1].parent / "shared" / "corpora"


@pytest.fixture(scope="session")
def corpora() -> Path:
    """The shared corpora folder, or a skip with the reason when it is absent."""
    if not CORPORA.is_dir():
        pytest.skip(f"shared corpora not found at {CORPORA}")
    return CORPORA


@pytest.fixture(scope="session")
def gpt2_with_eot(corpora: Path, tmp_path_factory):
    """GPT-2's vocab.json and merges.txt with `<|endoftext|>` = 50256 in the sidecar, loaded as a
    user would (`workbench.load` of the folder)."""
    import workbench

    folder = tmp_path_factory.mktemp("gpt2")
    for name in ("vocab.json", "merges.txt"):
        (folder / name).write_bytes((corpora / f"gpt2_{name}").read_bytes())
    (folder / "bpe-workbench.json").write_text(
        '{"special_tokens": {"<|endoftext|>": 50256}}', encoding="utf-8"
    )
    return workbench.load(folder)
