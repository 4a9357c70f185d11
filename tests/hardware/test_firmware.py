"""Firmware safety settings: hebictl's enums are hebi-py's raw values, config parsing, the dry-run text."""

from __future__ import annotations

import math

import numpy as np
import pytest

from hebictl.errors import ConfigError
from hebictl.hardware.firmware import (
    LimitState,
    LimitStrategy,
    ModuleSafety,
    MstopStrategy,
    safety_from_user_data,
)


@pytest.mark.parametrize(("field", "enum"), [("min_position_limit_strategy", LimitStrategy),
                                             ("max_position_limit_strategy", LimitStrategy),
                                             ("mstop_strategy", MstopStrategy)])
def test_enums_are_hebi_pys_raw_values(hebi, field, enum):
    """Each name hebi-py accepts for a field maps to the same raw value as ours."""
    names = {"HOLD_POSITION": "HoldPosition", "DAMPED_SPRING": "DampedSpring", "MOTOR_OFF": "MotorOff",
             "DISABLED": "Disabled"}
    for member in enum:
        cmd = hebi.GroupCommand(1)
        setattr(cmd, field, names[member.name])
        assert int(getattr(cmd, field)[0]) == int(member), member


def test_limit_state_values_match_hebi_docs(hebi):
    """hebi-py documents position_limit_state raw values Below 0 .. Uninitialized 5."""
    doc = type(hebi.GroupFeedback(1)).position_limit_state.__doc__
    for member in LimitState:
        word = {"BELOW": "Below", "AT_LOWER": "AtLower", "INSIDE": "Inside", "AT_UPPER": "AtUpper",
                "ABOVE": "Above", "UNINITIALIZED": "Uninitialized"}[member.name]
        assert f":code:`{word}` (raw value: :code:`{int(member)}`)" in doc


def test_create_checks_and_broadcasts():
    s = ModuleSafety.create([-1, -2], [1, 2], min_strategy="DampedSpring", mstop_strategy=["MotorOff", 2])
    assert s.min_strategy == (LimitStrategy.DAMPED_SPRING,) * 2
    assert s.max_strategy == (LimitStrategy.HOLD_POSITION,) * 2
    assert s.mstop_strategy == (MstopStrategy.MOTOR_OFF, MstopStrategy.HOLD_POSITION)
    with pytest.raises(ConfigError, match="unknown strategy"):
        ModuleSafety.create([0], [1], min_strategy="Hold")
    with pytest.raises(ConfigError, match="ordered"):
        ModuleSafety.create([1], [0])
    with pytest.raises(ConfigError, match="same length"):
        ModuleSafety.create([0, 0], [1])


def test_user_data_section_is_off_by_default_and_widens_the_limits():
    assert safety_from_user_data({}, [-1], [1]) is None
    send, s = safety_from_user_data({"module_safety": {"margin": 0.1, "mstop_strategy": "MotorOff"}},
                                    [-1.0, -math.inf], [1.0, math.inf])
    assert send is False
    np.testing.assert_allclose(s.position_min, [-1.1, -math.inf])
    np.testing.assert_allclose(s.position_max, [1.1, math.inf])
    assert s.mstop_strategy == (MstopStrategy.MOTOR_OFF,) * 2
    assert safety_from_user_data({"module_safety": {"send": True}}, [0], [1])[0] is True
    with pytest.raises(ConfigError, match=r"user_data\.module_safety\.sned"):
        safety_from_user_data({"module_safety": {"sned": True}}, [0], [1])


def test_dry_run_text_and_infinite_limits_left_unset(hebi):
    s = ModuleSafety.create([-1.0, -math.inf], [2.0, math.inf], max_strategy="MotorOff")
    text = s.describe(["J1", "J2"])
    assert text.splitlines()[0] == ("J1  position_limit_min=-1.0000 (HoldPosition)  position_limit_max=+2.0000 "
                                    "(MotorOff)  mstop_strategy=HoldPosition")
    cmd = hebi.GroupCommand(2)
    s.apply_to(cmd)
    assert cmd.position_limit_min[0] == -1.0 and math.isnan(cmd.position_limit_min[1])
