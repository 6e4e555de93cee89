"""Shared test set-up: Qt runs offscreen, corpora come from ../shared/corpora."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from hypothesis import settings

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")

CORPORA = Path(__file__).resolve().parents[1].parent / "shared" / "corpora"


@pytest.fixture(scope="session")
def corpora() -> Path:
    """The shared corpora folder, or a skip with the reason when it is absent."""
    if not CORPORA.is_dir():
        pytest.skip(f"shared corpora not found at {CORPORA}")
    return CORPORA


# Hypothesis profiles, chosen by HYPOTHESIS_PROFILE: "ci" (the default: Hypothesis' own example
# counts, no deadline on a shared 2-core machine) and "long" (nightly-style: 50x the examples;
# BPE_WORKBENCH_FUZZ=long selects it too). Tests that set their own counts keep them.
settings.register_profile("ci", deadline=None)
settings.register_profile("long", deadline=None, max_examples=5000)
_PROFILE = os.environ.get("HYPOTHESIS_PROFILE") or (
    "long" if os.environ.get("BPE_WORKBENCH_FUZZ") == "long" else "ci"
)
settings.load_profile(_PROFILE)
