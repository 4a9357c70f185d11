"""hebictl.formats.hrdf.library against hebi-py's own one-element models, run side by side.

Type lists are copied from the HRDF 1.6.0 spec (FORMAT.md), not from the library, so a missing
type is caught. Tolerance 1e-12 throughout (the library reproduces hebi to float64 round-off).
"""

from __future__ import annotations

import importlib.util
import math
import subprocess
import sys

import numpy as np
import pytest
from scipy.spatial.transform import Rotation

from hebictl.errors import ModelError
from hebictl.formats.hrdf.library import ElementSpec, element_spec, known_types
from tests._support.paths import REPO_ROOT

TOL = 1e-12
HEBI_PI = float(np.float32(math.pi))  # the value of `pi` in hebi's HRDF formula evaluator
SPEC_ACTUATORS = ("X5-1", "X5-4", "X5-9", "X8-3", "X8-9", "X8-16", "R8-3", "R8-9", "R8-16",
                  "T5-1", "T5-4", "T5-9", "T8-3", "T8-9", "T8-16",
                  "R25-8", "R25-20", "R25-40", "T25-8", "T25-20", "T25-40")
SPEC_BRACKETS = ("X5LightLeft", "X5LightRight", "X5HeavyLeftInside", "X5HeavyLeftOutside",
                 "X5HeavyRightInside", "X5HeavyRightOutside", "R8LightLeft", "R8LightRight",
                 "R8HeavyLeftInside", "R8HeavyLeftOutside", "R8HeavyRightInside", "R8HeavyRightOutside",
                 "R25LightLeft", "R25LightRight", "R25HeavyLeftInside", "R25HeavyLeftOutside",
                 "R25HeavyRightInside", "R25HeavyRightOutside")
SPEC_END_EFFECTORS = ("Custom", "X5Parallel", "R8Parallel")
SPEC_LINKS = ("X5", "R8", "R25", "R25-R8")
INTERFACES = ("RightAngle", "Inline")
# Per the spec, R25-R8 supports only a RightAngle output (hebi-py rejects Inline).
LINK_COMBOS = [(t, i, o) for t in SPEC_LINKS for i in INTERFACES for o in INTERFACES
               if not (t == "R25-R8" and o == "Inline")]


def hebi_model(hebi, element_xml: str):
    """hebi-py's model of a robot holding just this element."""
    return hebi.robot_model.import_from_hrdf_string(f'<robot version="1.6.0">{element_xml}</robot>')


def assert_matches_hebi(spec: ElementSpec, model, q: list[float], output_frame: str = "output") -> None:
    """Mass, COM frame and output frame of `spec` equal hebi's to TOL."""
    assert len(model.masses) == 1
    assert spec.mass == pytest.approx(float(model.masses[0]), abs=TOL)
    np.testing.assert_allclose(spec.com, model.get_forward_kinematics_mat("com", q)[0], rtol=0, atol=TOL)
    assert len(spec.outputs) == model.get_frame_count(output_frame) == 1
    np.testing.assert_allclose(spec.outputs[0], model.get_forward_kinematics_mat(output_frame, q)[0],
                               rtol=0, atol=TOL)


def link_xml(t: str, e: float, tw: float, i: str, o: str) -> str:
    return f'<link type="{t}" extension="{e!r}" twist="{tw!r}" input="{i}" output="{o}"/>'


@pytest.mark.parametrize(("kind", "expected"), [("actuator", SPEC_ACTUATORS), ("link", SPEC_LINKS),
                                                ("bracket", SPEC_BRACKETS),
                                                ("end-effector", SPEC_END_EFFECTORS)])
def test_known_types_are_the_spec_lists(kind, expected):
    """known_types lists exactly the HRDF 1.6.0 built-in types of each kind, in spec order."""
    assert known_types(kind) == expected


@pytest.mark.parametrize("act", SPEC_ACTUATORS)
def test_actuator_matches_hebi(hebi, act):
    """Actuator mass, COM, output at q=0 and speed/effort limits equal hebi-py's."""
    spec = element_spec("actuator", act)
    model = hebi_model(hebi, f'<actuator type="{act}"/>')
    assert (spec.kind, spec.type) == ("actuator", act)
    assert_matches_hebi(spec, model, [0.0])
    assert spec.max_speed == pytest.approx(float(model.max_speeds[0]), abs=TOL)
    assert spec.max_effort == pytest.approx(float(model.max_efforts[0]), abs=TOL)


@pytest.mark.parametrize("act", SPEC_ACTUATORS)
def test_actuator_joint_matches_hebi(hebi, act):
    """hebi's output at q equals outputs[0] rotated about joint_axis by q; the COM stays put."""
    spec = element_spec("actuator", act)
    model = hebi_model(hebi, f'<actuator type="{act}"/>')
    assert spec.joint_axis is not None
    assert np.linalg.norm(spec.joint_axis) == pytest.approx(1.0, abs=TOL)
    for q in (0.7, -2.9, 4.0, 1e-3):
        rot = np.eye(4)
        rot[:3, :3] = Rotation.from_rotvec(spec.joint_axis * q).as_matrix()
        np.testing.assert_allclose(spec.outputs[0] @ rot, model.get_forward_kinematics_mat("output", [q])[0],
                                   rtol=0, atol=TOL)
        np.testing.assert_allclose(spec.com, model.get_forward_kinematics_mat("com", [q])[0], rtol=0, atol=TOL)


@pytest.mark.parametrize("bracket", SPEC_BRACKETS)
def test_bracket_matches_hebi(hebi, bracket):
    """Bracket mass, COM and (single) output frame equal hebi-py's."""
    spec = element_spec("bracket", bracket)
    assert_matches_hebi(spec, hebi_model(hebi, f'<bracket type="{bracket}"/>'), [])
    assert spec.joint_axis is None and spec.max_speed is None and spec.max_effort is None


@pytest.mark.parametrize("ee", SPEC_END_EFFECTORS)
def test_end_effector_matches_hebi(hebi, ee):
    """End-effector mass, COM and end-effector frame equal hebi-py's."""
    spec = element_spec("end-effector", ee)
    assert_matches_hebi(spec, hebi_model(hebi, f'<end-effector type="{ee}"/>'), [], "EndEffector")


def test_custom_end_effector_and_rigid_body_defaults(hebi):
    """Custom end effector is the spec's mass-0 rigid body: hebi agrees, and so does a bare rigid body."""
    spec = element_spec("end-effector", "Custom")
    body = hebi_model(hebi, '<rigid-body mass="0"/>')
    assert spec.mass == 0.0
    assert_matches_hebi(spec, body, [])
    np.testing.assert_array_equal(spec.com, np.eye(4))
    np.testing.assert_array_equal(spec.inertia, np.zeros((3, 3)))


@pytest.mark.parametrize(("link_type", "input", "output"), LINK_COMBOS)
def test_link_grid_matches_hebi(hebi, link_type, input, output):
    """Links over an (extension, twist) grid equal hebi-py's, incl. values float32 cannot represent."""
    for extension in (0.0, 0.325, 0.1, 1.0, -0.05, 123.456):
        for twist in (0.0, math.pi / 2, math.pi, -math.pi / 3, 0.1, 2 * math.pi + 0.3):
            spec = element_spec("link", link_type, extension=extension, twist=twist, input=input, output=output)
            model = hebi_model(hebi, link_xml(link_type, extension, twist, input, output))
            assert_matches_hebi(spec, model, [])


def test_link_random_matches_hebi(hebi):
    """Links at 300 seeded random (type, input, output, extension, twist) equal hebi-py's."""
    rng = np.random.default_rng(7)
    for _ in range(300):
        t, i, o = LINK_COMBOS[rng.integers(len(LINK_COMBOS))]
        e, tw = float(rng.uniform(0.0, 1.5)), float(rng.uniform(-2 * math.pi, 2 * math.pi))
        spec = element_spec("link", t, extension=e, twist=tw, input=i, output=o)
        assert_matches_hebi(spec, hebi_model(hebi, link_xml(t, e, tw, i, o)), [])


def test_link_defaults_are_right_angle(hebi):
    """Omitted input/output default to RightAngle, as in the spec and hebi-py."""
    spec = element_spec("link", "R8", extension=0.325, twist=HEBI_PI / 2)
    assert_matches_hebi(spec, hebi_model(hebi, '<link type="R8" extension="0.325" twist="pi/2"/>'), [])


def test_hebi_hrdf_pi_is_float32(hebi):
    """hebi evaluates HRDF formulas in float64 but with pi = float32(pi): a parser must do the same."""
    model = hebi_model(hebi, '<link type="X5" extension="0.1+0.2" twist="pi/7*3" input="Inline" output="Inline"/>')
    spec = element_spec("link", "X5", extension=0.1 + 0.2, twist=HEBI_PI / 7 * 3, input="Inline", output="Inline")
    assert_matches_hebi(spec, model, [])
    exact_pi = element_spec("link", "X5", extension=0.3, twist=math.pi / 7 * 3, input="Inline", output="Inline")
    assert np.abs(exact_pi.outputs[0] - spec.outputs[0]).max() > 1e-8


@pytest.mark.parametrize("input", INTERFACES)
def test_r25_r8_inline_output_rejected_like_hebi(hebi, input):
    """An Inline output on an R25-R8 link is a ModelError here and an import error in hebi-py."""
    with pytest.raises(ModelError, match="R25-R8"):
        element_spec("link", "R25-R8", extension=0.3, twist=0.0, input=input, output="Inline")
    with pytest.raises(RuntimeError, match="inline output"):
        hebi_model(hebi, link_xml("R25-R8", 0.3, 0.0, input, "Inline"))


@pytest.mark.parametrize(("kind", "type", "kwargs"), [
    ("actuator", "X5-2", {}),
    ("actuator", "x5-1", {}),  # case folding is the parser's job
    ("bracket", "X8LightLeft", {}),
    ("end-effector", "X8Parallel", {}),
    ("link", "X8", {"extension": 0.3, "twist": 0.0}),
    ("joint", "rx", {}),
    ("link", "X5", {"extension": 0.3}),
    ("link", "X5", {"twist": 0.3}),
    ("link", "X5", {"extension": math.nan, "twist": 0.0}),
    ("link", "X5", {"extension": 0.3, "twist": 0.0, "input": "Straight"}),
    ("link", "X5", {"extension": 0.3, "twist": 0.0, "output": "None"}),
    ("actuator", "X5-1", {"extension": 0.3}),
])
def test_bad_queries_raise_model_error(kind, type, kwargs):
    """Unknown kinds/types and bad link parameters raise ModelError naming the problem."""
    with pytest.raises(ModelError):
        element_spec(kind, type, **kwargs)


def test_specs_are_cached_and_read_only():
    """Constant specs are built once and their arrays cannot be modified by callers."""
    spec = element_spec("actuator", "X8-9")
    assert element_spec("actuator", "X8-9") is spec
    link = element_spec("link", "X5", extension=0.3, twist=1.0)
    for arr in (spec.com, spec.inertia, spec.outputs[0], spec.joint_axis, link.com, link.outputs[0]):
        with pytest.raises(ValueError):
            arr[0] = 1.0


def all_specs() -> list[ElementSpec]:
    """Every constant spec plus links over a grid of extensions, twists and interfaces."""
    specs = [element_spec(k, t) for k in ("actuator", "bracket", "end-effector") for t in known_types(k)]
    specs += [element_spec("link", t, extension=e, twist=tw, input=i, output=o)
              for t, i, o in LINK_COMBOS for e in (0.0, 0.05, 0.325, 1.2) for tw in (0.0, 1.0)]
    return specs


@pytest.mark.parametrize("spec", all_specs(), ids=lambda s: f"{s.kind}:{s.type}")
def test_inertia_is_physical(spec):
    """Inertia is symmetric, positive definite and obeys the triangle inequality (zero if massless)."""
    inertia = spec.inertia
    assert inertia.shape == (3, 3)
    np.testing.assert_array_equal(inertia, inertia.T)
    if spec.mass == 0.0:
        np.testing.assert_array_equal(inertia, np.zeros((3, 3)))
        return
    assert spec.mass > 0.0
    principal = np.linalg.eigvalsh(inertia)
    assert principal.min() > 0.0
    for k in range(3):
        assert principal[k] <= principal[(k + 1) % 3] + principal[(k + 2) % 3] + 1e-15
    # a rotation about the COM frame is a proper rotation, output frames too
    for frame in (spec.com, *spec.outputs):
        np.testing.assert_allclose(frame[:3, :3] @ frame[:3, :3].T, np.eye(3), rtol=0, atol=TOL)
        assert np.linalg.det(frame[:3, :3]) == pytest.approx(1.0, abs=TOL)
        np.testing.assert_array_equal(frame[3], [0.0, 0.0, 0.0, 1.0])


def test_gen_library_check_passes(corpus_dir):
    """tools/gen_library.py --check: the committed YAML is what hebi-py and the corpus produce now."""
    for module in ("xacro", "pinocchio"):
        if importlib.util.find_spec(module) is None:
            pytest.skip(f"{module} not installed (needed to regenerate inertias)")
    result = subprocess.run([sys.executable, str(REPO_ROOT / "tools" / "gen_library.py"), "--check",
                             "--corpus", str(corpus_dir)], capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stderr
