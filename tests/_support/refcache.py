"""Answers of a reference library, kept on disk beside its environment until an input changes.

A reference run in its own interpreter (imt-ring under JAX: about a minute of CPU for the x_xy
corpus) gives the same answer for the same inputs, so the suite stores it under
``.venv-ref/cache/`` (made, and ignored by git, with the reference environments) keyed by a SHA-256
of everything the answer depends on: the reference script, the library's version, the request and
every input file's bytes. Any change there is a new key, so a stale answer is never read; the
reference still runs on a fresh machine and whenever its inputs move. ``HEBICTL_REFCACHE=0`` turns
the store off (every run asks the reference again).
"""

from __future__ import annotations

import hashlib
import json
import os
import tempfile
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

from tests._support.paths import REPO_ROOT

CACHE_DIR = REPO_ROOT / ".venv-ref" / "cache"


def key_of(parts: Iterable[str | bytes | Path]) -> str:
    """SHA-256 over ``parts``: strings and bytes as given, a path by its name and its bytes."""
    h = hashlib.sha256()
    for part in parts:
        if isinstance(part, Path):
            h.update(str(part).encode() + b"\0" + part.read_bytes())
        else:
            h.update(part.encode() if isinstance(part, str) else part)
        h.update(b"\0\0")
    return h.hexdigest()


def cached_answer(name: str, parts: Iterable[str | bytes | Path], compute: Callable[[], Any]) -> Any:
    """``compute()``'s JSON answer for these inputs, from the store when it holds one.

    Written atomically (a temporary file renamed over the key), so parallel test workers that
    compute the same answer at once leave one whole file; a store that cannot be written (a
    read-only checkout) only costs the next run the reference again."""
    if os.environ.get("HEBICTL_REFCACHE", "1") == "0" or not CACHE_DIR.parent.is_dir():
        return compute()
    path = CACHE_DIR / f"{name}-{key_of(parts)}.json"
    if path.is_file():
        try:
            return json.loads(path.read_text())
        except (OSError, ValueError):
            pass  # a damaged entry: ask the reference again and replace it
    answer = compute()
    try:
        CACHE_DIR.mkdir(exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=CACHE_DIR, prefix=f".{name}-")
        with os.fdopen(fd, "w") as f:
            json.dump(answer, f)
        os.replace(tmp, path)
    except OSError:
        pass
    return answer
