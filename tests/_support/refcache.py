"""Answers of a reference library, kept on disk beside its environment until an input changes.

A reference run in its own interpreter (imt-ring under JAX: about a minute of CPU for the x_xy
corpus; Drake on the SDF corpus, 17 s; dartpy once per SKEL file, 10 s) gives the same answer for
the same inputs, so the suite stores it under ``.venv-ref/cache/`` (made, and ignored by git, with
the reference environments) keyed by a SHA-256 of everything the answer depends on: the reference
script, the library's version, the request and every input file's bytes (or, where a file reaches
into its neighbours, as SDF includes and SKEL meshes do, every file of the folder tree it lives in:
:func:`tree_digest`). Any change there is a new key, so a stale answer is never read; the reference
still runs on a fresh machine and whenever its inputs move. ``HEBICTL_REFCACHE=0`` turns the store
off (every run asks the reference again).
"""

from __future__ import annotations

import functools
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


def installed_versions(python: Path, *packages: str) -> list[str]:
    """The installed versions of ``packages`` in the venv of interpreter ``python`` (a reference venv
    under .venv-ref/), as their ``*.dist-info`` folder names: part of an answer's key, read without
    starting that interpreter."""
    venv = python.parents[1]
    return sorted(p.name for p in venv.glob("lib/python*/site-packages/*.dist-info")
                  if p.name.lower().startswith(packages))


#: a folder tree hashed as one input stays under these bounds (the corpus trees are 1-4 MB); a
#: larger one is not a cache key but an error, so a mistaken root fails loudly instead of crawling /
TREE_MAX_FILES, TREE_MAX_BYTES = 20_000, 256 * 1024 * 1024


@functools.cache
def tree_digest(root: Path) -> str:
    """SHA-256 over every regular file under ``root``: relative names and bytes, in sorted order.

    For a reference answer that depends on more than the files it was handed (an SDF
    ``<include>``, a SKEL world's ``../obj`` mesh): any byte changed anywhere in the tree is a new
    key. Computed once per process and root (the suite does not edit the corpus while it runs)."""
    h = hashlib.sha256()
    files = sorted(p for p in root.rglob("*") if p.is_file())
    if len(files) > TREE_MAX_FILES:
        raise ValueError(f"{root}: {len(files)} files, more than a reference input tree may hold ({TREE_MAX_FILES})")
    total = 0
    for p in files:
        data = p.read_bytes()
        total += len(data)
        if total > TREE_MAX_BYTES:
            raise ValueError(f"{root}: over {TREE_MAX_BYTES >> 20} MiB, more than a reference input tree may hold")
        h.update(p.relative_to(root).as_posix().encode() + b"\0" + data + b"\0\0")
    return f"tree:{root}:{h.hexdigest()}"


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
