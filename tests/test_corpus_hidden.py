"""The suite without ../shared/corpus, as on a user's clone: corpus tests skip with one reason.

CI also runs the whole suite with ``HEBICTL_CORPUS=none`` (``.ci/run``); this quick check keeps the
mechanism honest in every run: collection works without the corpus, and every test marked
``corpus`` skips with :data:`tests._support.corpus.CORPUS_MISSING` instead of failing or skipping
with pytest's uninformative "got empty parameter set".
"""

from __future__ import annotations

import os
import re
import subprocess
import sys

import pytest

from tests._support.corpus import CORPUS_MISSING, corpus_params
from tests._support.paths import REPO_ROOT


def _pytest_hidden(*args: str, timeout: float = 240) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "HEBICTL_CORPUS": "none"}
    return subprocess.run([sys.executable, "-m", "pytest", "-p", "no:cacheprovider", *args], cwd=REPO_ROOT,
                          env=env, capture_output=True, text=True, timeout=timeout)


@pytest.mark.timeout(300)
def test_corpus_tests_skip_with_one_reason() -> None:
    """The whole suite collects (module-level corpus globs and parametrizations must not break it: a
    collection error is exit code 2 and an "error" in the summary), and every ``corpus`` test
    skips, always with the same reason."""
    out = _pytest_hidden("-q", "-rs", "-m", "corpus")
    assert out.returncode in (0, 5), out.stdout[-3000:] + out.stderr[-2000:]  # 5: nothing selected
    assert re.search(r"\d+ skipped, \d+ deselected", out.stdout), out.stdout[-2000:]
    summary = out.stdout.strip().splitlines()[-1]
    assert "failed" not in summary and "error" not in summary and "passed" not in summary, summary
    reasons = {line.split(": ", 1)[1] for line in out.stdout.splitlines() if line.startswith("SKIPPED")}
    assert reasons <= {CORPUS_MISSING + " (hidden by HEBICTL_CORPUS=none)"}, reasons


def test_corpus_params_gives_one_skipped_placeholder_when_absent(monkeypatch: pytest.MonkeyPatch) -> None:
    """An empty corpus parametrization becomes one skipped param naming the corpus, not an empty set."""
    from tests._support import corpus as c

    monkeypatch.setattr(c, "CORPUS_AVAILABLE", False)
    (param,) = c.corpus_params([])
    assert param.id == "no-corpus"
    assert param.marks[0].kwargs["reason"] == c.CORPUS_SKIP_REASON
    monkeypatch.setattr(c, "CORPUS_AVAILABLE", True)
    assert corpus_params([]) == []
    assert [p.id for p in corpus_params(["a/b.urdf"], ids=str.upper)] == ["A/B.URDF"]
