"""HRDF value grammars (floats, formulas, rotations, vectors) against FORMAT.md/GRAMMAR.md.

References: Python's own float literal parsing and arithmetic (the expected values below are
Python expressions evaluated when this module is imported), scipy's Rotation for ``Rx*Ry*Rz``
products, and hebi-py 2.16.1 evaluating the same text inside a one-element HRDF.
"""

from __future__ import annotations

import math
import subprocess
import sys

import numpy as np
import pytest
from scipy.spatial.transform import Rotation

from hebictl.formats.hrdf.grammar import (
    HEBI_PI,
    GrammarError,
    parse_float,
    parse_formula,
    parse_rotation,
    parse_translation,
)

pi = math.pi

# --------------------------------------------------------------------------- floats
# FORMAT.md "floating point": the valid and invalid examples, verbatim.
SPEC_VALID_FLOATS = ["3.24", "0.324", ".324", "324", "3.24e2", "-3.24E-2", "-3.24e+2", "-32E4", "1."]
SPEC_INVALID_FLOATS = ["2.4.3", "2,000", "32,45", "3e2.4", ".", "- 1.3", "1. 02"]
# C literal corner cases (GRAMMAR.md DecimalFloatingConstant).
MORE_VALID_FLOATS = ["0", "00012", "1.e3", ".5E-3", "1e+0", "+2.5", "123456789.123456789"]
MORE_INVALID_FLOATS = ["", " ", "1e", "1E+", ".e3", "e3", "0x10", "inf", "nan", "1f", "1.5f", "1d", "--1", "+-1",
                       " 1", "1 ", "1_000", "１"]


@pytest.mark.parametrize("text", SPEC_VALID_FLOATS + MORE_VALID_FLOATS)
def test_valid_floats(text):
    """Valid plain floats parse to exactly Python's value of the same literal."""
    assert parse_float(text) == float(text)


@pytest.mark.parametrize("text", SPEC_INVALID_FLOATS + MORE_INVALID_FLOATS)
def test_invalid_floats(text):
    """Invalid plain floats are rejected."""
    with pytest.raises(GrammarError):
        parse_float(text)


# --------------------------------------------------------------------------- formulas
# (formula, value by Python arithmetic, hebi-py accepts it)
FORMULAS = [
    # FORMAT.md "floating point formula" valid examples
    ("pi / 4", pi / 4, True),
    ("1 + 4", 1 + 4, True),
    ("32*45", 32 * 45, True),
    ("1 + 2 / 3 - 4 * 5", 1 + 2 / 3 - 4 * 5, True),
    ("1 + 2 / (3 - 4) * 5", 1 + 2 / (3 - 4) * 5, True),
    ("(100 + 45) / (3*pi)", (100 + 45) / (3 * pi), True),
    ("32e-2*pi", 32e-2 * pi, True),
    # every valid float is a valid formula; '- 1.3' is unary minus applied to 1.3
    *[(f, float(f), True) for f in SPEC_VALID_FLOATS],
    ("- 1.3", -1.3, True),
    # associativity: left to right
    ("1 - 2 - 3", (1 - 2) - 3, True),
    ("8/4/2", (8 / 4) / 2, True),
    ("2/3*3", (2 / 3) * 3, True),
    ("1-2+3", (1 - 2) + 3, True),
    ("0.1+0.2-0.3", (0.1 + 0.2) - 0.3, True),
    # precedence
    ("2+3*4", 2 + 3 * 4, True),
    ("2*3+4", 2 * 3 + 4, True),
    ("(2+3)*4", (2 + 3) * 4, True),
    ("2-3/4", 2 - 3 / 4, True),
    ("-2*3", -2 * 3, True),
    ("-pi/2", -pi / 2, True),
    # GRAMMAR.md allows a unary operand after '*' or '/'; hebi-py rejects it there
    ("2*-3", 2 * -3, False),
    ("2/-4", 2 / -4, False),
    ("2--3", 2 - -3, True),
    # unary chains
    ("--2", 2.0, True),
    ("- - - 2", -2.0, True),
    ("-(-(2))", 2.0, True),
    ("-(1 - 4)", 3.0, True),
    # unary plus is in GRAMMAR.md's unaryOperator, but hebi-py rejects it
    ("+2", 2.0, False),
    ("-+-2", 2.0, False),
    ("3*+2", 6.0, False),
    # whitespace is ignored between tokens
    (" \t1\n+\r2 ", 3.0, True),
    ("( ( pi ) )", pi, True),
    ("pi*pi", pi * pi, True),
]

# (formula, column of the error, what hebi-py does with it: "rejects" | "accepts" | "crashes")
BAD_FORMULAS = [
    ("2 pi", 3, "rejects"),      # FORMAT.md invalid example
    ("PI", 1, "rejects"),        # FORMAT.md invalid example: pi is case-sensitive
    ("pi pi", 4, "rejects"),
    ("Pi", 1, "rejects"),
    ("", 1, "rejects"),
    ("   ", 1, "rejects"),
    ("()", 2, "rejects"),
    ("(1", 3, "rejects"),
    ("1)", 2, "rejects"),
    ("1 +", 4, "rejects"),
    ("1 2", 3, "rejects"),
    ("1. 02", 4, "rejects"),     # the FORMAT.md invalid float is an invalid formula too
    ("3 .2", 3, "rejects"),
    ("2.4.3", 1, "rejects"),
    ("3e2.4", 1, "rejects"),
    ("2,000", 2, "rejects"),
    ("1e", 1, "rejects"),
    ("1 e2", 3, "rejects"),
    ("inf", 1, "rejects"),
    ("2^3", 2, "rejects"),
    ("Rx(1)", 1, "rejects"),
    ("2pi", 1, "rejects"),
    ("1 * * 2", 5, "rejects"),
    ("0x10", 1, "accepts"),      # strtod hex; not in the grammar
    ("1/0", 2, "accepts"),       # hebi-py produces NaN/inf frames
    ("1/(pi-pi)", 2, "accepts"),
    ("1e308*10", 6, "accepts"),
    ("* 2", 1, "crashes"),       # libhebi segfaults on a leading binary operator
    ("/2", 1, "crashes"),
]


@pytest.mark.parametrize(("text", "expected", "hebi_ok"), FORMULAS)
def test_formula_values(text, expected, hebi_ok):
    """Formulas evaluate like Python's arithmetic, with the same precedence and associativity."""
    assert parse_formula(text) == pytest.approx(expected, rel=1e-15, abs=1e-15)


@pytest.mark.parametrize(("text", "column", "hebi_does"), BAD_FORMULAS)
def test_bad_formulas(text, column, hebi_does):
    """Malformed formulas are rejected with the column of the offending token."""
    with pytest.raises(GrammarError) as info:
        parse_formula(text)
    assert info.value.column == column


def test_pi_value_is_configurable():
    """``pi`` is math.pi by default and hebi-py's float32 value on request."""
    assert parse_formula("pi") == math.pi
    assert parse_formula("2*pi", pi=HEBI_PI) == 2 * HEBI_PI
    assert float(np.float32(np.pi)) == HEBI_PI


def _hebi_extension(hebi, text: str) -> float | None:
    """hebi-py's value of a formula: the extension of an inline X5 link is its output z."""
    xml = (f'<robot version="1.6.0"><link type="X5" extension="{text}" twist="0" input="Inline" '
           'output="Inline"/></robot>')
    try:
        model = hebi.robot_model.import_from_hrdf_string(xml, warning_callback=lambda w: None)
    except RuntimeError:
        return None
    return float(model.get_forward_kinematics("output", [])[0][2, 3])


@pytest.mark.parametrize(("text", "expected", "hebi_ok"), FORMULAS)
def test_formulas_match_hebi(hebi, text, expected, hebi_ok):
    """hebi-py evaluates each formula to the same double (with its float32 pi), or rejects what it lacks
    (unary '+', a unary operand right after '*' or '/')."""
    ref = _hebi_extension(hebi, text.replace("\n", "&#10;").replace("\r", "&#13;").replace("\t", "&#9;"))
    if not hebi_ok:
        assert ref is None, "hebi-py now accepts this formula: drop the deviation note"
        return
    assert ref is not None
    assert parse_formula(text, pi=HEBI_PI) == pytest.approx(ref, rel=1e-15, abs=1e-15)


@pytest.mark.parametrize(("text", "column", "hebi_does"), [b for b in BAD_FORMULAS if b[2] != "crashes"])
def test_bad_formulas_vs_hebi(hebi, text, column, hebi_does):
    """hebi-py rejects the same malformed formulas, except the ones it is laxer on (marked)."""
    assert (_hebi_extension(hebi, text) is None) == (hebi_does == "rejects")


@pytest.mark.parametrize("text", [b[0] for b in BAD_FORMULAS if b[2] == "crashes"])
def test_formulas_that_crash_hebi(text):
    """libhebi never accepts a formula starting with '*' or '/' but often dies (SIGSEGV) on it, so it only
    ever sees one in a child process."""
    code = ("import contextlib, io, sys\n"
            "with contextlib.redirect_stdout(io.StringIO()):\n    import hebi\n"
            "hebi.robot_model.import_from_hrdf_string(sys.argv[1])\n")
    xml = f'<robot version="1.6.0"><link type="X5" extension="{text}" twist="0"/></robot>'
    proc = subprocess.run([sys.executable, "-c", code, xml], capture_output=True, timeout=120, check=False)
    assert proc.returncode != 0, "hebi-py accepts this now"


# --------------------------------------------------------------------------- rotations
ANGLES = [(0.3, -1.2, 2.5), (pi / 2, -pi / 4, pi), (-2.9, 0.0, 1e-3), (1.0, 2.0, 3.0)]


@pytest.mark.parametrize("axes", ["xyz", "zyx", "xzy", "yxy", "zxz"])
@pytest.mark.parametrize("angles", ANGLES)
def test_rotation_products_match_scipy(axes, angles):
    """``Ra(a)*Rb(b)*Rc(c)`` is the intrinsic composition scipy calls ``from_euler('ABC')``."""
    text = "*".join(f"R{a}({v!r})" for a, v in zip(axes, angles, strict=True))
    expected = Rotation.from_euler(axes.upper(), angles).as_matrix()
    np.testing.assert_allclose(parse_rotation(text), expected, atol=1e-15)


@pytest.mark.parametrize(("text", "axes", "angles"), [
    ("Rz(pi/2)", "z", [pi / 2]),
    ("Rz(3 * pi/4 + 0.1)", "z", [3 * pi / 4 + 0.1]),
    ("Rx(pi/2)*Rz(-pi/4)*Ry(pi/2)", "XZY", [pi / 2, -pi / 4, pi / 2]),
    (" Ry( -pi ) *\n Rx( 2*(1-pi) ) ", "YX", [-pi, 2 * (1 - pi)]),
    ("Rx (1)", "x", [1.0]),   # GRAMMAR.md skips whitespace between tokens; hebi-py rejects this one
])
def test_rotation_spec_examples(text, axes, angles):
    """FORMAT.md's rotation examples (formula arguments, products, whitespace)."""
    np.testing.assert_allclose(parse_rotation(text), Rotation.from_euler(axes, angles).as_matrix(), atol=1e-15)


@pytest.mark.parametrize("text", ["Rx(1)*Ry(2)*Rz(3)", "Rz(3)*Ry(2)*Rx(1)", "Rx(pi)*Ry(pi/2)", "Rz(-pi/3)*Ry(pi/2)",
                                  "Ry(pi)*Rx(-pi/2)*Rz(pi/4)", "Rx(-(1+2)/3)"])
def test_rotation_products_match_hebi(hebi, text):
    """hebi-py builds the same matrices (with its float32 pi)."""
    xml = f'<robot version="1.6.0"><rigid-body mass="1" output_rot="{text}"/></robot>'
    model = hebi.robot_model.import_from_hrdf_string(xml)
    ref = model.get_forward_kinematics("output", [])[0][:3, :3]
    np.testing.assert_allclose(parse_rotation(text, pi=HEBI_PI), ref, atol=1e-15)


_RANDOM_R = Rotation.from_euler("ZYX", [0.7, -0.4, 2.2]).as_matrix()


@pytest.mark.parametrize(("text", "expected"), [
    ("1 0 0 0 1 0 0 0 1", np.eye(3)),
    ("1 0 0\n0 1 0\n0 0 1", np.eye(3)),
    ("\t 1\t0 0\r\n 0  1 0 \n\n0 0\t1 \n", np.eye(3)),
    ("-1 0 0 0 -1 0 0 0 1", np.diag([-1.0, -1.0, 1.0])),
    ("1 0 0 0 0 -1 0 1 0", Rotation.from_euler("x", pi / 2).as_matrix().round(15)),
    ("0 -1 0 1 0 0 0 0 +1", Rotation.from_euler("z", pi / 2).as_matrix().round(15)),
    (" ".join(repr(float(v)) for v in _RANDOM_R.ravel()), _RANDOM_R),
    ("1.000004 0 0 0 1 0 0 0 1", np.diag([1.000004, 1.0, 1.0])),  # within hebi-py's 1e-5 tolerance
])
def test_nine_number_matrices(text, expected):
    """Row-major 9-number matrices, any HRDF whitespace, used as written."""
    np.testing.assert_array_equal(parse_rotation(text), expected)


BAD_ROTATIONS = [
    "1 0 0 0 1 0 0 0",              # 8 numbers
    "1 0 0 0 1 0 0 0 1 0",          # 10 numbers
    "1,0,0,0,1,0,0,0,1",            # commas
    "2 0 0 0 2 0 0 0 2",            # not orthonormal
    "1.00001 0 0 0 1 0 0 0 1",      # just outside hebi-py's tolerance
    "0.7071 -0.7071 0 0.7071 0.7071 0 0 0 1",  # too few digits
    "1 0 0 0 1 0 0 0 -1",           # a reflection (det -1)
    "pi 0 0 0 1 0 0 0 1",           # entries are plain floats, not formulas
    "1 0 0 0 1 0 0 0 (1)",
    "- 1 0 0 0 1 0 0 0 1",
    "Rx(1)Ry(2)",                   # missing '*'
    "Rx(1)*",
    "Rx(1) Ry(2)",
    "rx(1)",                        # function names are case-sensitive
    "RX(1)",
    "Rq(1)",
    "Rx()",
    "Rx(1",
    "Rx 1",
    "Rx(1)*1 0 0 0 1 0 0 0 1",
    "Rx(2 pi)",
    "Rx(+1)*Ry(",
    "",
]


@pytest.mark.parametrize("text", BAD_ROTATIONS)
def test_bad_rotations(text):
    """Malformed or non-rotation matrices are rejected."""
    with pytest.raises(GrammarError):
        parse_rotation(text)


@pytest.mark.parametrize("text", [t for t in BAD_ROTATIONS if t != "Rx(+1)*Ry("])
def test_bad_rotations_rejected_by_hebi(hebi, text):
    """hebi-py rejects the same rotations."""
    xml = f'<robot version="1.6.0"><rigid-body mass="1" output_rot="{text}"/></robot>'
    with pytest.raises(RuntimeError):
        hebi.robot_model.import_from_hrdf_string(xml)


def test_version_1_0_rotation_rules():
    """Before 1.1.0 a rotation is 9 numbers separated by spaces only (CHANGELOG 1.1.0)."""
    np.testing.assert_array_equal(parse_rotation("1 0 0  0 1 0 0 0 1", functions=False, spaces_only=True),
                                  np.eye(3))
    with pytest.raises(GrammarError, match=r"1\.1\.0"):
        parse_rotation("Rx(1)", functions=False)
    with pytest.raises(GrammarError, match="spaces"):
        parse_rotation("1 0 0\n0 1 0\n0 0 1", spaces_only=True)


# --------------------------------------------------------------------------- translations
@pytest.mark.parametrize(("text", "expected"), [
    ("1 2 3", [1, 2, 3]),
    ("0.0788 -0.1364 0.0750", [0.0788, -0.1364, 0.0750]),
    ("  1\t2\n3 ", [1, 2, 3]),
    ("+1 -2e-3 .5", [1, -2e-3, 0.5]),
    ("1. 0 -0", [1, 0, 0]),
])
def test_translations(text, expected):
    """Translation vectors: 3 whitespace-separated plain floats."""
    np.testing.assert_array_equal(parse_translation(text), np.array(expected, dtype=float))


@pytest.mark.parametrize(("text", "hebi_rejects"), [
    ("1,2,3", True),
    ("1 2", True),
    ("1 2 3 4", True),
    ("- 1 2 3", True),
    ("", True),
    ("pi 0 0", False),     # hebi-py silently reads 0 0 0
    ("1+1 0 0", False),    # hebi-py silently reads 1 0 0
    ("(1) 2 3", False),    # hebi-py silently reads 0 2 3
    ("0x1 0 0", False),    # hebi-py reads 1 0 0 (strtod)
    ("1 2 inf", False),    # hebi-py reads an infinite translation (strtod)
])
def test_bad_translations(hebi, text, hebi_rejects):
    """Anything but 3 plain floats is rejected (hebi-py silently misreads formulas here)."""
    with pytest.raises(GrammarError):
        parse_translation(text)
    xml = f'<robot version="1.6.0"><rigid-body mass="1" output_trans="{text}"/></robot>'
    try:
        hebi.robot_model.import_from_hrdf_string(xml)
        rejected = False
    except RuntimeError:
        rejected = True
    assert rejected == hebi_rejects


def test_translation_spaces_only():
    """Before 1.1.0 only spaces separate vector entries."""
    with pytest.raises(GrammarError) as info:
        parse_translation("1 2\t3", spaces_only=True)
    assert info.value.column == 4
