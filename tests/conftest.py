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


# Hypothesis profiles, chosen by HYPOTHESIS_PROFILE: `ci` (the default; examples as Hypothesis
# sets them, no deadline: the first call of a Numba kernel compiles it) and `long` for a
# nightly-style run. A test's own @settings still win where it sets them.
settings.register_profile("ci", deadline=None)
settings.register_profile("long", max_examples=1_000_000, deadline=None)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "ci"))
