"""Bad URDF input: a FormatError naming file and line, and pinocchio (urdfdom) refusing the same text."""

from __future__ import annotations

import pytest

from hebictl.errors import FormatError
from hebictl.formats.urdf import load_urdf, load_urdf_string
from tests.formats.references import Pinocchio, ReferenceRejected

L = '<link name="{}"/>'
J = '<joint name="{n}" type="{t}"><parent link="{p}"/><child link="{c}"/>{x}</joint>'
LIM = '<limit lower="-1" upper="1" effort="1" velocity="1"/>'


def urdf(*parts: str) -> str:
    # one element per line, so the expected line of each defect is easy to read off
    return '<robot name="r">\n' + "\n".join(parts) + "\n</robot>"


def joint(n="j", t="revolute", p="a", c="b", x=LIM) -> str:
    return J.format(n=n, t=t, p=p, c=c, x=x)


# (id, text, message fragment, line, whether urdfdom/pinocchio also refuses it)
ROWS = [
    ("xml-syntax", '<robot name="r">\n<link name="a">\n</robot>', "XML syntax error", 3, True),
    ("root-element", '<sdf version="1.6"/>', "root element must be <robot>", 1, True),
    ("robot-name", "<robot>\n" + L.format("a") + "\n</robot>", "missing the required attribute 'name'", 1, True),
    ("no-links", urdf(), "has no <link>", 1, True),
    ("duplicate-link", urdf(L.format("a"), L.format("a")), "duplicate link name 'a'", 3, True),
    ("duplicate-joint", urdf(L.format("a"), L.format("b"), L.format("c"), joint(), joint(c="c")),
     "duplicate joint name 'j'", 6, True),
    ("unknown-parent", urdf(L.format("a"), joint(p="world")), "parent link 'world' is not defined", 3, True),
    ("two-parents", urdf(L.format("a"), L.format("b"), L.format("c"), joint(p="a", c="c"),
                         joint(n="k", p="b", c="c")), "link 'c' has two parents", 6, True),
    ("two-roots", urdf(L.format("a"), L.format("b"), L.format("c"), joint(p="a", c="b")),
     "exactly one root link, found 2", 4, True),
    ("cycle", urdf(L.format("a"), L.format("b"), joint(p="a", c="b"), joint(n="k", p="b", c="a")),
     "form a cycle", 1, True),
    ("unknown-type", urdf(L.format("a"), L.format("b"), joint(t="hinge")), "unknown type 'hinge'", 4, True),
    ("revolute-without-limit", urdf(L.format("a"), L.format("b"), joint(x="")), "needs a <limit", 4, True),
    ("limit-without-effort", urdf(L.format("a"), L.format("b"), joint(x='<limit lower="0" upper="1" velocity="1"/>')),
     "missing the required attribute 'effort'", 4, True),
    ("origin-not-numbers", urdf(L.format("a"), L.format("b"), joint(x=LIM + '<origin xyz="0 zero 0"/>')),
     "is not a list of numbers", 4, True),
    ("origin-two-numbers", urdf(L.format("a"), L.format("b"), joint(x=LIM + '<origin rpy="0 1"/>')),
     "rpy needs 3 numbers", 4, True),
    ("missing-child", urdf(L.format("a"), L.format("b"), '<joint name="j" type="fixed"><parent link="a"/></joint>'),
     "needs both <parent link=...> and <child link=...>", 4, True),
    # urdfdom logs "Could not parse inertial element" for these two, yet pinocchio still builds a model:
    # rejected with strict=True only (test_features.py: read as pinocchio reads them by default)
    ("inertial-without-mass", urdf('<link name="a"><inertial><inertia ixx="1" ixy="0" ixz="0" iyy="1" iyz="0" '
                                   'izz="1"/></inertial></link>'), "<inertial> has no <mass>", 2, False),
    ("inertia-missing-term", urdf('<link name="a"><inertial><mass value="1"/><inertia ixx="1" iyy="1" izz="1"/>'
                                  '</inertial></link>'), "<inertia> has no ixy, ixz, iyz", 2, False),
    # stricter than urdfdom (which accepts these and builds a model that means nothing):
    ("lower-above-upper", urdf(L.format("a"), L.format("b"), joint(x='<limit lower="2" upper="1" effort="1" '
                                                                   'velocity="1"/>')), "lower limit 2.0 > upper", 4,
     False),
    ("zero-axis", urdf(L.format("a"), L.format("b"), joint(x=LIM + '<axis xyz="0 0 0"/>')), "zero axis", 4, False),
    ("negative-mass", urdf('<link name="a"><inertial><mass value="-1"/><inertia ixx="1" ixy="0" ixz="0" iyy="1" '
                           'iyz="0" izz="1"/></inertial></link>'), "negative mass", 2, False),
    ("xacro-macro", urdf('<xacro:macro xmlns:xacro="http://www.ros.org/wiki/xacro" name="m"/>', L.format("a")),
     "expand the file with xacro first", 2, False),
]


@pytest.mark.parametrize(("text", "fragment", "line", "reference_refuses"),
                         [pytest.param(*r[1:], id=r[0]) for r in ROWS])
def test_bad_urdf_is_a_format_error(text, fragment, line, reference_refuses):
    """Each defect raises FormatError (with strict=True) with the message fragment and the line of the element."""
    with pytest.raises(FormatError) as err:
        load_urdf_string(text, source_name="bad.urdf", strict=True)
    assert fragment in err.value.message, err.value.message
    assert (err.value.file, err.value.line) == ("bad.urdf", line), str(err.value)
    assert str(err.value).startswith(f"bad.urdf:{line}: ")
    if reference_refuses:
        with pytest.raises(ReferenceRejected):
            Pinocchio(xml=text)


def test_missing_file_is_a_format_error(tmp_path):
    """A path that does not exist is a FormatError naming it."""
    with pytest.raises(FormatError, match="cannot read file"):
        load_urdf(tmp_path / "nope.urdf")
