"""XML plumbing shared by the XML-based readers: safe parsing, typed attributes, rotations.

Every reader reports bad input as :class:`~hebictl.errors.FormatError` naming the file and the
line of the offending element, so the helpers here take the element (for ``sourceline``) and the
file name with every value they parse. Parsing never resolves entities or touches the network:
robot descriptions come from strangers.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from pathlib import Path

import numpy as np
from lxml import etree

from hebictl._typing import FloatArray
from hebictl.errors import FormatError
from hebictl.model.tree import ModelBuilder

#: XML namespace of hebictl's own extension elements in files it writes (frames of any kind).
HEBICTL_NS = "urn:hebictl:model"

_PARSER_OPTIONS = dict(resolve_entities=False, no_network=True, remove_blank_text=False,
                       huge_tree=False, load_dtd=False)


def parse_xml(source: str | bytes | Path, file: str | Path | None = None) -> etree._Element:
    """Parse XML text or a file into its root element, turning syntax errors into FormatError."""
    parser = etree.XMLParser(**_PARSER_OPTIONS)
    try:
        if isinstance(source, Path):
            try:
                data = source.read_bytes()
            except OSError as exc:
                raise FormatError(f"cannot read file: {exc.strerror}", source) from None
            file = file or source
        else:
            # bytes: lxml refuses str input that carries an encoding declaration
            data = source.encode() if isinstance(source, str) else source
        root = etree.fromstring(data, parser)
    except etree.XMLSyntaxError as exc:
        line = exc.lineno if exc.lineno else None
        raise FormatError(f"XML syntax error: {exc.msg}", file, line) from None
    return root


def local_name(elem: etree._Element) -> str:
    """Tag without its namespace ('' for comments and processing instructions)."""
    tag = elem.tag
    if not isinstance(tag, str):
        return ""
    return tag.rsplit("}", 1)[-1]


def namespace(elem: etree._Element) -> str | None:
    """Namespace URI of an element, or None."""
    tag = elem.tag
    if isinstance(tag, str) and tag.startswith("{"):
        return tag[1:].split("}", 1)[0]
    return None


def elements(parent: etree._Element) -> list[etree._Element]:
    """Child elements only (no comments, processing instructions or entities)."""
    return [c for c in parent if isinstance(c.tag, str)]


def line_of(elem: etree._Element | None) -> int | None:
    return None if elem is None else elem.sourceline


def parse_floats(text: str, elem: etree._Element, attr: str, file: str | Path | None,
                 count: int | Sequence[int] | None = None) -> FloatArray:
    """Whitespace-separated floats of ``attr``; ``count`` = required length(s)."""
    try:
        parsed = [float(t) for t in text.split()]
    except ValueError:
        raise FormatError(f"<{local_name(elem)}> attribute {attr}={text!r} is not a list of numbers",
                          file, line_of(elem)) from None
    if not all(map(math.isfinite, parsed)):
        raise FormatError(f"<{local_name(elem)}> attribute {attr}={text!r} has non-finite numbers",
                          file, line_of(elem))
    if count is not None:
        allowed = (count,) if isinstance(count, int) else tuple(count)
        if len(parsed) not in allowed:
            want = " or ".join(str(c) for c in allowed)
            raise FormatError(f"<{local_name(elem)}> attribute {attr} needs {want} numbers, got {len(parsed)} "
                              f"({text!r})", file, line_of(elem))
    return np.array(parsed, dtype=np.float64)


def attr_floats(elem: etree._Element, attr: str, file: str | Path | None, count: int | Sequence[int] | None = None,
                default: Sequence[float] | None = None) -> FloatArray | None:
    """Float list attribute, or ``default`` (as an array; None stays None) when absent."""
    text = elem.get(attr)
    if text is None:
        return None if default is None else np.array(default, dtype=np.float64)
    return parse_floats(text, elem, attr, file, count)


def attr_float(elem: etree._Element, attr: str, file: str | Path | None, default: float | None = None,
               *, allow_inf: bool = False) -> float | None:
    """One float attribute, or ``default`` when absent."""
    text = elem.get(attr)
    if text is None:
        return default
    try:
        value = float(text)
    except ValueError:
        raise FormatError(f"<{local_name(elem)}> attribute {attr}={text!r} is not a number",
                          file, line_of(elem)) from None
    if math.isnan(value) or (math.isinf(value) and not allow_inf):
        raise FormatError(f"<{local_name(elem)}> attribute {attr}={text!r} must be finite", file, line_of(elem))
    return value


def require(elem: etree._Element, attr: str, file: str | Path | None) -> str:
    """A required attribute's text."""
    value = elem.get(attr)
    if value is None:
        raise FormatError(f"<{local_name(elem)}> is missing the required attribute {attr!r}", file, line_of(elem))
    return value


# ---------------------------------------------------------------------- rotations
def transform(R: FloatArray | None = None, p: Sequence[float] | FloatArray | None = None) -> FloatArray:
    """4x4 homogeneous transform from a rotation matrix and a translation [m]."""
    T = np.eye(4)
    if R is not None:
        T[:3, :3] = R
    if p is not None:
        T[:3, 3] = p
    return T


def inverse_transform(T: FloatArray) -> FloatArray:
    out = np.eye(4)
    out[:3, :3] = T[:3, :3].T
    out[:3, 3] = -T[:3, :3].T @ T[:3, 3]
    return out


def rot_x(a: float) -> FloatArray:
    c, s = math.cos(a), math.sin(a)
    return np.array([[1.0, 0.0, 0.0], [0.0, c, -s], [0.0, s, c]])


def rot_y(a: float) -> FloatArray:
    c, s = math.cos(a), math.sin(a)
    return np.array([[c, 0.0, s], [0.0, 1.0, 0.0], [-s, 0.0, c]])


def rot_z(a: float) -> FloatArray:
    c, s = math.cos(a), math.sin(a)
    return np.array([[c, -s, 0.0], [s, c, 0.0], [0.0, 0.0, 1.0]])


def rpy_matrix(rpy: Sequence[float]) -> FloatArray:
    """Fixed-axis roll-pitch-yaw [rad] (URDF/SDF): ``R = Rz(yaw) @ Ry(pitch) @ Rx(roll)``."""
    r, p, y = (float(v) for v in rpy)
    cr, sr, cp, sp, cy, sy = math.cos(r), math.sin(r), math.cos(p), math.sin(p), math.cos(y), math.sin(y)
    return np.array([[cy * cp, cy * sp * sr - sy * cr, cy * sp * cr + sy * sr],
                     [sy * cp, sy * sp * sr + cy * cr, sy * sp * cr - cy * sr],
                     [-sp, cp * sr, cp * cr]])


def matrix_rpy(R: FloatArray) -> tuple[float, float, float]:
    """Inverse of :func:`rpy_matrix` (pitch in [-pi/2, pi/2]).

    Yaw and pitch come first and roll is then fitted to what they leave, so the three stay
    consistent near pitch = ±90° (where roll and yaw alone are ill-conditioned) and the
    rebuilt matrix matches ``R`` to rounding error.
    """
    R = np.asarray(R, dtype=np.float64)
    pitch = math.atan2(-R[2, 0], math.hypot(R[0, 0], R[1, 0]))
    yaw = math.atan2(R[1, 0], R[0, 0])
    M = (rot_z(yaw) @ rot_y(pitch)).T @ R
    roll = math.atan2(M[2, 1], M[1, 1])
    return roll, pitch, yaw


def axis_angle_matrix(axis: Sequence[float], angle: float) -> FloatArray:
    """Rotation by ``angle`` [rad] about ``axis`` (any length, not zero)."""
    a = np.asarray(axis, dtype=np.float64)
    a = a / np.linalg.norm(a)
    K = np.array([[0.0, -a[2], a[1]], [a[2], 0.0, -a[0]], [-a[1], a[0], 0.0]])
    return np.eye(3) + math.sin(angle) * K + (1.0 - math.cos(angle)) * (K @ K)


def quat_matrix(q: Sequence[float]) -> FloatArray:
    """Rotation matrix of a quaternion ``w x y z`` (normalised here)."""
    w, x, y, z = np.asarray(q, dtype=np.float64) / np.linalg.norm(q)
    return np.array([
        [1 - 2 * (y * y + z * z), 2 * (x * y - w * z), 2 * (x * z + w * y)],
        [2 * (x * y + w * z), 1 - 2 * (x * x + z * z), 2 * (y * z - w * x)],
        [2 * (x * z - w * y), 2 * (y * z + w * x), 1 - 2 * (x * x + y * y)],
    ])


def matrix_quat(R: FloatArray) -> FloatArray:
    """Quaternion ``w x y z`` (w >= 0) of a rotation matrix."""
    from scipy.spatial.transform import Rotation

    x, y, z, w = Rotation.from_matrix(R).as_quat()
    q = np.array([w, x, y, z])
    return -q if w < 0 else q


def orthonormalize(R: FloatArray) -> FloatArray:
    """Nearest rotation matrix (polar decomposition), for matrices assembled from text."""
    U, _, Vt = np.linalg.svd(R)
    out = U @ Vt
    if np.linalg.det(out) < 0:
        U[:, -1] *= -1
        out = U @ Vt
    return out


def fmt_floats(values: Sequence[float] | FloatArray) -> str:
    """Space-separated shortest round-trip representations (``repr`` of floats)."""
    out = []
    for v in np.asarray(values, dtype=np.float64).reshape(-1):
        f = float(v)
        if f == 0.0:
            f = 0.0  # no "-0.0"
        out.append(repr(f))
    return " ".join(out)


# ---------------------------------------------------------------------- model assembly
def add_standard_frames(builder: ModelBuilder) -> None:
    """Frames every reader of a link-based format adds, so queries work on any model.

    * ``"com"``: one per body with mass, at its centre of mass with the body's axes (the bodies
      behind :attr:`RobotModel.masses`);
    * ``"output"`` and ``"end_effector"``: the frames of leaf bodies (no children), in body order.
    """
    bodies = builder.bodies
    has_child = {b.parent for b in bodies}
    for i, b in enumerate(bodies):
        if b.inertia.mass > 0.0:
            builder.add_frame("com", i, transform(None, b.inertia.com), b.name)
    for kind in ("output", "end_effector"):
        for i, b in enumerate(bodies):
            if i not in has_child:
                builder.add_frame(kind, i, None, b.name)
