"""Assembly (hebictl.wiring.assembly): the config is read once and every backend is opened alike."""

from __future__ import annotations

import logging

import numpy as np
import pytest

import hebictl.config
import hebictl.wiring.assembly
from hebictl.control.arm import Arm
from hebictl.hardware.clock import SimClock
from hebictl.hardware.mock import open_mock
from hebictl.hardware.registry import available_backends, register_backend
from hebictl.wiring.assembly import assemble
from tests._support.paths import REPO_ROOT

KIT6 = REPO_ROOT / "configs" / "x-series-6dof.cfg.yaml"


def test_config_is_loaded_once(monkeypatch):
    calls = []
    real = hebictl.config.load_config

    def counting(path, **kw):
        calls.append(path)
        return real(path, **kw)

    # the wiring imports load_config by name; anything else would reach it through hebictl.config
    monkeypatch.setattr(hebictl.config, "load_config", counting)
    monkeypatch.setattr(hebictl.wiring.assembly, "load_config", counting)
    Arm.from_config(KIT6, clock=SimClock()).close()
    assert len(calls) == 1


def test_backends_get_exactly_the_spec_fields_they_declare(scratch_registry):
    """A factory naming model/command_lifetime/user_data gets them (lifetime in seconds); one that
    does not is opened with names/families only: the assembly has no per-backend case."""
    seen: dict[str, dict] = {}

    def declares(*, names, families, dof, clock, model, command_lifetime, user_data):
        seen["declares"] = {"model": model, "command_lifetime": command_lifetime, "user_data": user_data}
        return open_mock(names=names, families=families, clock=clock)

    def plain(*, names, families, dof, clock):
        seen["plain"] = {"names": names}
        return open_mock(names=names, families=families, clock=clock)

    register_backend("test-declares", declares)
    register_backend("test-plain", plain)
    assert {"test-declares", "test-plain"} <= set(available_backends())
    parts = assemble(KIT6, "test-declares", clock=SimClock())
    parts.backend.close()
    assert seen["declares"]["model"].dof == 6
    assert seen["declares"]["command_lifetime"] == pytest.approx(0.25)  # seconds, as in the YAML
    assert "joint_limits" in seen["declares"]["user_data"]
    parts = assemble(KIT6, "test-plain", clock=SimClock())
    assert parts.backend.command_lifetime == pytest.approx(0.25)  # set through the Backend protocol
    parts.backend.close()
    assert seen["plain"]["names"][0] == "J1_base"


def test_module_safety_dry_run_and_send(tmp_path, caplog):
    text = KIT6.read_text().replace("../hrdf_kits/", str(REPO_ROOT / "hrdf_kits") + "/")
    text = text.replace('"gains/', f'"{REPO_ROOT}/configs/gains/')
    cfg = tmp_path / "kit.cfg.yaml"
    cfg.write_text(text.replace("user_data:\n", "user_data:\n  module_safety: {send: false}\n", 1))
    with caplog.at_level(logging.INFO, logger="hebictl.wiring.assembly"):
        parts = assemble(cfg, clock=SimClock())
    parts.backend.close()
    assert "dry run" in caplog.text and not parts.module_safety_sent
    np.testing.assert_allclose(parts.module_safety.position_min, parts.limits.position_min - 0.05)
    cfg.write_text(text.replace("user_data:\n", "user_data:\n  module_safety: {send: true}\n", 1))
    parts = assemble(cfg, clock=SimClock())
    parts.backend.close()
    assert parts.module_safety_sent
