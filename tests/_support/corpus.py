"""The corpus of others' robot files (``../shared/corpus``) and the one reason its tests skip.

The corpus exists in CI and developer checkouts, not in a user's clone. Every test that needs it
skips with one reason, :data:`CORPUS_SKIP_REASON`, when it is absent (tests/conftest.py applies it
to tests marked ``corpus`` or taking the ``corpus_dir`` fixture); a test only has to say that it
needs the corpus: call :func:`corpus_path`, or parametrize over :func:`corpus_params`.

``HEBICTL_CORPUS=none`` hides the corpus even where it exists (CI runs the suite that way too,
so a test that needs the corpus without saying so fails there); ``HEBICTL_CORPUS=PATH`` points
at another copy; ``HEBICTL_SHARED`` at another ``shared`` folder.
"""

from __future__ import annotations

import os
import tempfile
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

import pytest

from tests._support.paths import REPO_ROOT

# ../shared beside the repo (a user's clone has none); HEBICTL_SHARED overrides for odd layouts.
SHARED_DIR = Path(os.environ.get("HEBICTL_SHARED", REPO_ROOT.parent / "shared")).resolve()
CORPUS_ENV = os.environ.get("HEBICTL_CORPUS", "")
#: True when the corpus is hidden on purpose (HEBICTL_CORPUS=none)
CORPUS_HIDDEN = CORPUS_ENV.strip().lower() in ("none", "off", "0", "no")
# a hidden corpus points nowhere, so module-level globs (CORPUS_DIR.rglob) find nothing either
CORPUS_DIR = (Path(tempfile.gettempdir()) / "hebictl-corpus-hidden-by-HEBICTL_CORPUS" if CORPUS_HIDDEN
              else Path(CORPUS_ENV).resolve() if CORPUS_ENV else SHARED_DIR / "corpus")
CORPUS_AVAILABLE = CORPUS_DIR.is_dir()
CORPUS_MISSING = "../shared/corpus not found: the corpus comparisons are skipped"
#: the one reason every corpus test skips with
CORPUS_SKIP_REASON = CORPUS_MISSING + (" (hidden by HEBICTL_CORPUS=none)" if CORPUS_HIDDEN else "")


def corpus_path(*parts: str) -> Path:
    """Path inside ../shared/corpus, skipping the calling test when the corpus is absent."""
    if not CORPUS_AVAILABLE:
        pytest.skip(CORPUS_SKIP_REASON)
    return CORPUS_DIR.joinpath(*parts)


def corpus_params(values: Iterable[Any], ids: Callable[[Any], str] | None = None) -> list[Any]:
    """Parameters for a corpus-wide parametrization: the values, or (no corpus) one skipped param.

    An empty list would make pytest skip with "got empty parameter set", which says nothing
    about why; this gives the one corpus reason instead.
    """
    values = list(values)
    if not values and not CORPUS_AVAILABLE:
        return [pytest.param(None, id="no-corpus", marks=pytest.mark.skip(reason=CORPUS_SKIP_REASON))]
    return values if ids is None else [pytest.param(v, id=ids(v)) for v in values]


def load_or_skip(path: Path | None) -> Any:
    """The model of a corpus file, its warnings silenced; the calling test skips where the corpus is
    absent (``path`` None, :func:`corpus_params`' placeholder) or hebictl rejects the file (the
    reader's own tests cover rejections)."""
    import warnings

    from hebictl.errors import FormatError
    from hebictl.formats import load_model

    if path is None:
        pytest.skip(f"corpus not found at {CORPUS_DIR}")
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return load_model(path)
    except FormatError:
        pytest.skip("hebictl rejects this file (covered by the reader's own tests)")
