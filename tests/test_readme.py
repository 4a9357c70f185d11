"""The Python examples of README.md, CONTRIBUTING.md and docs/*.md run as written.

Every ```python block is executed; the blocks of one file run in order in one namespace, as a
reader pastes them one after the other. The working directory is a temporary folder that holds
links to the repository's ``hrdf_kits/`` and ``configs/`` (the examples' relative paths are the
repository root's), so an example that writes a file writes it there, not into the repository.

A block that needs something a test run does not have is preceded by an HTML comment
``<!-- test: skip REASON -->``; it is reported as skipped with that reason, never silently.
"""

from __future__ import annotations

import os
import re
from pathlib import Path

import pytest

from tests._support.paths import REPO_ROOT

DOCS = [REPO_ROOT / "README.md", REPO_ROOT / "CONTRIBUTING.md", *sorted((REPO_ROOT / "docs").glob("*.md"))]
_BLOCK = re.compile(r"(?:<!--\s*test:\s*skip\s*(?P<skip>.*?)-->\s*\n)?```python\n(?P<code>.*?)\n```", re.S)
#: repository folders the examples refer to by relative path
LINKED = ("hrdf_kits", "configs")


def python_blocks(doc: Path) -> list[tuple[int, str, str | None]]:
    """(line, code, skip reason or None) of each ```python block of a Markdown file."""
    text = doc.read_text(encoding="utf-8")
    return [(text.count("\n", 0, m.start("code")) + 1, m.group("code"), (m.group("skip") or "").strip() or None)
            for m in _BLOCK.finditer(text)]


DOCS_WITH_CODE = [d for d in DOCS if python_blocks(d)]


def test_the_readme_has_python_examples() -> None:
    """The test below cannot pass vacuously: the README's own example is found."""
    assert python_blocks(REPO_ROOT / "README.md")


@pytest.mark.timeout(300)
@pytest.mark.parametrize("doc", DOCS_WITH_CODE, ids=lambda d: d.relative_to(REPO_ROOT).as_posix())
def test_python_examples_run(doc: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Each block runs without an exception, in order, sharing one namespace per file."""
    for name in LINKED:
        (tmp_path / name).symlink_to(REPO_ROOT / name, target_is_directory=True)
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("MPLBACKEND", "Agg")
    before = set(os.listdir(REPO_ROOT))
    namespace: dict[str, object] = {"__name__": "__main__"}
    skipped = []
    for line, code, skip in python_blocks(doc):
        where = f"{doc.relative_to(REPO_ROOT)}:{line}"
        if skip:
            skipped.append(f"{where}: {skip}")
            continue
        try:
            exec(compile(code, where, "exec"), namespace)
        except Exception as exc:
            pytest.fail(f"{where}: the example stops with {type(exc).__name__}: {exc}")
    assert set(os.listdir(REPO_ROOT)) == before, "an example wrote into the repository"
    if skipped:
        pytest.skip("; ".join(skipped))
