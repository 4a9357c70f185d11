"""The plugin table (hebictl.wiring.plugin_table): config plugin types to classes, plugins from entries."""

from __future__ import annotations

import logging

import numpy as np
import pytest

from hebictl.config import PluginConfig, load_config
from hebictl.control.arm import Arm
from hebictl.control.plugins import DoubledJointMirror, EffortOffset, GravityCompensationEffort
from hebictl.control.safety import Limits
from hebictl.errors import ConfigError
from hebictl.hardware.clock import SimClock
from hebictl.plugin_schema import KNOWN_PLUGINS
from hebictl.wiring import arm_from_config
from hebictl.wiring.plugin_table import PLUGIN_TYPES, plugin_from_config
from tests._support.paths import KIT6_CONFIG


def test_table_covers_exactly_the_implemented_schema_types():
    implemented = {t for t, spec in KNOWN_PLUGINS.items() if spec.implemented}
    assert set(PLUGIN_TYPES) == implemented
    assert "OvertorqueFaultMonitor" in KNOWN_PLUGINS and "OvertorqueFaultMonitor" not in PLUGIN_TYPES
    assert all(cls.type_name == t for t, cls in PLUGIN_TYPES.items())
    assert PLUGIN_TYPES["DoubledJointMirror"] is DoubledJointMirror


def test_plugin_from_config_takes_hebis_defaults_and_the_entry():
    grav = plugin_from_config(PluginConfig("GravityCompensationEffort", "gravComp"))
    assert isinstance(grav, GravityCompensationEffort) and grav.name == "gravComp"
    offset = plugin_from_config(PluginConfig("EffortOffset", "spring", ramp_time=0.5, params={"offset": 2.0}))
    assert isinstance(offset, EffortOffset) and offset.ramp_time == 0.5


def test_unimplemented_type_is_skipped_with_a_warning(caplog):
    with caplog.at_level(logging.WARNING, logger="hebictl.wiring.plugin_table"):
        assert plugin_from_config(PluginConfig("OvertorqueFaultMonitor", "otm",
                                               params={"base_torque_error_limit": 3.0})) is None
    assert "not implemented" in caplog.text


def test_bad_parameter_is_a_config_error():
    with pytest.raises(ConfigError, match="plugin EffortOffset"):
        plugin_from_config(PluginConfig("EffortOffset", "spring", params={"offset": 1.0, "bogus": 2}))


class LoggedArm(Arm):
    """A subclass: Arm.from_config builds this class, through the wiring layer."""


def test_from_config_builds_the_calling_class():
    with LoggedArm.from_config(KIT6_CONFIG, clock=SimClock()) as arm:
        assert type(arm) is LoggedArm and arm.update()
    with arm_from_config(Arm, KIT6_CONFIG, "mock", clock=SimClock()) as arm:
        assert type(arm) is Arm
        assert [p.type_name for p in arm.plugins] == [p.type for p in load_config(KIT6_CONFIG).plugins]


def test_limits_bounded_follows_the_arrays():
    inf = np.full(3, np.inf)
    lim = Limits(-inf, inf.copy(), np.ones(3), np.ones(3))
    assert not lim.bounded
    lim.position_max[1] = 2.0
    assert not lim.bounded  # until refresh
    lim.refresh()
    assert lim.bounded
