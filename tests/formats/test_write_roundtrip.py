"""write_urdf / write_mjcf: read back unchanged, and pinocchio / MuJoCo agree with the written files."""

from __future__ import annotations

import math
import warnings

import numpy as np
import pytest

from hebictl.errors import FormatError
from hebictl.formats import convert, load_model
from hebictl.formats.mjcf import load_mjcf_string, write_mjcf
from hebictl.formats.urdf import load_urdf_string, write_urdf
from hebictl.model.builder import ModelBuilder
from hebictl.model.robot import RobotModel
from hebictl.model.tree import JointKind
from tests._support.corpus import CORPUS_DIR, corpus_path, load_or_skip
from tests.model.random_trees import random_tree

from .model_compare import assert_same_model, with_armature
from .references import Mujoco, Pinocchio, random_q

pytest.importorskip("pinocchio")
pytest.importorskip("mujoco")

REV, PRI, FIX, BALL, FREE = (JointKind.REVOLUTE, JointKind.PRISMATIC, JointKind.FIXED, JointKind.BALL,
                             JointKind.FREE)

CORPUS = {
    "iiwa14": "urdf/RobotLocomotion__models/iiwa_description/urdf/iiwa14_no_collision.urdf",
    "panda": "urdf/RobotLocomotion__models/franka_description/urdf/panda_arm_hand.urdf",
    "allegro": "urdf/RobotLocomotion__models/allegro_hand_description/urdf/allegro_hand_description_left.urdf",
    "atlas": "urdf/RobotLocomotion__models/atlas/atlas_minimal_contact.urdf",
    "jaco-continuous": "urdf/RobotLocomotion__models/jaco_description/urdf/j2n6s300.urdf",
    "hrdf-A-2085-06G": "hebi/hebi-hrdf/A-2085-06G.hrdf",
    "hrdf-A-2240-06": "hebi/hebi-hrdf/A-2240-06.hrdf",
    "hrdf-A-2302-01G": "hebi/hebi-hrdf/A-2302-01G.hrdf",
    "hrdf-double-shoulder": "hebi/hebi-hrdf/examples/X-Series-Double-Shoulder-7DOF.hrdf",
    "mjcf-humanoid": "mjcf/google-deepmind__mujoco/model/humanoid/humanoid.xml",
    "mjcf-car": "mjcf/google-deepmind__mujoco/model/car/car.xml",
}

PLANAR = """<robot name="p"><link name="w"/>
<link name="a"><inertial><mass value="2"/><inertia ixx="0.1" ixy="0" ixz="0" iyy="0.2" iyz="0" izz="0.25"/></inertial>
</link><link name="b"><inertial><origin xyz="0 0 0.1" rpy="0.1 0.2 0.3"/><mass value="1"/>
<inertia ixx="0.01" ixy="0.001" ixz="0" iyy="0.02" iyz="0" izz="0.02"/></inertial></link>
<joint name="slide" type="planar"><parent link="w"/><child link="a"/><origin xyz="0 0 1"/><axis xyz="0 0 1"/>
<limit effort="30" velocity="2"/></joint>
<joint name="arm" type="revolute"><parent link="a"/><child link="b"/>
<origin xyz="0.3 0 0" rpy="0 1.5707963267948966 0"/>
<axis xyz="0 1 0"/><limit lower="-0.5" effort="5" velocity="1"/><dynamics damping="0.1" friction="0.2"/>
<mimic joint="slide_theta" multiplier="2"/></joint></robot>"""


def rebuilt(model: RobotModel, base: np.ndarray) -> RobotModel:
    """The same bodies and frames on another base transform, top-level free bodies at its origin."""
    b = ModelBuilder(model.name, format=model.format)
    for body in model.bodies:
        at_origin = body.parent < 0 and body.joint.kind is FREE
        b.add_body(body.name, body.parent, np.eye(4) if at_origin else body.placement, body.joint, body.inertia,
                   body.metadata)
    for f in model.frames:
        b.add_frame(f.kind, f.body, f.offset, f.name)
    return b.build(base=base, gravity=model.gravity)


def source(name: str) -> RobotModel:
    if name in CORPUS:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return load_model(corpus_path(*CORPUS[name].split("/")))
    if name == "planar-mimic":
        return load_urdf_string(PLANAR)
    if name == "floating-iiwa":
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return load_model(corpus_path(*CORPUS["iiwa14"].split("/")), floating_base=True)
    seed = int(name.split("-")[-1])
    if name.startswith("random-armature"):  # reflected rotor inertia on every moving joint
        return with_armature(random_tree(seed, n=8, kinds=(REV, PRI, FIX)), seed)
    if name.startswith("random-chain"):
        return random_tree(seed, n=7, kinds=(REV, PRI, FIX), branching=False)
    if name.startswith("random-tree"):
        return random_tree(seed, n=9, kinds=(REV, PRI, FIX))
    if name.startswith("random-ball"):  # MJCF only: URDF has no ball joint
        return random_tree(seed, n=9, kinds=(REV, PRI, FIX, BALL))
    # random-free: a free root, on the world origin (MJCF free joints are world poses)
    return rebuilt(random_tree(seed, n=8, kinds=(REV, PRI, FIX, BALL), root=FREE), np.eye(4))


COMMON = [*CORPUS, "planar-mimic", "floating-iiwa", "random-chain-1", "random-tree-2", "random-tree-3",
          "random-armature-7"]
URDF_CASES = [c for c in COMMON if c != "mjcf-humanoid"] + ["mjcf-humanoid"]
MJCF_CASES = [*COMMON, "random-ball-4", "random-ball-5", "random-free-6"]


def assert_reference_agrees(model: RobotModel, ref, q_count: int = 3) -> None:
    """The reference loaded the written file: same link poses (1e-12) and gravity (1e-9) as hebictl's reading."""
    ref.bind(model)
    rng = np.random.default_rng(2)
    for _ in range(q_count):
        q = random_q(model, rng)
        poses = dict(zip(model.link_names, model.link_poses(q), strict=True))
        for name, T in ref.link_poses(q).items():
            np.testing.assert_allclose(poses[name], T, atol=1e-12, err_msg=name)
        g = ref.gravity(q, model.gravity) if isinstance(ref, Pinocchio) else ref.gravity(q)
        np.testing.assert_allclose(model.gravity_compensation(q), g, atol=1e-9)


@pytest.mark.parametrize("name", URDF_CASES)
def test_urdf_round_trip(name):
    """load -> write_urdf -> load keeps everything; pinocchio reads the written URDF the same way."""
    model = source(name)
    if any(b.joint.kind is BALL for b in model.bodies):
        pytest.skip("URDF has no ball joint")
    text = write_urdf(model)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the source's mesh URIs stay unresolved next to a string
        back = load_urdf_string(text)
    assert_same_model(model, back)
    assert back.q_names == model.q_names
    assert_reference_agrees(back, Pinocchio(xml=text))


@pytest.mark.parametrize("name", MJCF_CASES)
def test_mjcf_round_trip(name):
    """load -> write_mjcf -> load keeps everything; MuJoCo compiles the written MJCF the same way."""
    model = source(name)
    text = write_mjcf(model)
    back = load_mjcf_string(text)
    assert_same_model(model, back)
    assert_reference_agrees(back, Mujoco(xml=text))


def test_massless_moving_bodies_get_a_documented_floor():
    """Only when MuJoCo would refuse a massless moving body does the writer bound mass and inertia (1e-13)."""
    planar = source("planar-mimic")  # its x/y chain bodies are massless and move
    assert 'boundmass="1e-13"' in write_mjcf(planar)
    iiwa = source("iiwa14")
    assert "boundmass" not in write_mjcf(iiwa)


def test_unbounded_values_round_trip_through_urdf():
    """Infinite limits and ratings are written as the largest double and read back as infinity."""
    model = random_tree(1, n=4, kinds=(PRI,), branching=False)
    text = write_urdf(model)
    assert "1.7976931348623157e+308" in text
    back = load_urdf_string(text)
    assert all(math.isinf(back.bodies[i].joint.max_effort) for i in back.joint_bodies)
    assert all(back.bodies[i].joint.lower == -math.inf for i in back.joint_bodies)


def test_files_written_to_path(tmp_path):
    """Both writers also write the text to a path when given one."""
    model = source("random-chain-1")
    assert (tmp_path / "m.urdf").exists() is False
    text = write_urdf(model, tmp_path / "m.urdf")
    assert (tmp_path / "m.urdf").read_text() == text
    text = write_mjcf(model, tmp_path / "m.xml")
    assert (tmp_path / "m.xml").read_text() == text
    assert convert(model, "urdf") == write_urdf(model) and convert(model, "MJCF") == write_mjcf(model)


def _scaled() -> RobotModel:
    b = ModelBuilder("geared")
    from hebictl.model.tree import Inertia, Joint

    b.add_body("a", -1, None, Joint("j", REV, scale=0.5), Inertia(1.0, (0, 0, 0.1), np.eye(3) * 0.01))
    return b.build()


@pytest.mark.parametrize(("model", "fmt", "fragment"), [
    (_scaled, "urdf", "has scale 0.5 (an HRDF gear_ratio of 2)"),
    (_scaled, "mjcf", "has scale 0.5 (an HRDF gear_ratio of 2)"),
    (lambda: random_tree(4, n=5, kinds=(BALL,)), "urdf", "ball joint, which URDF cannot express"),
    (lambda: random_tree(6, n=4, kinds=(REV,), root=FREE), "mjcf", "MJCF free joints are world poses"),
    (lambda: random_tree(6, n=4, kinds=(REV,)), "step", "cannot write format 'step'"),
], ids=["urdf-gear-ratio", "mjcf-gear-ratio", "urdf-ball", "mjcf-free-off-origin", "unknown-format"])
def test_inexpressible_models_are_refused(model, fmt, fragment):
    """What a format cannot state is a FormatError, never a file that means something else."""
    with pytest.raises(FormatError) as err:
        convert(model(), fmt)
    assert fragment in err.value.message


HRDF_FILES = sorted(p.relative_to(CORPUS_DIR).as_posix() for p in (CORPUS_DIR / "hebi").rglob("*.hrdf")) \
    if CORPUS_DIR.is_dir() else ["-"]


@pytest.mark.corpus
@pytest.mark.parametrize("rel", HRDF_FILES)
def test_hrdf_kits_convert(rel):
    """Every HRDF of the corpus hebictl reads converts to URDF and MJCF that pinocchio and MuJoCo agree with."""
    path = corpus_path(*rel.split("/"))
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # HRDF mesh and include notes; not what this test is about
            model = load_model(path)
    except FormatError:
        pytest.skip("hebictl refuses this HRDF (see the HRDF tests)")
    for write, read, reference in ((write_urdf, load_urdf_string, lambda t: Pinocchio(xml=t)),
                                   (write_mjcf, load_mjcf_string, lambda t: Mujoco(xml=t))):
        try:
            text = write(model)
        except FormatError as err:
            assert "gear_ratio" in err.message  # the one thing these formats cannot say
            continue
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # HRDF mesh URLs cannot be resolved to files
            back = read(text)
        assert_same_model(model, back)
        assert_reference_agrees(back, reference(text), q_count=2)


def _sdf_models_with_meshes() -> list:
    if not CORPUS_DIR.is_dir():
        return [pytest.param(None, id="no-corpus")]
    return [pytest.param(p, id=str(p.relative_to(CORPUS_DIR)))
            for p in sorted((CORPUS_DIR / "sdf").rglob("*.sdf")) if b"<mesh>" in p.read_bytes()[:1_000_000]]


@pytest.mark.corpus
@pytest.mark.parametrize("path", _sdf_models_with_meshes())
def test_sdf_mesh_shapes_export_to_urdf_with_their_files(path):
    """An SDF model's mesh visuals write to URDF as the files their URIs resolved to (the writer raised
    KeyError 'filename' on 41 corpus models) and read back naming the same files."""
    model = load_or_skip(path)
    try:
        text = write_urdf(model)
    except FormatError as err:  # inexpressible in URDF (ball/free joints, scale...): refused with a reason
        assert err.message, err
        return
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        back = load_urdf_string(text)

    def meshes(m: RobotModel) -> list[dict]:
        return [s for b in m.bodies for s in b.metadata.get("visuals", []) if s.get("type") == "mesh"]

    # the file a URI resolved to, else the URI itself (a `model://` path this machine cannot resolve)
    expected = {str(s.get("mesh_path") or s["uri"]) for s in meshes(model)}
    assert expected and expected == {str(s["filename"]) for s in meshes(back)}
