"""DoubledJointMirror against hebi-py's plugin: the mirror module's command and the split effort."""

from __future__ import annotations

import numpy as np
import pytest

from hebictl.control.plugins import DoubledJointMirror
from hebictl.errors import ConfigError
from tests._support.plugin_arm import HOME, set_state


@pytest.mark.parametrize("mirror", [True, False])
def test_command_and_split_equal_hebi_py(hebi, arm, mirror):
    import hebi._internal.plugins.double_shoulder_plugin as ref_module

    ref_module.GroupCommand = hebi.GroupCommand  # hebi-py imports it only for type checking
    group = hebi.util.create_imitation_group(1)
    ref = ref_module.DoubledJointMirror(index=1, group=group, mirror=mirror, name="d", enabled=True, ramp_time=0.0)
    ours = DoubledJointMirror("d", index=1, group_family="Arm", group_name="J2B_shoulder", mirror=mirror)
    ours.on_associated(arm)
    assert arm.opened == [(["J2B_shoulder"], ["Arm"], [1], [-1.0 if mirror else 1.0])]
    effort = np.array([0.5, 12.0, -3.0, 1.0, 0.2, 0.1])
    set_state(arm, HOME, np.zeros(6), HOME + 0.1, np.full(6, 0.3), effort)
    ours.update(arm, 0.01)
    ref_arm_cmd = hebi.GroupCommand(6)
    ref_arm_cmd.position, ref_arm_cmd.velocity, ref_arm_cmd.effort = HOME + 0.1, np.full(6, 0.3), effort
    ref.update(type("A", (), {"pending_command": ref_arm_cmd})(), 0.01)
    np.testing.assert_allclose(arm.pending_command.effort, ref_arm_cmd.effort)
    np.testing.assert_allclose([ours.command.position[0], ours.command.velocity[0], ours.command.effort[0]],
                               [ref._cmd.position[0], ref._cmd.velocity[0], ref._cmd.effort[0]])
    assert ours.send(arm)
    ours.close()


def test_nan_effort_is_not_split(arm):
    ours = DoubledJointMirror("d", index=1, group_family="Arm", group_name="B")
    ours.on_associated(arm)
    set_state(arm, HOME, np.zeros(6), HOME, np.zeros(6), np.nan)
    ours.update(arm, 0.01)
    assert np.isnan(ours.command.effort[0]) and np.isnan(arm.pending_command.effort[1])
    ours.close()


def test_index_out_of_range_is_a_config_error(arm):
    with pytest.raises(ConfigError):
        DoubledJointMirror("d", index=6, group_family="Arm", group_name="B").on_associated(arm)
