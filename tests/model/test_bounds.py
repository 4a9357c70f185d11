"""Finite physics: models outside the documented physical ranges are refused when built, with file and line.

A finite but absurd number (a 1.8e308 kg mass, a centre of mass 1e308 m away) used to load and
then give NaN gravity compensation; hebictl.model.bounds refuses it wherever the model comes from.
The bounds are checked at their edges too: exactly the bound loads, the next float up does not.
"""

from __future__ import annotations

import math
import warnings

import numpy as np
import pytest

from hebictl.errors import FormatError, ModelError
from hebictl.formats import load_model_string
from hebictl.model import bounds
from hebictl.model.builder import ModelBuilder
from hebictl.model.tree import Inertia, Joint, JointKind


def _arm(mass: float = 1.0, com: tuple[float, float, float] = (0.0, 0.0, 0.1), reach: float = 0.3,
         scale: float = 1.0, damping: float = 0.0):
    b = ModelBuilder("arm")
    j = Joint("j1", JointKind.REVOLUTE, (0.0, 1.0, 0.0), scale=scale, damping=damping)
    i = b.add_body("link", -1, np.eye(4), j, Inertia(mass, com, np.eye(3) * 1e-3))
    T = np.eye(4)
    T[0, 3] = reach
    b.add_body("tool", i, T, Joint("j2", JointKind.PRISMATIC, (1.0, 0.0, 0.0), lower=-0.1, upper=0.1),
               Inertia(0.5, (0.0, 0.0, 0.0), np.eye(3) * 1e-4))
    return b.build()


def test_a_normal_arm_and_the_edges_of_each_bound_load():
    """Values at the bounds are accepted and give finite gravity compensation everywhere."""
    for kwargs in ({}, {"mass": bounds.MAX_MASS}, {"com": (bounds.MAX_LENGTH, 0.0, 0.0)},
                   {"reach": bounds.MAX_LENGTH}, {"scale": 1.0 / bounds.MAX_GEAR_RATIO},
                   {"damping": bounds.MAX_DAMPING}):
        model = _arm(**kwargs)
        rng = np.random.default_rng(1)
        for _ in range(5):
            q = rng.uniform(-math.pi, math.pi, model.nq)
            assert np.all(np.isfinite(model.gravity_compensation(q, gravity=[0.0, 0.0, -bounds.MAX_GRAVITY])))
            assert np.all(np.isfinite(model.forward_kinematics(q)))


@pytest.mark.parametrize(("kwargs", "fragment"), [
    ({"mass": np.nextafter(bounds.MAX_MASS, math.inf)}, "mass"),
    ({"mass": 1.8e308}, "mass"),
    ({"com": (1e308, 1e308, 1e308)}, "centre of mass"),
    ({"reach": 1e300}, "offset of body 'tool'"),
    ({"scale": 1e-200}, "gear ratio"),
    ({"scale": 1e7}, "gear ratio"),
    ({"damping": 1e300}, "damping"),
], ids=["mass-just-over", "mass-1.8e308", "com-1e308", "reach-1e300", "gear-1e200", "scale-1e7", "damping"])
def test_out_of_range_values_are_refused(kwargs, fragment):
    with pytest.raises(ModelError, match=fragment):
        _arm(**kwargs)


def test_gravity_and_base_are_bounded():
    b = ModelBuilder("g")
    b.add_body("a", -1, None, Joint("j", JointKind.REVOLUTE), Inertia(1.0, (0.0, 0.0, 0.1), np.eye(3)))
    with pytest.raises(ModelError, match="gravity"):
        b.build(gravity=(0.0, 0.0, -1e308))
    base = np.eye(4)
    base[2, 3] = 5e3
    with pytest.raises(ModelError, match="base transform"):
        b.build(base=base)


HRDF = '<robot version="1.6.0">\n<actuator type="X5-4"/>\n{elem}\n</robot>'


@pytest.mark.parametrize(("text", "fmt", "fragment"), [
    (HRDF.format(elem='<rigid-body mass="1" com_trans="1e308 1e308 1e308"/>'), "hrdf", "centre of mass"),
    (HRDF.format(elem='<rigid-body mass="1.8e308"/>'), "hrdf", "mass"),
    (HRDF.format(elem='<link type="X5" extension="1e300" twist="0"/>'), "hrdf", "finite|offset"),
    ('<robot name="r"><link name="a"><inertial><mass value="1.8e308"/><inertia ixx="1" iyy="1" izz="1" ixy="0" '
     'ixz="0" iyz="0"/></inertial></link></robot>', "urdf", "mass"),
    ('<mujoco><worldbody><body pos="1e300 0 0"><joint type="hinge"/><geom size="0.1"/></body></worldbody></mujoco>',
     "mjcf", "offset"),
], ids=["hrdf-com-1e308", "hrdf-mass-1.8e308", "hrdf-extension-1e300", "urdf-mass", "mjcf-pos-1e300"])
def test_readers_report_out_of_range_physics_as_format_errors(text, fmt, fragment):
    """Through any reader, a value out of range is a FormatError naming the file (and the body's line)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with pytest.raises(FormatError, match=fragment) as info:
            load_model_string(text, fmt, source_name=f"bad.{fmt}")
    assert str(info.value).startswith(f"bad.{fmt}")
