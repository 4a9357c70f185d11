"""Shared fixtures and the suite's collection rules: the corpus skip, hebi-py loaded quietly.

The helpers these build on live in :mod:`tests._support` (a test module imports them from there,
never from a conftest). The corpus (``../shared/corpus`` beside the repository) exists in CI and
developer checkouts, not in a user's clone. Every test that needs it skips with one reason,
:data:`tests._support.corpus.CORPUS_SKIP_REASON`, when it is absent; the mechanism is central, so
a test only has to say that it needs the corpus:

* mark it ``@pytest.mark.corpus`` (or set ``pytestmark = pytest.mark.corpus`` in the module), or
* take the ``corpus_dir`` fixture, or call :func:`~tests._support.corpus.corpus_path`, or
* parametrize over :func:`~tests._support.corpus.corpus_params` (one skipped parameter instead of an empty set).

``HEBICTL_CORPUS=none`` hides the corpus even where it exists (CI runs the suite that way too,
so a test that needs the corpus without saying so fails there); ``HEBICTL_CORPUS=PATH`` points
at another copy; ``HEBICTL_SHARED`` at another ``shared`` folder.
"""

from __future__ import annotations

import os
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests._support import cost
from tests._support.corpus import CORPUS_AVAILABLE, CORPUS_SKIP_REASON, corpus_path
from tests._support.hebi_py import import_hebi

# tests use the compiled kernels (numba compiles on first call, or loads its cache), never the
# interpreted ones a cold cache gets in a user's first run, and start no background compile;
# tests/jit/test_cache.py covers that path itself (nothing above imports hebictl)
os.environ.setdefault("HEBICTL_JIT", "eager")
# `hebictl run`/`teleop` (in-process or as the processes tests start) at normal scheduling unless a test
# asks for real time (tests/control/test_realtime.py, tests/cli/test_signals.py): a pytest worker that
# runs the CLI in-process must not lock its memory and move its thread to SCHED_FIFO
os.environ.setdefault("HEBICTL_RT_PRIORITY", "0")


@pytest.fixture(scope="session")
def corpus_dir() -> Path:
    """The ../shared/corpus folder; tests using it skip with a reason where it is absent."""
    return corpus_path()


@pytest.fixture
def broker(tmp_path: Path) -> Iterator[Any]:
    """An anonymous mosquitto on a free loopback port, killed at the end (skips without mosquitto)."""
    from tests._support.broker import local_broker  # imports hebictl: not before HEBICTL_JIT is set

    with local_broker(tmp_path / "broker") as b:
        yield b


@pytest.fixture
def scratch_registry() -> Iterator[None]:
    """Backends a test registers (``register_backend``) are unregistered after it."""
    from hebictl.hardware.registry import available_backends, unregister_backend

    before = set(available_backends())
    yield
    for name in set(available_backends()) - before:
        unregister_backend(name)


def pytest_configure(config: pytest.Config) -> None:
    """``--cost-report``: register the recorder. MuJoCo writes MUJOCO_LOG.TXT into the working
    directory: send it to a temp folder instead."""
    cost.configure(config)
    log_dir = Path(tempfile.mkdtemp(prefix="hebictl-test-mujoco-log-"))
    config._hebictl_mujoco_log = log_dir  # type: ignore[attr-defined]
    try:
        import mujoco
    except ImportError:
        return
    log_config = getattr(mujoco, "MjLogConfig", None)
    if log_config is not None:  # MuJoCo >= 3.4
        cfg = log_config.get()
        cfg.logfile = str(log_dir / "MUJOCO_LOG.TXT")
        cfg.set()


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Spread the ``heavy`` modules through the run (:func:`spread_heavy_modules`); without the
    corpus, skip every test that needs it with the one reason: "needs it" = marked ``corpus``, or
    uses the ``corpus_dir`` fixture, or is the skipped placeholder of a parametrization that came out
    empty because the corpus files are missing.
    """
    items[:] = spread_heavy_modules(items)
    if CORPUS_AVAILABLE:
        return
    skip = pytest.mark.skip(reason=CORPUS_SKIP_REASON)
    for item in items:
        empty_set = any(str(m.kwargs.get("reason", m.args[0] if m.args else "")).startswith("got empty parameter set")
                        for m in item.iter_markers(name="skip"))
        if empty_set or item.get_closest_marker("corpus") is not None or "corpus_dir" in getattr(
                item, "fixturenames", ()):
            item.add_marker(skip, append=False)  # first skip marker wins


def spread_heavy_modules(items: list[pytest.Item]) -> list[pytest.Item]:
    """The collected tests with the modules marked ``heavy`` (each starts many processes: a browser
    with its arm and panel processes, a RabbitMQ cluster with its arms, fuzz workers) placed evenly
    among the others, each module's tests kept together and in order. Collected by path, they all
    came in the last third of the suite (tests/panel, tests/teleop) and ran at once at its end: on
    2 cores a clean-clone run reached a load average of 20 there, and the e2e tests' arms and
    panels were starved into holds and hang guards. The order is the same on every xdist worker
    (the scheduler requires it), and ``--dist loadfile`` hands the modules out in this order."""
    modules: dict[str, list[pytest.Item]] = {}
    for item in items:
        modules.setdefault(item.nodeid.split("::", 1)[0], []).append(item)
    heavy = [m for m, its in modules.items() if any(i.get_closest_marker("heavy") for i in its)]
    light = [m for m in modules if m not in heavy]
    order = list(light)
    for k, module in enumerate(heavy):   # the k-th heavy module at (k + 1/2) / n of the light ones
        order.insert(round((k + 0.5) * len(light) / len(heavy)) + k, module)
    return [item for module in order for item in modules[module]]


@pytest.fixture(scope="session")
def hebi():
    """hebi-py, the reference implementation for HRDF models, trajectories and configs."""
    return import_hebi()


def pytest_addoption(parser: pytest.Parser) -> None:
    """``--fuzz-long``: run the opt-in long fuzz campaign of tests/fuzz (100,000 inputs);
    ``--cost-report FILE``: each test's wall, CPU and wait seconds (tests/_support/cost.py)."""
    cost.add_option(parser)
    parser.addoption("--fuzz-long", action="store_true", default=False,
                     help="run the long reader fuzz campaign (tests/fuzz; HEBICTL_FUZZ=N sets the input count)")
