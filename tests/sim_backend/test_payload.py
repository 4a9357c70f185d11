"""with_payload / strip_payload / Payload: a payload body checked against hebi-py's add_rigid_body."""

from __future__ import annotations

import numpy as np
import pytest

from tests._support.extras import extra_missing

pytest.importorskip("mujoco", reason=extra_missing("mujoco"))  # sim_backend is the sim extra

from hebictl.errors import ConfigError, ModelError
from hebictl.formats import load_model
from sim_backend.payload import PAYLOAD_KEY, Payload, strip_payload, with_payload
from tests._support.paths import REPO_ROOT

KIT = REPO_ROOT / "hrdf_kits" / "x-series-6dof.hrdf"
# the kit's end effector as an HRDF rigid body, so hebi-py can add a body after it (it refuses after an end effector)
EE = '<end-effector type="Custom" mass="0.08" com_trans="0 0 0.02" output_trans="0 0 0.05" tag="tool"/>'
EE_AS_BODY = '<rigid-body mass="0.08" com_trans="0 0 0.02" output_trans="0 0 0.05"/>'


@pytest.mark.parametrize(("mass", "com"), [(0.7, (0.01, -0.02, 0.05)), (2.5, (0.0, 0.0, 0.0)),
                                           (0.05, (-0.1, 0.2, 0.3))])
def test_payload_gravity_matches_hebi_rigid_body(hebi, mass, com):
    """Gravity torques with a payload equal hebi-py's model with add_rigid_body at the end effector."""
    text = KIT.read_text()
    assert EE in text
    ref = hebi.robot_model.import_from_hrdf_string(text.replace(EE, EE_AS_BODY))
    assert ref.add_rigid_body(np.array(com), np.zeros(6), mass, np.eye(4))
    model = with_payload(load_model(KIT), mass, com)
    gravity = np.array([0.0, 0.0, -9.81])
    rng = np.random.default_rng(3)
    for q in rng.uniform(-np.pi, np.pi, (20, model.dof)):
        np.testing.assert_allclose(model.gravity_compensation(q), ref.get_grav_comp_efforts(q, gravity),
                                   rtol=0, atol=1e-12)
    assert model.total_mass == pytest.approx(load_model(KIT).total_mass + mass, abs=1e-12)


def test_payload_keeps_joints_frames_and_kinematics():
    """Coordinates, joint names and every frame pose are those of the model without payload."""
    base = load_model(KIT)
    loaded = with_payload(base, Payload(1.0, (0.0, 0.0, 0.1)))
    q = np.array([0.2, 1.0, 1.5, 2.0, -1.0, 0.3])
    assert loaded.joint_names == base.joint_names
    for kind in ("output", "com", "input", "end_effector"):
        np.testing.assert_array_equal(loaded.forward_kinematics(q, kind), base.forward_kinematics(q, kind))
    np.testing.assert_array_equal(loaded.masses, base.masses)  # hebi's per-element masses: the payload is none
    assert PAYLOAD_KEY in loaded.bodies[-1].metadata


def test_strip_payload_restores_the_model():
    """strip_payload undoes with_payload (gravity back to the bare model's); a bare model is returned as is."""
    base = load_model(KIT)
    q = np.array([0.2, 1.0, 1.5, 2.0, -1.0, 0.3])
    stripped = strip_payload(with_payload(with_payload(base, 0.5, (0, 0, 0.1)), 0.2))
    assert len(stripped.bodies) == len(base.bodies)
    np.testing.assert_array_equal(stripped.gravity_compensation(q), base.gravity_compensation(q))
    assert strip_payload(base) is base


@pytest.mark.parametrize(("value", "key"), [
    ({"com": [0, 0, 0.1]}, "payload.mass"),
    ({"mass": -1.0}, "payload"),
    ({"mass": 1.0, "com": [0, 0]}, "payload"),
    ({"mass": 1.0, "colour": "red"}, "payload.colour"),
    ({"mass": 1.0, "index": 1.5}, "payload"),
    ([1.0, 0.0], "payload"),
])
def test_bad_payload_is_a_config_error_naming_the_key(value, key):
    """Malformed payload settings raise ConfigError with the offending key, never a raw exception."""
    with pytest.raises(ConfigError) as err:
        Payload.from_mapping(value, key="payload")
    assert err.value.key == key


def test_payload_from_mapping_reads_inertia_forms():
    """inertia may be a 3x3 tensor or its diagonal; com defaults to the end-effector origin."""
    full = Payload.from_mapping({"mass": 1.0, "inertia": [[1e-3, 0, 0], [0, 2e-3, 0], [0, 0, 3e-3]]})
    diag = Payload.from_mapping({"mass": 1.0, "inertia": [1e-3, 2e-3, 3e-3]})
    assert full == diag
    assert full.com == (0.0, 0.0, 0.0)


def test_missing_end_effector_is_a_model_error():
    """A payload needs an end effector to hang from."""
    with pytest.raises(ModelError):
        with_payload(load_model(KIT), Payload(1.0, index=1))


@pytest.mark.parametrize(("before", "after", "com"), [(0.0, 1.5, (0.03, 0.0, 0.04)), (2.0, 0.0, (0.0, 0.0, 0.0)),
                                                      (0.5, 3.0, (-0.02, 0.05, 0.1))])
def test_set_payload_changes_the_simulated_gravity_to_hebi_rigid_body(hebi, before, after, com):
    """SimBackend.set_payload (a grasp or a release mid-run): MuJoCo's gravity torques afterwards equal
    hebi-py's model with add_rigid_body of the new mass at ``com`` (0 kg: without it)."""
    import mujoco

    from hebictl.hardware import SimClock, open_backend

    config = REPO_ROOT / "configs" / "x-series-6dof.cfg.yaml"
    sim = open_backend("sim", config=config, clock=SimClock(), payload={"mass": before, "com": com})
    try:
        sim.set_payload(after, com)
        ref = hebi.robot_model.import_from_hrdf_string(KIT.read_text().replace(EE, EE_AS_BODY))
        if after > 0.0:
            assert ref.add_rigid_body(np.array(com), np.zeros(6), after, np.eye(4))
        m, d, sc = sim.mj_model, sim.mj_data, sim.scene
        rng = np.random.default_rng(5)
        for q in rng.uniform(-np.pi, np.pi, (10, len(sc.qadr))):
            d.qpos[sc.qadr], d.qvel[:] = q, 0.0
            mujoco.mj_forward(m, d)
            np.testing.assert_allclose(d.qfrc_bias[sc.dadr], ref.get_grav_comp_efforts(q, np.array([0.0, 0.0, -9.81])),
                                       rtol=0, atol=1e-9)
    finally:
        sim.close()


def test_set_payload_needs_a_grip_and_a_sane_mass():
    from hebictl.errors import HardwareError
    from hebictl.hardware import SimClock, open_backend

    config = REPO_ROOT / "configs" / "x-series-6dof.cfg.yaml"
    sim = open_backend("sim", config=config, clock=SimClock())
    try:
        with pytest.raises(HardwareError, match="no payload body"):
            sim.set_payload(1.0)
    finally:
        sim.close()
    sim = open_backend("sim", config=config, clock=SimClock(), payload={"mass": 0.0})
    try:
        for bad in (-1.0, float("nan"), float("inf"), "heavy"):
            with pytest.raises(HardwareError, match="finite and >= 0"):
                sim.set_payload(bad)
        with pytest.raises(HardwareError, match="com must be finite"):
            sim.set_payload(1.0, (0.0, float("nan"), 0.0))
        with pytest.raises(HardwareError, match="com must be 3 numbers"):
            sim.set_payload(1.0, (0.0, 0.1))
        assert sim.mj_model.body_mass[-1] < 1e-12  # a refused call changes nothing
    finally:
        sim.close()
