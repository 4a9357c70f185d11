"""Every HEBI kit config in the corpus: the ones hebi-py accepts build an Arm on mock and hebi-imitation."""

from __future__ import annotations

import warnings
from pathlib import Path

import numpy as np
import pytest

from hebictl.config import load_config
from hebictl.control.arm import Arm
from hebictl.errors import ConfigError, FormatError, HebictlError
from hebictl.hardware.clock import SimClock
from tests._support.corpus import CORPUS_DIR, corpus_path
from tests._support.hebi_py import import_hebi

CONFIGS = sorted((CORPUS_DIR / "hebi").rglob("*.cfg.yaml")) if CORPUS_DIR.is_dir() else []


def _hebi_builds(path):
    """Whether hebi-py can load the config, its HRDF and its gains files (hebi.arm itself needs hardware;
    its create_from_config would fail on a missing gains file, which hebi's config loader lets through)."""
    hebi = import_hebi()
    try:
        cfg = hebi.config.load_config(str(path))
        if cfg.hrdf is None:
            return False
        hebi.robot_model.import_from_hrdf(cfg.hrdf)
        for gains in (cfg.gains or {}).values():
            hebi.GroupCommand(len(cfg.names)).read_gains(gains)
    except Exception:
        return False
    return True


@pytest.mark.parametrize("path", CONFIGS or [None], ids=lambda p: str(p.relative_to(CORPUS_DIR)) if p else "none")
@pytest.mark.parametrize("backend", ["mock", "hebi-imitation"])
def test_corpus_config_builds_an_arm(path, backend):
    """hebi-py-loadable configs build and run one cycle; the others fail naming the file and key."""
    if path is None:
        corpus_path()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        if not _hebi_builds(path):
            with pytest.raises((ConfigError, FormatError)) as err:
                Arm.from_config(path, backend=backend, clock=SimClock())
            e = err.value
            if isinstance(e, ConfigError):  # names the config and the key (e.g. a missing gains file)
                # the same file, however it was reached (a symlinked ../shared resolves elsewhere)
                assert e.file is not None and Path(e.file).resolve() == path.resolve() and e.key, e
            else:  # the config is fine, its HRDF is not: names the HRDF file and line
                assert e.file.endswith(".hrdf") and e.line is not None, e
            return
        try:
            arm = Arm.from_config(path, backend=backend, clock=SimClock())
        except HebictlError as exc:  # pragma: no cover - shows which config broke
            pytest.fail(f"{path}: {exc}")
    with arm:
        clock = arm.clock
        for _ in range(3):
            if backend == "hebi-imitation":
                clock.advance(0.01)
            arm.update()
            arm.send()
        assert arm.dof == len(load_config(path).names)
        assert np.all(np.isfinite(arm.pending_command.effort))
