"""The reference-answer store (tests/_support/refcache.py): an answer is reused only for the same
inputs, a changed input file asks the reference again, and HEBICTL_REFCACHE=0 always asks."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests._support import refcache


@pytest.fixture
def store(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    (tmp_path / "venv-ref").mkdir()
    monkeypatch.setattr(refcache, "CACHE_DIR", tmp_path / "venv-ref" / "cache")
    monkeypatch.delenv("HEBICTL_REFCACHE", raising=False)
    return tmp_path


def test_same_inputs_reuse_the_answer_and_a_changed_file_asks_again(store: Path) -> None:
    model = store / "model.xml"
    model.write_text("<a/>")
    calls: list[int] = []

    def ask() -> dict[str, int]:
        calls.append(1)
        return {"answer": len(calls)}

    assert refcache.cached_answer("ref", ["v1", model], ask) == {"answer": 1}
    assert refcache.cached_answer("ref", ["v1", model], ask) == {"answer": 1}
    assert len(calls) == 1
    model.write_text("<b/>")   # the same name, other bytes: a new key
    assert refcache.cached_answer("ref", ["v1", model], ask) == {"answer": 2}
    assert refcache.cached_answer("ref", ["v2", model], ask) == {"answer": 3}   # another version
    assert len(list(refcache.CACHE_DIR.glob("ref-*.json"))) == 3


def test_a_damaged_entry_is_replaced_and_the_switch_turns_the_store_off(store: Path,
                                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    assert refcache.cached_answer("ref", ["x"], lambda: [1]) == [1]
    (entry,) = refcache.CACHE_DIR.glob("ref-*.json")
    entry.write_text("{not json")
    assert refcache.cached_answer("ref", ["x"], lambda: [2]) == [2]
    assert refcache.cached_answer("ref", ["x"], lambda: [3]) == [2]
    monkeypatch.setenv("HEBICTL_REFCACHE", "0")
    assert refcache.cached_answer("ref", ["x"], lambda: [4]) == [4]


def test_a_tree_digest_changes_with_any_file_of_the_tree_and_is_bounded(tmp_path: Path,
                                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    """An answer that depends on a file's neighbours (an SDF include, a SKEL world's mesh) is keyed
    by the whole tree: editing, adding or renaming any file of it is a new key."""
    root = tmp_path / "tree"
    (root / "obj").mkdir(parents=True)
    (root / "world.skel").write_text("<skel/>")
    (root / "obj" / "foot.obj").write_text("v 0 0 0\n")
    digests = [refcache.tree_digest.__wrapped__(root)]
    (root / "obj" / "foot.obj").write_text("v 0 0 1\n")          # a mesh the world reaches into
    digests.append(refcache.tree_digest.__wrapped__(root))
    (root / "obj" / "foot.obj").rename(root / "obj" / "hand.obj")  # same bytes, another name
    digests.append(refcache.tree_digest.__wrapped__(root))
    (root / "readme.txt").write_text("")                          # a new (empty) file
    digests.append(refcache.tree_digest.__wrapped__(root))
    assert len(set(digests)) == 4, digests
    assert refcache.tree_digest.__wrapped__(root) == digests[-1]   # and nothing else moves it
    monkeypatch.setattr(refcache, "TREE_MAX_FILES", 2)
    with pytest.raises(ValueError, match="more than a reference input tree may hold"):
        refcache.tree_digest.__wrapped__(root)
