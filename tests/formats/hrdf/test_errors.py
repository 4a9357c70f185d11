"""Ill-formed HRDF files: one row per rule of the spec, each with the message and line we report.

Every row is also fed to hebi-py 2.16.1 (the reference implementation): ``HEBI_REJECTS`` rows
must be rejected by it too; ``HEBI_ACCEPTS`` rows are where hebi-py is laxer than the spec (or
than common sense: NaN frames, negative masses) and we deliberately differ — the test asserts
hebi-py still accepts them so the list stays true.
"""

from __future__ import annotations

import subprocess
import sys
import warnings
from pathlib import Path

import pytest

from hebictl.errors import FormatError
from hebictl.formats.hrdf import HrdfWarning, load_hrdf, load_hrdf_string

HEBI_REJECTS = "rejects"
HEBI_ACCEPTS = "accepts"  # hebi-py is laxer than the spec here


def H(*body: str, version: str | None = "1.6.0", attrs: str = "") -> str:
    """An HRDF text: line 1 is <robot>, body line i is line i + 2, the last line is </robot>."""
    v = f' version="{version}"' if version else ""
    return "\n".join([f"<robot{v}{attrs}>", *body, "</robot>"])


# (id, text, expected message fragment, expected line, what hebi-py does)
ROWS = [
    # ---- XML and the root element
    ("xml-not-well-formed", H('<actuator type="X5-4">', ""), "not well-formed XML", 4, HEBI_REJECTS),
    ("xml-duplicate-attribute", H('<actuator type="X5-4" type="X5-9"/>'), "not well-formed XML", 2, HEBI_ACCEPTS),
    ("root-not-robot", '<Robot version="1.6.0">\n</Robot>', "root element is <Robot>, expected <robot>", 1,
     HEBI_ACCEPTS),
    ("root-namespaced", '<robot xmlns="urn:x" version="1.6.0">\n</robot>',
     "root element is <{urn:x}robot>, expected <robot> (no XML namespace)", 1, HEBI_REJECTS),
    ("element-namespaced", H('<h:actuator xmlns:h="urn:x" type="X5-4"/>'),
     "<h:actuator> is not allowed inside <robot>: HRDF elements have no XML namespace", 2, HEBI_REJECTS),
    ("entity-declaration", '<!DOCTYPE robot [<!ENTITY t "X5-4">]>\n' + H('<actuator type="&t;"/>'),
     "entity declarations", 1, HEBI_REJECTS),
    ("version-unknown", H(version="1.7.0"), "unsupported HRDF version '1.7.0'", 1, HEBI_ACCEPTS),
    ("version-malformed", H(version="1.6"), "unsupported HRDF version '1.6'", 1, HEBI_REJECTS),
    ("robot-unknown-attribute", H(attrs=' name="arm"'), "<robot> has no attribute 'name'", 1, HEBI_REJECTS),
    ("robot-description-1.1", H(version="1.1.0", attrs=' description="x"'),
     "'description' needs HRDF version >= 1.2.0", 1, HEBI_REJECTS),
    ("robot-rot-formula-1.0", H(version="1.0.0", attrs=' rot="Rx(1)"'), "need HRDF version >= 1.1.0", 1,
     HEBI_REJECTS),
    ("stray-text-in-rigid-body", H('<rigid-body mass="1">', "  # <!-- leg -->", "  <output/>", "</rigid-body>"),
     "unexpected text '#' inside <rigid-body>", 3, HEBI_REJECTS),
    ("stray-text-in-robot", H('<actuator type="X5-4"/>', "oops"), "unexpected text 'oops' inside <robot>", 3,
     HEBI_REJECTS),
    ("stray-text-in-actuator", H('<actuator type="X5-4">', "  x", "</actuator>"),
     "unexpected text 'x' inside <actuator>", 3, HEBI_REJECTS),
    # ---- elements
    ("unknown-element", H('<actuator type="X5-4"/>', "<motor/>"), "<motor> is not allowed inside <robot>", 3,
     HEBI_REJECTS),
    ("element-name-case", H('<Actuator type="X5-4"/>'), "element names are case-sensitive: write <actuator>", 2,
     HEBI_REJECTS),
    ("end-effector-1.1", H("<end-effector/>", version="1.1.0"), "<end-effector> needs HRDF version >= 1.2.0", 2,
     HEBI_REJECTS),
    ("include-1.2", H('<include path="a.hrdf"/>', version="1.2.0"), "<include> needs HRDF version >= 1.3.0", 2,
     HEBI_REJECTS),
    ("output-1.2", H('<rigid-body mass="1">', "<output/>", "</rigid-body>", version="1.2.0"),
     "<output> needs HRDF version >= 1.3.0", 3, HEBI_REJECTS),
    ("output-in-robot", H("<output/>"), "<output> is not allowed inside <robot>", 2, HEBI_REJECTS),
    ("output-in-actuator", H('<actuator type="X5-4">', "  <output/>", "</actuator>"),
     "<actuator> cannot contain child elements (found <output>)", 3, HEBI_REJECTS),
    ("output-in-output", H('<rigid-body mass="1">', "<output>", "<output/>", "</output>", "</rigid-body>"),
     "<output> is not allowed inside <output>", 4, HEBI_REJECTS),
    ("element-in-rigid-body", H('<rigid-body mass="1">', '  <actuator type="X5-4"/>', "</rigid-body>"),
     "<actuator> is not allowed inside <rigid-body> (expected <output>)", 3, HEBI_REJECTS),
    # ---- attributes: known, required, version-gated
    ("unknown-attribute", H('<actuator type="X5-4" name="a"/>'), "<actuator> has no attribute 'name'", 2,
     HEBI_REJECTS),
    ("missing-type", H("<actuator/>"), "<actuator> is missing required attribute 'type'", 2, HEBI_REJECTS),
    ("missing-twist", H('<link type="X5" extension="0.3"/>'), "<link> is missing required attribute 'twist'", 2,
     HEBI_REJECTS),
    ("missing-mass", H("<rigid-body/>"), "<rigid-body> is missing required attribute 'mass'", 2, HEBI_REJECTS),
    ("missing-axis", H("<joint/>"), "<joint> is missing required attribute 'axis'", 2, HEBI_REJECTS),
    ("missing-path", H("<include/>"), "<include> is missing required attribute 'path'", 2, HEBI_REJECTS),
    ("mass-offset-1.0", H('<actuator type="X5-4" mass_offset="0.1"/>', version="1.0.0"),
     "'mass_offset' needs HRDF version >= 1.1.0", 2, HEBI_REJECTS),
    ("inertia-1.0", H('<rigid-body mass="1" ixx="0.1"/>', version=None),
     "'ixx' needs HRDF version >= 1.1.0", 2, HEBI_REJECTS),
    ("link-input-1.1", H('<link type="X5" extension="0.3" twist="0" input="Inline"/>', version="1.1.0"),
     "'input' needs HRDF version >= 1.2.0", 2, HEBI_REJECTS),
    ("mesh-1.2", H('<rigid-body mass="1" mesh_path="m.obj"/>', version="1.2.0"),
     "'mesh_path' needs HRDF version >= 1.3.0", 2, HEBI_REJECTS),
    ("tag-1.3", H('<actuator type="X5-4" tag="base"/>', version="1.3.0"), "'tag' needs HRDF version >= 1.4.0", 2,
     HEBI_REJECTS),
    ("gear-ratio-1.4", H('<joint axis="rz" gear_ratio="2"/>', version="1.4.0"),
     "'gear_ratio' needs HRDF version >= 1.5.0", 2, HEBI_REJECTS),
    ("attribute-line-in-multiline-tag", H("<rigid-body", '    mass="1"', '    com_trans="0 0"', "/>"),
     "<rigid-body> attribute 'com_trans': invalid translation vector '0 0'", 4, HEBI_REJECTS),
    # ---- enums
    ("unknown-actuator-type", H('<actuator type="X9-9"/>'), "unknown value 'X9-9'", 2, HEBI_REJECTS),
    ("enum-with-spaces", H('<actuator type=" X5-4"/>'), "unknown value ' X5-4'", 2, HEBI_REJECTS),
    ("unknown-joint-axis", H('<joint axis="rw"/>'), "<joint> attribute 'axis': unknown value 'rw'", 2,
     HEBI_REJECTS),
    ("r-series-1.1", H('<actuator type="R8-3"/>', version="1.1.0"), "'R8-3' needs HRDF version >= 1.2.0", 2,
     HEBI_REJECTS),
    ("t-series-1.3", H('<actuator type="T5-4"/>', version="1.3.0"), "'T5-4' needs HRDF version >= 1.4.0", 2,
     HEBI_REJECTS),
    ("r25-1.5", H('<actuator type="R25-8"/>', version="1.5.0"), "'R25-8' needs HRDF version >= 1.6.0", 2,
     HEBI_REJECTS),
    ("r25-bracket-1.5", H('<bracket type="R25LightLeft"/>', version="1.5.0"),
     "'R25LightLeft' needs HRDF version >= 1.6.0", 2, HEBI_REJECTS),
    ("enum-case-1.0", H('<actuator type="x5-4"/>', version="1.0.0"), "case-sensitive before HRDF 1.1.0", 2,
     HEBI_ACCEPTS),
    ("reversed-axis", H('<joint axis="-rz"/>'), "'-rz' is not an HRDF axis", 2, HEBI_ACCEPTS),
    ("r25-r8-inline-output", H('<link type="R25-R8" extension="0.3" twist="0" output="Inline"/>'),
     "cannot have an Inline output", 2, HEBI_REJECTS),
    # ---- values
    ("formula-syntax", H('<actuator type="X5-4"/>', '<link type="X5" extension="0.3" twist="pi pi"/>'),
     "<link> attribute 'twist': invalid formula 'pi pi' (expected operator before 'pi' at column 4)", 3,
     HEBI_REJECTS),
    ("formula-empty", H('<link type="X5" extension="" twist="0"/>'), "invalid formula '' (empty formula", 2,
     HEBI_REJECTS),
    ("formula-case-pi", H('<rigid-body mass="PI"/>'), "unknown name 'PI'", 2, HEBI_REJECTS),
    ("formula-in-1.0", H('<link type="X5" extension="0.3 + 0.1" twist="0"/>', version="1.0.0"),
     "'0.3 + 0.1' is not a number; formulas need HRDF version >= 1.1.0", 2, HEBI_ACCEPTS),  # hebi reads 0.3
    ("formula-division-by-zero", H('<link type="X5" extension="1/0" twist="0"/>'), "division by zero at column 2",
     2, HEBI_ACCEPTS),
    ("formula-hex", H('<rigid-body mass="0x1"/>'), "malformed number '0x1'", 2, HEBI_ACCEPTS),
    ("rotation-8-numbers", H('<rigid-body mass="1" com_rot="1 0 0 0 1 0 0 0"/>'),
     "invalid rotation matrix '1 0 0 0 1 0 0 0' (expected 9", 2, HEBI_REJECTS),
    ("rotation-not-orthonormal", H('<rigid-body mass="1" output_rot="2 0 0 0 2 0 0 0 2"/>'),
     "not a rotation matrix", 2, HEBI_REJECTS),
    ("rotation-function-case", H('<rigid-body mass="1" output_rot="rx(1)"/>'), "invalid rotation matrix 'rx(1)'",
     2, HEBI_REJECTS),
    ("translation-formula", H('<rigid-body mass="1" com_trans="pi 0 0"/>'),
     "'pi' is not a floating point number at column 1", 2, HEBI_ACCEPTS),
    ("translation-tabs-1.0", H('<rigid-body mass="1" com_trans="0&#9;0 0"/>', version="1.0.0"),
     "may only be separated by spaces before HRDF 1.1.0", 2, HEBI_REJECTS),
    ("mass-and-mass-offset", H('<actuator type="X5-4" mass="0.4" mass_offset="0.1"/>'),
     "both 'mass' and 'mass_offset'", 2, HEBI_REJECTS),
    ("com-trans-and-offset", H('<bracket type="X5LightLeft" com_trans="0 0 0" com_trans_offset="0 0 1"/>'),
     "both 'com_trans' and 'com_trans_offset'", 2, HEBI_REJECTS),
    ("offset-on-rigid-body", H('<rigid-body mass="1" mass_offset="1"/>'), "<rigid-body> has no attribute "
     "'mass_offset'", 2, HEBI_REJECTS),
    ("override-on-joint", H('<joint axis="rx" mass="1"/>'), "<joint> has no attribute 'mass'", 2, HEBI_REJECTS),
    ("negative-mass", H('<actuator type="X5-4" mass_offset="-1"/>'), "masses must not be negative", 2,
     HEBI_ACCEPTS),
    ("gear-ratio-zero", H('<joint axis="rz" gear_ratio="0"/>'), "'gear_ratio' must not be 0", 2, HEBI_ACCEPTS),
    # ---- meshes
    ("mesh-rot-without-path", H('<rigid-body mass="1" mesh_rot="Rx(1)"/>'), "'mesh_rot' requires a 'mesh_path'",
     2, HEBI_REJECTS),
    ("mesh-trans-without-path", H('<rigid-body mass="1" mesh_trans="0 0 1"/>'),
     "'mesh_trans' requires a 'mesh_path'", 2, HEBI_REJECTS),
    ("mesh-absolute", H('<rigid-body mass="1" mesh_path="/meshes/a.obj"/>'), "is an absolute path", 2,
     HEBI_REJECTS),
    ("mesh-absolute-windows", H('<rigid-body mass="1" mesh_path="C:/meshes/a.obj"/>'), "is an absolute path", 2,
     HEBI_ACCEPTS),
    ("mesh-url-scheme", H('<rigid-body mass="1" mesh_path="ftp://x.org/a.obj"/>'),
     "must start with http:// or https://", 2, HEBI_ACCEPTS),
    ("mesh-url-1.3", H('<rigid-body mass="1" mesh_path="https://x.org/a.obj"/>', version="1.3.0"),
     "web URLs need HRDF version >= 1.4.0", 2, HEBI_ACCEPTS),
    # ---- tags
    ("duplicate-tag", H('<actuator type="X5-4" tag="wrist"/>', '<bracket type="X5LightLeft"', '  tag="wrist"/>'),
     "tag 'wrist' is already used by <actuator X5-4>", 4, HEBI_REJECTS),
    # ---- outputs
    ("bracket-too-many-outputs", H('<bracket type="X5LightLeft">', "<output/>", "<output/>", "</bracket>"),
     "has 1 output interface; this is <output> number 2", 4, HEBI_REJECTS),
    ("bracket-output-rot", H('<bracket type="X5LightLeft">', '<output rot="Rx(1)"/>', "</bracket>"),
     "'rot' is only allowed under <rigid-body>", 3, HEBI_REJECTS),
    ("bracket-output-trans", H('<bracket type="X5LightLeft">', '<output trans="0 0 1"/>', "</bracket>"),
     "'trans' is only allowed under <rigid-body>", 3, HEBI_REJECTS),
    ("element-after-outputs", H('<rigid-body mass="1">', "<output/>", "<output/>", "</rigid-body>",
                                '<actuator type="X5-4"/>'),
     "<actuator X5-4> cannot follow <rigid-body> (<string>:2), which has <output> children", 6, HEBI_REJECTS),
    # ---- interfaces
    ("actuator-after-actuator", H('<actuator type="X5-4"/>', '<actuator type="X5-9"/>'),
     "<actuator X5-9> with input interface X-AH-A cannot attach to <actuator X5-4> (<string>:2) with output "
     "interface X-AO-A", 3, HEBI_REJECTS),
    ("r8-link-on-x-actuator", H('<actuator type="X8-9"/>', '<link type="R8" extension="0.3" twist="0"/>'),
     "input interface R8-AO-B cannot attach to <actuator X8-9>", 3, HEBI_REJECTS),
    ("x-link-on-t-actuator", H('<actuator type="T8-3"/>', '<link type="X5" extension="0.3" twist="0"/>'),
     "with output interface R8-AO-A", 3, HEBI_REJECTS),
    ("link-after-link", H('<link type="X5" extension="0.3" twist="0"/>', '<link type="X5" extension="0.3" twist="0"/>'),
     "input interface X-AO-B cannot attach to <link X5> (<string>:2) with output interface X-AH-B", 3, HEBI_REJECTS),
    ("r25-link-on-r8-actuator", H('<actuator type="R8-9"/>', '<link type="R25" extension="0.3" twist="0"/>'),
     "R25-AO-B", 3, HEBI_REJECTS),
    ("r8-actuator-after-r25-r8-link-reversed", H('<actuator type="R8-9"/>',
                                                 '<link type="R25-R8" extension="0.3" twist="0"/>'),
     "input interface R25-AO-B", 3, HEBI_REJECTS),
    ("gripper-type-mismatch", H('<actuator type="X5-4"/>', '<end-effector type="R8Parallel"/>'),
     "<end-effector R8Parallel> with input interface R8-AO-B", 3, HEBI_REJECTS),
    ("gripper-on-bracket", H('<actuator type="X5-4"/>', '<bracket type="X5LightLeft"/>',
                             '<end-effector type="X5Parallel"/>'), "with output interface X-AH-B", 4, HEBI_REJECTS),
    ("element-after-end-effector", H("<end-effector/>", '<rigid-body mass="1"/>'),
     "an end-effector has no output interface", 3, HEBI_REJECTS),
    ("interface-under-bracket-output", H('<bracket type="X5LightLeft">', "<output>",
                                         '<link type="X5" extension="0.3" twist="0"/>', "</output>", "</bracket>"),
     "cannot attach to <bracket X5LightLeft>", 4, HEBI_REJECTS),
]


@pytest.mark.parametrize(("text", "fragment", "line", "hebi_does"), [r[1:] for r in ROWS], ids=[r[0] for r in ROWS])
def test_bad_hrdf(text, fragment, line, hebi_does):
    """Each ill-formed file raises FormatError naming the line and what is wrong."""
    with pytest.raises(FormatError) as info:
        load_hrdf_string(text, strict=True)
    err = info.value
    assert fragment in err.message
    assert err.line == line
    assert err.file == "<string>"
    assert str(err).startswith(f"<string>:{line}: ")


@pytest.mark.parametrize(("text", "hebi_does"), [(r[1], r[4]) for r in ROWS], ids=[r[0] for r in ROWS])
def test_bad_hrdf_vs_hebi(hebi, text, hebi_does):
    """hebi-py rejects the same files, except the rows marked as hebi-py being laxer than the spec."""
    try:
        hebi.robot_model.import_from_hrdf_string(text, warning_callback=lambda w: None)
        accepted = True
    except RuntimeError:
        accepted = False
    assert accepted == (hebi_does == HEBI_ACCEPTS)


def test_at_least_forty_rules():
    """The table covers at least 40 distinct rules."""
    assert len({r[0] for r in ROWS}) == len(ROWS) >= 40


def test_error_file_named_when_loading_a_file(tmp_path):
    """Errors in a file name that file."""
    path = tmp_path / "arm.hrdf"
    path.write_text(H('<actuator type="X5-4"/>', '<link type="X5" extension="0.3" twist="pi pi"/>'))
    with pytest.raises(FormatError) as info:
        load_hrdf(path)
    assert info.value.file == str(path)
    assert str(info.value).startswith(f"{path}:3: <link> attribute 'twist': invalid formula 'pi pi'")


def test_missing_file(tmp_path):
    """A missing file is a FormatError, not an OSError."""
    with pytest.raises(FormatError, match="cannot read"):
        load_hrdf(tmp_path / "nope.hrdf")


# --------------------------------------------------------------------------- warnings
def test_enum_case_warns_with_location(hebi):
    """A case-mismatched enum is read with an HrdfWarning naming file:line, as hebi-py warns."""
    text = H('<actuator type="X5-4"/>', '<link type="x5" extension="0.3" twist="0" input="inline"/>')
    with pytest.warns(HrdfWarning) as record:
        model = load_hrdf_string(text, source_name="arm.hrdf")
    messages = [str(w.message) for w in record]
    assert len(messages) == 2
    assert messages[0].startswith("arm.hrdf:3: <link> attribute 'type': 'x5' read as 'X5'")
    assert "'inline' read as 'Inline'" in messages[1]
    assert model.metadata["elements"][1]["type"] == "X5"
    hebi_warnings: list[str] = []
    hebi.robot_model.import_from_hrdf_string(text, warning_callback=hebi_warnings.extend)
    assert any("non-matching case" in w for w in hebi_warnings)


def test_canonical_file_does_not_warn():
    """Canonical spelling loads silently."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        model = load_hrdf_string(H('<actuator type="X5-4"/>', '<joint axis="rz"/>'))
    assert [str(w.message) for w in caught] == []
    assert model.dof == 2


@pytest.mark.parametrize(("text", "fragment"), [
    (H('<joint axis="-rz"/>'), "'-rz' is not an HRDF axis"),
    (H('<rigid-body mass="1" mesh_path="https://x.org/a.obj"/>', version="1.3.0"), "web URLs need"),
])
def test_strict_false_warns(text, fragment):
    """strict=False turns the hebi-tolerated violations into HrdfWarnings."""
    with pytest.warns(HrdfWarning, match=fragment):
        load_hrdf_string(text, strict=False)


# --------------------------------------------------------------------------- includes
def _write(tmp_path: Path, files: dict[str, str]) -> None:
    for name, text in files.items():
        p = tmp_path / name
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(text)


def _hebi_file_accepts(hebi, path: Path) -> bool:
    try:
        hebi.robot_model.import_from_hrdf(str(path), warning_callback=lambda w: None)
        return True
    except RuntimeError:
        return False


ARM = H('<actuator type="X5-4" tag="a1"/>', '<link type="X5" extension="0.3" twist="0"/>')

# (id, files, top file, message fragment, file the error names (relative), line, hebi-py accepts)
INCLUDE_ROWS = [
    ("missing", {"top.hrdf": H('<include path="parts/arm.hrdf"/>')}, "top.hrdf",
     "included file 'parts/arm.hrdf' not found", "top.hrdf", 2, False),
    ("directory", {"top.hrdf": H('<include path="parts"/>'), "parts/x.hrdf": ARM}, "top.hrdf",
     "'parts' is a directory", "top.hrdf", 2, False),
    ("absolute", {"top.hrdf": H('<include path="/etc/arm.hrdf"/>')}, "top.hrdf", "is an absolute path",
     "top.hrdf", 2, False),
    ("url", {"top.hrdf": H('<include path="https://x.org/arm.hrdf"/>')}, "top.hrdf", "is a URL", "top.hrdf", 2,
     False),
    ("version-mismatch", {"top.hrdf": H('<include path="arm.hrdf"/>'), "arm.hrdf": ARM.replace("1.6.0", "1.5.0")},
     "top.hrdf", "has HRDF version 1.5.0 but the including file has 1.6.0", "top.hrdf", 2, True),
    ("error-inside-include", {"top.hrdf": H('<actuator type="X5-4"/>', '<include path="sub/arm.hrdf"/>'),
                              "sub/arm.hrdf": H('<link type="X5"', '  extension="0.3 0.1" twist="0"/>')},
     "top.hrdf", "<link> attribute 'extension': invalid formula '0.3 0.1'", "sub/arm.hrdf", 3, False),
    ("xml-error-inside-include", {"top.hrdf": H('<include path="arm.hrdf"/>'), "arm.hrdf": "<robot>\n<a>\n</robot>"},
     "top.hrdf", "not well-formed XML", "arm.hrdf", 3, False),
    ("include-not-robot", {"top.hrdf": H('<include path="arm.hrdf"/>'), "arm.hrdf": '<arm version="1.6.0"/>'},
     "top.hrdf", "root element is <arm>", "arm.hrdf", 1, True),
    ("interface-across-include", {"top.hrdf": H('<actuator type="X5-4"/>', '<include path="arm.hrdf"/>'),
                                  "arm.hrdf": ARM}, "top.hrdf",
     "<actuator X5-4> with input interface X-AH-A cannot attach to <actuator X5-4> (top.hrdf:2)", "arm.hrdf", 2,
     False),
    ("duplicate-tag-across-includes", {"top.hrdf": H('<include path="arm.hrdf"/>', '<include path="arm.hrdf"/>'),
                                       "arm.hrdf": ARM}, "top.hrdf", "tag 'a1' is already used", "arm.hrdf", 2,
     False),
    ("element-after-included-tree", {"top.hrdf": H('<include path="body.hrdf"/>', '<actuator type="X5-4"/>'),
                                     "body.hrdf": H('<rigid-body mass="1">', "<output/>", "<output/>",
                                                    "</rigid-body>")},
     "top.hrdf", "cannot follow <rigid-body> (body.hrdf:2), which has <output> children", "top.hrdf", 3, True),
    ("nested-relative-to-including-file", {"top.hrdf": H('<include path="a/mid.hrdf"/>'),
                                           "a/mid.hrdf": H('<include path="arm.hrdf"/>')}, "top.hrdf",
     "included file 'arm.hrdf' not found", "a/mid.hrdf", 2, False),
]


@pytest.mark.parametrize(("files", "top", "fragment", "where", "line", "hebi_accepts"),
                         [r[1:] for r in INCLUDE_ROWS], ids=[r[0] for r in INCLUDE_ROWS])
def test_bad_includes(hebi, tmp_path, files, top, fragment, where, line, hebi_accepts):
    """Include errors name the file (the included one when the error is inside it) and the line."""
    _write(tmp_path, files)
    with pytest.raises(FormatError) as info:
        load_hrdf(tmp_path / top, strict=True)
    assert fragment in info.value.message
    assert Path(info.value.file) == tmp_path / where
    assert info.value.line == line
    assert _hebi_file_accepts(hebi, tmp_path / top) == hebi_accepts


@pytest.mark.parametrize(("files", "chain"), [
    ({"a.hrdf": H('<include path="a.hrdf"/>')}, "a.hrdf -> a.hrdf"),
    ({"a.hrdf": H('<actuator type="X5-4"/>', '<include path="sub/b.hrdf"/>'),
      "sub/b.hrdf": H('<link type="X5" extension="0.3" twist="0"/>', '<include path="../a.hrdf"/>')},
     "a.hrdf -> sub/b.hrdf -> a.hrdf"),
])
def test_include_cycles(tmp_path, files, chain):
    """An include cycle is an error naming the chain; libhebi recurses until it crashes."""
    _write(tmp_path, files)
    with pytest.raises(FormatError) as info:
        load_hrdf(tmp_path / "a.hrdf")
    names = " -> ".join(str(tmp_path / n) for n in chain.split(" -> "))
    assert f"<include> cycle: {names}" in info.value.message
    code = ("import contextlib, io, sys\nwith contextlib.redirect_stdout(io.StringIO()):\n    import hebi\n"
            "hebi.robot_model.import_from_hrdf(sys.argv[1])\n")
    proc = subprocess.run([sys.executable, "-c", code, str(tmp_path / "a.hrdf")], capture_output=True, timeout=300,
                          check=False)
    assert proc.returncode != 0


def test_string_include_needs_base_dir(tmp_path):
    """Includes in a string resolve against base_dir, and are an error without it."""
    _write(tmp_path, {"parts/arm.hrdf": ARM})
    text = H('<include path="parts/arm.hrdf"/>')
    with pytest.raises(FormatError, match="needs a base directory") as info:
        load_hrdf_string(text)
    assert info.value.line == 2
    model = load_hrdf_string(text, base_dir=tmp_path)
    assert model.dof == 1
    assert model.metadata["elements"][0]["file"] == str(tmp_path / "parts/arm.hrdf")


def test_version_mismatch_allowed_when_not_strict(tmp_path):
    """strict=False reads an include of another version by its own rules, with a warning."""
    _write(tmp_path, {"top.hrdf": H('<include path="arm.hrdf"/>', version="1.3.0"),
                      "arm.hrdf": H('<actuator type="T5-4" tag="t"/>', version="1.4.0")})
    with pytest.warns(HrdfWarning, match="has HRDF version 1.4.0"):
        model = load_hrdf(tmp_path / "top.hrdf", strict=False)
    assert model.joint_names == ("t",)
