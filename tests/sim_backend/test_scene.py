"""The simulated robot: every HEBI kit exported to MuJoCo keeps hebictl's gravity, poses, masses and inertias."""

from __future__ import annotations

import warnings
from pathlib import Path

import numpy as np
import pytest

from hebictl.errors import ConfigError, FormatError, ModelError
from hebictl.formats import load_model
from hebictl.formats.writers import body_names
from tests.conftest import CORPUS_DIR, REPO_ROOT, corpus_path

mujoco = pytest.importorskip("mujoco")

from sim_backend.payload import Payload, with_payload  # noqa: E402
from sim_backend.scene import build_scene  # noqa: E402

BUNDLED = sorted(p.name for p in (REPO_ROOT / "hrdf_kits").glob("*.hrdf"))
CORPUS_KITS = sorted(p.relative_to(CORPUS_DIR).as_posix() for p in (CORPUS_DIR / "hebi").rglob("*.hrdf")) \
    if CORPUS_DIR.is_dir() else ["-"]


def _load(path: Path, *, may_refuse: bool = False):
    """hebictl's model of a kit. ``may_refuse`` (corpus files only): a FormatError, hebictl's
    deliberate refusal of the few corpus files it rejects, is a skip; any other error fails."""
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # mesh/include notes of the corpus files
            return load_model(path)
    except FormatError as exc:  # which corpus kits load is the HRDF reader's business
        if not may_refuse:
            raise
        pytest.skip(f"hebictl refuses {path.name}: {exc}")


def _check_against_mujoco(model) -> None:
    """MuJoCo's gravity forces, body poses, masses and inertias of the exported kit equal hebictl's."""
    scene = build_scene(model, armature=0.0)
    m, d = scene.model, scene.data
    names = body_names(model)
    ids = np.array([mujoco.mj_name2id(m, mujoco.mjtObj.mjOBJ_BODY, n) for n in names])
    assert np.all(ids > 0), "every hebictl body is a MuJoCo body of the same name"
    rng = np.random.default_rng(7)
    for _ in range(8):
        q = rng.uniform(-np.pi, np.pi, model.nq)
        d.qpos[scene.qadr] = q
        d.qvel[:] = 0.0
        mujoco.mj_forward(m, d)
        if model.dof:
            np.testing.assert_allclose(d.qfrc_bias[scene.dadr], model.gravity_compensation(q), rtol=0, atol=1e-9)
        poses = model.link_poses(q)
        np.testing.assert_allclose(d.xpos[ids], poses[:, :3, 3], rtol=0, atol=1e-12)
        np.testing.assert_allclose(d.xmat[ids].reshape(-1, 3, 3), poses[:, :3, :3], rtol=0, atol=1e-12)
    for i, b in zip(ids, model.bodies, strict=True):
        # MuJoCo gives massless moving bodies its bound 1e-13 kg / kg·m² (write_mjcf's documented floor)
        assert m.body_mass[i] == pytest.approx(b.inertia.mass, rel=1e-12, abs=1.0001e-13)
        R = np.empty(9)
        mujoco.mju_quat2Mat(R, m.body_iquat[i])
        R = R.reshape(3, 3)
        np.testing.assert_allclose(R @ np.diag(m.body_inertia[i]) @ R.T, b.inertia.rotational_array,
                                   rtol=1e-12, atol=1.0001e-13)
        if b.inertia.mass > 0:
            np.testing.assert_allclose(m.body_ipos[i], b.inertia.com_array, rtol=0, atol=1e-15)


@pytest.mark.parametrize("kit", BUNDLED)
def test_bundled_kits_match_mujoco(kit):
    """Bundled kits: gravity to 1e-9 N·m, poses to 1e-12, masses and inertias through MuJoCo's compiler."""
    _check_against_mujoco(_load(REPO_ROOT / "hrdf_kits" / kit))


@pytest.mark.corpus
@pytest.mark.parametrize("rel", CORPUS_KITS)
def test_corpus_kits_match_mujoco(rel):
    """Every HEBI kit of the corpus hebictl loads simulates with hebictl's gravity, poses and inertias."""
    _check_against_mujoco(_load(corpus_path(*rel.split("/")), may_refuse=True))


def test_payload_is_simulated_where_the_model_puts_it():
    """A payload's gravity in MuJoCo is hebictl's gravity of the model with_payload (and differs from none)."""
    model = load_model(REPO_ROOT / "hrdf_kits" / "x-series-6dof.hrdf")
    payload = Payload(0.7, (0.01, -0.02, 0.05), ((1e-3, 0, 0), (0, 2e-3, 0), (0, 0, 1.5e-3)))
    scene = build_scene(model, payload=payload)
    loaded = with_payload(model, payload)
    q = np.array([0.3, 1.1, 1.9, 2.0, -1.2, 0.4])
    d = scene.data
    d.qpos[scene.qadr] = q
    mujoco.mj_forward(scene.model, d)
    np.testing.assert_allclose(d.qfrc_bias[scene.dadr], loaded.gravity_compensation(q), rtol=0, atol=1e-9)
    assert np.abs(loaded.gravity_compensation(q) - model.gravity_compensation(q)).max() > 0.5
    assert scene.model.nbody == len(model.bodies) + 2  # world + bodies + payload


def test_scene_adds_one_actuator_per_joint_and_the_options():
    """Actuators act on the joints in hebictl order; friction, damping and armature land on the dofs."""
    model = load_model(REPO_ROOT / "hrdf_kits" / "x-series-5dof.hrdf")
    n = model.dof
    scene = build_scene(model, friction=0.1, damping=np.arange(n) * 0.5, armature=[0.01] * n, timestep=0.0005)
    m = scene.model
    assert m.nu == n
    assert [mujoco.mj_id2name(m, mujoco.mjtObj.mjOBJ_JOINT, j) for j in m.actuator_trnid[:, 0]] == \
        list(model.joint_names)
    np.testing.assert_array_equal(m.dof_frictionloss[scene.dadr], 0.1)
    np.testing.assert_array_equal(m.dof_damping[scene.dadr], np.arange(n) * 0.5)
    np.testing.assert_array_equal(m.dof_armature[scene.dadr], 0.01)
    assert m.opt.timestep == 0.0005
    assert m.opt.integrator == mujoco.mjtIntegrator.mjINT_IMPLICITFAST


@pytest.mark.parametrize(("kwargs", "key"), [
    ({"friction": [-1.0]}, "friction"),
    ({"damping": "x"}, "damping"),
    ({"armature": [0.1, 0.2]}, "armature"),
    ({"timestep": 0.0}, "timestep"),
])
def test_bad_scene_options_name_the_key(kwargs, key):
    """Negative, malformed or wrongly sized options are ConfigErrors naming the option."""
    model = load_model(REPO_ROOT / "hrdf_kits" / "x-series-6dof.hrdf")
    with pytest.raises(ConfigError) as err:
        build_scene(model, **kwargs)
    assert err.value.key == key


def test_ball_joints_are_refused():
    """The simulated modules are 1-DoF joints; other joint kinds are a ModelError, not a wrong sim."""
    from hebictl.model.builder import ModelBuilder
    from hebictl.model.tree import Inertia, Joint, JointKind

    b = ModelBuilder("ball")
    b.add_body("a", -1, joint=Joint("j", JointKind.BALL), inertia=Inertia(1.0, (0, 0, 0.1), np.eye(3) * 1e-3))
    with pytest.raises(ModelError):
        build_scene(b.build())


def test_workspace_objects_are_physical_geoms_the_arm_lands_on():
    """With the config's workspace the sim has the table and a box as geoms and contacts on: the x6,
    let fall limp from above the box, comes to rest on it and the table (penetration < 5 mm);
    without it the same arm falls through where the table would be."""
    import mujoco

    from hebictl.collision.workspace import workspace_from

    model = load_model(REPO_ROOT / "hrdf_kits" / "x-series-6dof.hrdf")
    ws = workspace_from({"workspace": {"objects": [
        {"type": "box", "name": "crate", "center": [0.45, 0.0, 0.05], "size": [0.2, 0.4, 0.1]},
        {"type": "wall", "point": [-0.5, 0, 0], "normal": [1, 0, 0]}]}})
    lowest = {}
    for label, workspace in (("with", ws), ("without", None)):
        scene = build_scene(model, workspace=workspace)
        names = [scene.model.geom(i).name for i in range(scene.model.ngeom)]
        if workspace is not None:
            assert "collision:table" in names and "collision:crate" in names
            assert "collision:wall1" not in names  # virtual: checked by hebictl, not simulated
        d = scene.data
        d.qpos[scene.qadr] = [0.0, 0.6, 0.3, 0.0, 0.0, 0.0]  # reaching forward over the crate
        for _ in range(3000):  # 3 s limp (no actuator torque)
            mujoco.mj_step(scene.model, d)
        ee = [i for i, n in enumerate(names) if n.startswith("collision:")] if workspace is not None else None
        lowest[label] = float(d.xpos[1:, 2].min())
        if ee:
            arm = [i for i in ee if not names[i].startswith(("collision:table", "collision:crate"))]
            pen = [c.dist for c in d.contact[:d.ncon]] if d.ncon else [0.0]
            assert min(pen) > -0.005 and d.ncon > 0 and len(arm) > 5
    print(f"lowest body origin after 3 s limp: with workspace {lowest['with']:.3f} m, "
          f"without {lowest['without']:.3f} m")
    assert lowest["with"] > -0.01 > lowest["without"]
