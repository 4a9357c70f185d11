"""The realtime tier's tables name tests that exist: a misspelt or renamed entry would silently move a
wall-clock test into the parallel tier, where a second worker disturbs its timing."""

from __future__ import annotations

import ast

import pytest

from tests._support.paths import TESTS_DIR
from tests._support.tiers import BROKER_LANE_MODULES, EXCLUSIVE_MODULES, REALTIME_MODULES, REALTIME_TESTS


def _test_functions(rel: str) -> set[str]:
    tree = ast.parse((TESTS_DIR / rel).read_text(encoding="utf-8"))
    return {node.name for node in ast.walk(tree) if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef)}


@pytest.mark.parametrize("entry", sorted(REALTIME_TESTS))
def test_every_listed_realtime_test_exists(entry: str) -> None:
    rel, name = entry.split("::")
    assert (TESTS_DIR / rel).is_file(), f"{entry}: no module tests/{rel}"
    assert name in _test_functions(rel), f"{entry}: no function {name} in tests/{rel}"
    assert rel not in REALTIME_MODULES, f"{entry}: its whole module is realtime already"


@pytest.mark.parametrize("rel", sorted(REALTIME_MODULES))
def test_every_listed_realtime_module_exists(rel: str) -> None:
    assert (TESTS_DIR / rel).is_file(), f"no module tests/{rel}"
    assert any(name.startswith("test") for name in _test_functions(rel)), f"tests/{rel} holds no test"


@pytest.mark.parametrize("rel", sorted(EXCLUSIVE_MODULES))
def test_every_exclusive_module_exists_and_is_realtime(rel: str) -> None:
    """An exclusive module runs alone only if it is in the realtime tier (tools/dev selects
    ``realtime and exclusive``): one whose tests fell into the parallel tier would lose it."""
    assert (TESTS_DIR / rel).is_file(), f"no module tests/{rel}"
    assert rel in REALTIME_MODULES, f"tests/{rel} is not listed whole in the realtime tier (REALTIME_MODULES)"


@pytest.mark.parametrize("rel", sorted(BROKER_LANE_MODULES))
def test_every_broker_lane_module_exists_and_is_not_exclusive(rel: str) -> None:
    """A lane module that moved or was renamed would silently put its tests back in the first lane
    (slower, not wrong); one that is also exclusive would run beside the first lane, not alone."""
    assert (TESTS_DIR / rel).is_file(), f"no module tests/{rel}"
    assert any(name.startswith("test") for name in _test_functions(rel)), f"tests/{rel} holds no test"
    assert rel not in EXCLUSIVE_MODULES, f"tests/{rel} is exclusive: it must run alone, not in a lane"
