"""Minimal reproducers of the hostile inputs of issue 12: each ends in a hebictl error within 5 s and 2 GiB.

One row per bug found by the issue's campaign or by tests/fuzz: the files of a tiny model, and
what must come out (a FormatError whose message matches, or a model with finite gravity
compensation). Each row runs in a worker process under ``RLIMIT_AS`` and a 5 s deadline
(tests/fuzz/harness.py), so a regression that hangs or allocates without bound fails its row
instead of taking the test run down.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from tests.fuzz.harness import GIB, Pool, Report
from tests.fuzz.mutate import CUBE_OBJ, Seed

HRDF = '<robot version="1.3.0"><actuator type="X5-4"/>{}<actuator type="X5-4"/></robot>'
URDF = ('<robot name="r"><link name="a"/><joint name="j" type="revolute"><parent link="a"/><child link="b"/>'
        '<axis xyz="0 0 1"/><limit lower="-1" upper="1" effort="1" velocity="1"/></joint>'
        '<link name="b"><inertial><mass value="1"/><inertia ixx="1" iyy="1" izz="1" ixy="0" ixz="0" iyz="0"/>'
        "</inertial>{}</link>{}</robot>")
MJCF = '<mujoco model="m">{}<worldbody><body name="b"><joint type="hinge"/>{}</body></worldbody></mujoco>'
SDF = ('<sdf version="1.9"><model name="m"><link name="a"><inertial><mass>1</mass></inertial>{}</link>'
       "</model>{}</sdf>")
OPENRAVE = ('<Robot name="r"><KinBody><Body name="a" type="dynamic"><Geom type="trimesh">{}</Geom>'
            "<Mass type=\"mimicgeom\"><density>1000</density></Mass></Body>"
            '<Body name="b" type="dynamic"><Geom type="box"><extents>1 1 1</extents></Geom></Body>'
            '<Joint name="j" type="hinge"><Body>a</Body><Body>b</Body></Joint></KinBody></Robot>')
LONG = "n" * 300
FLAT_OBJ = b"v 0 0 0\nv 1 0 0\nv 0 1 0\nv 1 1 0\nf 1 2 3\nf 2 4 3\n"


@dataclass(frozen=True)
class Case:
    """Files of a reproducer (``main`` is loaded) and the expected error message (a regex), or ``None``
    when a model with finite gravity compensation is an acceptable end too."""

    files: dict[str, str | bytes]
    main: str
    match: str | None
    issue: str = ""
    extra: dict[str, str] = field(default_factory=dict)


def _cases() -> Iterator[tuple[str, Case]]:
    deep = "(" * 400 + "0.3" + ")" * 400
    yield "hrdf-formula-400-parentheses", Case(
        {"m.hrdf": HRDF.format(f'<link type="X5" extension="{deep}" twist="pi"/>')}, "m.hrdf",
        "max_formula_depth", "RecursionError in the HRDF formula parser")
    yield "hrdf-formula-long-unary", Case(
        {"m.hrdf": HRDF.format(f'<link type="X5" extension="{"-" * 3000}0.3" twist="pi"/>')}, "m.hrdf",
        None, "RecursionError from a long chain of unary minus (a valid formula: loads)")
    yield "hrdf-include-dotdot-chain", Case(
        {"m.hrdf": HRDF.format('<include path="../../../../../../../etc/passwd"/>')}, "m.hrdf",
        "not well-formed XML", "HRDF follows ../ chains as hebi-py does: /etc/passwd is read as a regular file "
        "within the size limit, and the error quotes none of it")
    yield "hrdf-include-name-too-long", Case(
        {"m.hrdf": HRDF.format(f'<include path="{LONG}/x.hrdf"/>')}, "m.hrdf", "limit",
        "ENAMETOOLONG from Path.is_file()")
    yield "urdf-mesh-name-too-long", Case(
        {"m.urdf": URDF.format(f'<collision><geometry><mesh filename="{LONG}.obj"/></geometry></collision>', "")},
        "m.urdf", "limit", "ENAMETOOLONG from Path.is_file()")
    yield "urdf-drake-gear-ratio-1e200", Case(
        {"m.urdf": URDF.format("", '<transmission name="t" xmlns:drake="http://drake.mit.edu">'
                               '<type>transmission_interface/SimpleTransmission</type><joint name="j"/>'
                               '<actuator name="act"><drake:rotor_inertia value="1"/>'
                               '<drake:gear_ratio value="1e200"/></actuator></transmission>')},
        "m.urdf", "gear_ratio", "OverflowError: gear ratio 1e200 squared")
    yield "mjcf-box-fromto-1e300", Case(
        {"m.xml": MJCF.format("", '<geom type="box" size="0.1" fromto="0 0 0 1e300 0 0"/>')}, "m.xml",
        "fromto|overflow", "numpy LinAlgError from a box whose fromto is 1e300")
    yield "mjcf-mesh-faces-not-triangles", Case(
        {"m.xml": MJCF.format('<asset><mesh name="t" vertex="0 0 0 1 0 0 0 1 0 0 0 1" face="0 1 2 3"/></asset>',
                              '<geom type="mesh" mesh="t"/>')}, "m.xml", "face",
        "ValueError: face count not a multiple of 3")
    yield "mjcf-mesh-face-index-1e300", Case(
        {"m.xml": MJCF.format('<asset><mesh name="t" vertex="0 0 0 1 0 0 0 1 0 0 0 1" face="0 1 2 0 1 1e300 '
                              '0 2 3 1 2 3"/></asset>', '<geom type="mesh" mesh="t"/>')}, "m.xml", "face",
        "face index beyond the vertices")
    yield "mjcf-flat-mesh-qhull", Case(
        {"m.xml": MJCF.format('<asset><mesh name="t" vertex="0 0 0 1 0 0 0 1 0 1 1 0"/></asset>',
                              '<geom type="mesh" mesh="t"/>')}, "m.xml", "mesh",
        "scipy QhullError from a flat mesh")
    yield "mjcf-flat-obj-file", Case(
        {"m.xml": MJCF.format('<asset><mesh name="t" file="flat.obj"/></asset>', '<geom type="mesh" mesh="t"/>'),
         "flat.obj": FLAT_OBJ}, "m.xml", "mesh", "QhullError / no volume from a flat OBJ mesh")
    yield "mjcf-obj-face-index-beyond-vertices", Case(
        {"m.xml": MJCF.format('<asset><mesh name="t" file="bad.obj"/></asset>', '<geom type="mesh" mesh="t"/>'),
         "bad.obj": CUBE_OBJ + b"f 1 2 99\n"}, "m.xml", "bad.obj", "IndexError from an OBJ face index")
    yield "mjcf-obj-vertex-not-a-number", Case(
        {"m.xml": MJCF.format('<asset><mesh name="t" file="bad.obj"/></asset>', '<geom type="mesh" mesh="t"/>'),
         "bad.obj": b"v 0 0 x\n" + CUBE_OBJ}, "m.xml", "bad.obj", "ValueError from float() in an OBJ")
    yield "mjcf-replicate-superscript-two", Case(
        {"m.xml": MJCF.format("", '<replicate count="²"><geom size="0.1"/></replicate>')}, "m.xml", "count",
        '"²".isdigit() is True, int("²") raises')
    yield "mjcf-replicate-huge", Case(
        {"m.xml": MJCF.format("", '<replicate count="1000000000"><body><joint/><geom size="0.1"/></body>'
                              "</replicate>")}, "m.xml", "max_replicate_count", "replicate allocates without bound")
    yield "mjcf-flexcomp-count-1e300", Case(
        {"m.xml": MJCF.format("", '<flexcomp name="f" type="grid" count="1e300 13 1" spacing="1 1 1" dim="2"/>')},
        "m.xml", "flexcomp", "flexcomp count=1e300 allocates until memory runs out")
    yield "mjcf-flexcomp-count-huge-finite", Case(
        {"m.xml": MJCF.format("", '<flexcomp name="f" type="grid" count="100000 100000 1" spacing="1 1 1" '
                              'dim="2"/>')}, "m.xml", "max_flexcomp_count", "flexcomp 1e10 points")
    yield "mjcf-flexcomp-element-1e300", Case(
        {"m.xml": MJCF.format("", '<flexcomp name="f" type="direct" point="0 0 0 1 0 0 0 1 0" '
                              'element="0 1 1e300" dim="2"/>')}, "m.xml", "flexcomp",
        "OverflowError: int(1e300) in a flexcomp element index")
    yield "mjcf-include-dev-zero", Case(
        {"m.xml": MJCF.format('<include file="/dev/zero"/>', "")}, "m.xml", "'/dev/zero' is not a regular file",
        "absolute include path read from /dev")
    yield "mjcf-mesh-absolute-etc", Case(
        {"m.xml": MJCF.format('<asset><mesh name="t" file="/etc/passwd.obj"/></asset>',
                              '<geom type="mesh" mesh="t"/>')}, "m.xml", "was not found",
        "MJCF follows absolute paths (as MuJoCo does)")
    yield "mjcf-meshdir-dotdot", Case(
        {"m.xml": '<mujoco><compiler meshdir="../../../../../../etc"/><asset><mesh name="t" file="passwd.obj"/>'
                  '</asset><worldbody><body><joint/><geom type="mesh" mesh="t"/></body></worldbody></mujoco>'},
        "m.xml", "was not found", "meshdir ../ chain (as MuJoCo does)")
    yield "mjcf-include-name-too-long", Case(
        {"m.xml": MJCF.format(f'<include file="{LONG}.xml"/>', "")}, "m.xml", "limit", "ENAMETOOLONG")
    yield "sdf-include-uri-dev-zero", Case(
        {"m.sdf": SDF.format("", "").replace("</model>", "<include><uri>/dev/zero</uri></include></model>")},
        "m.sdf", "outside the allowed folders|not a regular|device", "SDF include /dev/zero read until OOM")
    yield "sdf-include-uri-dev-urandom", Case(
        {"m.sdf": SDF.format("", "").replace("</model>", "<include><uri>file:///dev/urandom</uri></include>"
                                                         "</model>")},
        "m.sdf", "outside the allowed folders|not a regular|device", "SDF include /dev/urandom")
    yield "sdf-include-name-too-long", Case(
        {"m.sdf": SDF.format("", "").replace("</model>", f"<include><uri>{LONG}</uri></include></model>")},
        "m.sdf", "limit", "ENAMETOOLONG from Path.exists()")
    yield "sdf-mesh-absolute", Case(
        {"m.sdf": SDF.format('<collision name="c"><geometry><mesh><uri>/etc/passwd</uri></mesh></geometry>'
                             "</collision>", "")}, "m.sdf", None,
        "SDF follows absolute mesh paths (a collision mesh is never opened: the model loads)")
    yield "openrave-render-scale-pi", Case(
        {"m.xml": OPENRAVE.format("<Render>cube.obj pi</Render>"), "cube.obj": CUBE_OBJ}, "m.xml", "scale",
        "ValueError: float('pi') in a Render scale")
    yield "openrave-absolute-file", Case(
        {"m.xml": '<Robot file="/etc/passwd"/>'}, "m.xml", "XML syntax error",
        "OpenRAVE follows absolute paths (as OpenRAVE does); the error quotes none of the file")
    yield "openrave-data-name-too-long", Case(
        {"m.xml": OPENRAVE.format(f"<Data>{LONG}.obj</Data>")}, "m.xml", None, "ENAMETOOLONG")
    yield "skel-mesh-absolute", Case(
        {"m.skel": '<skel version="1.0"><world name="w"><skeleton name="s"><body name="b"><inertia><mass>1'
                   "</mass></inertia><collision_shape><geometry><mesh><file_name>/dev/zero</file_name>"
                   "<scale>1 1 1</scale></mesh></geometry></collision_shape></body><joint type=\"free\" "
                   'name="j"><parent>world</parent><child>b</child></joint></skeleton></world></skel>'},
        "m.skel", "character device; only regular files are read",
        "SKEL reads a mesh file from /dev/zero until memory runs out")
    yield "directives-add-model-dev-zero", Case(
        {"m.dmd.yaml": "directives:\n- add_model:\n    name: a\n    file: /dev/zero\n"}, "m.dmd.yaml",
        "'/dev/zero' is not a regular file", "directives file reference to /dev/zero")
    yield "xml-billion-laughs", Case(
        {"m.urdf": '<!DOCTYPE r [<!ENTITY a "aaaaaaaaaa"><!ENTITY b "&a;&a;&a;&a;&a;&a;&a;&a;&a;&a;">'
                   '<!ENTITY c "&b;&b;&b;&b;&b;&b;&b;&b;&b;&b;"><!ENTITY d "&c;&c;&c;&c;&c;&c;&c;&c;&c;&c;">]>'
                   + URDF.format("", "").replace('name="r"', 'name="&d;"')}, "m.urdf", None,
        "billion laughs: entities never expanded")
    yield "xml-deep-nesting", Case(
        {"m.xml": "<mujoco>" + "<worldbody>" * 20000 + "</worldbody>" * 20000 + "</mujoco>"}, "m.xml", "(?i)depth",
        "deeply nested XML")
    yield "mjcf-replicate-offset-overflow", Case(
        {"m.xml": MJCF.format("", '<replicate count="15" offset="1e308 1e308 1e308"><body><freejoint/>'
                              '<geom size="0.1"/></body></replicate>')}, "m.xml", "overflow",
        "fuzz: replicate offsets summing to inf -> LinAlgError (SVD) in matrix_quat")
    yield "sdf-drake-gear-ratio-1e308", Case(
        {"m.sdf": '<sdf version="1.9"><model name="m"><link name="a"/><link name="b"/>'
                  '<joint name="j" type="revolute"><parent>a</parent><child>b</child><axis><xyz>0 0 1</xyz></axis>'
                  '<drake:rotor_inertia xmlns:drake="http://drake.mit.edu">1e-4</drake:rotor_inertia>'
                  '<drake:gear_ratio xmlns:drake="http://drake.mit.edu">1e308</drake:gear_ratio></joint></model></sdf>'},
        "m.sdf", "gear_ratio", "fuzz: OverflowError from an SDF drake:gear_ratio squared")
    yield "sdf-mimic-multiplier-not-a-number", Case(
        {"m.sdf": '<sdf version="1.9"><model name="m"><link name="a"/><link name="b"/><link name="c"/>'
                  '<joint name="j" type="revolute"><parent>a</parent><child>b</child><axis><xyz>0 0 1</xyz></axis>'
                  '</joint><joint name="k" type="revolute"><parent>b</parent><child>c</child><axis><xyz>0 0 1'
                  '</xyz></axis><drake:mimic xmlns:drake="http://drake.mit.edu" joint="j" multiplier="pi"/>'
                  "</joint></model></sdf>"}, "m.sdf", None, "float('pi') in a drake:mimic multiplier")
    yield "detect-format-garbage", Case({"m.model": b"\x00\xff" * 100}, "m.model", "m.model",
                                        "format detection errors name the file")


CASES = dict(_cases())
#: Rows whose file references leave the model's folder: with confine=True (an untrusted file), each
#: is refused before anything is opened.
ESCAPES = ["hrdf-include-dotdot-chain", "mjcf-include-dev-zero", "mjcf-mesh-absolute-etc", "mjcf-meshdir-dotdot",
           "sdf-include-uri-dev-zero", "sdf-include-uri-dev-urandom", "sdf-mesh-absolute", "openrave-absolute-file",
           "skel-mesh-absolute", "directives-add-model-dev-zero"]


@pytest.fixture(scope="module")
def pool() -> Iterator[Pool]:
    p = Pool(1, 2 * GIB)
    yield p
    p.close()


@pytest.mark.parametrize("name", sorted(CASES))
def test_hostile_input_ends_in_hebictl_error(name: str, pool: Pool, tmp_path: Path) -> None:
    import re

    case = CASES[name]
    for fname, content in case.files.items():
        (tmp_path / fname).write_bytes(content.encode() if isinstance(content, str) else content)
    main = tmp_path / case.main
    report = Report()
    pool.run([(name, 0, [], Seed(main, main, "model"), main.read_bytes())], 5.0, report)
    assert report.inputs == 1
    status = next(iter(report.statuses))
    if report.findings:
        o = report.findings[0][3]
        pytest.fail(f"{case.issue}: {o.status} {o.exc_type} at {o.where}: {o.message}")
    if case.match is None:
        return
    assert status == "hebictl", f"{case.issue}: loaded a model, expected an error matching {case.match!r}"
    assert re.search(case.match, report.last_message), report.last_message


@pytest.mark.parametrize("name", ESCAPES)
def test_confine_refuses_references_outside_the_model_folder(name: str, tmp_path: Path) -> None:
    """``confine=True`` (for untrusted files) refuses each escaping reference by name, file and rule."""
    from hebictl import load_model
    from hebictl.errors import FormatError

    case = CASES[name]
    for fname, content in case.files.items():
        (tmp_path / fname).write_bytes(content.encode() if isinstance(content, str) else content)
    with pytest.raises(FormatError, match=r"outside the allowed folders \(confine=True") as info:
        load_model(tmp_path / case.main, confine=True)
    assert info.value.file == str(tmp_path / case.main)


# --------------------------------------------------------------------------- allowed_roots, guard, detection
# MuJoCo takes this body's inertia from the mesh, so the reader must open the file
CUBE_MJCF = MJCF.format('<asset><mesh name="cube" file="../shared/cube.obj"/></asset>',
                        '<geom type="mesh" mesh="cube"/>')


def _shared_mesh_layout(tmp_path: Path) -> tuple[Path, Path]:
    (tmp_path / "model").mkdir()
    (tmp_path / "shared").mkdir()
    (tmp_path / "shared" / "cube.obj").write_bytes(CUBE_OBJ)
    model = tmp_path / "model" / "m.xml"
    model.write_text(CUBE_MJCF)
    return model, tmp_path / "shared"


def test_allowed_roots_admit_a_shared_folder(tmp_path: Path) -> None:
    from hebictl import load_model
    from hebictl.errors import FormatError

    model, shared = _shared_mesh_layout(tmp_path)
    assert load_model(model).dof == 1  # '../shared/cube.obj' is followed, as MuJoCo does
    with pytest.raises(FormatError, match="outside the allowed folders") as info:
        load_model(model, confine=True)
    assert info.value.file == str(model)
    assert load_model(model, confine=True, allowed_roots=[shared]).dof == 1


def test_cli_allow_root(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from hebictl.cli import main

    model, shared = _shared_mesh_layout(tmp_path)
    assert main(["model", "validate", str(model)]) == 0
    assert main(["model", "validate", str(model), "--confine"]) != 0
    assert "outside the allowed folders" in capsys.readouterr().err
    assert main(["model", "validate", str(model), "--confine", "--allow-root", str(shared)]) == 0


def test_limits_per_call(tmp_path: Path) -> None:
    from hebictl import load_model
    from hebictl.errors import FormatError
    from hebictl.limits import ReaderLimits

    path = tmp_path / "m.xml"
    path.write_text(MJCF.format("", '<replicate count="20"><geom size="0.1"/></replicate>'))
    assert load_model(path).dof == 1
    with pytest.raises(FormatError, match=r"ReaderLimits\.max_replicate_count=10"):
        load_model(path, limits=ReaderLimits(max_replicate_count=10))


def test_reader_bug_is_wrapped_with_its_cause(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The last line of defence: an exception a reader should have prevented still comes out as a
    FormatError naming the file, with the original exception as its cause."""
    import hebictl.formats.urdf as urdf
    from hebictl import load_model
    from hebictl.errors import FormatError

    def broken(path: Path, **options: object) -> None:
        raise RecursionError("maximum recursion depth exceeded")

    monkeypatch.setattr(urdf, "load_urdf", broken)
    path = tmp_path / "m.urdf"
    path.write_text(URDF.format("", ""))
    with pytest.raises(FormatError, match="RecursionError") as info:
        load_model(path)
    assert info.value.file == str(path) and isinstance(info.value.__cause__, RecursionError)


@pytest.mark.parametrize(("text", "line"), [("<!-- a\nb -->\n\n<nonsense/>", 4), ("\n\nno xml here", 1)])
def test_format_detection_errors_name_file_and_line(tmp_path: Path, text: str, line: int) -> None:
    from hebictl import load_model
    from hebictl.errors import FormatError

    path = tmp_path / "m.model"
    path.write_text(text)
    with pytest.raises(FormatError) as info:
        load_model(path)
    assert info.value.file == str(path) and info.value.line == line


# --------------------------------------------------------------------------- no numpy warnings from readers
SKEL_BOX = ('<skel version="1.0"><world name="w"><skeleton name="s"><body name="b"><inertia><mass>{m}</mass>'
            "<offset>{o}</offset></inertia><collision_shape><geometry><box><size>{s}</size></box></geometry>"
            '</collision_shape></body><joint type="revolute" name="j"><parent>world</parent><child>b</child><axis>'
            "<xyz>0 0 1</xyz></axis></joint></skeleton></world></skel>")
OPENRAVE_BOX = ('<Robot name="r"><KinBody><Body name="a" type="dynamic"><Geom type="box"><extents>{e}</extents></Geom>'
                '<Mass type="mimicgeom"><density>{d}</density></Mass></Body><Body name="b" type="dynamic"><Geom '
                'type="box"><extents>1 1 1</extents></Geom></Body><Joint name="j" type="hinge"><Body>a</Body><Body>b'
                "</Body></Joint></KinBody></Robot>")
OVERFLOWS = [
    ("skel", "skel-mass-1e308", SKEL_BOX.format(m="1e308", o="1e308 0 0", s="1 1 1"), "rotational inertia"),
    ("skel", "skel-box-1e200", SKEL_BOX.format(m="1", o="0 0 0", s="1e200 1e200 1e200"), "rotational inertia"),
    ("openrave", "openrave-box-1e200", OPENRAVE_BOX.format(e="1e200 1e200 1e200", d="1000"), "mass must be finite"),
    ("openrave", "openrave-density-1e308", OPENRAVE_BOX.format(e="1 1 1", d="1e308"), "mass must be finite"),
    ("mjcf", "mjcf-sphere-1e308", MJCF.format("", '<geom size="1e308"/>'), "overflow"),
]


@pytest.mark.parametrize(("fmt", "text", "fragment"), [pytest.param(f, t, m, id=i) for f, i, t, m in OVERFLOWS])
def test_overflowing_values_end_in_one_format_error_without_numpy_warnings(fmt: str, text: str, fragment: str) -> None:
    """Issue 23: extreme values printed numpy 'RuntimeWarning: overflow/invalid value encountered' before
    the clean error (and SKEL/OpenRAVE's own loaders raised a ModelError without the file). Each reader's
    own loader and load_model_string now end in a FormatError naming the source, with no warning at all."""
    import importlib
    import warnings

    from hebictl import load_model_string
    from hebictl.errors import FormatError

    direct = getattr(importlib.import_module(f"hebictl.formats.{fmt}"), f"load_{fmt}_string")
    for load in (lambda t: direct(t, source_name="m.xml"), lambda t: load_model_string(t, fmt, source_name="m.xml")):
        with warnings.catch_warnings():
            warnings.simplefilter("error")  # a numpy RuntimeWarning (or any other) fails the test
            with pytest.raises(FormatError, match=fragment) as info:
                load(text)
        assert info.value.file == "m.xml"
