"""Shared fixtures: where the corpus of others' robot files lives, and hebi-py loaded quietly."""

from __future__ import annotations

import contextlib
import io
import os
from pathlib import Path

import pytest

REPO_ROOT = Path(__file__).resolve().parents[1]
# ../shared beside the repo (a user's clone has none); HEBICTL_SHARED overrides for odd layouts.
SHARED_DIR = Path(os.environ.get("HEBICTL_SHARED", REPO_ROOT.parent / "shared")).resolve()
CORPUS_DIR = SHARED_DIR / "corpus"


def corpus_path(*parts: str) -> Path:
    """Path inside ../shared/corpus, skipping the calling test when the corpus is absent."""
    if not CORPUS_DIR.is_dir():
        pytest.skip(f"corpus not found at {CORPUS_DIR} (../shared is beside the repo only in CI "
                    "and developer checkouts)")
    return CORPUS_DIR.joinpath(*parts)


@pytest.fixture(scope="session")
def corpus_dir() -> Path:
    """The ../shared/corpus folder; tests using it skip with a reason where it is absent."""
    return corpus_path()


def import_hebi():
    """Import hebi-py without its 'matplotlib not found' chatter on stdout."""
    with contextlib.redirect_stdout(io.StringIO()):
        import hebi
    return hebi


@pytest.fixture(scope="session")
def hebi():
    """hebi-py, the reference implementation for HRDF models, trajectories and configs."""
    return import_hebi()
